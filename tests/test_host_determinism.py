"""The encoder gives the same z_0 bits whatever SIMD code path torch takes on this host.

CI runs on AMD EPYC (AVX2 / AVX-512) and Intel Xeon (AVX-512) hosts, and the same model and
inputs must give the same scores on all of them. torch's float32 kernels differ by code path
in the last bits, and the ranker's trees split exactly at training values, so a 3e-8 change of
z_0 moved fixture scores by up to 0.16 on an Intel host. ``StateEncoder.encode`` therefore
runs in float64 and rounds once. This test forces torch's other kernel families here
(``ATEN_CPU_CAPABILITY``), which stand in for another host's CPU, and asserts identical bits:
the comparison is exact on purpose, since any difference is what broke the fixture.
"""
from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
MODEL = ROOT / "tests" / "data" / "scorer_fixture" / "model"
SCRIPT = f"""
import hashlib, sys
import cwm
from cwm import workloads
from cwm.model.world_model import WorldModel
m = WorldModel.load({str(MODEL)!r})
h = hashlib.sha256()
for name in ("matmul_256", "conv2d_64x56x56_3x3", "softmax_128x768", "layer_norm_128x768"):
    z = m.z0(workloads.get(name))
    assert z.dtype.name == "float32", z.dtype
    h.update(z.tobytes())
import torch
print(torch.backends.cpu.get_cpu_capability(), h.hexdigest())
"""


def _z0_digest(capability: str | None) -> tuple[str, str]:
    env = dict(os.environ)
    env.pop("ATEN_CPU_CAPABILITY", None)
    if capability:
        env["ATEN_CPU_CAPABILITY"] = capability
    out = subprocess.run([sys.executable, "-c", SCRIPT], env=env, capture_output=True, text=True, timeout=300,
                         check=True).stdout.split()
    return out[-2], out[-1]


def test_z0_bits_do_not_depend_on_the_kernel_path():
    native_cap, native = _z0_digest(None)
    for cap in ("default", "avx2"):
        used, digest = _z0_digest(cap)
        assert digest == native, f"z0 differs between torch's {used} and {native_cap} kernels"


def test_encode_restores_the_weights_dtype():
    import torch

    from cwm.model.world_model import WorldModel

    enc = WorldModel.load(MODEL).encoder
    enc.train()
    before = {k: v.clone() for k, v in enc.state_dict().items()}
    z = enc.encode(["x = 1"])
    assert z.dtype == torch.float32 and enc.training
    for k, v in enc.state_dict().items():
        assert v.dtype == before[k].dtype and torch.equal(v, before[k]), k  # the round trip is exact
