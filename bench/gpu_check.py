#!/usr/bin/env python
"""GPU check: a tiny ResNet-18-like model and a matmul, built for CUDA by ``cwm.targets.cuda``,
loaded and run on a real GPU, checked against PyTorch / onnxruntime on the CPU, and timed.

Writes ``bench/results/gpu_check.json`` (and ``$OUT/gpu_check.json`` when ``$OUT`` is set, as on
a lent device machine). Every step is guarded: a failing step is recorded and the rest go on;
the JSON is always written. See docs/cuda.md.

Modes
-----
``all`` (default)
    Build and run in one process. Needs the full TVM (compiler), torch + onnx, nvcc (or
    cuda-bindings for NVRTC) and a GPU. The arch is read from the GPU.
``prepare --out DIR [--arch sm_90]``
    Build everything on a machine without a GPU (this one): ``.so`` files with real device code,
    the ONNX model, its weights, inputs and CPU reference outputs, and ``manifest.json``.
``run --artifacts DIR``
    Load, check and time prepared artifacts on the GPU. Needs only TVM's *runtime*: when
    ``import tvm`` fails or ``--runtime-only`` is given, ``TVM_USE_RUNTIME_LIB=1`` is set and
    TVM's CUDA runtime library is loaded by hand (runtime-only TVM skips it). torch and
    onnxruntime, when present, give extra references and a PyTorch-on-GPU timing.
``bundle --out DIR``
    Pack this machine's ``tvm`` package without ``libtvm_compiler.so`` into
    ``DIR/tvm_runtime.tgz`` (~6 MB; the runtime libraries are ~5 MB, the compiler's ~250 MB do not
    fit a device machine's 64 MiB carry limit). ``tvm_ffi`` has a compiled extension: fetch a
    wheel for the GPU machine's Python with the ``pip download`` command this prints.

Budget: ~1-2 min for ``all`` on a 16-core GPU host (nvcc dominates), ~1 min for ``prepare`` on
2 vCPUs, <1 min for ``run``; ``--budget-s`` (default 270) skips optional steps once spent.
"""
from __future__ import annotations

import argparse
import datetime
import json
import os
import platform
import shutil
import subprocess
import sys
import time
import traceback

HERE = os.path.dirname(os.path.abspath(__file__))
REPO = os.path.dirname(HERE)
RESULT = os.path.join(HERE, "results", "gpu_check.json")
#: default artifact folder (git-ignored: name it in the device tool's ``carry``)
ARTIFACTS = os.path.join(HERE, "gpu_artifacts")
if os.path.isdir(os.path.join(REPO, "python", "cwm")) and os.path.join(REPO, "python") not in sys.path:
    sys.path.insert(0, os.path.join(REPO, "python"))

#: tiny ResNet-18: BasicBlocks [2, 2, 2, 2] with these widths, on a 1x3xSxS input
WIDTHS = (16, 32, 64, 128)
IMAGE = 64
MATMUL_N = 1024
START = time.monotonic()


class Report:
    """The JSON result, built step by step; each step records ok/error/seconds."""

    def __init__(self, mode: str, budget_s: float):
        self.data = {"script": "bench/gpu_check.py", "mode": mode, "date": datetime.datetime.now().isoformat(),
                     "host": platform.node(), "python": platform.python_version(), "steps": {}, "ok": False}
        self.budget_s = budget_s

    def over_budget(self) -> bool:
        return time.monotonic() - START > self.budget_s

    def step(self, name: str, fn, *args, optional: bool = False, **kwargs):
        """Run ``fn``; store its dict result (or the error) under ``steps[name]``."""
        if optional and self.over_budget():
            self.data["steps"][name] = {"ok": False, "skipped": "time budget spent"}
            return None
        start = time.monotonic()
        try:
            value = fn(*args, **kwargs)
            entry = {"ok": True, **(value if isinstance(value, dict) else {})}
        except Exception as error:  # noqa: BLE001 - record and go on
            value = None
            entry = {"ok": False, "error": f"{type(error).__name__}: {error}"[:4000],
                     "traceback": traceback.format_exc()[-4000:]}
        entry["seconds"] = round(time.monotonic() - start, 3)
        self.data["steps"][name] = entry
        print(f"[gpu_check] {name}: {'ok' if entry['ok'] else 'FAILED'} ({entry['seconds']} s)"
              + ("" if entry["ok"] else f" {entry['error'][:300]}"), flush=True)
        return value

    def write(self, path: str = RESULT) -> list:
        self.data["total_s"] = round(time.monotonic() - START, 3)
        paths = [path] + ([os.path.join(os.environ["OUT"], "gpu_check.json")] if os.environ.get("OUT") else [])
        for p in paths:
            os.makedirs(os.path.dirname(os.path.abspath(p)), exist_ok=True)
            with open(p + ".tmp", "w") as f:
                json.dump(self.data, f, indent=2, default=str)
                f.write("\n")
            os.replace(p + ".tmp", p)
        return paths


