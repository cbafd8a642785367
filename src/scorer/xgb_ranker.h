// The ranker: a saved XGBoost model (ranker.json) evaluated by XGBoost's own library
// (libxgboost.so through its C API), so scores equal Booster.predict in Python.
#pragma once
#include <cstddef>
#include <string>
#include <vector>

namespace cwm {

class XgbRanker {
 public:
  // Loads an XGBoost JSON/UBJSON model; `num_threads` <= 0 lets XGBoost choose.
  explicit XgbRanker(const std::string& model_path, int num_threads = 1);
  ~XgbRanker();
  XgbRanker(const XgbRanker&) = delete;
  XgbRanker& operator=(const XgbRanker&) = delete;
  XgbRanker(XgbRanker&& other) noexcept;
  XgbRanker& operator=(XgbRanker&& other) noexcept;

  int num_features() const { return num_features_; }
  // rows [n, cols] float32, row-major -> n scores. Throws ScorerError.
  std::vector<float> Predict(const float* rows, size_t n, size_t cols) const;
  static std::string LibraryVersion();  // "major.minor.patch" of the loaded libxgboost

 private:
  void* booster_ = nullptr;
  int num_features_ = 0;
};

}  // namespace cwm
