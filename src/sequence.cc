#include "sequence.h"

#include <algorithm>
#include <cmath>
#include <limits>
#include <stdexcept>
#include <string>

#include "featurize.h"

namespace cwm {
namespace {

void Expect(bool ok, const std::string& what) {
  if (!ok) throw std::invalid_argument("sequence weights: " + what);
}

double Sigmoid(double x) { return 1.0 / (1.0 + std::exp(-x)); }

// y[o] = sum_i w[o, i] x[i] + b[o], o < rows, i < cols (summed over i in order)
void Affine(const std::vector<float>& w, const std::vector<float>& b, const double* x, int rows, int cols, double* y) {
  for (int o = 0; o < rows; ++o) {
    const float* wo = &w[static_cast<size_t>(o) * cols];
    double acc = 0;
    for (int i = 0; i < cols; ++i) acc += wo[i] * x[i];
    y[o] = acc + b[o];
  }
}

}  // namespace

void SequenceWeights::Check() const {
  const size_t D = dim;
  const TransitionWeights& e = embed;
  Expect(dim > 0 && e.hidden == dim, "the action embedding's width must be dim");
  Expect(e.hash_buckets > 0 && e.small_vocab > 0 && e.num_kinds > 0, "vocabulary sizes must be positive");
  Expect(e.kind.size() == static_cast<size_t>(e.num_kinds) * D, "kind must be [num_kinds, dim]");
  Expect(e.hashed.size() == static_cast<size_t>(kHashColumns) * e.hash_buckets * D, "hashed must be [6, buckets, dim]");
  Expect(e.small.size() == static_cast<size_t>(kSmallColumns) * e.small_vocab * D, "small must be [7, vocab, dim]");
  Expect(e.numbers_w.size() == D * kNumNumbers && e.numbers_b.size() == D, "numbers_w / numbers_b must be [dim, 10] / [dim]");
  Expect(ln_w.size() == D && ln_b.size() == D, "ln_w / ln_b must have dim entries");
  Expect(w_ih.size() == 3 * D * D && w_hh.size() == 3 * D * D, "w_ih / w_hh must be [3 dim, dim]");
  Expect(b_ih.size() == 3 * D && b_hh.size() == 3 * D, "b_ih / b_hh must have 3 dim entries");
  Expect(head_w.size() == 2 * D * D && head_b.size() == D, "head_w must be [dim, 2 dim], head_b [dim]");
  Expect(out_w.size() == D, "out_w must have dim entries");
}

void SequenceWeights::Prepare() {
  Check();
  const int D = dim;
  w_hh_t.assign(static_cast<size_t>(3) * D * D, 0.0f);
  for (int o = 0; o < 3 * D; ++o)
    for (int i = 0; i < D; ++i) w_hh_t[static_cast<size_t>(i) * 3 * D + o] = w_hh[static_cast<size_t>(o) * D + i];
}

namespace {

// gi = W_ih LayerNorm(embed(a)) + b_ih [3 dim] of one action row; x is scratch [dim].
void StepInput(const SequenceWeights& w, const int32_t* row, const float* nums, double* x, double* gi) {
  const int D = w.dim;
  ActionEmbedding(w.embed, row, nums, x);
  double mean = 0, var = 0;
  for (int i = 0; i < D; ++i) mean += x[i];
  mean /= D;
  for (int i = 0; i < D; ++i) var += (x[i] - mean) * (x[i] - mean);
  const double inv = 1.0 / std::sqrt(var / D + 1e-5);
  for (int i = 0; i < D; ++i) x[i] = (x[i] - mean) * inv * w.ln_w[i] + w.ln_b[i];
  Affine(w.w_ih, w.b_ih, x, 3 * D, D, gi);
}

}  // namespace

void SequenceScores(const SequenceWeights& w, const int32_t* ints, const float* numbers, const int32_t* lengths,
                    int batch, int steps, double* out, ActionParamCache* cache) {
  const int D = w.dim;
  std::vector<double> x(D), own(3 * D), gh(3 * D), h(D), sum(D), mx(D), pooled(2 * D), hidden(D);
  for (int b = 0; b < batch; ++b) {
    const int len = std::min(std::max(lengths[b], 0), steps);
    std::fill(h.begin(), h.end(), 0.0);
    std::fill(sum.begin(), sum.end(), 0.0);
    std::fill(mx.begin(), mx.end(), -std::numeric_limits<double>::infinity());
    for (int t = 0; t < len; ++t) {
      const size_t at = static_cast<size_t>(b) * steps + t;
      const int32_t* row = ints + at * kIntColumns;
      const float* nums = numbers + at * kNumNumbers;
      bool fresh = true;
      double* gi = cache ? cache->Entry(row, nums, 3 * static_cast<size_t>(D), &fresh) : own.data();
      if (fresh) StepInput(w, row, nums, x.data(), gi);
      // gh = b_hh + W_hh h, each output summed over i in order
      for (int o = 0; o < 3 * D; ++o) gh[o] = 0.0;
      for (int i = 0; i < D; ++i) {
        const float* wt = &w.w_hh_t[static_cast<size_t>(i) * 3 * D];
        const double hi = h[i];
        for (int o = 0; o < 3 * D; ++o) gh[o] += wt[o] * hi;
      }
      for (int o = 0; o < 3 * D; ++o) gh[o] += w.b_hh[o];
      for (int i = 0; i < D; ++i) {
        const double r = Sigmoid(gi[i] + gh[i]), z = Sigmoid(gi[D + i] + gh[D + i]);
        const double n = std::tanh(gi[2 * D + i] + r * gh[2 * D + i]);
        h[i] = (1.0 - z) * n + z * h[i];
        sum[i] += h[i];
        mx[i] = std::max(mx[i], h[i]);
      }
    }
    for (int i = 0; i < D; ++i) {
      pooled[i] = sum[i] / std::max(len, 1);
      pooled[D + i] = len > 0 ? mx[i] : 0.0;  // an empty trace pools to zeros
    }
    Affine(w.head_w, w.head_b, pooled.data(), D, 2 * D, hidden.data());
    double score = w.out_b;
    for (int i = 0; i < D; ++i) score += w.out_w[i] * std::max(hidden[i], 0.0);
    out[b] = score;
  }
}

}  // namespace cwm
