// Hardware features of a TVM target; mirrors cwm.model.action_stats.hardware_features (the spec):
// [num_cores, is_cpu, is_gpu, log2(1 + max_threads_per_block), log2(1 + l2_cache_size_bytes)].
#pragma once
#include <array>
#include <string>

#include "json.h"

namespace cwm {

constexpr int kNumHardwareFeatures = 5;  // len(cwm.model.action_stats.HW_FEATURES)
using HardwareFeatures = std::array<float, kNumHardwareFeatures>;

// From a target JSON object (as Target.export() / json.loads of the target text), or a JSON
// string holding that text. Throws ScorerError on anything else.
HardwareFeatures HardwareFeaturesOf(const Json& target);
HardwareFeatures HardwareFeaturesOf(const std::string& target_json);

}  // namespace cwm
