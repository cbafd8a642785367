// Standalone scorer of candidate schedules with a saved CWM world model, in C++ (issue #5).
//
// The same path as WorldModel.score in Python: featurise each trace (cwm::FeaturizeBatch),
// roll its actions out from the workload's z0 with the TransH weights (cwm::Rollout), build
// [z_T - z0, sequence stats, trace structure (v4), the trace-column families the manifest flags
// (trace_columns.h), hardware features]
// and evaluate the XGBoost ranker with libxgboost. A v6 model's sequence head (cwm::SequenceScores
// over the same action rows) is blended into the ranker's margin, as WorldModel.margins does.
// z0 = E(workload) is an input: the encoder (a transformer) stays on the Python side
// (cwm.model.scorer_input writes it).
//
//   cwm::Scorer scorer("path/to/model");
//   std::vector<float> s = scorer.Score(z0, target_json, trace_texts);  // higher = predicted faster
#pragma once
#include <mutex>
#include <string>
#include <vector>

#include "featurize.h"
#include "json.h"
#include "scorer/hardware.h"
#include "scorer/model_dir.h"
#include "scorer/xgb_ranker.h"
#include "tile_footprint.h"
#include "transition.h"

namespace cwm {

class Scorer {
 public:
  // Loads MODEL_DIR (WorldModel.save layout). `num_threads` is used by the rollout and XGBoost.
  // Throws ScorerError.
  explicit Scorer(const std::string& model_dir, int num_threads = 1);
  Scorer(const Scorer&) = delete;
  Scorer& operator=(const Scorer&) = delete;

  int dim() const { return model_.transition.dim; }  // length of z0
  int num_features() const { return static_cast<int>(model_.feature_names.size()); }
  const ModelDir& model() const { return model_; }

  // Ranker features [traces.size(), num_features()], row-major. A centring model
  // (model().centred) needs the task's `reference` row, one value per uncentred feature
  // (cwm.model.centring: WorldModel.reference); others take none. A model that takes a task
  // family (model().needs_facts) needs the task's `facts` (cwm.model.tile_footprint.task_facts).
  std::vector<float> Features(const std::vector<float>& z0, const HardwareFeatures& hw,
                              const std::vector<std::string>& traces, const std::vector<float>& reference = {},
                              const TaskFacts* facts = nullptr);
  // Scores of one workload's candidate traces (TVM trace JSON texts); higher = predicted faster.
  // Thread-safe. Throws ScorerError (bad z0 length, a missing or bad reference, missing facts, a bad
  // trace named by its index, ...).
  std::vector<float> Score(const std::vector<float>& z0, const HardwareFeatures& hw,
                           const std::vector<std::string>& traces, const std::vector<float>& reference = {},
                           const TaskFacts* facts = nullptr);
  // The same with the target's JSON object (or its JSON text as a string value).
  std::vector<float> Score(const std::vector<float>& z0, const Json& target, const std::vector<std::string>& traces,
                           const std::vector<float>& reference = {}, const TaskFacts* facts = nullptr);

 private:
  struct Featurized {
    FeatureBatch fb;
    std::vector<TiledNest> nests;  // each trace's, read in the featuriser's parse when a task family needs them
  };
  Featurized Featurize(const std::vector<std::string>& traces) const;  // ScorerError naming a bad trace
  std::vector<float> Rows(const std::vector<float>& z0, const HardwareFeatures& hw, const Featurized& featurized,
                          const std::vector<float>& reference,
                          const TaskFacts* facts);  // Features() of featurised traces

  ModelDir model_;
  XgbRanker ranker_;
  int num_threads_;
  ActionParamCache cache_;           // (w, d) of action rows seen before; guarded by mu_
  ActionParamCache sequence_cache_;  // the sequence head's step inputs of rows seen before; guarded by mu_
  std::mutex mu_;
};

}  // namespace cwm
