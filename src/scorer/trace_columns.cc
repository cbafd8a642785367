#include "scorer/trace_columns.h"

#include "compute_locations.h"
#include "loop_tiles.h"
#include "vector_alignment.h"

namespace cwm {

const std::vector<TraceColumnFamily>& TraceColumnFamilies() {
  static const std::vector<TraceColumnFamily> families = {
      {"vector_alignment", NumVectorAlignment, VectorAlignment},
      {"compute_locations", NumComputeLocations, ComputeLocations},
      {"loop_tiles", NumLoopTiles, LoopTiles},
  };
  return families;
}

}  // namespace cwm
