// Each compute-at location of a trace in trace order, read from its actions alone; mirrors
// cwm.model.compute_locations.compute_locations (the spec).
#pragma once
#include <cstdint>

namespace cwm {

int NumComputeLocations();  // len(cwm.model.compute_locations.NAMES)

// ints [batch, steps, kIntColumns], numbers [batch, steps, kNumNumbers], lengths [batch]
// -> out [batch, NumComputeLocations()]; -3 after a trace's last compute-at
void ComputeLocations(const int32_t* ints, const float* numbers, const int32_t* lengths, int batch, int steps,
                      float* out);

}  // namespace cwm
