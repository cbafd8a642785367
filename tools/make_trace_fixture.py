"""Regenerate tests/data/traces.jsonl.gz: real traces the replay/featurisation tests run on.

* ``llvm``: every measured candidate of a real MetaSchedule tuning run (cwm's fast
  settings, host CPU target) per workload, recorded by :mod:`cwm.dataset.recorder`
  together with the structural hash and TVMScript of the program that was built.
* ``cuda``: candidates sampled from the CUDA design space (post-processed, not
  measured: this machine has no GPU), with the hash/script of ``candidate.sch.mod``.

Usage: ``python tools/make_trace_fixture.py [--trials 48] [--cuda-samples 16]``.
Writes are per workload and atomic, so an interrupted run can be resumed.
"""
from __future__ import annotations

import argparse
import gzip
import json
import os
import tempfile
import time

import cwm  # noqa: F401  (installs the TVMScript speed fix)

WORKLOADS = ["matmul_256", "batch_matmul_12x128x128x64", "conv2d_64x56x56_3x3",
             "depthwise_conv2d_96x56x56_3x3", "softmax_128x768", "layer_norm_128x768"]
OUT = os.path.join(os.path.dirname(__file__), "..", "tests", "data", "traces.jsonl.gz")


def tune_llvm(name: str, trials: int, seed: int) -> list[dict]:
    from tvm.s_tir import meta_schedule as ms

    from cwm import workloads
    from cwm.dataset.recorder import make_recorder
    from cwm.tuning import FastSettings, host_target
    from cwm.tuning.pooled_builder import PooledBuilder

    records: list[dict] = []
    settings = FastSettings()
    callbacks = ms.measure_callback.MeasureCallback.create("default") + [make_recorder(records.extend)]
    with tempfile.TemporaryDirectory() as wd:
        ms.tune_tir(workloads.get(name), host_target(), wd, max_trials_global=trials,
                    num_trials_per_iter=settings.num_trials_per_iter, builder=PooledBuilder(2, timeout_sec=30),
                    runner=settings.runner(), strategy=settings.strategy(),
                    cost_model=ms.cost_model.XGBModel(num_tuning_cores=2), measure_callbacks=callbacks,
                    num_tuning_cores=2, seed=seed)
    return records


def sample_cuda(name: str, n: int, seed: int) -> list[dict]:
    import tvm_ffi
    from tvm.s_tir import meta_schedule as ms

    from cwm import workloads
    from cwm.actions.trace_io import trace_to_json
    from cwm.tuning import resolve_target

    target = resolve_target("cuda")
    ctx = ms.TuneContext(mod=workloads.get(name), target=target, space_generator="post-order-apply",
                         search_strategy=ms.search_strategy.EvolutionarySearch(
                             population_size=64, init_min_unmeasured=8, genetic_num_iters=1),
                         num_threads=2, rand_state=seed)
    ctx.generate_design_space()
    ctx.pre_tuning(max_trials=n, num_trials_per_iter=n, database=ms.database.MemoryDatabase(),
                   cost_model=ms.cost_model.RandomModel())
    cands = list(ctx.generate_measure_candidates() or [])
    ctx.post_tuning()
    return [{"task": name, "target": str(target),
             "trace": trace_to_json(c.sch.trace), "run_secs": None, "build_error": None, "run_error": None,
             "final_hash": int(tvm_ffi.structural_hash(c.sch.mod)), "final_script": c.sch.mod.script()}
            for c in cands]


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--trials", type=int, default=48)
    ap.add_argument("--cuda-samples", type=int, default=16)
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--out", default=OUT)
    args = ap.parse_args(argv)
    partial = args.out + ".partial.jsonl"
    done = set()
    if os.path.exists(partial):
        with open(partial) as f:
            done = {(r["workload"], r["source"]) for r in map(json.loads, f)}
    for name in WORKLOADS:
        for source, fn, n in (("tuning", tune_llvm, args.trials), ("sampled", sample_cuda, args.cuda_samples)):
            if (name, source) in done:
                continue
            t0 = time.time()
            recs = fn(name, n, args.seed)
            with open(partial, "a") as f:
                for r in recs:
                    f.write(json.dumps({"workload": name, "source": source, **r}) + "\n")
            print(f"{name} {source}: {len(recs)} traces in {time.time() - t0:.1f}s", flush=True)
    tmp = args.out + ".tmp"
    with open(partial) as f, gzip.open(tmp, "wt") as g:
        g.write(f.read())
    os.replace(tmp, args.out)
    os.remove(partial)
    print("wrote", args.out)


if __name__ == "__main__":
    main()
