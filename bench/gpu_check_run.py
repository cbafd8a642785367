"""``run`` of the GPU check (bench/gpu_check.py): load prepared artifacts with TVM (the full
package, or only its runtime), check them against the CPU references and time them on
``cuda(0)``; PyTorch on the same GPU as a reference latency when it is there."""
from __future__ import annotations

import json
import os
import sys
import time
from typing import TYPE_CHECKING

from gpu_check_model import compare, load_weights, tiny_resnet

if TYPE_CHECKING:
    from gpu_check_report import Report


def import_tvm(runtime_only: bool, smoke: bool = False):
    """``import tvm`` (falling back to runtime-only) and make sure CUDA modules can be loaded.

    ``smoke`` (no GPU, testing this script): load cwm's build-only driver stub instead."""
    if runtime_only:
        os.environ["TVM_USE_RUNTIME_LIB"] = "1"
    try:
        import tvm
    except Exception as error:  # noqa: BLE001 - e.g. no libtvm_compiler.so in a runtime bundle
        if runtime_only:
            raise
        print(f"[gpu_check] full TVM import failed ({error}); retrying runtime-only", flush=True)
        for name in [m for m in sys.modules if m == "tvm" or m.startswith("tvm.")]:
            del sys.modules[name]
        os.environ["TVM_USE_RUNTIME_LIB"] = "1"
        import tvm
    import tvm_ffi

    info = {"tvm": getattr(tvm, "__version__", "?"), "runtime_only": bool(getattr(tvm.base, "_RUNTIME_ONLY", False))}
    if tvm_ffi.get_global_func("ffi.Module.load_from_bytes.cuda", allow_missing=True) is None:
        if smoke:
            from cwm.cuda_toolchain import _ensure_runtime

            info["cuda_runtime_loaded_by_hand"] = _ensure_runtime()
        else:
            info["cuda_runtime_loaded_by_hand"] = _load_cuda_runtime()
    info["cuda_loader"] = tvm_ffi.get_global_func("ffi.Module.load_from_bytes.cuda", allow_missing=True) is not None
    return tvm, info


def _load_cuda_runtime() -> str:
    """Load libtvm_runtime(_extra, _cuda).so; preload libcudart from the toolkit or pip if needed."""
    import ctypes
    import glob
    from pathlib import Path

    from tvm.base import _LOADED_LIBS
    from tvm_ffi.libinfo import load_lib_ctypes

    lib_dir = Path(_LOADED_LIBS["tvm_runtime"]._name).resolve().parent
    for name in ("tvm_runtime_extra",):
        try:
            _LOADED_LIBS[name] = load_lib_ctypes(package="tvm", target_name=name, extra_lib_paths=[lib_dir],
                                                 mode="RTLD_LOCAL")
        except Exception:  # noqa: BLE001 - optional
            pass
    try:
        _LOADED_LIBS["tvm_runtime_cuda"] = load_lib_ctypes(package="tvm", target_name="tvm_runtime_cuda",
                                                           extra_lib_paths=[lib_dir], mode="RTLD_LOCAL")
        return "loaded"
    except Exception as first:  # noqa: BLE001 - try to find libcudart first
        roots = [os.environ.get("CUDA_HOME", ""), "/usr/local/cuda", *sorted(glob.glob("/usr/local/cuda-*"))]
        candidates = [os.path.join(r, sub, "libcudart.so.13") for r in roots if r for sub in ("lib64", "lib")]
        candidates += glob.glob(os.path.join(sys.prefix, "lib", "python*", "site-packages", "nvidia", "*", "lib",
                                             "libcudart.so.13"))
        for path in candidates:
            if os.path.exists(path):
                ctypes.CDLL(path, mode=ctypes.RTLD_GLOBAL)
                _LOADED_LIBS["tvm_runtime_cuda"] = load_lib_ctypes(
                    package="tvm", target_name="tvm_runtime_cuda", extra_lib_paths=[lib_dir], mode="RTLD_LOCAL")
                return f"loaded after preloading {path}"
        raise RuntimeError(f"cannot load libtvm_runtime_cuda.so: {first}") from None


