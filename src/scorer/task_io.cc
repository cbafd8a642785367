#include "scorer/task_io.h"

#include <cmath>
#include <cstdio>

#include "scorer/error.h"
#include "scorer/json_util.h"

namespace cwm {

ScoreTask ParseScoreTask(const std::string& line, const std::string& where) {
  const Json v = ParseJsonIn(line, where);
  if (v.type != Json::Type::kObject) throw ScorerError(where + ": a task line must be a JSON object");
  ScoreTask t;
  if (const Json* task = Find(v, "task")) t.task = *task;
  const Json* z0 = Find(v, "z0");
  if (!z0 || !z0->is_array()) throw ScorerError(where + ": 'z0' must be a list of numbers");
  for (const Json& x : z0->items) {
    if (!x.is_number()) throw ScorerError(where + ": 'z0' must be a list of numbers");
    t.z0.push_back(static_cast<float>(x.number()));
  }
  if (const Json* ref = Find(v, "reference")) {  // cwm.model.centring: WorldModel.reference, computed in Python
    if (!ref->is_array()) throw ScorerError(where + ": 'reference' must be a list of numbers");
    for (const Json& x : ref->items) {
      if (!x.is_number()) throw ScorerError(where + ": 'reference' must be a list of numbers");
      t.reference.push_back(static_cast<float>(x.number()));
    }
  }
  if (const Json* facts = Find(v, "facts")) {  // cwm.model.tile_footprint.task_facts, computed in Python
    try {
      t.facts = ParseTaskFacts(*facts);
    } catch (const JsonError& e) {
      throw ScorerError(where + ": 'facts': " + e.what());
    }
    t.has_facts = true;
  }
  const Json* hw = Find(v, "hardware");
  const Json* target = Find(v, "target");
  if (hw) {
    if (!hw->is_array() || hw->items.size() != kNumHardwareFeatures)
      throw ScorerError(where + ": 'hardware' must be a list of " + std::to_string(kNumHardwareFeatures) + " numbers");
    for (int j = 0; j < kNumHardwareFeatures; ++j) {
      if (!hw->items[j].is_number()) throw ScorerError(where + ": 'hardware' must be a list of numbers");
      t.hardware[j] = static_cast<float>(hw->items[j].number());
    }
  } else if (target) {
    try {
      t.hardware = HardwareFeaturesOf(*target);
    } catch (const ScorerError& e) {
      throw ScorerError(where + ": " + e.what());
    }
  } else {
    throw ScorerError(where + ": a task needs 'target' (the TVM target JSON) or 'hardware'");
  }
  const Json* traces = Find(v, "traces");
  if (!traces || !traces->is_array()) throw ScorerError(where + ": 'traces' must be a list");
  for (size_t k = 0; k < traces->items.size(); ++k) {
    const Json& tr = traces->items[k];
    if (tr.is_string()) {
      t.traces.push_back(tr.s);
    } else if (tr.is_array()) {
      t.traces.push_back(DumpJson(tr));
    } else {
      throw ScorerError(where + ": trace " + std::to_string(k) +
                        " must be trace JSON text or a [insts, decisions] list");
    }
  }
  return t;
}

std::string ScoresLine(const Json& task, const std::vector<float>& scores) {
  std::string out = "{\"task\":" + DumpJson(task) + ",\"scores\":[";
  char buf[32];
  for (size_t k = 0; k < scores.size(); ++k) {
    if (k) out += ",";
    if (std::isfinite(scores[k])) {
      std::snprintf(buf, sizeof(buf), "%.9g", static_cast<double>(scores[k]));
      out += buf;
    } else {
      out += "null";  // JSON has no NaN / inf
    }
  }
  return out + "]}";
}

}  // namespace cwm
