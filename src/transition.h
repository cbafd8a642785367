// Batched TransH rollout: z_t = n(z - (w_a . z) w_a + d_a), the native twin of
// cwm.model.transition.rollout_numpy (the specification) for trained weights. With
// state_dependent, (w, d) come from relu(embed(a_t) + S z_{t-1}) and change with the state.
#pragma once
#include <cstdint>
#include <stdexcept>
#include <string>
#include <unordered_map>
#include <vector>

namespace cwm {

struct TransitionWeights {
  int dim = 0, hidden = 0, hash_buckets = 0, small_vocab = 0, num_kinds = 0;
  bool normalize_state = true;
  bool state_dependent = false;
  double translation_bound = 0;  // > 0: d <- d * b / max(b, |d|) (TransitionConfig.translation_bound)
  std::vector<float> kind;       // [num_kinds, hidden]
  std::vector<float> hashed;     // [6, hash_buckets, hidden]
  std::vector<float> small;      // [7, small_vocab, hidden]
  std::vector<float> numbers_w;  // [hidden, 10]
  std::vector<float> numbers_b;  // [hidden]
  std::vector<float> out_w;      // [2 * dim, hidden]
  std::vector<float> out_b;      // [2 * dim]
  std::vector<float> state_w;    // [hidden, dim] when state_dependent, else empty
  void Check() const;            // throws std::invalid_argument on inconsistent sizes
  // Check(), then the transposed copies Rollout reads (out_w [hidden, 2 * dim], state_w [dim,
  // hidden]): its inner loops then run over independent outputs, which vectorize, and each
  // output still sums its terms in the order of the reference (the results are the same bits).
  void Prepare();
  std::vector<float> out_wt, state_wt;
};

constexpr int kHashColumns = 6;   // op0_hash op1_hash operands_hash op0_base_hash str0_hash str1_hash
constexpr int kSmallColumns = 7;  // phase n_operands op0_axis op0_part op0_depth n_numbers n_strings

// What depends only on the action row is computed once per distinct row and kept here across
// calls (bounded; cleared when full): the parameters (w, d) of the plain form, the hidden
// pre-activation embed(a) of the state-dependent one, the input side of a step of the sequence
// head (sequence.h). Not thread-safe: Rollout fills it on the calling thread before any worker
// thread reads it.
class ActionParamCache {
 public:
  explicit ActionParamCache(size_t max_entries = 1 << 16) : max_entries_(max_entries) {}
  size_t size() const { return index_.size(); }
  void clear() { index_.clear(), params_.clear(); }
  // The `width` doubles kept for the action row (row, nums), made (cleared first when full) if
  // missing: then *fresh is true and the caller fills them. Valid until the next call.
  double* Entry(const int32_t* row, const float* nums, size_t width, bool* fresh);

 private:
  friend void Rollout(const struct TransitionWeights&, const float*, const int32_t*, const float*, int, int, bool,
                      float*, int, ActionParamCache*);
  size_t max_entries_;
  std::unordered_map<std::string, size_t> index_;  // row bytes -> offset in params_
  std::vector<double> params_;                       // [w (dim), d (dim)] or [embed (hidden)] per entry
};

// One action row (kIntColumns ints, kNumNumbers numbers) -> its embedding embed(a) [hidden]: the
// sum of the kind, hashed and small-int embeddings and the linear map of the log numbers. Reads
// kind, hashed, small, numbers_w and numbers_b only (the sequence head shares it).
void ActionEmbedding(const TransitionWeights& W, const int32_t* row, const float* nums, double* x);

// Rolls `batch` states z0 [batch, dim] through actions ints [batch, steps, kIntColumns] and
// numbers [batch, steps, kNumNumbers]; writes z_T [batch, dim] or, with all_states, every
// state [batch, steps + 1, dim] into `out`. Rows with kind == <pad> keep the state.
void Rollout(const TransitionWeights& w, const float* z0, const int32_t* ints, const float* numbers, int batch,
             int steps, bool all_states, float* out, int num_threads = 1, ActionParamCache* cache = nullptr);

}  // namespace cwm
