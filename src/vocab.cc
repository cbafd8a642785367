#include "vocab.h"

#include <unordered_map>

namespace cwm {
namespace {

const char* const kPure[] = {
    "GetSBlock", "GetLoops", "GetChildBlocks", "GetProducers", "GetConsumers", "GetOutputBlocks",
    "SampleCategorical", "SamplePerfectTile", "SamplePartitionedTile", "SampleComputeLocation",
};

const char* const kTransform[] = {
    "Split", "Fuse", "Merge", "LoopPartition", "Reorder", "ReorderBlockIterVar", "AddUnitLoop",
    "Parallel", "Vectorize", "Bind", "Unroll",
    "CacheRead", "CacheWrite", "ReindexCacheRead", "ReindexCacheWrite", "CacheInplace", "CacheIndex",
    "ReIndex", "ReadAt", "WriteAt", "SetScope", "StorageAlign", "UnsafeSetDType", "TransformLayout",
    "TransformBlockLayout", "RollingBuffer", "UnsafeHideBufferAccess", "AnnotateBufferAccess",
    "ComputeAt", "ReverseComputeAt", "ComputeInline", "ReverseComputeInline", "FuseReductionEpilogue",
    "DecomposeReduction", "RFactor", "DecomposePadding", "PadEinsum", "Blockize", "Tensorize",
    "Annotate", "Unannotate", "EnterPostproc",
};

struct Tables {
  std::vector<std::string> kinds;
  std::unordered_map<std::string, int> id;
  std::unordered_map<std::string, bool> pure;
  Tables() {
    kinds = {"<pad>", "<unk>"};
    for (const char* k : kPure) kinds.push_back(k), pure[k] = true;
    for (const char* k : kTransform) kinds.push_back(k);
    for (size_t i = 0; i < kinds.size(); ++i) id[kinds[i]] = static_cast<int>(i);
  }
};

const Tables& T() {
  static const Tables t;
  return t;
}

}  // namespace

const std::vector<std::string>& ActionKinds() { return T().kinds; }

int KindId(const std::string& kind) {
  auto it = T().id.find(kind);
  return it == T().id.end() ? kUnkId : it->second;
}

bool IsPureKind(const std::string& kind) { return T().pure.count(kind) > 0; }

}  // namespace cwm
