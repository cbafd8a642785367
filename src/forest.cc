#include "forest.h"

#include <cmath>
#include <cstdlib>
#include <thread>

#include "json.h"

namespace cwm {
namespace {

const Json& Field(const Json& obj, const char* name) {
  if (const Json* v = Find(obj, name)) return *v;
  throw ForestError(std::string("XGBoost model: missing field '") + name + "'");
}

// XGBoost writes its model parameters as strings ("258", "[2.0801726E-10]").
std::string StringField(const Json& obj, const char* name) {
  const Json& v = Field(obj, name);
  if (!v.is_string()) throw ForestError(std::string("XGBoost model: '") + name + "' is not a string");
  return v.s;
}

long IntParam(const Json& obj, const char* name, long missing) {
  const Json* v = Find(obj, name);
  if (v == nullptr) return missing;
  if (!v->is_string()) throw ForestError(std::string("XGBoost model: '") + name + "' is not a string");
  return std::strtol(v->s.c_str(), nullptr, 10);
}

const std::vector<Json>& ArrayField(const Json& obj, const char* name, size_t size) {
  const Json& v = Field(obj, name);
  if (!v.is_array() || v.items.size() != size)
    throw ForestError(std::string("XGBoost model: tree field '") + name + "' is not an array of " +
                      std::to_string(size));
  return v.items;
}

}  // namespace

// Depth of the tree whose n nodes start at `offset`; refuses a node reached twice (a cycle).
int32_t Forest::TreeDepth(const std::vector<Node>& nodes, int32_t offset, size_t n) {
  std::vector<int32_t> depth(n, -1);
  std::vector<int32_t> stack{0};
  depth[0] = 0;
  int32_t deepest = 0;
  while (!stack.empty()) {
    int32_t i = stack.back();
    stack.pop_back();
    const Node& node = nodes[offset + i];
    if (node.left == offset + i) continue;  // a leaf
    for (int32_t child : {node.left - offset, node.right - offset}) {
      if (depth[child] != -1) throw ForestError("XGBoost model: a tree node is reached twice");
      depth[child] = depth[i] + 1;
      deepest = depth[child] > deepest ? depth[child] : deepest;
      stack.push_back(child);
    }
  }
  return deepest;  // unreachable nodes (deleted ones) are never visited
}

Forest Forest::FromJson(const std::string& model_json) {
  Json doc;
  try {
    doc = ParseJson(model_json);
  } catch (const JsonError& e) {
    throw ForestError(std::string("XGBoost model: ") + e.what());
  }
  const Json& learner = Field(doc, "learner");
  const Json& booster = Field(learner, "gradient_booster");
  if (StringField(booster, "name") != "gbtree")
    throw ForestError("XGBoost model: only gbtree boosters are read, not '" + StringField(booster, "name") + "'");
  const Json& params = Field(learner, "learner_model_param");
  if (IntParam(params, "num_target", 1) != 1 || IntParam(params, "num_class", 0) > 1)
    throw ForestError("XGBoost model: only single-output models are read");
  std::string base = StringField(params, "base_score");
  if (!base.empty() && base.front() == '[') base = base.substr(1, base.size() - 2);
  if (base.find(',') != std::string::npos) throw ForestError("XGBoost model: one base_score expected, got " + base);
  Forest f;
  f.base_score_ = static_cast<float>(std::strtod(base.c_str(), nullptr));
  f.num_features_ = static_cast<int>(IntParam(params, "num_feature", 0));
  const Json& trees = Field(Field(booster, "model"), "trees");
  if (!trees.is_array()) throw ForestError("XGBoost model: 'trees' is not an array");
  for (const Json& tree : trees.items) {
    const Json& tp = Field(tree, "tree_param");
    if (IntParam(tp, "size_leaf_vector", 1) > 1) throw ForestError("XGBoost model: vector leaves are not read");
    const Json& left = Field(tree, "left_children");
    if (!left.is_array() || left.items.empty()) throw ForestError("XGBoost model: a tree without nodes");
    size_t n = left.items.size();
    const auto& right = ArrayField(tree, "right_children", n);
    const auto& feature = ArrayField(tree, "split_indices", n);
    const auto& value = ArrayField(tree, "split_conditions", n);
    const auto& default_left = ArrayField(tree, "default_left", n);
    if (const Json* types = Find(tree, "split_type"))
      for (const Json& t : types->items)
        if (t.number() != 0) throw ForestError("XGBoost model: categorical splits are not read");
    int32_t offset = static_cast<int32_t>(f.nodes_.size());
    f.roots_.push_back(offset);
    for (size_t i = 0; i < n; ++i) {
      Node node{};
      auto l = static_cast<int64_t>(left.items[i].number()), r = static_cast<int64_t>(right[i].number());
      node.feature = static_cast<int32_t>(feature[i].number());
      node.value = static_cast<float>(value[i].number());
      node.default_left = default_left[i].number() != 0;
      if (l == -1) {
        node.left = node.right = offset + static_cast<int32_t>(i);
        node.feature = 0;
      } else {
        if (l <= 0 || r <= 0 || l >= static_cast<int64_t>(n) || r >= static_cast<int64_t>(n))
          throw ForestError("XGBoost model: a child index out of range");
        if (node.feature < 0 || node.feature >= f.num_features_)
          throw ForestError("XGBoost model: a split on feature " + std::to_string(node.feature) + " of " +
                            std::to_string(f.num_features_));
        node.left = offset + static_cast<int32_t>(l);
        node.right = offset + static_cast<int32_t>(r);
      }
      f.nodes_.push_back(node);
    }
    f.depths_.push_back(TreeDepth(f.nodes_, offset, n));
  }
  return f;
}

void Forest::PredictRange(const float* rows, size_t begin, size_t end, size_t cols, float* out) const {
  constexpr size_t kBlock = 64;  // rows that share a pass over the trees (the trees stay in cache)
  for (size_t b = begin; b < end; b += kBlock) {
    size_t e = b + kBlock < end ? b + kBlock : end;
    for (size_t i = b; i < e; ++i) out[i] = base_score_;
    int32_t at[kBlock];
    for (size_t t = 0; t < roots_.size(); ++t) {
      for (size_t i = b; i < e; ++i) at[i - b] = roots_[t];
      for (int32_t step = 0; step < depths_[t]; ++step) {
        for (size_t i = b; i < e; ++i) {  // independent rows: their loads overlap
          const Node& node = nodes_[at[i - b]];
          float v = rows[i * cols + node.feature];
          bool go_left = std::isnan(v) ? node.default_left != 0 : v < node.value;
          at[i - b] = go_left ? node.left : node.right;
        }
      }
      for (size_t i = b; i < e; ++i) out[i] += nodes_[at[i - b]].value;  // rounded to float, as XGBoost's buffer
    }
  }
}

void Forest::Predict(const float* rows, size_t n, size_t cols, float* out, int num_threads) const {
  if (static_cast<int>(cols) != num_features_)
    throw ForestError("rows of " + std::to_string(num_features_) + " features expected, got " + std::to_string(cols));
  size_t threads = num_threads > 1 ? static_cast<size_t>(num_threads) : 1;
  if (threads > n / 64) threads = n / 64 > 0 ? n / 64 : 1;  // a thread per 64 rows at least
  if (threads <= 1) {
    PredictRange(rows, 0, n, cols, out);
    return;
  }
  std::vector<std::thread> pool;
  size_t chunk = (n + threads - 1) / threads;
  for (size_t t = 0; t < threads; ++t) {
    size_t b = t * chunk, e = b + chunk < n ? b + chunk : n;
    if (b < e) pool.emplace_back([=] { PredictRange(rows, b, e, cols, out); });
  }
  for (auto& th : pool) th.join();
}

}  // namespace cwm
