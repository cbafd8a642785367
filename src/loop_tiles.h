// Which loop of the tiled nest gets which tile factors, read from a candidate's actions alone;
// mirrors cwm.model.loop_tiles.loop_tiles (the spec).
#pragma once
#include <cstdint>

namespace cwm {

int NumLoopTiles();  // len(cwm.model.loop_tiles.NAMES)

// ints [batch, steps, kIntColumns], numbers [batch, steps, kNumNumbers], lengths [batch]
// -> out [batch, NumLoopTiles()]; -1 where a trace has fewer loops or levels (all of it without a tiled nest)
void LoopTiles(const int32_t* ints, const float* numbers, const int32_t* lengths, int batch, int steps, float* out);

}  // namespace cwm
