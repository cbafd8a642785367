// The JSONL formats of the scorer (docs/scorer.md).
//   input, one line per task:  {"task": ..., "z0": [D floats], "target": {...} | "<target JSON>",
//                               "traces": ["<trace JSON>" | [insts, decisions], ...]}
//   ("hardware": [5 floats] may replace "target"; "reference": [floats] for a centring model;
//    "facts": {"blocks": ...} for a model that takes a task family)
//   output, one line per task: {"task": ..., "scores": [one float per trace]}
#pragma once
#include <string>
#include <vector>

#include "json.h"
#include "scorer/hardware.h"
#include "tile_footprint.h"

namespace cwm {

struct ScoreTask {
  Json task;  // the input's "task" value (any JSON, null if absent), echoed in the output
  std::vector<float> z0;
  HardwareFeatures hardware{};
  std::vector<std::string> traces;  // trace JSON texts
  std::vector<float> reference;     // the task's reference row (a centring model's input); empty if absent
  bool has_facts = false;           // "facts" given (cwm.model.tile_footprint.task_facts; a task family's input)
  TaskFacts facts;
};

// One input line; throws ScorerError with `where` (e.g. "input.jsonl:3") in the message.
ScoreTask ParseScoreTask(const std::string& line, const std::string& where);
// One output line (no newline); scores printed with 9 significant digits (exact for float32).
std::string ScoresLine(const Json& task, const std::vector<float>& scores);

}  // namespace cwm
