// Loop-nest structure of a candidate read from its actions alone; mirrors
// cwm.model.trace_structure.structure_stats (the spec): tile factors by position in the
// multi-level tiling, the loops fused for Parallel / Vectorize, compute-at decisions.
#pragma once
#include <cstdint>

namespace cwm {

int NumStructureStats();  // len(cwm.model.trace_structure.NAMES)

// ints [batch, steps, kIntColumns], numbers [batch, steps, kNumNumbers], lengths [batch]
// -> out [batch, NumStructureStats()]
void StructureStats(const int32_t* ints, const float* numbers, const int32_t* lengths, int batch, int steps,
                    float* out);

}  // namespace cwm
