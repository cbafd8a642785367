// The sequence head's scorer: a GRU over the action rows, pooled, then an MLP -> one score per
// candidate. The native twin of the PyTorch module of
// python/cwm/model/baselines/sequence_model.py (encoder "gru", one layer, inference), which is
// the specification; it runs in double and sums in a fixed order, so a score is the same on
// every host.
#pragma once
#include <cstdint>
#include <vector>

#include "transition.h"

namespace cwm {

struct SequenceWeights {
  // The action embedding (kind, hashed, small, numbers_w, numbers_b; hidden = dim), the TransH's.
  TransitionWeights embed;
  int dim = 0;
  std::vector<float> ln_w, ln_b;        // [dim]: LayerNorm (eps 1e-5)
  std::vector<float> w_ih, w_hh;        // [3 dim, dim]: gates r, z, n, as torch.nn.GRU
  std::vector<float> b_ih, b_hh;        // [3 dim]
  std::vector<float> head_w, head_b;    // [dim, 2 dim], [dim]: on [mean, max] of the hidden states
  std::vector<float> out_w;             // [dim]
  float out_b = 0.0f;
  void Check() const;  // throws std::invalid_argument on inconsistent sizes
  // Check(), then the transposed copy w_hh_t [dim, 3 dim] the recurrence reads: its inner loop
  // runs over independent outputs, which vectorizes, and each output still sums its terms in
  // order (the same bits as the row-major loop).
  void Prepare();
  std::vector<float> w_hh_t;
};

// Scores of `batch` candidates: ints [batch, steps, kIntColumns], numbers [batch, steps,
// kNumNumbers], lengths [batch] valid steps each (the rest is padding); writes out [batch].
// Weights must be Prepare()d. The input side of a step, W_ih LayerNorm(embed(a)) + b_ih [3 dim],
// depends on the action row alone: `cache`, when given, keeps it per distinct row across calls.
void SequenceScores(const SequenceWeights& w, const int32_t* ints, const float* numbers, const int32_t* lengths,
                    int batch, int steps, double* out, ActionParamCache* cache = nullptr);

}  // namespace cwm