# ----------------------------------------------------------------------------- model
def tiny_resnet(seed: int = 0):
    """ResNet-18 topology (stem, 4 stages x 2 BasicBlocks, avgpool, fc) with small widths, eval
    mode, random BatchNorm statistics (so BN is not the identity)."""
    import torch
    from torch import nn

    class Block(nn.Module):
        def __init__(self, cin, cout, stride):
            super().__init__()
            self.conv1 = nn.Conv2d(cin, cout, 3, stride, 1, bias=False)
            self.bn1 = nn.BatchNorm2d(cout)
            self.conv2 = nn.Conv2d(cout, cout, 3, 1, 1, bias=False)
            self.bn2 = nn.BatchNorm2d(cout)
            self.down = None
            if stride != 1 or cin != cout:
                self.down = nn.Sequential(nn.Conv2d(cin, cout, 1, stride, bias=False), nn.BatchNorm2d(cout))

        def forward(self, x):
            y = torch.relu(self.bn1(self.conv1(x)))
            y = self.bn2(self.conv2(y))
            return torch.relu(y + (x if self.down is None else self.down(x)))

    class TinyResNet(nn.Module):
        def __init__(self):
            super().__init__()
            w = WIDTHS
            self.stem = nn.Sequential(nn.Conv2d(3, w[0], 3, 1, 1, bias=False), nn.BatchNorm2d(w[0]), nn.ReLU())
            blocks, cin = [], w[0]
            for i, cout in enumerate(w):
                blocks += [Block(cin, cout, 1 if i == 0 else 2), Block(cout, cout, 1)]
                cin = cout
            self.blocks = nn.Sequential(*blocks)
            self.fc = nn.Linear(w[-1], 10)

        def forward(self, x):
            y = self.blocks(self.stem(x))
            return self.fc(torch.flatten(torch.nn.functional.adaptive_avg_pool2d(y, 1), 1))

    torch.manual_seed(seed)
    model = TinyResNet()
    generator = torch.Generator().manual_seed(seed + 1)
    with torch.no_grad():
        for m in model.modules():
            if isinstance(m, nn.BatchNorm2d):
                m.running_mean.copy_(torch.randn(m.num_features, generator=generator) * 0.1)
                m.running_var.copy_(torch.rand(m.num_features, generator=generator) + 0.5)
                m.weight.copy_(torch.rand(m.num_features, generator=generator) + 0.5)
                m.bias.copy_(torch.randn(m.num_features, generator=generator) * 0.1)
    return model.eval()


def load_weights(model, path: str):
    import numpy as np
    import torch

    with np.load(path) as arrays:
        model.load_state_dict({k: torch.from_numpy(arrays[k]) for k in arrays.files})
    return model.eval()


def compare(out, ref) -> dict:
    import numpy as np

    out, ref = np.asarray(out, dtype="float64"), np.asarray(ref, dtype="float64")
    if out.shape != ref.shape:
        return {"match": False, "shape": list(out.shape), "ref_shape": list(ref.shape)}
    abs_err = float(np.max(np.abs(out - ref))) if out.size else 0.0
    scale = float(np.max(np.abs(ref))) if ref.size else 0.0
    rel = abs_err / max(scale, 1e-12)
    return {"match": bool(rel <= 2e-3), "max_abs_err": abs_err, "max_rel_err": rel, "ref_max_abs": scale}


# ----------------------------------------------------------------------------- prepare (needs the compiler)
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


# ----------------------------------------------------------------------------- run (runtime only)
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
            from cwm.targets.cuda import _ensure_runtime

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


