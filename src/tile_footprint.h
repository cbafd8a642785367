// The tiled block's parallel grain and cache footprints, read from a candidate's trace JSON and its
// task's facts (the unscheduled workload's buffer accesses); mirrors cwm.model.tile_footprint (the spec).
// Unlike the other trace-column families it reads the trace text, not the featurised actions: the
// actions drop how many loops each post-processing GetLoops returned.
#pragma once
#include <cstdint>
#include <string>
#include <utility>
#include <vector>

#include "json.h"

namespace cwm {

struct TileAccess {  // one access of a buffer: [bytes per element, shape, dims]
  double elem_bytes = 4.0;
  std::vector<int64_t> shape;
  std::vector<bool> affine;                  // per dim: its index is affine in the block's variables
  std::vector<std::vector<int64_t>> coefs;   // per dim: the coefficients (when affine)
  std::vector<int64_t> extents;              // per dim: the region's extent
};

struct TileBlockFacts {
  std::vector<int64_t> extents;                 // iteration extents
  std::vector<std::vector<TileAccess>> buffers;  // per buffer, its accesses
};

struct TaskFacts {
  std::vector<std::pair<std::string, TileBlockFacts>> blocks;
  const TileBlockFacts* Find(const std::string& name) const;
};

// cwm.model.tile_footprint.task_facts's JSON; throws JsonError on another shape.
TaskFacts ParseTaskFacts(const Json& facts);
TaskFacts ParseTaskFacts(const std::string& text);

int NumTileFootprint();  // len(cwm.model.tile_footprint.NAMES)

// traces: trace JSON texts of one task -> out [traces.size(), NumTileFootprint()]; throws JsonError on a bad trace.
void TileFootprint(const std::vector<std::string>& traces, const TaskFacts& facts, int cores, float* out);

}  // namespace cwm
