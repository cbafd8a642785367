// The optional families of ranker columns read from a trace, by manifest flag, in row order;
// mirrors cwm.model.trace_columns (FAMILIES, TASK_FAMILIES).
#pragma once
#include <cstdint>
#include <string>
#include <vector>

#include "tile_footprint.h"

namespace cwm {

struct TraceColumnFamily {
  const char* flag;  // the manifest's boolean flag and the Python module's name
  int (*width)();    // columns a trace gets
  // ints [batch, steps, kIntColumns], numbers [batch, steps, kNumNumbers], lengths [batch] -> out [batch, width()];
  // nullptr for a task family
  void (*fill)(const int32_t* ints, const float* numbers, const int32_t* lengths, int batch, int steps, float* out);
  // a task family's: each trace's tiled nest (read in the featuriser's parse), the task's facts and the
  // target's cores -> out [nests.size(), width()]
  void (*fill_task)(const std::vector<TiledNest>& nests, const TaskFacts& facts, int cores, float* out);
};

const std::vector<TraceColumnFamily>& TraceColumnFamilies();

}  // namespace cwm
