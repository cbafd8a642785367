"""``CompileState``: everything a compile pipeline produces, carried from pass to pass.

TVM passes map an ``IRModule`` to an ``IRModule``; a compile also produces things that are not
IR (the model's signature, its weights, the tuning database, the built library). Each cwm
pass is a real TVM module pass whose payload is the Relax ``IRModule`` (so TVM's
``PassContext`` instruments see every stage), and it records its other results on the
``CompileState`` it was created for. See docs/compile.md, "Design".
"""
from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from cwm.compile.options import CompileOptions


@dataclass
class CompileState:
    """The source model, the options, and what the passes produced so far."""

    source: Any
    options: CompileOptions
    #: the resolved ``tvm.target.Target``
    target: Any
    work_dir: str
    #: the current Relax module (the pipeline's payload)
    mod: Any = None
    #: inputs and outputs of ``main`` (:class:`~cwm.compile.specs.TensorSpec`)
    inputs: list = field(default_factory=list)
    outputs: list = field(default_factory=list)
    #: the model's weights, in the order ``main`` takes them: ``{name: numpy array}``
    params: dict = field(default_factory=dict)
    #: how the weights reach ``main``: "none" (no weights, or bound as constants), "inputs"
    #: (``main(*inputs, *params)``) or "lifted" (``main(*inputs, *main_transform_params(params))``)
    param_mode: str = "none"
    #: where the model came from ("onnx", "torch", "exported-program", "relax")
    frontend: str = ""
    #: the fused module before tuned schedules were applied (the untuned baseline)
    fused: Any = None
    #: the module cwm-partition legalized (so a failing build can name the Relax ops of a function,
    #: :mod:`cwm.compile.failure_origin`)
    legalize_input: Any = None
    #: MetaSchedule ``ExtractedTask`` list of ``main`` (cwm-partition)
    tasks: list = field(default_factory=list)
    #: the MetaSchedule database holding the tuning records (cwm-tune / cwm-apply-db)
    database: Any = None
    #: per-task tuning summary (:class:`cwm.compile.tuning.TuningReport`)
    tuning: Any = None
    #: fused functions whose weights are layout-free (cwm-layout-free), and the kernels whose weights
    #: were packed ahead of time (cwm-pack-weights: one ``*_weight_prepack`` function each)
    layout_free_functions: list = field(default_factory=list)
    packed_functions: list = field(default_factory=list)
    #: TIR functions that got a tuned schedule (cwm-apply-db): how many, and their names
    scheduled_functions: int = 0
    tuned_functions: list = field(default_factory=list)
    #: cuda: functions given TVM's default GPU schedule, and the ones that arrived scheduled
    #: otherwise (dispatched GPU kernels, ...), by cwm-gpu-default-schedules
    default_scheduled_functions: list = field(default_factory=list)
    pre_scheduled_functions: list = field(default_factory=list)
    #: the built ``relax`` executable / runtime module (cwm-build)
    executable: Any = None
    #: how it was built: "tvm.compile" or "cwm.targets.cuda.build_device_code"
    builder_name: str = ""
    #: what the builder reported (cuda: arch, compiler, binary format, schedule source)
    build_info: dict = field(default_factory=dict)
    #: names of the passes that ran, in order
    ran: list = field(default_factory=list)
    #: the pipeline as text (resolved for the target: what ran), the seconds per cwm pass (Timing
    #: instrument), the whole run's seconds
    pipeline: str = ""
    pass_seconds: dict = field(default_factory=dict)
    wall_s: float = 0.0
    #: the exception a pass raised (TVM's FFI turns it into a RuntimeError; the pipeline re-raises this)
    error: BaseException | None = None
