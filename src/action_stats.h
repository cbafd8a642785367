// Ranker features of action sequences; mirrors cwm.model.action_stats.sequence_stats (the spec).
#pragma once
#include <cstdint>

namespace cwm {

int NumSequenceStats();  // len(cwm.model.action_stats.NAMES)

// ints [batch, steps, kIntColumns], numbers [batch, steps, kNumNumbers], lengths [batch]
// -> out [batch, NumSequenceStats()]
void SequenceStats(const int32_t* ints, const float* numbers, const int32_t* lengths, int batch, int steps,
                   float* out);

}  // namespace cwm
