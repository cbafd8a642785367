// The standalone scorer against the Python scorer: tests/data/scorer_fixture holds a tiny
// saved world model, an input file and the scores WorldModel.score gave (tools/make_scorer_fixture.py).
// Usage: test_scorer [CWM_SCORE_BINARY SCRATCH_DIR]; run from the repository root. With the
// two arguments the cwm_score CLI is checked too (output, exit codes, error messages).
#include <sys/wait.h>

#include <algorithm>
#include <cmath>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <sstream>

#include "check.h"
#include "scorer/error.h"
#include "scorer/hardware.h"
#include "scorer/json_util.h"
#include "scorer/safetensors.h"
#include "scorer/scorer.h"
#include "scorer/task_io.h"

using namespace cwm;
namespace fs = std::filesystem;

static const std::string kFixture = "tests/data/scorer_fixture";
static const std::string kModel = kFixture + "/model";
static const std::string kFixtureV3 = "tests/data/scorer_fixture_v3";  // the same input, a v3 model
static const std::string kFixtureV6 = "tests/data/scorer_fixture_v6";  // the same input, kModel + a sequence head

static std::vector<std::string> Lines(const std::string& path) {
  std::vector<std::string> out;
  std::istringstream in(ReadFile(path));
  for (std::string line; std::getline(in, line);)
    if (!line.empty()) out.push_back(line);
  return out;
}

static std::vector<std::vector<double>> ExpectedScores(const std::string& path) {
  std::vector<std::vector<double>> out;
  for (const auto& line : Lines(path)) {
    const Json v = ParseJson(line);
    out.emplace_back();
    for (const Json& s : Find(v, "scores")->items) out.back().push_back(s.number());
  }
  return out;
}

// Largest |got - want|; counts a failure where it exceeds 1e-5 * max(1, |want|).
static double Compare(const std::vector<double>& got, const std::vector<double>& want) {
  CHECK_EQ(got.size(), want.size());
  double worst = 0;
  for (size_t k = 0; k < std::min(got.size(), want.size()); ++k) {
    double diff = std::fabs(got[k] - want[k]);
    worst = std::max(worst, diff);
    CHECK(diff <= 1e-5 * std::max(1.0, std::fabs(want[k])));
  }
  return worst;
}

template <typename F>
static bool ThrowsWith(F f, const std::string& text) {
  try {
    f();
  } catch (const ScorerError& e) {
    if (std::string(e.what()).find(text) != std::string::npos) return true;
    std::fprintf(stderr, "message without '%s': %s\n", text.c_str(), e.what());
    return false;
  }
  return false;
}

static int Run(const std::string& cmd) {
  int rc = std::system(cmd.c_str());
  return WIFEXITED(rc) ? WEXITSTATUS(rc) : -1;
}

static void LibraryParity(const std::string& fixture) {
  Scorer scorer(fixture + "/model");
  CHECK_EQ(scorer.dim(), 16);
  auto expected = ExpectedScores(fixture + "/expected.jsonl");
  auto lines = Lines(kFixture + "/input.jsonl");
  CHECK_EQ(lines.size(), expected.size());
  double worst = 0;
  for (size_t i = 0; i < std::min(lines.size(), expected.size()); ++i) {
    ScoreTask t = ParseScoreTask(lines[i], "input.jsonl:" + std::to_string(i + 1));
    auto s = scorer.Score(t.z0, t.hardware, t.traces);
    worst = std::max(worst, Compare(std::vector<double>(s.begin(), s.end()), expected[i]));
    // a second call hits the action cache and must not change anything
    auto again = scorer.Score(t.z0, t.hardware, t.traces);
    CHECK(again == s);
  }
  std::printf("library vs Python (%s, v%d): %zu tasks, max abs diff %.3g\n", fixture.c_str(), scorer.model().version,
              lines.size(), worst);
  // the target JSON path gives the hardware features of the parsed line
  ScoreTask t = ParseScoreTask(lines[0], "line 1");
  Json target = ParseJson(R"({"kind": "llvm", "num-cores": 2})");
  CHECK(scorer.Score(t.z0, target, t.traces) == scorer.Score(t.z0, t.hardware, t.traces));
  CHECK(scorer.Score(t.z0, t.hardware, {}).empty());
}

