"""Builds the cwm package and its private native module cwm._native (setuptools + pybind11).

The C++ sources come from src/sources.txt, the same list CMakeLists.txt reads.
"""
import importlib.util
from pathlib import Path

from pybind11.setup_helpers import Pybind11Extension, build_ext
from setuptools import find_packages, setup

ROOT = Path(__file__).resolve().parent
SRC = ROOT / "src"


def core_sources():
    lines = (SRC / "sources.txt").read_text().splitlines()
    return [f"src/{s.strip()}" for s in lines if s.strip() and not s.startswith("#")]


def sources_hash():
    spec = importlib.util.spec_from_file_location("native_sources", ROOT / "python/cwm/native_sources.py")
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    return mod.sources_hash(SRC)


ext = Pybind11Extension(
    "cwm._native",
    core_sources() + ["src/bindings.cc"],
    include_dirs=["src"],
    cxx_std=17,
    define_macros=[("CWM_SOURCES_HASH", f'"{sources_hash()}"')],
    extra_compile_args=["-O3"],
)

setup(
    name="cwm",
    version="0.1.0",
    description="Compiler world model for tensor-program auto-scheduling on TVM MetaSchedule",
    package_dir={"": "python"},
    packages=find_packages("python"),
    # default_model/: the shipped world model (cwm.model.default_model_dir), when present
    package_data={"cwm": ["_sitecustomize/*.py", "default_model/**/*"]},
    ext_modules=[ext],
    cmdclass={"build_ext": build_ext},
    python_requires=">=3.10",
    entry_points={"console_scripts": ["cwm=cwm.cli:main"]},
)
