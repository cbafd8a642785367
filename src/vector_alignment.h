// How well a candidate's vectorized loop fills the vector registers, read from its actions
// alone; mirrors cwm.model.vector_alignment.vector_alignment (the spec).
#pragma once
#include <cstdint>

namespace cwm {

int NumVectorAlignment();  // len(cwm.model.vector_alignment.NAMES)

// ints [batch, steps, kIntColumns], numbers [batch, steps, kNumNumbers], lengths [batch]
// -> out [batch, NumVectorAlignment()]; zeros for a trace without a tiled nest
void VectorAlignment(const int32_t* ints, const float* numbers, const int32_t* lengths, int batch, int steps,
                     float* out);

}  // namespace cwm
