#include "vector_alignment.h"

#include <algorithm>
#include <cstddef>
#include <vector>

#include "featurize.h"
#include "vocab.h"

namespace cwm {
namespace {

constexpr int kLanes[] = {8, 16};  // LANES
constexpr int kMinSpatialArity = 3, kMaxArity = 5;
constexpr int kKind = 0, kPhase = 1, kOperands = 2, kNumbersCount = 12;  // INT_COLUMNS positions

struct KindIds {
  int split = KindId("Split"), fuse = KindId("Fuse"), vectorize = KindId("Vectorize");
};

void Fill(long long extent, int lanes, float* o) {  // (fill, whole) as the spec's _fill
  const long long vectors = (extent + lanes - 1) / lanes;
  o[0] = static_cast<float>(static_cast<double>(extent) / static_cast<double>(lanes * vectors));
  o[1] = extent % lanes == 0 ? 1.0f : 0.0f;
}

void One(const KindIds& ids, const int32_t* ints, const float* nums, int n, float* o) {
  auto row = [&](int t) { return ints + static_cast<size_t>(t) * kIntColumns; };
  auto num = [&](int t) { return nums + static_cast<size_t>(t) * kNumNumbers; };
  std::vector<std::vector<long long>> by_arity[kMaxArity + 1];
  for (int t = 0; t < n; ++t) {
    if (row(t)[kKind] != ids.split || row(t)[kPhase] != 0) continue;
    const int k = std::min(row(t)[kNumbersCount], kNumNumbers);
    const int a = k - 2;  // factors follow the two attribute flags
    if (a < kMinSpatialArity || a > kMaxArity) continue;
    std::vector<long long> f(a);
    bool known = true;
    for (int i = 0; i < a; ++i) {
      const float x = num(t)[2 + i];
      known = known && x > 0;
      f[i] = static_cast<long long>(x);
    }
    if (known) by_arity[a].push_back(f);
  }
  int arity = 0;
  for (int a = kMinSpatialArity; a <= kMaxArity; ++a)
    if (!by_arity[a].empty()) arity = a;
  if (!arity) return;  // the caller zeroed the row
  int vector_loops = 0;
  for (int t = 0; t + 1 < n; ++t)
    if (row(t)[kKind] == ids.fuse && row(t)[kPhase] == 1 && row(t + 1)[kKind] == ids.vectorize) {
      vector_loops = row(t)[kOperands];
      break;
    }
  std::vector<long long> inner;
  for (const auto& x : by_arity[arity]) inner.push_back(x.back());
  long long vector = inner.back();
  if (vector_loops > 0) {
    vector = 1;
    const size_t from = inner.size() - std::min(inner.size(), static_cast<size_t>(vector_loops));
    for (size_t i = from; i < inner.size(); ++i) vector *= inner[i];
  }
  const long long extents[] = {vector, inner.back()};
  for (int lanes : kLanes)
    for (long long e : extents) Fill(e, lanes, o), o += 2;
}

}  // namespace

int NumVectorAlignment() { return 2 * 2 * static_cast<int>(sizeof(kLanes) / sizeof(kLanes[0])); }

void VectorAlignment(const int32_t* ints, const float* numbers, const int32_t* lengths, int batch, int steps,
                     float* out) {
  const int width = NumVectorAlignment();
  const KindIds ids;
  std::fill(out, out + static_cast<size_t>(batch) * width, 0.0f);
  for (int b = 0; b < batch; ++b) {
    const size_t at = static_cast<size_t>(b) * steps;
    One(ids, ints + at * kIntColumns, numbers + at * kNumNumbers, std::min(std::max(lengths[b], 0), steps),
        out + static_cast<size_t>(b) * width);
  }
}

}  // namespace cwm
