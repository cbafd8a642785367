// The tiled block's parallel grain and cache footprints, read from a candidate's trace JSON and its
// task's facts (the unscheduled workload's buffer accesses); mirrors cwm.model.tile_footprint (the spec).
// Unlike the other trace-column families it reads the parsed trace, not the featurised actions: the
// actions drop how many loops each post-processing GetLoops returned. On the scoring path the
// featuriser's parse hands each trace to ReadTiledNest (FeaturizeBatchWithNests below), so a trace is
// parsed once.
#pragma once
#include <cstdint>
#include <string>
#include <utility>
#include <vector>

#include "featurize.h"
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

struct NestLoop {
  int source;    // the tiled block's loop it was split from
  int position;  // its tile position in that split
  int64_t factor;
};

// What the columns read from one trace: the spec's tiled_nest (found = false where it returns None).
struct TiledNest {
  bool found = false;
  bool named = false;  // a GetSBlock named the tiled block
  std::string name;
  std::vector<NestLoop> loops;
  int parallel = 0;  // the spec's parallel_loops
};

// One parsed trace's nest; throws JsonError on a trace that is not [instructions, decisions].
TiledNest ReadTiledNest(const Json& trace);

// The featuriser's batch (featurize.h), each trace's nest read in the same parse: with `nests`, it is
// resized to traces.size() and nests[i] is trace i's. Throws what FeaturizeBatch throws.
FeatureBatch FeaturizeBatchWithNests(const std::vector<std::string>& traces, int num_threads,
                                     std::vector<TiledNest>* nests);

int NumTileFootprint();  // len(cwm.model.tile_footprint.NAMES)

// nests of one task's traces -> out [nests.size(), NumTileFootprint()].
void TileFootprintOfNests(const std::vector<TiledNest>& nests, const TaskFacts& facts, int cores, float* out);

// traces: trace JSON texts of one task (parsed here) -> out [traces.size(), NumTileFootprint()]; throws
// JsonError naming the first bad trace.
void TileFootprint(const std::vector<std::string>& traces, const TaskFacts& facts, int cores, float* out);

}  // namespace cwm
