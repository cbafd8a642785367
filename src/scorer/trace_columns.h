// The optional families of ranker columns read from a trace's actions alone, by manifest flag, in
// row order; mirrors cwm.model.trace_columns (FAMILIES).
#pragma once
#include <cstdint>
#include <vector>

namespace cwm {

struct TraceColumnFamily {
  const char* flag;  // the manifest's boolean flag and the Python module's name
  int (*width)();    // columns a trace gets
  // ints [batch, steps, kIntColumns], numbers [batch, steps, kNumNumbers], lengths [batch] -> out [batch, width()]
  void (*fill)(const int32_t* ints, const float* numbers, const int32_t* lengths, int batch, int steps, float* out);
};

const std::vector<TraceColumnFamily>& TraceColumnFamilies();

}  // namespace cwm