static void HardwareFeatureCases() {
  HardwareFeatures llvm = HardwareFeaturesOf(std::string(R"({"kind": "llvm", "num-cores": 2, "mcpu": "x"})"));
  CHECK(llvm == (HardwareFeatures{2.f, 1.f, 0.f, 0.f, 0.f}));
  HardwareFeatures cuda = HardwareFeaturesOf(
      ParseJson(R"({"kind": "cuda", "max_threads_per_block": 1024, "l2_cache_size_bytes": 75497472})"));
  CHECK(cuda[0] == 0.f && cuda[1] == 0.f && cuda[2] == 1.f);
  CHECK(cuda[3] == static_cast<float>(std::log2(1025.0)) && cuda[4] == static_cast<float>(std::log2(75497473.0)));
  // a JSON string holding the target text; null / "" / missing count as 0, as in Python
  Json as_text = ParseJson(R"("{\"kind\": \"rocm\", \"num-cores\": null, \"max_threads_per_block\": \"\"}")");
  CHECK(HardwareFeaturesOf(as_text) == (HardwareFeatures{0.f, 0.f, 1.f, 0.f, 0.f}));
  CHECK(ThrowsWith([] { HardwareFeaturesOf(ParseJson("[1, 2]")); }, "target must be"));
  CHECK(ThrowsWith([] { HardwareFeaturesOf(std::string(R"({"num-cores": "many"})")); }, "num-cores"));
}

// A copy of model directory `src` at `dir` whose manifest can be edited: Rewrite(from, to) writes
// the original manifest with its first `from` replaced by `to`; Restore() writes it back.
struct ManifestCopy {
  std::string dir, manifest;
  ManifestCopy(const std::string& src, const std::string& copy) : dir(copy) {
    fs::remove_all(copy);
    fs::copy(src, copy, fs::copy_options::recursive);
    manifest = ReadFile(copy + "/manifest.json");
  }
  void Rewrite(const std::string& from, const std::string& to) const {
    std::string m = manifest;
    size_t at = m.find(from);
    CHECK(at != std::string::npos);
    if (at != std::string::npos) m.replace(at, from.size(), to);
    std::ofstream(dir + "/manifest.json") << m;
  }
  void Restore() const { std::ofstream(dir + "/manifest.json") << manifest; }
};

static void ErrorCases(const std::string& scratch) {
  CHECK(ThrowsWith([] { Scorer s("no/such/dir"); }, "no such model directory"));
  CHECK(ThrowsWith([] { Scorer s(kFixture); }, "not a CWM model directory"));
  // another model version, another action vocabulary, missing weights
  const std::string copy = scratch + "/model_copy";
  const ManifestCopy edit(kModel, copy);
  auto rewrite = [&](const std::string& from, const std::string& to) { edit.Rewrite(from, to); };
  rewrite("\"format\":",
          "\"metrics\": {\"a\": NaN, \"b\": -Infinity, \"c\": [Infinity], \"d\": \"NaN \\\" NaN\"},\n \"format\":");
  CHECK_EQ(Scorer(copy).dim(), 16);  // Python's json.dumps writes NaN / Infinity in metrics
  CHECK(NonFiniteToNull(R"({"a": NaN, "b": "x\"NaN", "c": [-Infinity]})") ==
        R"({"a": null, "b": "x\"NaN", "c": [null]})");
  rewrite("\"version\": 4", "\"version\": 99");
  CHECK(ThrowsWith([&] { Scorer s(copy); }, "this scorer reads cwm-world-model v3/v4/v5/v6"));
  rewrite("\"version\": 4", "\"version\": 3");  // v3 has no trace structure: the names no longer match
  CHECK(ThrowsWith([&] { Scorer s(copy); }, "feature_names"));
  rewrite("\"<pad>\"", "\"<padding>\"");
  CHECK(ThrowsWith([&] { Scorer s(copy); }, "another action vocabulary"));
  rewrite("\"dim\": 16", "\"dim\": 8");
  CHECK(ThrowsWith([&] { Scorer s(copy); }, "feature_names"));
  rewrite("\"hidden\": 16", "\"hidden\": 32");
  CHECK(ThrowsWith([&] { Scorer s(copy); }, "the manifest implies"));
  edit.Restore();
  fs::remove(copy + "/ranker.json");
  CHECK(ThrowsWith([&] { Scorer s(copy); }, "no ranker.json"));
  // safetensors: truncated file, header past the end
  const std::string st = ReadFile(kModel + "/transition.safetensors");
  CHECK(ParseSafetensors(st, "t").size() == 6 + 7 + 4 + 1);
  CHECK(ThrowsWith([&] { ParseSafetensors(st.substr(0, 4), "t"); }, "shorter than"));
  CHECK(ThrowsWith([&] { ParseSafetensors(st.substr(0, 40), "t"); }, "exceeds the file"));
  CHECK(ThrowsWith([&] { ParseSafetensors(st.substr(0, st.size() - 4), "t"); }, "bad data_offsets"));
  // bad inputs
  Scorer scorer(kModel);
  ScoreTask t = ParseScoreTask(Lines(kFixture + "/input.jsonl")[0], "line 1");
  CHECK(ThrowsWith([&] { scorer.Score(std::vector<float>(3, 0.f), t.hardware, t.traces); },
                   "z0 has 3 values, the model's latent size is 16"));
  CHECK(ThrowsWith([&] { scorer.Score(t.z0, t.hardware, {t.traces[0], "[[1,"}); }, "trace 1"));
  CHECK(ThrowsWith([] { ParseScoreTask(R"({"z0": [1], "traces": []})", "in:4"); }, "in:4: a task needs 'target'"));
  CHECK(ThrowsWith([] { ParseScoreTask(R"({"z0": [1], "hardware": [1], "traces": []})", "x"); }, "'hardware'"));
  CHECK(ThrowsWith([] { ParseScoreTask(R"({"z0": [1], "target": {}, "traces": [3]})", "x"); }, "trace 0 must be"));
  CHECK(ThrowsWith([] { ParseScoreTask("{\"z0\": ", "in:9"); }, "in:9: not valid JSON"));
}

