// cwm_score: scores candidate schedules with a saved CWM world model, without Python.
//
//   cwm_score MODEL_DIR INPUT.jsonl [-o SCORES.jsonl] [--threads N]
//
// INPUT.jsonl ("-" = stdin) has one task per line (written by `python -m cwm.model.scorer_input`);
// the output has one {"task": ..., "scores": [...]} line per task, in input order. Exit status:
// 0 ok, 1 error (bad model directory, bad input line, ...), 2 bad command line.
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <iostream>
#include <string>

#include "scorer/error.h"
#include "scorer/scorer.h"
#include "scorer/task_io.h"
#include "scorer/xgb_ranker.h"

namespace {

constexpr const char* kUsage =
    "usage: cwm_score MODEL_DIR INPUT.jsonl [-o SCORES.jsonl] [--threads N]\n"
    "  MODEL_DIR    a saved CWM world model (WorldModel.save)\n"
    "  INPUT.jsonl  one task per line: {\"task\", \"z0\", \"target\", \"traces\"} ('-' = stdin),\n"
    "               \"reference\" for a model that centres its rows, and \"facts\" for one\n"
    "               that reads the tiled block's buffer accesses;\n"
    "               write it with `python -m cwm.model.scorer_input`\n"
    "  -o PATH      write {\"task\", \"scores\"} lines to PATH (default: stdout)\n"
    "  --threads N  threads for featurisation, rollout and XGBoost (default 1)\n";

int Usage(const std::string& error) {
  if (!error.empty()) std::fprintf(stderr, "cwm_score: %s\n", error.c_str());
  std::fputs(kUsage, error.empty() ? stdout : stderr);
  return error.empty() ? 0 : 2;
}

}  // namespace

int main(int argc, char** argv) {
  std::string model_dir, input, output;
  int threads = 1;
  for (int i = 1; i < argc; ++i) {
    std::string a = argv[i];
    if (a == "-h" || a == "--help") return Usage("");
    if (a == "-o" || a == "--output" || a == "--threads") {
      if (i + 1 >= argc) return Usage(a + " needs a value");
      std::string v = argv[++i];
      if (a == "--threads") {
        char* end = nullptr;
        long n = std::strtol(v.c_str(), &end, 10);
        if (!end || *end || n < 1 || n > 256) return Usage("--threads must be an integer in 1..256");
        threads = static_cast<int>(n);
      } else {
        output = v;
      }
    } else if (a.size() > 1 && a[0] == '-') {
      return Usage("unknown option " + a);
    } else if (model_dir.empty()) {
      model_dir = a;
    } else if (input.empty()) {
      input = a;
    } else {
      return Usage("too many arguments");
    }
  }
  if (input.empty()) return Usage("MODEL_DIR and INPUT.jsonl are required");

  try {
    auto t0 = std::chrono::steady_clock::now();
    cwm::Scorer scorer(model_dir, threads);
    std::ifstream file;
    if (input != "-") {
      file.open(input);
      if (!file) throw cwm::ScorerError(input + ": cannot open input file");
    }
    std::istream& in = input == "-" ? std::cin : file;
    std::ofstream out_file;
    if (!output.empty()) {
      out_file.open(output);
      if (!out_file) throw cwm::ScorerError(output + ": cannot write output file");
    }
    std::ostream& out = output.empty() ? std::cout : out_file;
    std::string line;
    size_t line_no = 0, tasks = 0, candidates = 0;
    while (std::getline(in, line)) {
      ++line_no;
      if (line.find_first_not_of(" \t\r") == std::string::npos) continue;
      const std::string where = input + ":" + std::to_string(line_no);
      cwm::ScoreTask task = cwm::ParseScoreTask(line, where);
      std::vector<float> scores;
      try {
        scores = scorer.Score(task.z0, task.hardware, task.traces, task.reference,
                              task.has_facts ? &task.facts : nullptr);
      } catch (const cwm::ScorerError& e) {
        throw cwm::ScorerError(where + ": " + e.what());
      }
      out << cwm::ScoresLine(task.task, scores) << '\n';
      ++tasks, candidates += scores.size();
    }
    out.flush();
    if (!out) throw cwm::ScorerError("cannot write the scores");
    double ms = std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t0).count();
    std::fprintf(stderr, "cwm_score: %zu tasks, %zu candidates scored in %.1f ms (libxgboost %s)\n", tasks, candidates,
                 ms, cwm::XgbRanker::LibraryVersion().c_str());
  } catch (const std::exception& e) {
    std::fprintf(stderr, "cwm_score: error: %s\n", e.what());
    return 1;
  }
  return 0;
}
