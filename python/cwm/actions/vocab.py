"""The action vocabulary: every MetaSchedule instruction kind, plus PAD and UNK.

The list is the specification the native core mirrors (``_native.action_kinds()``
must return exactly ``KINDS``; a test checks it). TVM has no API that lists
instruction kinds; this list was made by probing ``InstructionKind.get(name)``
for the 52 kinds registered in TVM 0.27 (``tools/probe_instruction_kinds.py``).

Pure kinds (``Get*``, ``Sample*``) never become actions of their own: ``Get*``
only names blocks and loops, and a ``Sample*`` decision is folded into the
action that consumes it. They are in the vocabulary so that every kind a trace
can hold has an id. A kind not in this list becomes ``UNK`` and is counted.
"""
from __future__ import annotations

PAD, UNK = "<pad>", "<unk>"

PURE_KINDS = (
    "GetSBlock", "GetLoops", "GetChildBlocks", "GetProducers", "GetConsumers", "GetOutputBlocks",
    "SampleCategorical", "SamplePerfectTile", "SamplePartitionedTile", "SampleComputeLocation",
)

TRANSFORM_KINDS = (
    # loops
    "Split", "Fuse", "Merge", "LoopPartition", "Reorder", "ReorderBlockIterVar", "AddUnitLoop",
    "Parallel", "Vectorize", "Bind", "Unroll",
    # caches and buffers
    "CacheRead", "CacheWrite", "ReindexCacheRead", "ReindexCacheWrite", "CacheInplace", "CacheIndex",
    "ReIndex", "ReadAt", "WriteAt", "SetScope", "StorageAlign", "UnsafeSetDType", "TransformLayout",
    "TransformBlockLayout", "RollingBuffer", "UnsafeHideBufferAccess", "AnnotateBufferAccess",
    # compute location
    "ComputeAt", "ReverseComputeAt", "ComputeInline", "ReverseComputeInline", "FuseReductionEpilogue",
    # reductions, padding, tensorization
    "DecomposeReduction", "RFactor", "DecomposePadding", "PadEinsum", "Blockize", "Tensorize",
    # annotations and the post-processing marker
    "Annotate", "Unannotate", "EnterPostproc",
)

KINDS = (PAD, UNK) + PURE_KINDS + TRANSFORM_KINDS
KIND_ID = {k: i for i, k in enumerate(KINDS)}
PAD_ID, UNK_ID = KIND_ID[PAD], KIND_ID[UNK]


def kind_id(kind: str) -> int:
    """Id of an instruction kind; ``UNK_ID`` for a kind this vocabulary does not know."""
    return KIND_ID.get(kind, UNK_ID)


def is_pure(kind: str) -> bool:
    return kind in PURE_KINDS
