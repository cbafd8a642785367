#include "loop_tiles.h"

#include <algorithm>
#include <cmath>
#include <cstddef>
#include <vector>

#include "featurize.h"
#include "vocab.h"

namespace cwm {
namespace {

constexpr int kLoops = 4, kLevels = 4;                    // LOOPS, LEVELS
constexpr int kReductionLoops = 3, kReductionLevels = 2;  // REDUCTION_LOOPS, REDUCTION_LEVELS
constexpr float kAbsent = -1.0f;                          // ABSENT
constexpr int kMinArity = 2, kMinSpatialArity = 3, kMaxArity = 5;
constexpr int kKind = 0, kPhase = 1, kNumbersCount = 12;  // INT_COLUMNS positions

using Tilings = std::vector<std::vector<float>>;

// The spec's _loop_columns: per loop from the last, log2 extent then log2 tiles innermost first.
float* LoopColumns(const Tilings& tilings, int loops, int levels, float* o) {
  for (int q = 0; q < loops; ++q) {
    if (q >= static_cast<int>(tilings.size())) {
      o = std::fill_n(o, 1 + levels, kAbsent);
      continue;
    }
    const std::vector<float>& f = tilings[tilings.size() - 1 - q];
    std::vector<double> logs(f.size());
    double extent = 0.0;
    for (size_t i = 0; i < f.size(); ++i) {
      logs[i] = std::log2(static_cast<double>(f[i]));  // libm double log2, as the spec
      extent += logs[i];                               // left to right, as the spec
    }
    *o++ = static_cast<float>(extent);
    for (int p = 0; p < levels; ++p)
      *o++ = p < static_cast<int>(logs.size()) ? static_cast<float>(logs[logs.size() - 1 - p]) : kAbsent;
  }
  return o;
}

void One(int split, const int32_t* ints, const float* nums, int n, float* o) {
  auto row = [&](int t) { return ints + static_cast<size_t>(t) * kIntColumns; };
  auto num = [&](int t) { return nums + static_cast<size_t>(t) * kNumNumbers; };
  Tilings known;  // trace_structure.known_tilings: sample-phase splits, arity 2..5, every factor > 0
  for (int t = 0; t < n; ++t) {
    if (row(t)[kKind] != split || row(t)[kPhase] != 0) continue;
    const int k = std::min(row(t)[kNumbersCount], kNumNumbers);
    if (k - 2 < kMinArity || k - 2 > kMaxArity) continue;
    std::vector<float> f(num(t) + 2, num(t) + k);
    if (std::all_of(f.begin(), f.end(), [](float x) { return x > 0; })) known.push_back(f);
  }
  int arity = 0;
  for (const auto& f : known)
    if (static_cast<int>(f.size()) >= kMinSpatialArity) arity = std::max(arity, static_cast<int>(f.size()));
  if (!arity) return;  // the caller filled the row with kAbsent
  Tilings spatial, reduction;
  for (const auto& f : known) {
    if (static_cast<int>(f.size()) == arity) spatial.push_back(f);
    if (f.size() == 2) reduction.push_back(f);
  }
  o = LoopColumns(spatial, kLoops, kLevels, o);
  LoopColumns(reduction, kReductionLoops, kReductionLevels, o);
}

}  // namespace

int NumLoopTiles() { return kLoops * (1 + kLevels) + kReductionLoops * (1 + kReductionLevels); }

void LoopTiles(const int32_t* ints, const float* numbers, const int32_t* lengths, int batch, int steps, float* out) {
  const int width = NumLoopTiles();
  const int split = KindId("Split");
  std::fill(out, out + static_cast<size_t>(batch) * width, kAbsent);
  for (int b = 0; b < batch; ++b) {
    const size_t at = static_cast<size_t>(b) * steps;
    One(split, ints + at * kIntColumns, numbers + at * kNumNumbers, std::min(std::max(lengths[b], 0), steps),
        out + static_cast<size_t>(b) * width);
  }
}

}  // namespace cwm
