#include "trace_structure.h"

#include <algorithm>
#include <cmath>
#include <cstddef>
#include <vector>

#include "featurize.h"
#include "vocab.h"

namespace cwm {
namespace {

constexpr int kMinArity = 2, kMaxArity = 5;  // ARITIES
constexpr int kScheduleStats = 12, kNestStats = 11;
constexpr int kKind = 0, kPhase = 1, kOperands = 2, kNumbersCount = 12;  // INT_COLUMNS positions
constexpr double kNoLocation = -2.0;

int SplitStats() {
  int n = 0;
  for (int a = kMinArity; a <= kMaxArity; ++a) n += 1 + 2 * a;
  return n;
}

using Tiles = std::vector<std::vector<double>>;  // one row of log2 factors per split

double Sum(const std::vector<double>& v) {  // left to right, as the spec
  double acc = 0;
  for (double x : v) acc += x;
  return acc;
}

// v[from, to) with both ends clipped to v (Python's slice of a list)
std::vector<double> Slice(const std::vector<double>& v, size_t from, size_t to) {
  from = std::min(from, v.size()), to = std::max(from, std::min(to, v.size()));
  return std::vector<double>(v.begin() + static_cast<std::ptrdiff_t>(from), v.begin() + static_cast<std::ptrdiff_t>(to));
}

struct KindIds {  // looked up once per batch, not per trace
  int split = KindId("Split"), fuse = KindId("Fuse"), parallel = KindId("Parallel");
  int vectorize = KindId("Vectorize"), compute_at = KindId("ComputeAt");
  int reverse_compute_at = KindId("ReverseComputeAt");
};

void One(const KindIds& ids, const int32_t* ints, const float* nums, int n, float* o) {
  const int split = ids.split, fuse = ids.fuse, parallel_id = ids.parallel;
  const int vectorize_id = ids.vectorize, compute_at = ids.compute_at;
  const int reverse_compute_at = ids.reverse_compute_at;
  auto row = [&](int t) { return ints + static_cast<size_t>(t) * kIntColumns; };
  auto num = [&](int t) { return nums + static_cast<size_t>(t) * kNumNumbers; };
  auto factors = [&](int t) {  // numbers after the two attribute flags
    const int k = std::min(row(t)[kNumbersCount], kNumNumbers);
    return k > 2 ? std::vector<float>(num(t) + 2, num(t) + k) : std::vector<float>();
  };
  Tiles by_arity[kMaxArity + 1];
  double extent = 0;
  std::vector<double> inner_share;
  for (int t = 0; t < n; ++t) {
    if (row(t)[kKind] != split || row(t)[kPhase] != 0) continue;
    std::vector<float> f = factors(t);
    const int a = static_cast<int>(f.size());
    if (a < kMinArity || a > kMaxArity || std::any_of(f.begin(), f.end(), [](float x) { return !(x > 0); })) continue;
    std::vector<double> lf(a);
    for (int i = 0; i < a; ++i) lf[i] = std::log2(static_cast<double>(f[i]));  // libm double log2, as the spec
    by_arity[a].push_back(lf);
    extent += Sum(lf);
    inner_share.push_back(lf.back() - Sum(lf));
  }
  std::vector<double> out;
  for (int a = kMinArity; a <= kMaxArity; ++a) {
    const Tiles& tiles = by_arity[a];
    out.push_back(static_cast<double>(tiles.size()));
    for (int p = 0; p < a; ++p) {
      double acc = 0;
      for (const auto& x : tiles) acc += x[p];
      out.push_back(acc);
    }
    for (int p = 0; p < a; ++p) {
      double m = 0;
      for (size_t i = 0; i < tiles.size(); ++i) m = i == 0 ? tiles[i][p] : std::max(m, tiles[i][p]);
      out.push_back(m);
    }
  }
  std::vector<int> par_fused, vec_fused;
  std::vector<double> pp_splits, locations;
  for (int t = 0; t < n; ++t) {
    const int kind = row(t)[kKind];
    if (kind == fuse && row(t)[kPhase] == 1 && t + 1 < n &&
        (row(t + 1)[kKind] == parallel_id || row(t + 1)[kKind] == vectorize_id)) {
      (row(t + 1)[kKind] == parallel_id ? par_fused : vec_fused).push_back(row(t)[kOperands]);
    } else if (kind == split && row(t)[kPhase] == 1) {
      double m = 0;
      bool any = false;
      for (float x : factors(t))
        if (x > 0) {
          double v = std::log2(static_cast<double>(x));
          m = any ? std::max(m, v) : v, any = true;
        }
      pp_splits.push_back(m);
    }
    if (kind == compute_at || kind == reverse_compute_at) locations.push_back(static_cast<double>(num(t)[2]));
  }
  auto max_int = [](const std::vector<int>& v) { return v.empty() ? 0 : *std::max_element(v.begin(), v.end()); };
  double fused_sum = 0;
  for (int v : par_fused) fused_sum += v;
  out.push_back(extent);
  out.push_back(inner_share.empty() ? 0.0 : Sum(inner_share) / inner_share.size());
  out.push_back(par_fused.size());
  out.push_back(max_int(par_fused));
  out.push_back(fused_sum);
  out.push_back(vec_fused.size());
  out.push_back(max_int(vec_fused));
  out.push_back(pp_splits.size());
  out.push_back(pp_splits.empty() ? 0.0 : *std::max_element(pp_splits.begin(), pp_splits.end()));
  out.push_back(locations.size());
  out.push_back(locations.empty() ? kNoLocation : *std::max_element(locations.begin(), locations.end()));
  out.push_back(locations.empty() ? kNoLocation : *std::min_element(locations.begin(), locations.end()));
  int spatial_arity = 0;
  for (int a = 3; a <= kMaxArity; ++a)
    if (!by_arity[a].empty()) spatial_arity = a;
  if (spatial_arity) {
    const Tiles &s = by_arity[spatial_arity], &r = by_arity[2];
    const int n_par = par_fused.empty() ? 0 : par_fused[0], n_vec = vec_fused.empty() ? 0 : vec_fused[0];
    std::vector<double> outer_levels, inner, all_s, below_outer_s, inner_levels_s;
    for (const auto& x : s) outer_levels.push_back(x[0]);
    for (const auto& x : s) outer_levels.push_back(x[1]);
    for (const auto& x : s) {
      inner.push_back(x.back());
      for (size_t i = 0; i < x.size(); ++i) {
        all_s.push_back(x[i]);
        if (i >= 1) below_outer_s.push_back(x[i]);
        if (i >= 2) inner_levels_s.push_back(x[i]);
      }
    }
    std::vector<double> all_r, inner_r;
    for (const auto& x : r) {
      all_r.insert(all_r.end(), x.begin(), x.end());
      inner_r.push_back(x.back());
    }
    const double par = Sum(Slice(outer_levels, 0, static_cast<size_t>(n_par)));
    const double spatial = Sum(all_s), reduction = Sum(all_r);
    const size_t vec_from = inner.size() - std::min(inner.size(), static_cast<size_t>(n_vec));
    out.push_back(1.0);
    out.push_back(par);
    out.push_back(spatial - par);
    out.push_back(n_vec ? Sum(Slice(inner, vec_from, inner.size())) : inner.back());
    out.push_back(inner.back());
    out.push_back(Sum(inner) + Sum(inner_r));
    out.push_back(spatial + reduction - par);
    out.push_back(n_par);
    out.push_back(n_vec);
    out.push_back(Sum(inner_levels_s));
    out.push_back(Sum(below_outer_s) + reduction);
  } else {
    out.insert(out.end(), kNestStats, 0.0);
  }
  for (size_t i = 0; i < out.size(); ++i) o[i] = static_cast<float>(out[i]);
}

}  // namespace

int NumStructureStats() { return SplitStats() + kScheduleStats + kNestStats; }

void StructureStats(const int32_t* ints, const float* numbers, const int32_t* lengths, int batch, int steps,
                    float* out) {
  const int width = NumStructureStats();
  const KindIds ids;
  for (int b = 0; b < batch; ++b) {
    const size_t at = static_cast<size_t>(b) * steps;
    One(ids, ints + at * kIntColumns, numbers + at * kNumNumbers, std::min(std::max(lengths[b], 0), steps),
        out + static_cast<size_t>(b) * width);
  }
}

}  // namespace cwm
