// Canonical actions -> int32/float32 arrays. Mirrors python/cwm/actions/featurize.py.
#pragma once
#include <cstdint>
#include <string>
#include <vector>

#include "canonical.h"

namespace cwm {

constexpr int kIntColumns = 14;  // see INT_COLUMNS in featurize.py
constexpr int kNumNumbers = 10;

uint32_t Fnv1a(const std::string& text);  // FNV-1a 32-bit, masked to 31 bits

// Rows of one canonical trace, appended to `ints` (kIntColumns each) and `numbers`.
void ActionRows(const CanonicalTrace& ct, std::vector<int32_t>* ints, std::vector<float>* numbers);

struct FeatureBatch {
  int batch = 0;
  int max_len = 0;
  std::vector<int32_t> ints;     // [batch, max_len, kIntColumns]
  std::vector<float> numbers;    // [batch, max_len, kNumNumbers]
  std::vector<int32_t> lengths;  // [batch]
  std::vector<int32_t> unknown;  // [batch]
};

// Featurises trace JSON texts; `num_threads` <= 1 runs on the calling thread.
// Throws TraceFormatError / JsonError naming the index of the first bad trace.
FeatureBatch FeaturizeBatch(const std::vector<std::string>& traces, int num_threads = 1);

}  // namespace cwm
