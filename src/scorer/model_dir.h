// Reads the parts of a saved WorldModel directory (cwm.model.world_model.WorldModel.save)
// that scoring needs: manifest.json, transition.safetensors and the path of ranker.json.
// The encoder/ sub-directory is not read: z0 = E(workload) comes with the input.
#pragma once
#include <string>
#include <vector>

#include "scorer/trace_columns.h"
#include "transition.h"

namespace cwm {

constexpr const char* kModelFormat = "cwm-world-model";  // FORMAT in world_model.py
constexpr int kModelVersion = 5;                         // STATE_READ_VERSION in world_model.py
constexpr int kOldestModelVersion = 3;                   // READS in world_model.py: v3 has no trace structure

struct ModelDir {
  std::string path;
  TransitionWeights transition;            // TransH weights (transition.safetensors) + config
  std::vector<std::string> feature_names;  // ranker feature names, from the manifest
  bool structure = true;                   // the features include the trace structure (v4)
  std::vector<const TraceColumnFamily*> columns;  // ... and these families (manifest flags), in row order
  bool centred = false;                    // rows [x, x - reference] (manifest "centring"; cwm.model.centring)
  std::string ranker_path;                 // <dir>/ranker.json (XGBoost JSON model)
};

// Throws ScorerError: not a model directory, another format or version, another action
// vocabulary, missing or malformed weights.
ModelDir ReadModelDir(const std::string& dir);

}  // namespace cwm
