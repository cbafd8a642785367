#include "compute_locations.h"

#include <algorithm>
#include <cstddef>

#include "featurize.h"
#include "vocab.h"

namespace cwm {
namespace {

constexpr int kPositions = 6;     // POSITIONS
constexpr float kNone = -3.0f;    // NONE
constexpr int kKind = 0;          // INT_COLUMNS position
constexpr int kLocationNumber = 2;  // the location's place among an action's numbers

}  // namespace

int NumComputeLocations() { return kPositions; }

void ComputeLocations(const int32_t* ints, const float* numbers, const int32_t* lengths, int batch, int steps,
                      float* out) {
  const int compute_at = KindId("ComputeAt"), reverse_compute_at = KindId("ReverseComputeAt");
  std::fill(out, out + static_cast<size_t>(batch) * kPositions, kNone);
  for (int b = 0; b < batch; ++b) {
    const size_t at = static_cast<size_t>(b) * steps;
    const int n = std::min(std::max(lengths[b], 0), steps);
    float* o = out + static_cast<size_t>(b) * kPositions;
    for (int t = 0, k = 0; t < n && k < kPositions; ++t) {
      const int kind = ints[(at + t) * kIntColumns + kKind];
      if (kind == compute_at || kind == reverse_compute_at) o[k++] = numbers[(at + t) * kNumNumbers + kLocationNumber];
    }
  }
}

}  // namespace cwm
