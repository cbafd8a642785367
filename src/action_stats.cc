#include "action_stats.h"

#include <algorithm>
#include <cmath>
#include <vector>

#include "featurize.h"
#include "vocab.h"

namespace cwm {
namespace {

const char* const kAnnotationKeys[] = {
    "meta_schedule.parallel", "meta_schedule.vectorize", "meta_schedule.unroll_explicit",
    "meta_schedule.unroll_implicit", "pragma_auto_unroll_max_step", "meta_schedule.thread_extent_low_inclusive",
    "meta_schedule.thread_extent_high_inclusive", "meta_schedule.cooperative_fetch",
};
constexpr int kNumAnnotations = 8;
constexpr int kSplitStats = 6;
constexpr int kKind = 0, kPhase = 1, kStr0 = 10, kNumbersCount = 12;  // INT_COLUMNS positions

}  // namespace

int NumSequenceStats() { return static_cast<int>(ActionKinds().size()) + 2 + kSplitStats + kNumAnnotations; }

void SequenceStats(const int32_t* ints, const float* numbers, const int32_t* lengths, int batch, int steps,
                   float* out) {
  const int nk = static_cast<int>(ActionKinds().size()), width = NumSequenceStats();
  const int split_id = KindId("Split"), annot_id = KindId("Annotate");
  uint32_t key_hash[kNumAnnotations];
  for (int j = 0; j < kNumAnnotations; ++j) key_hash[j] = Fnv1a(kAnnotationKeys[j]);
  for (int b = 0; b < batch; ++b) {
    float* o = out + static_cast<size_t>(b) * width;
    std::fill(o, o + width, 0.0f);
    const int n = std::min(lengths[b], steps);
    std::vector<double> logs, inner, outer;
    int phase = 0;
    for (int t = 0; t < n; ++t) {
      const int32_t* row = ints + (static_cast<size_t>(b) * steps + t) * kIntColumns;
      const float* num = numbers + (static_cast<size_t>(b) * steps + t) * kNumNumbers;
      if (row[kKind] >= 0 && row[kKind] < nk) o[row[kKind]] += 1.0f;
      phase += row[kPhase];
      if (row[kKind] == split_id) {
        int k = std::min(row[kNumbersCount], kNumNumbers);
        std::vector<double> lf;
        for (int i = 2; i < k; ++i)
          if (num[i] > 0) lf.push_back(static_cast<double>(std::log2(num[i])));  // float32 log2, as NumPy
        if (!lf.empty()) {
          logs.insert(logs.end(), lf.begin(), lf.end());
          inner.push_back(lf.back());
          outer.push_back(lf.front());
        }
      } else if (row[kKind] == annot_id && row[kNumbersCount] > 0) {
        for (int j = 0; j < kNumAnnotations; ++j) {
          if (static_cast<uint32_t>(row[kStr0]) != key_hash[j]) continue;
          float v = static_cast<float>(std::log2(1.0 + std::fabs(static_cast<double>(num[0]))));
          float& slot = o[nk + 2 + kSplitStats + j];
          slot = std::max(slot, v);
        }
      }
    }
    o[nk] = static_cast<float>(n);
    o[nk + 1] = static_cast<float>(phase);
    float* s = o + nk + 2;
    s[0] = static_cast<float>(inner.size());
    if (!logs.empty()) {
      auto mean = [](const std::vector<double>& v) {
        double acc = 0;
        for (double x : v) acc += x;
        return acc / v.size();
      };
      s[1] = static_cast<float>(mean(logs));
      s[2] = static_cast<float>(*std::max_element(logs.begin(), logs.end()));
      s[3] = static_cast<float>(mean(inner));
      s[4] = static_cast<float>(*std::max_element(inner.begin(), inner.end()));
      s[5] = static_cast<float>(*std::max_element(outer.begin(), outer.end()));
    }
  }
}

}  // namespace cwm