// A v6 directory needs its head: the manifest's entry, a one-layer GRU, sequence.safetensors of the
// configured sizes; and its transition must not read the state (that is v5).
static void SequenceHeadErrorCases(const std::string& scratch) {
  const std::string copy = scratch + "/model_v6_copy";
  const ManifestCopy edit(kFixtureV6 + "/model", copy);
  auto rewrite = [&](const std::string& from, const std::string& to) { edit.Rewrite(from, to); };
  CHECK(Scorer(copy).model().has_sequence_head);
  rewrite("\"sequence_head\":", "\"no_sequence_head\":");
  CHECK(ThrowsWith([&] { Scorer s(copy); }, "a v6 model without its manifest's sequence_head"));
  rewrite("\"encoder\": \"gru\"", "\"encoder\": \"transformer\"");
  CHECK(ThrowsWith([&] { Scorer s(copy); }, "scores a one-layer GRU sequence head, not 1 x \"transformer\""));
  rewrite("\"small_vocab\": 16,\n   \"threads\"", "\"small_vocab\": 8,\n   \"threads\"");  // the head's config
  CHECK(ThrowsWith([&] { Scorer s(copy); }, "'actions.small.0.weight' has shape (16, 16), the manifest implies (8, 16)"));
  rewrite("\"weight\": 0.25", "\"weight\": 1.5");
  CHECK(ThrowsWith([&] { Scorer s(copy); }, "sequence_head.weight must be in (0, 1)"));
  rewrite("\"state_dependent\": false", "\"state_dependent\": true");
  CHECK(ThrowsWith([&] { Scorer s(copy); }, "a v6 model cannot have transition.state_dependent = true"));
  edit.Restore();
  fs::remove(copy + "/sequence.safetensors");
  CHECK(ThrowsWith([&] { Scorer s(copy); }, "the manifest names a sequence head but sequence.safetensors is missing"));
}

static void Cli(const std::string& cli, const std::string& scratch) {
  const std::string out = scratch + "/scores.jsonl", err = scratch + "/stderr.txt";
  const std::string input = kFixture + "/input.jsonl";
  CHECK_EQ(Run(cli + " " + kModel + " " + input + " -o " + out + " 2>" + err), 0);
  auto got = ExpectedScores(out), want = ExpectedScores(kFixture + "/expected.jsonl");
  CHECK_EQ(got.size(), want.size());
  double worst = 0;
  for (size_t i = 0; i < std::min(got.size(), want.size()); ++i) worst = std::max(worst, Compare(got[i], want[i]));
  std::printf("cwm_score vs Python: max abs diff %.3g\n", worst);
  auto task_names = Lines(out);
  CHECK(!task_names.empty() && task_names[0].rfind("{\"task\":\"matmul_256\",\"scores\":[", 0) == 0);
  CHECK_EQ(Run(cli + " 2>" + err), 2);  // usage
  CHECK(ReadFile(err).find("usage: cwm_score") != std::string::npos);
  CHECK_EQ(Run(cli + " no/such/model " + input + " 2>" + err), 1);
  CHECK(ReadFile(err).find("cwm_score: error: no/such/model: no such model directory") != std::string::npos);
  CHECK_EQ(Run(cli + " " + kModel + " no/such/input.jsonl 2>" + err), 1);
  CHECK(ReadFile(err).find("cannot open input file") != std::string::npos);
  const std::string bad = scratch + "/bad_input.jsonl";
  std::ofstream(bad) << "\n{\"task\": \"t\", \"z0\": [1, 2], \"target\": {\"kind\": \"llvm\"}, \"traces\": []}\n";
  CHECK_EQ(Run(cli + " " + kModel + " " + bad + " 2>" + err), 1);
  CHECK(ReadFile(err).find(bad + ":2: z0 has 2 values, the model's latent size is 16") != std::string::npos);
}

int main(int argc, char** argv) {
  try {
    LibraryParity(kFixture);
    LibraryParity(kFixtureV3);
    LibraryParity(kFixtureV6);
    HardwareFeatureCases();
    const std::string scratch = argc > 2 ? argv[2] : (fs::temp_directory_path() / "cwm_test_scorer").string();
    fs::create_directories(scratch);
    ErrorCases(scratch);
    SequenceHeadErrorCases(scratch);
    if (argc > 1) Cli(argv[1], scratch);
  } catch (const std::exception& e) {
    std::fprintf(stderr, "unexpected exception: %s\n", e.what());
    ++g_failures;
  }
  return Finish("test_scorer");
}
