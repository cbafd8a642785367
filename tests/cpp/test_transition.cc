// Unit tests of the native TransH rollout: padding, projection geometry, normalisation.
#include <cmath>

#include "check.h"
#include "featurize.h"
#include "transition.h"

using namespace cwm;

static TransitionWeights Zero(int dim, int hidden) {
  TransitionWeights w;
  w.dim = dim, w.hidden = hidden, w.hash_buckets = 4, w.small_vocab = 4, w.num_kinds = 5;
  w.kind.assign(5 * hidden, 0.f);
  w.hashed.assign(kHashColumns * 4 * hidden, 0.f);
  w.small.assign(kSmallColumns * 4 * hidden, 0.f);
  w.numbers_w.assign(hidden * kNumNumbers, 0.f);
  w.numbers_b.assign(hidden, 0.f);
  w.out_w.assign(2 * dim * hidden, 0.f);
  w.out_b.assign(2 * dim, 0.f);
  return w;
}

int main() {
  // w_raw = e0 (via out_b), d = e1: z -> z - z0 e0 + e1, then normalised
  TransitionWeights w = Zero(3, 2);
  w.out_b = {1, 0, 0, 0, 1, 0};
  w.Prepare();
  std::vector<float> z0 = {3, 0, 4, 3, 0, 4};
  std::vector<int32_t> ints(2 * 1 * kIntColumns, 0);
  std::vector<float> nums(2 * 1 * kNumNumbers, 0.f);
  ints[0] = 2;  // first candidate: one action; second: padding only
  std::vector<float> out(6);
  Rollout(w, z0.data(), ints.data(), nums.data(), 2, 1, false, out.data());
  float n = std::sqrt(1.f + 16.f);
  CHECK(std::fabs(out[0]) < 1e-6 && std::fabs(out[1] - 1 / n) < 1e-6 && std::fabs(out[2] - 4 / n) < 1e-6);
  CHECK(out[3] == 3 && out[4] == 0 && out[5] == 4);  // padding keeps the state
  w.normalize_state = false;
  Rollout(w, z0.data(), ints.data(), nums.data(), 2, 1, false, out.data());
  CHECK(out[0] == 0 && out[1] == 1 && out[2] == 4);
  TransitionWeights bad = Zero(3, 2);
  bad.out_b.pop_back();
  CHECK(Throws<std::invalid_argument>([&] { bad.Check(); }));
  TransitionWeights unprepared = Zero(3, 2);  // Rollout reads the transposed copies Prepare() makes
  CHECK(Throws<std::invalid_argument>(
      [&] { Rollout(unprepared, z0.data(), ints.data(), nums.data(), 2, 1, false, out.data()); }));
  return Finish("test_transition");
}
