"""What the end-to-end benchmark (bench/e2e.py) compares: the networks and methods, and each
network's example input, PyTorch module and ONNX file.

Standard library only at module level; the zoo (:mod:`cwm.frontends.zoo`) is imported by the
functions.
"""
from __future__ import annotations

import os

NETWORKS = ("resnet18", "resnet50", "mobilenet_v2", "bert_base", "gpt2", "opt_125m", "vit_b16", "llama_100m")
SMOKE_NETWORK = "tiny_cnn"
METHODS = ("cwm", "torch_eager", "torch_compile", "onnxruntime", "tvm_ms_xgb", "tvm_relax_pipeline", "cwm_unpacked",
           "cwm_gradient", "cwm_round_robin")
#: what runs without --methods. The cwm variants are ablations, run when asked for:
#: ``cwm_unpacked`` turns packed weights off, ``cwm_gradient`` / ``cwm_round_robin`` spread the
#: same network budget (trials x tasks) with the gradient / round-robin task scheduler
DEFAULT_METHODS = ("cwm", "torch_eager", "torch_compile", "onnxruntime", "tvm_ms_xgb")
#: ``tvm_relax_pipeline``: TVM's own static_shape_tuning_pipeline(cpu_weight_prepack=True) with its
#: defaults (bench/e2e_tvm_pipeline.py), at the same total budget
#: the methods that are compiled (tuned) by cwm.compile, and their cost_model=
COMPILED = {"cwm": "cwm", "tvm_ms_xgb": "xgb", "tvm_relax_pipeline": "xgb", "cwm_unpacked": "cwm",
            "cwm_gradient": "cwm", "cwm_round_robin": "cwm"}
#: cwm.compile's pack_weights= per compiled method (default True: the CPU default)
PACK_WEIGHTS = {"cwm_unpacked": False}
#: cwm.compile's task_scheduler= per compiled method (default: cwm's default)
TASK_SCHEDULER = {"cwm_gradient": "gradient", "cwm_round_robin": "round-robin"}
BASELINES = ("torch_eager", "torch_compile", "onnxruntime", "tvm_ms_xgb", "tvm_relax_pipeline")
#: distinct tuning tasks per network as cwm.compile partitions the ONNX file (counted 2026-11-30): for the ETA before a
#: network's first compile; the real count is recorded from the compile
TASKS_PRIOR = {"resnet18": 19, "resnet50": 28, "mobilenet_v2": 33, "bert_base": 15, "gpt2": 21,
               "opt_125m": 19, "vit_b16": 14, "llama_100m": 20, "tiny_cnn": 3}


def network_input(net: str):
    """The network's numpy example input and its ONNX input name."""
    if net == SMOKE_NETWORK:
        from cwm.frontends import tiny_cnn

        return tiny_cnn.example_input(0), tiny_cnn.INPUT_NAME
    from cwm.frontends import zoo

    spec = zoo.get(net)
    return spec.make_input(), spec.input_name


def network_module(net: str):
    """The eval-mode ``torch.nn.Module`` of ``net`` (random weights fixed by the zoo's seed)."""
    if net == SMOKE_NETWORK:
        from cwm.frontends import tiny_cnn

        return tiny_cnn.build_model(0)
    from cwm.frontends import zoo

    return zoo.get(net).build()


def network_onnx(net: str, cache_dir: str) -> str:
    """The network's ONNX file (exported once into ``cache_dir``, atomically; the zoo's
    fingerprint in the name means a changed definition is exported again)."""
    if net == SMOKE_NETWORK:
        from cwm.frontends import tiny_cnn

        path = os.path.join(cache_dir, "tiny_cnn-seed0.onnx")
        export = lambda p: tiny_cnn.export_onnx(p, 0)  # noqa: E731
    else:
        from cwm.frontends import importers, zoo

        path = importers.onnx_path(net, cache_dir)
        export = lambda p: zoo.to_onnx(net, p)  # noqa: E731
    if not os.path.exists(path):
        os.makedirs(cache_dir, exist_ok=True)
        tmp = f"{path}.{os.getpid()}.tmp.onnx"
        export(tmp)
        os.replace(tmp, path)
    return path