def _time(evaluator, *args) -> dict:
    result = evaluator(*args)
    secs = [float(s) for s in result.results]
    secs_sorted = sorted(secs)
    return {"mean_ms": 1e3 * sum(secs) / len(secs), "median_ms": 1e3 * secs_sorted[len(secs) // 2],
            "min_ms": 1e3 * secs_sorted[0], "repeats": len(secs)}


def run(art_dir: str, report: Report, runtime_only: bool = False, smoke: bool = False) -> None:
    """Load, check and time the artifacts of ``art_dir`` on ``cuda(0)``."""
    import numpy as np

    with open(os.path.join(art_dir, "manifest.json")) as f:
        manifest = json.load(f)
    report.data["manifest"] = {k: manifest.get(k) for k in ("arch", "target", "created", "built_on")}
    holder = {}

    def do_import():
        holder["tvm"], info = import_tvm(runtime_only, smoke)
        return info

    if report.step("run.import_tvm", do_import) is None:
        return
    tvm = holder["tvm"]

    def device():
        dev = tvm.cuda(0)
        if not dev.exist:
            raise RuntimeError("no CUDA device visible to TVM")
        return {"name": dev.device_name, "compute_version": dev.compute_version,
                "multi_processors": dev.multi_processor_count, "arch_built": manifest.get("arch")}

    has_gpu = report.step("run.device", device) is not None
    dev = tvm.cuda(0)
    models = manifest.get("models", {})

    def load(name):
        return tvm.runtime.load_module(os.path.join(art_dir, models[name]["so"]))

    def matmul(name):
        entry = models[name]
        lib = load(name)
        if not has_gpu:
            return {"loaded": True, "executed": False}
        n = entry["n"]
        rng = np.random.default_rng(0)
        a = rng.standard_normal((n, n)).astype("float32")
        b = rng.standard_normal((n, n)).astype("float32")
        args = [tvm.runtime.tensor(a, dev), tvm.runtime.tensor(b, dev),
                tvm.runtime.tensor(np.zeros((n, n), "float32"), dev)]
        lib["main"](*args)
        dev.sync()
        check = compare(args[2].numpy(), a.astype("float64") @ b.astype("float64"))
        timing = _time(lib.time_evaluator("main", dev, number=10, repeat=5, min_repeat_ms=50), *args)
        timing["gflops"] = 2 * n ** 3 / (timing["median_ms"] * 1e-3) / 1e9
        if not check["match"]:
            raise AssertionError(f"matmul on the GPU differs from numpy: {check}")
        return {"numerics_vs_numpy": check, "timing": timing, "schedule": entry.get("build", {}).get("schedule_source")}

    def run_tiny_resnet():
        from tvm.runtime.vm import VirtualMachine

        entry = models["tiny_resnet"]
        lib = load("tiny_resnet")
        if not has_gpu:
            return {"loaded": True, "executed": False}
        io = np.load(os.path.join(art_dir, entry["io"]))
        vm = VirtualMachine(lib, dev)
        x = tvm.runtime.tensor(io["x"], dev)
        start = time.perf_counter()
        out = vm["main"](x)
        out = (out if hasattr(out, "numpy") else out[0]).numpy()
        first_ms = 1e3 * (time.perf_counter() - start)
        result = {"first_call_ms": first_ms, "output_shape": list(out.shape),
                  "vs_torch_cpu": compare(out, io["ref_torch"]),
                  "schedule": entry.get("build", {}).get("schedule_source")}
        if "ref_ort" in io.files:
            result["vs_onnxruntime_cpu_prepared"] = compare(out, io["ref_ort"])
        try:  # an independent reference computed on this machine
            import onnxruntime as ort

            sess = ort.InferenceSession(os.path.join(art_dir, entry["onnx"]), providers=["CPUExecutionProvider"])
            result["vs_onnxruntime_cpu_here"] = compare(out, sess.run(None, {"x": io["x"]})[0])
        except ImportError:
            result["vs_onnxruntime_cpu_here"] = "onnxruntime not installed"
        result["timing"] = _time(vm.time_evaluator("main", dev, number=20, repeat=5, min_repeat_ms=50), x)
        if not result["vs_torch_cpu"]["match"]:
            raise AssertionError(f"tiny ResNet on the GPU differs from PyTorch CPU: {result}")
        return result

    def torch_gpu():
        """PyTorch eager on the same GPU, same weights: a reference latency (and numerics)."""
        import torch

        entry = models["tiny_resnet"]
        io = np.load(os.path.join(art_dir, entry["io"]))
        if not torch.cuda.is_available():
            return {"skipped": "torch has no CUDA here"}
        model = load_weights(tiny_resnet(), os.path.join(art_dir, entry["weights"])).cuda()
        x = torch.from_numpy(io["x"]).cuda()
        with torch.no_grad():
            check = compare(model(x).cpu().numpy(), io["ref_torch"])
            for _ in range(10):
                model(x)
            torch.cuda.synchronize()
            times = []
            for _ in range(50):
                start = time.perf_counter()
                model(x)
                torch.cuda.synchronize()
                times.append(time.perf_counter() - start)
        times.sort()
        return {"torch": torch.__version__, "vs_torch_cpu": check, "median_ms": 1e3 * times[len(times) // 2],
                "min_ms": 1e3 * times[0]}

    def plain():
        """Does a stock (source-only) CUDA module load and run on a GPU host? (TVM_NOTES §6 open question)"""
        try:
            lib = load("matmul_plain")
        except Exception as error:  # noqa: BLE001 - the answer we want to record
            return {"loads": False, "error": str(error)[:1000]}
        if not has_gpu:
            return {"loads": True, "executed": False}
        try:
            return {"loads": True, "runs": True, **matmul("matmul_plain")}
        except Exception as error:  # noqa: BLE001
            return {"loads": True, "runs": False, "error": str(error)[:1000]}

    if "matmul" in models:
        report.step("run.matmul", matmul, "matmul")
    if "tiny_resnet" in models:
        report.step("run.tiny_resnet", run_tiny_resnet)
        if has_gpu:
            report.step("run.torch_gpu_reference", torch_gpu, optional=True)
    if "matmul_plain" in models:
        report.step("run.plain_source_only_module", plain, optional=True)
    needed = [k for k in ("run.import_tvm", "run.device", "run.matmul", "run.tiny_resnet")
              if not (smoke and k == "run.device")]
    report.data["ok"] = all(report.data["steps"].get(k, {}).get("ok") for k in needed)
