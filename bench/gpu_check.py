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

This file is the command line and the JSON report; the modes live next to it:
``gpu_check_model`` (the models, the numerics comparison), ``gpu_check_prepare``,
``gpu_check_run`` and ``gpu_check_bundle``. Their names are importable from here too.
"""
from __future__ import annotations

import argparse
import json
import os
import shutil
import sys
import traceback

HERE = os.path.dirname(os.path.abspath(__file__))
REPO = os.path.dirname(HERE)
#: default artifact folder (git-ignored: name it in the device tool's ``carry``)
ARTIFACTS = os.path.join(HERE, "gpu_artifacts")
if os.path.isdir(os.path.join(REPO, "python", "cwm")) and os.path.join(REPO, "python") not in sys.path:
    sys.path.insert(0, os.path.join(REPO, "python"))
if HERE not in sys.path:
    sys.path.insert(0, HERE)

# re-exported: the parts' names, importable from here as before
from gpu_check_model import IMAGE, MATMUL_N, WIDTHS, compare, load_weights, tiny_resnet  # noqa: E402,F401
from gpu_check_prepare import cuda_target_for, prepare  # noqa: E402,F401
from gpu_check_run import _load_cuda_runtime, _time, import_tvm, run  # noqa: E402,F401
from gpu_check_bundle import bundle  # noqa: E402,F401
from gpu_check_report import RESULT, START, Report  # noqa: E402,F401


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
