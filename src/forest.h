// The ranker's trees: an XGBoost gbtree model (the JSON of Booster.save_raw("json")) evaluated
// here, so scoring one candidate does not pay XGBoost's per-call cost (2 ms at batch 1 for 1,200
// trees, docs/decisions.md §61). The spec is python/cwm/model/forest_reference.py:
//   - at a split, a NaN goes to the default_left side, otherwise x[feature] < threshold goes left;
//   - a leaf's value is its split_condition;
//   - a row's score starts at base_score and adds each tree's leaf in tree order, rounding to
//     float after every addition (XGBoost's prediction buffer is float).
// So the scores are the bits of Booster.predict, on every host (no reassociation).
#pragma once
#include <cstddef>
#include <cstdint>
#include <stdexcept>
#include <string>
#include <vector>

namespace cwm {

class ForestError : public std::invalid_argument {
 public:
  using std::invalid_argument::invalid_argument;
};

class Forest {
 public:
  // Parses an XGBoost JSON model; throws ForestError on anything but single-output numeric trees.
  static Forest FromJson(const std::string& model_json);

  int num_features() const { return num_features_; }
  int num_trees() const { return static_cast<int>(roots_.size()); }
  // rows [n, cols] float32 row-major (cols must equal num_features()) -> out[n].
  void Predict(const float* rows, size_t n, size_t cols, float* out, int num_threads = 1) const;

 private:
  // A leaf points to itself on both sides, so every row of a block walks a tree in the same
  // number of steps (the tree's depth) without a branch on where it stopped.
  struct Node {
    int32_t left;
    int32_t right;
    int32_t feature;     // 0 at a leaf (read, not used)
    float value;         // split threshold, or the leaf value at a leaf
    int32_t default_left;
  };
  static int32_t TreeDepth(const std::vector<Node>& nodes, int32_t offset, size_t n);
  void PredictRange(const float* rows, size_t begin, size_t end, size_t cols, float* out) const;

  std::vector<Node> nodes_;      // every tree's nodes; child indices are global
  std::vector<int32_t> roots_;   // the root of each tree, in tree order
  std::vector<int32_t> depths_;  // the longest root-to-leaf path of each tree
  float base_score_ = 0.0f;
  int num_features_ = 0;
};

}  // namespace cwm
