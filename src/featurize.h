// Canonical actions -> int32/float32 arrays. Mirrors python/cwm/actions/featurize.py.
#pragma once
#include <cstdint>
#include <functional>
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

// Called with each trace's index and its parsed JSON, on the featuriser's worker threads (each index
// once), so that a reader of the trace text (a task family's) need not parse it again. What it throws
// is reported as the featuriser's own errors are.
using ParsedTraceHook = std::function<void(int index, const Json& trace)>;

// Featurises trace JSON texts; `num_threads` <= 1 runs on the calling thread.
// Throws TraceFormatError / JsonError naming the index of the first bad trace.
FeatureBatch FeaturizeBatch(const std::vector<std::string>& traces, int num_threads = 1,
                            const ParsedTraceHook& on_parsed = {});

}  // namespace cwm