# ----------------------------------------------------------------------------- bundle
def bundle(out_dir: str) -> dict:
    """``out_dir/tvm_runtime.tgz``: this TVM's Python package without the compiler library."""
    import tarfile

    import tvm
    import tvm_ffi

    src = os.path.dirname(tvm.__file__)
    os.makedirs(out_dir, exist_ok=True)
    archive = os.path.join(out_dir, "tvm_runtime.tgz")
    skip = ("__pycache__", "libtvm_compiler.so")

    def keep(info):
        return None if any(part in skip or part.endswith(".pyc") for part in info.name.split("/")) else info

    with tarfile.open(archive, "w:gz") as tar:
        tar.add(src, arcname="tvm", filter=keep)
    version = getattr(tvm_ffi, "__version__", "0.1.14.post1")
    download = (f"python3 -m pip download --no-deps --only-binary=:all: --python-version 3.12 --implementation cp "
                f"--platform manylinux_2_28_x86_64 --platform manylinux_2_24_x86_64 -d {out_dir}/wheels "
                f"apache-tvm-ffi=={version}")
    install = (f"mkdir -p /tmp/site && tar xzf {out_dir}/tvm_runtime.tgz -C /tmp/site && python3 -m pip install -q "
               f"--no-deps --no-index --target /tmp/site {out_dir}/wheels/*.whl && export PYTHONPATH=/tmp/site")
    print(f"wrote {archive} ({os.path.getsize(archive) / 2**20:.1f} MiB)\n"
          f"fetch tvm_ffi for the GPU host's Python (3.12 on the lent H200 machines):\n  {download}\n"
          f"on the GPU host:\n  {install}\n  python3 bench/gpu_check.py run --artifacts DIR --runtime-only")
    return {"archive": archive, "mib": os.path.getsize(archive) / 2**20, "pip_download": download,
            "install_on_gpu_host": install}


# ----------------------------------------------------------------------------- main
def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("mode", nargs="?", default="all", choices=("all", "prepare", "run", "bundle"))
    parser.add_argument("--out", default=None,
                        help="prepare: output folder (default bench/gpu_artifacts); bundle: default "
                             "bench/gpu_artifacts/bundle")
    parser.add_argument("--artifacts", default=ARTIFACTS,
                        help="run: folder written by prepare")
    parser.add_argument("--arch", default="sm_90", help="prepare: GPU arch to build for (H200/H100: sm_90)")
    parser.add_argument("--runtime-only", action="store_true", help="run: use only TVM's runtime library")
    parser.add_argument("--smoke", action="store_true",
                        help="run without a GPU: check that the artifacts load (for testing this script)")
    parser.add_argument("--json", default=None,
                        help="where to write the JSON result (default bench/results/gpu_check.json; "
                             "gpu_check_prepare.json for prepare)")
    parser.add_argument("--budget-s", type=float, default=270.0, help="skip optional steps after this many seconds")
    args = parser.parse_args(argv)
    report = Report(args.mode, args.budget_s)
    args.out = args.out or os.path.join(ARTIFACTS, "bundle" if args.mode == "bundle" else "")
    if args.mode == "bundle":
        print(json.dumps(bundle(args.out), indent=2))
        return 0
    try:
        if args.mode == "prepare":
            prepare(args.out, args.arch, report)
            steps = report.data["steps"]
            report.data["ok"] = all(steps.get(k, {}).get("ok") for k in
                                    ("prepare.setup", "prepare.matmul", "prepare.tiny_resnet"))
            report.data["artifacts"] = os.path.abspath(args.out)
        elif args.mode == "run":
            run(args.artifacts, report, runtime_only=args.runtime_only, smoke=args.smoke)
        else:  # all: arch from the GPU, build into a temporary folder, run
            import tempfile

            def detect():
                import tvm

                dev = tvm.cuda(0)
                if not dev.exist:
                    raise RuntimeError("no CUDA device visible to TVM")
                return {"arch": "sm_" + dev.compute_version.replace(".", ""), "name": dev.device_name}

            found = report.step("all.detect_gpu", detect)
            if found is not None:
                import tvm

                out = tempfile.mkdtemp(prefix="cwm_gpu_check_")
                prepare(out, found["arch"], report, device=tvm.cuda(0))
                run(out, report)
                shutil.rmtree(out, ignore_errors=True)
    except Exception as error:  # noqa: BLE001 - the JSON must still be written
        report.data["fatal"] = f"{type(error).__name__}: {error}"
        report.data["traceback"] = traceback.format_exc()[-4000:]
    default_json = RESULT if args.mode != "prepare" else RESULT.replace(".json", "_prepare.json")
    for path in report.write(args.json or default_json):
        print(f"[gpu_check] wrote {path} (ok={report.data['ok']}, {report.data['total_s']} s)", flush=True)
    return 0 if report.data["ok"] else 1


if __name__ == "__main__":
    sys.exit(main())
