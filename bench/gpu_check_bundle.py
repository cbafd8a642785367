"""``bundle`` of the GPU check (bench/gpu_check.py): this machine's TVM package without the
compiler library, small enough to carry to a device machine that has only a Python."""
from __future__ import annotations

import os


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
