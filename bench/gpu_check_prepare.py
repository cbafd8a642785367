"""``prepare`` of the GPU check (bench/gpu_check.py): build the matmul and the tiny ResNet for a
CUDA arch with ``cwm.targets.cuda`` (needs the compiler, not a GPU) into an artifact folder
with the ONNX model, weights, inputs, CPU reference outputs and ``manifest.json``."""
from __future__ import annotations

import datetime
import json
import os
import platform
import subprocess
import sys
from typing import TYPE_CHECKING

from gpu_check_model import IMAGE, MATMUL_N, compare, tiny_resnet

if TYPE_CHECKING:
    from gpu_check_report import Report

REPO = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


def cuda_target_for(arch: str, device=None):
    """A cuda Target for ``arch`` (e.g. sm_90): from the GPU's attributes when ``device`` is
    given, else a registered tag's limits (H100 for sm_90*, RTX 4090 otherwise) with that arch."""
    import tvm

    if device is not None:
        return tvm.target.Target({"kind": "cuda", "arch": arch, "max_threads_per_block": device.max_threads_per_block,
                                  "max_num_threads": device.max_threads_per_block,
                                  "max_shared_memory_per_block": device.max_shared_memory_per_block,
                                  "thread_warp_size": device.warp_size, "registers_per_block": 65536})
    tag = "nvidia/nvidia-h100" if arch.startswith("sm_90") else "nvidia/geforce-rtx-4090"
    config = dict(tvm.target.Target(tag).export())
    config.pop("tag", None)
    config.pop("keys", None)
    config["arch"] = arch
    return tvm.target.Target(config)


def prepare(out_dir: str, arch: str, report: Report, device=None) -> dict:
    """Build the artifacts of :func:`run` into ``out_dir``; returns the manifest."""
    import numpy as np

    os.makedirs(out_dir, exist_ok=True)
    manifest = {"arch": arch, "models": {}, "created": datetime.datetime.now().isoformat(),
                "built_on": platform.node()}

    def setup():
        import tvm

        import cwm  # noqa: F401  (TVMScript start-up patch)
        from cwm.targets.cuda import enable_cuda_codegen

        target = cuda_target_for(arch, device)
        manifest["target"] = str(target)
        return {"target": str(target), "tvm": tvm.__version__, "codegen": enable_cuda_codegen(target)}

    if report.step("prepare.setup", setup) is None:
        return manifest
    target = cuda_target_for(arch, device)

    def matmul():
        from cwm import workloads
        from cwm.targets.cuda import build_cuda

        build = build_cuda(workloads.matmul(MATMUL_N), target)
        device_code = build.export_library(os.path.join(out_dir, "matmul.so"))
        manifest["models"]["matmul"] = {"kind": "tir", "so": "matmul.so", "n": MATMUL_N,
                                        "build": build.info.as_dict(), "device_code": device_code}
        return {"build": build.info.as_dict(), "device_code": device_code}

    def tiny_resnet_build():
        import onnx
        import torch

        from cwm.frontends.importers import from_onnx_model
        from cwm.targets.cuda import build_cuda

        model = tiny_resnet()
        np.savez(os.path.join(out_dir, "tiny_resnet_weights.npz"),
                 **{k: v.detach().numpy() for k, v in model.state_dict().items()})
        x = np.random.default_rng(0).standard_normal((1, 3, IMAGE, IMAGE)).astype("float32")
        with torch.no_grad():
            ref_torch = model(torch.from_numpy(x)).numpy()
        onnx_path = os.path.join(out_dir, "tiny_resnet.onnx")
        import warnings

        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            torch.onnx.export(model, (torch.from_numpy(x),), onnx_path, input_names=["x"], output_names=["y"],
                              opset_version=17, dynamo=False)
        io = {"x": x, "ref_torch": ref_torch}
        try:
            import onnxruntime as ort

            io["ref_ort"] = ort.InferenceSession(onnx_path, providers=["CPUExecutionProvider"]).run(
                None, {"x": x})[0]
        except ImportError:
            pass
        np.savez(os.path.join(out_dir, "tiny_resnet_io.npz"), **io)
        mod = from_onnx_model(onnx.load(onnx_path), {"x": list(x.shape)})
        holder["relax"], holder["io"] = mod, io
        build = build_cuda(mod, target)
        device_code = build.export_library(os.path.join(out_dir, "tiny_resnet.so"))
        manifest["models"]["tiny_resnet"] = {"kind": "relax", "so": "tiny_resnet.so", "io": "tiny_resnet_io.npz",
                                             "onnx": "tiny_resnet.onnx", "weights": "tiny_resnet_weights.npz",
                                             "input_shape": list(x.shape), "build": build.info.as_dict(),
                                             "device_code": device_code}
        return {"build": build.info.as_dict(), "device_code": device_code,
                "ort_vs_torch": compare(io["ref_ort"], ref_torch) if "ref_ort" in io else None}

    def plain_matmul():
        """Stock tvm.compile in a fresh process, no cwm hook: source-only where there is no driver."""
        path = os.path.join(out_dir, "matmul_plain.so")
        code = ("import sys, cwm, tvm, json\nfrom tvm.s_tir import dlight as dl\nfrom cwm import workloads\n"
                "from cwm.targets.cuda import has_device_code\n"
                f"t = tvm.target.Target(json.loads({json.dumps(json.dumps(dict(target.export()), default=list))}))\n"
                f"with t:\n    m = dl.ApplyDefaultSchedule(dl.gpu.Matmul(), dl.gpu.Fallback())(workloads.matmul({MATMUL_N}))\n"
                "tvm.compile(m, target=t).export_library(sys.argv[1])\n"
                "print('REPORT' + json.dumps(has_device_code(sys.argv[1])))\n")
        env = dict(os.environ, PYTHONPATH=os.pathsep.join([os.path.join(REPO, "python"),
                                                           os.environ.get("PYTHONPATH", "")]))
        proc = subprocess.run([sys.executable, "-c", code, path], capture_output=True, text=True, timeout=300,
                              env=env)
        if proc.returncode != 0:
            raise RuntimeError(proc.stderr[-2000:])
        device_code = json.loads(proc.stdout.split("REPORT", 1)[1])
        manifest["models"]["matmul_plain"] = {"kind": "tir", "so": "matmul_plain.so", "n": MATMUL_N, "plain": True,
                                              "device_code": device_code}
        return {"device_code": device_code}

    def cpu_numerics():
        """The imported model on this CPU (llvm) vs PyTorch: tells import bugs from GPU-codegen bugs."""
        import tvm
        from tvm.runtime.vm import VirtualMachine

        executable = tvm.compile(holder["relax"], target="llvm")
        out = VirtualMachine(executable, tvm.cpu())["main"](tvm.runtime.tensor(holder["io"]["x"]))
        out = (out if hasattr(out, "numpy") else out[0]).numpy()
        check = compare(out, holder["io"]["ref_torch"])
        if not check["match"]:
            raise AssertionError(f"TVM (llvm) differs from PyTorch on the imported model: {check}")
        return {"tvm_llvm_vs_torch_cpu": check}

    holder = {}
    report.step("prepare.matmul", matmul)
    report.step("prepare.tiny_resnet", tiny_resnet_build)
    if "relax" in holder:
        report.step("prepare.cpu_numerics", cpu_numerics, optional=True)
    report.step("prepare.plain_matmul", plain_matmul, optional=True)
    with open(os.path.join(out_dir, "manifest.json"), "w") as f:
        json.dump(manifest, f, indent=2, default=str)
    return manifest
