#include "scorer/trace_columns.h"

#include "compute_locations.h"
#include "loop_tiles.h"
#include "tile_footprint.h"
#include "vector_alignment.h"

namespace cwm {

const std::vector<TraceColumnFamily>& TraceColumnFamilies() {
  static const std::vector<TraceColumnFamily> families = {
      {"vector_alignment", NumVectorAlignment, VectorAlignment, nullptr},
      {"compute_locations", NumComputeLocations, ComputeLocations, nullptr},
      {"loop_tiles", NumLoopTiles, LoopTiles, nullptr},
      {"tile_footprint", NumTileFootprint, nullptr, TileFootprintOfNests},
  };
  return families;
}

}  // namespace cwm
