// Reads the parts of a saved WorldModel directory (cwm.model.world_model.WorldModel.save)
// that scoring needs: manifest.json, transition.safetensors, the path of ranker.json and, in a
// v6 model, the sequence head (sequence.safetensors and the manifest's "sequence_head").
// The encoder/ sub-directory is not read: z0 = E(workload) comes with the input.
#pragma once
#include <string>
#include <vector>

#include "scorer/trace_columns.h"
#include "sequence.h"
#include "transition.h"

namespace cwm {

constexpr const char* kModelFormat = "cwm-world-model";  // FORMAT in world_model.py
constexpr int kModelVersion = 6;                         // SEQUENCE_HEAD_VERSION in world_model.py
constexpr int kStateReadVersion = 5;                     // STATE_READ_VERSION: the TransH reads the state
constexpr int kSequenceHeadVersion = 6;                  // SEQUENCE_HEAD_VERSION: v4 + a sequence head
constexpr int kOldestModelVersion = 3;                   // READS in world_model.py: v3 has no trace structure

// The sequence head of a v6 model (cwm.model.sequence_head): a GRU scorer of the action rows whose
// score is blended into the ranker's margin,
//   (1 - weight) * ranker margin + weight * (ranker_spread / sequence_spread) * sequence score.
struct SequenceHeadDir {
  SequenceWeights weights;  // sequence.safetensors, Prepare()d
  double weight = 0, ranker_spread = 1, sequence_spread = 1;
  double Blend(double ranker_margin, double sequence_score) const;  // in double, as SequenceBlend in NumPy
};

struct ModelDir {
  std::string path;
  int version = 0;                         // the manifest's
  TransitionWeights transition;            // TransH weights (transition.safetensors) + config
  std::vector<std::string> feature_names;  // ranker feature names, from the manifest
  bool structure = true;                   // the features include the trace structure (v4)
  std::vector<const TraceColumnFamily*> columns;  // ... and these families (manifest flags), in row order
  bool needs_facts = false;                // one of them is a task family: a task's input needs its facts
  bool centred = false;                    // rows [x, x - reference] (manifest "centring"; cwm.model.centring)
  std::string ranker_path;                 // <dir>/ranker.json (XGBoost JSON model)
  bool has_sequence_head = false;          // model v6
  SequenceHeadDir sequence_head;           // read when has_sequence_head
};

// Throws ScorerError: not a model directory, another format or version, another action
// vocabulary, missing or malformed weights.
ModelDir ReadModelDir(const std::string& dir);

}  // namespace cwm
