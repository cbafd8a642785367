#include "transition.h"

#include <algorithm>
#include <cmath>
#include <cstring>
#include <thread>

#include "featurize.h"

namespace cwm {
namespace {

// ints columns (see INT_COLUMNS in python/cwm/actions/featurize.py)
constexpr int kHashCol[kHashColumns] = {3, 4, 5, 6, 10, 11};
constexpr int kSmallCol[kSmallColumns] = {1, 2, 7, 8, 9, 12, 13};

void Expect(bool ok, const std::string& what) {
  if (!ok) throw std::invalid_argument("transition weights: " + what);
}

}  // namespace

// One action -> its hidden pre-activation embed(a) [hidden].
void ActionEmbedding(const TransitionWeights& W, const int32_t* row, const float* nums, double* x) {
  const int H = W.hidden;
  int kind = std::min(std::max(row[0], 0), W.num_kinds - 1);
  double ln[kNumNumbers];
  for (int k = 0; k < kNumNumbers; ++k) {
    float v = nums[k];
    ln[k] = static_cast<double>(static_cast<float>((v > 0) - (v < 0)) * std::log2(1.0f + std::fabs(v)));
  }
  const float* ke = &W.kind[static_cast<size_t>(kind) * H];
  for (int h = 0; h < H; ++h) {
    double acc = ke[h] + W.numbers_b[h];
    const float* nw = &W.numbers_w[static_cast<size_t>(h) * kNumNumbers];
    for (int k = 0; k < kNumNumbers; ++k) acc += nw[k] * ln[k];
    x[h] = acc;
  }
  for (int j = 0; j < kHashColumns; ++j) {
    int64_t idx = static_cast<int64_t>(row[kHashCol[j]]) % W.hash_buckets;
    if (idx < 0) idx += W.hash_buckets;
    const float* e = &W.hashed[(static_cast<size_t>(j) * W.hash_buckets + idx) * H];
    for (int h = 0; h < H; ++h) x[h] += e[h];
  }
  for (int j = 0; j < kSmallColumns; ++j) {
    int64_t idx = std::min<int64_t>(std::max<int64_t>(static_cast<int64_t>(row[kSmallCol[j]]) + 1, 0),
                                    W.small_vocab - 1);
    const float* e = &W.small[(static_cast<size_t>(j) * W.small_vocab + idx) * H];
    for (int h = 0; h < H; ++h) x[h] += e[h];
  }
}

namespace {

// Hidden activation relu(x) [hidden] -> (w [dim], d [dim]) into wd [2 * dim]; y is scratch [2 * dim].
// y[o] = out_b[o] + sum_h out_w[o, h] x[h], summed over h in order (as one accumulator per o).
void ParamsOfHidden(const TransitionWeights& W, const double* x, double* y, double* wd) {
  const int H = W.hidden, D = W.dim;
  for (int o = 0; o < 2 * D; ++o) y[o] = W.out_b[o];
  for (int h = 0; h < H; ++h) {
    const float* ow = &W.out_wt[static_cast<size_t>(h) * 2 * D];
    const double xh = x[h];
    for (int o = 0; o < 2 * D; ++o) y[o] += ow[o] * xh;
  }
  double norm = 0;
  for (int i = 0; i < D; ++i) norm += y[i] * y[i];
  norm = std::max(std::sqrt(norm), 1e-6);
  double scale = 1;
  if (W.translation_bound > 0) {  // the translation's length capped at the bound
    double dn = 0;
    for (int i = 0; i < D; ++i) dn += y[D + i] * y[D + i];
    scale = W.translation_bound / std::max(std::sqrt(dn), W.translation_bound);
  }
  for (int i = 0; i < D; ++i) wd[i] = y[i] / norm, wd[D + i] = y[D + i] * scale;
}

// z <- n(z - (w . z) w + d)
void Step(const TransitionWeights& W, const double* wv, const double* dv, std::vector<double>& z) {
  const int D = W.dim;
  double dot = 0;
  for (int i = 0; i < D; ++i) dot += wv[i] * z[i];
  for (int i = 0; i < D; ++i) z[i] = z[i] - dot * wv[i] + dv[i];
  if (W.normalize_state) {
    double n = 0;
    for (int i = 0; i < D; ++i) n += z[i] * z[i];
    n = std::max(std::sqrt(n), 1e-6);
    for (int i = 0; i < D; ++i) z[i] /= n;
  }
}

void RolloutRange(const TransitionWeights& W, const float* z0, const int32_t* ints, int begin, int end, int steps,
                  bool all_states, const std::vector<const double*>& params, float* out) {
  const int D = W.dim, H = W.hidden;
  std::vector<double> z(D), x(W.state_dependent ? H : 0), y(2 * D), wd(2 * D);
  for (int b = begin; b < end; ++b) {
    for (int i = 0; i < D; ++i) z[i] = z0[static_cast<size_t>(b) * D + i];
    float* dst = all_states ? out + static_cast<size_t>(b) * (steps + 1) * D : out + static_cast<size_t>(b) * D;
    if (all_states)
      for (int i = 0; i < D; ++i) dst[i] = static_cast<float>(z[i]);
    for (int t = 0; t < steps; ++t) {
      const size_t at = static_cast<size_t>(b) * steps + t;
      if (ints[at * kIntColumns] != 0) {  // <pad> keeps the state
        if (W.state_dependent) {  // x = relu(embed(a) + S z) (summed over i in order), then (w, d)
          std::copy(params[at], params[at] + H, x.begin());
          for (int i = 0; i < D; ++i) {
            const float* sw = &W.state_wt[static_cast<size_t>(i) * H];
            const double zi = z[i];
            for (int h = 0; h < H; ++h) x[h] += sw[h] * zi;
          }
          for (int h = 0; h < H; ++h) x[h] = std::max(x[h], 0.0);
          ParamsOfHidden(W, x.data(), y.data(), wd.data());
          Step(W, wd.data(), wd.data() + D, z);
        } else {
          Step(W, params[at], params[at] + D, z);
        }
      }
      if (all_states)
        for (int i = 0; i < D; ++i) dst[static_cast<size_t>(t + 1) * D + i] = static_cast<float>(z[i]);
    }
    if (!all_states)
      for (int i = 0; i < D; ++i) dst[i] = static_cast<float>(z[i]);
  }
}

template <typename F>
void Parallel(int n, int num_threads, F fn) {
  int threads = std::max(1, std::min(num_threads, n / 8));
  if (threads <= 1) return fn(0, n);
  std::vector<std::thread> pool;
  int chunk = (n + threads - 1) / threads;
  for (int t = 0; t < threads; ++t) pool.emplace_back(fn, t * chunk, std::min(n, (t + 1) * chunk));
  for (auto& th : pool) th.join();
}

}  // namespace

void TransitionWeights::Check() const {
  Expect(dim > 0 && hidden > 0 && hash_buckets > 0 && small_vocab > 0 && num_kinds > 0, "sizes must be positive");
  Expect(std::isfinite(translation_bound) && translation_bound >= 0, "translation_bound must be finite and >= 0");
  Expect(kind.size() == static_cast<size_t>(num_kinds) * hidden, "kind must be [num_kinds, hidden]");
  Expect(hashed.size() == static_cast<size_t>(kHashColumns) * hash_buckets * hidden,
         "hashed must be [6, hash_buckets, hidden]");
  Expect(small.size() == static_cast<size_t>(kSmallColumns) * small_vocab * hidden,
         "small must be [7, small_vocab, hidden]");
  Expect(numbers_w.size() == static_cast<size_t>(hidden) * kNumNumbers, "numbers_w must be [hidden, 10]");
  Expect(numbers_b.size() == static_cast<size_t>(hidden), "numbers_b must be [hidden]");
  Expect(out_w.size() == static_cast<size_t>(2) * dim * hidden, "out_w must be [2 * dim, hidden]");
  Expect(out_b.size() == static_cast<size_t>(2) * dim, "out_b must be [2 * dim]");
  Expect(state_w.size() == (state_dependent ? static_cast<size_t>(hidden) * dim : 0),
         state_dependent ? "state_w must be [hidden, dim]" : "state_w must be empty unless state_dependent");
}

void TransitionWeights::Prepare() {
  Check();
  const size_t H = hidden, D = dim;
  out_wt.assign(H * 2 * D, 0.0f);
  for (size_t o = 0; o < 2 * D; ++o)
    for (size_t h = 0; h < H; ++h) out_wt[h * 2 * D + o] = out_w[o * H + h];
  state_wt.assign(state_dependent ? D * H : 0, 0.0f);
  for (size_t h = 0; h < (state_dependent ? H : 0); ++h)
    for (size_t i = 0; i < D; ++i) state_wt[i * H + h] = state_w[h * D + i];
}

double* ActionParamCache::Entry(const int32_t* row, const float* nums, size_t width, bool* fresh) {
  std::string key(reinterpret_cast<const char*>(row), sizeof(int32_t) * kIntColumns);
  key.append(reinterpret_cast<const char*>(nums), sizeof(float) * kNumNumbers);
  auto it = index_.find(key);
  *fresh = it == index_.end();
  if (*fresh) {
    if (index_.size() >= max_entries_) clear();
    const size_t off = params_.size();
    params_.resize(off + width);
    it = index_.emplace(std::move(key), off).first;
  }
  return params_.data() + it->second;
}

void Rollout(const TransitionWeights& W, const float* z0, const int32_t* ints, const float* numbers, int batch,
             int steps, bool all_states, float* out, int num_threads, ActionParamCache* cache) {
  if (W.out_wt.size() != W.out_w.size() || W.state_wt.size() != W.state_w.size())
    throw std::invalid_argument("transition weights: call Prepare() before Rollout()");
  ActionParamCache local;
  ActionParamCache& c = cache ? *cache : local;
  const int D = W.dim;
  const size_t entry = W.state_dependent ? static_cast<size_t>(W.hidden) : static_cast<size_t>(2) * D;
  const size_t n = static_cast<size_t>(batch) * steps;
  if (c.index_.size() > c.max_entries_) c.clear();  // bounded memory (max entries + one batch)
  // 1) distinct action rows -> cache slots (calling thread only)
  std::vector<size_t> slot(n, 0);
  std::vector<size_t> todo;  // cache offsets to compute, with the row that defines each
  std::vector<size_t> todo_row;
  std::string key(sizeof(int32_t) * kIntColumns + sizeof(float) * kNumNumbers, '\0');
  for (size_t at = 0; at < n; ++at) {
    if (ints[at * kIntColumns] == 0) continue;
    std::memcpy(&key[0], ints + at * kIntColumns, sizeof(int32_t) * kIntColumns);
    std::memcpy(&key[sizeof(int32_t) * kIntColumns], numbers + at * kNumNumbers, sizeof(float) * kNumNumbers);
    auto it = c.index_.find(key);
    if (it == c.index_.end()) {
      size_t off = c.params_.size();
      c.params_.resize(off + entry);
      it = c.index_.emplace(key, off).first;
      todo.push_back(off), todo_row.push_back(at);
    }
    slot[at] = it->second;
  }
  // 2) compute the new rows' entries (embed(a), and (w, d) of the plain form), in parallel
  Parallel(static_cast<int>(todo.size()), num_threads, [&](int begin, int end) {
    std::vector<double> x(W.hidden), y(2 * D);
    for (int k = begin; k < end; ++k) {
      size_t at = todo_row[k];
      double* dst = c.params_.data() + todo[k];
      if (W.state_dependent) {
        ActionEmbedding(W, ints + at * kIntColumns, numbers + at * kNumNumbers, dst);
      } else {
        ActionEmbedding(W, ints + at * kIntColumns, numbers + at * kNumNumbers, x.data());
        for (double& v : x) v = std::max(v, 0.0);
        ParamsOfHidden(W, x.data(), y.data(), dst);
      }
    }
  });
  // 3) roll out, in parallel over candidates
  std::vector<const double*> params(n, nullptr);
  for (size_t at = 0; at < n; ++at)
    if (ints[at * kIntColumns] != 0) params[at] = c.params_.data() + slot[at];
  Parallel(batch, num_threads, [&](int begin, int end) {
    RolloutRange(W, z0, ints, begin, end, steps, all_states, params, out);
  });
}

}  // namespace cwm
