#include "scorer/xgb_ranker.h"

#include <cmath>
#include <utility>

#include "scorer/error.h"
#include "scorer/xgboost_c_api.h"

namespace cwm {
namespace {

void Ok(int rc, const std::string& what) {
  if (rc != 0) throw ScorerError("XGBoost: " + what + ": " + XGBGetLastError());
}

// Same settings as xgboost.Booster.predict(DMatrix) in Python: plain margin-free output.
constexpr const char* kPredictConfig =
    R"({"type": 0, "training": false, "iteration_begin": 0, "iteration_end": 0, "strict_shape": false})";

}  // namespace

XgbRanker::XgbRanker(const std::string& model_path, int num_threads) {
  Ok(XGBoosterCreate(nullptr, 0, &booster_), "cannot create a booster");
  try {
    Ok(XGBoosterLoadModel(booster_, model_path.c_str()), "cannot load " + model_path);
    if (num_threads > 0) Ok(XGBoosterSetParam(booster_, "nthread", std::to_string(num_threads).c_str()), "nthread");
    bst_ulong nf = 0;
    Ok(XGBoosterGetNumFeature(booster_, &nf), "num_feature");
    num_features_ = static_cast<int>(nf);
  } catch (...) {
    XGBoosterFree(booster_);
    booster_ = nullptr;
    throw;
  }
}

XgbRanker::~XgbRanker() {
  if (booster_) XGBoosterFree(booster_);
}

XgbRanker::XgbRanker(XgbRanker&& other) noexcept
    : booster_(std::exchange(other.booster_, nullptr)), num_features_(other.num_features_) {}

XgbRanker& XgbRanker::operator=(XgbRanker&& other) noexcept {
  if (this != &other) {
    if (booster_) XGBoosterFree(booster_);
    booster_ = std::exchange(other.booster_, nullptr);
    num_features_ = other.num_features_;
  }
  return *this;
}

std::vector<float> XgbRanker::Predict(const float* rows, size_t n, size_t cols) const {
  if (!booster_) throw ScorerError("XGBoost: the ranker is not loaded");
  if (n == 0) return {};
  if (static_cast<int>(cols) != num_features_)
    throw ScorerError("XGBoost: the ranker expects " + std::to_string(num_features_) + " features, got " +
                      std::to_string(cols));
  DMatrixHandle dm = nullptr;
  Ok(XGDMatrixCreateFromMat(rows, n, cols, NAN, &dm), "cannot make a DMatrix");
  std::vector<float> out;
  try {
    const bst_ulong* shape = nullptr;
    bst_ulong dim = 0;
    const float* result = nullptr;
    Ok(XGBoosterPredictFromDMatrix(booster_, dm, kPredictConfig, &shape, &dim, &result), "predict");
    bst_ulong total = 1;
    for (bst_ulong k = 0; k < dim; ++k) total *= shape[k];
    if (total != n)
      throw ScorerError("XGBoost: " + std::to_string(total) + " outputs for " + std::to_string(n) + " rows");
    out.assign(result, result + n);
  } catch (...) {
    XGDMatrixFree(dm);
    throw;
  }
  XGDMatrixFree(dm);
  return out;
}

std::string XgbRanker::LibraryVersion() {
  int major = 0, minor = 0, patch = 0;
  XGBoostVersion(&major, &minor, &patch);
  return std::to_string(major) + "." + std::to_string(minor) + "." + std::to_string(patch);
}

}  // namespace cwm
