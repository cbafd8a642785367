"""Trace featurisation throughput: native core vs the Python reference, in one run.

Traces are the recorded real llvm/cuda traces of tests/data/traces.jsonl.gz.
"batch 1" featurises one trace per call (the cost of scoring a single candidate);
"batch 1024" one call of 1024 traces. Both single-threaded for a like-for-like
ratio; the native core with 2 threads is reported separately. Also measures the
TVMScript import fix (``import tvm.s_tir.tensor_intrin`` stock vs patched, each in a
fresh process), which the result schema of issue #2 asks for here.

    python bench/trace_features.py [--skip-import]   ->  bench/results/trace_features.json
"""
from __future__ import annotations

import argparse
import gzip
import json
import os
import sys
import tempfile
import time

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
from common import machine, today, write_result  # noqa: E402

DATA = os.path.join(HERE, "..", "tests", "data", "traces.jsonl.gz")


def rate(fn, traces, batch, min_s=1.0):
    """Traces per second of ``fn`` over ``traces`` in chunks of ``batch``; repeats for >= min_s."""
    chunks = [traces[i:i + batch] for i in range(0, len(traces), batch)]
    done, start = 0, time.perf_counter()
    while True:
        for c in chunks:
            fn(c)
            done += len(c)
        elapsed = time.perf_counter() - start
        if elapsed >= min_s:
            return done / elapsed


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--skip-import", action="store_true", help="keep import figures from an earlier run")
    args = ap.parse_args(argv)

    from cwm import native
    from cwm.actions import featurize_batch

    with gzip.open(DATA, "rt") as f:
        traces = [json.loads(line)["trace"] for line in f]
    pool = (traces * (1 + 1024 // len(traces)))[:1024]
    nat1 = lambda c: native.featurize_batch(c, num_threads=1)  # noqa: E731
    nat2 = lambda c: native.featurize_batch(c, num_threads=2)  # noqa: E731
    res = {"native": {}, "reference": {}, "native_2_threads": {}}
    for batch in (1, 1024):
        res["native"][str(batch)] = round(rate(nat1, pool, batch), 1)
        res["reference"][str(batch)] = round(rate(featurize_batch, pool, batch), 1)
        res["native_2_threads"][str(batch)] = round(rate(nat2, pool, batch), 1)
        print(f"batch {batch}: native {res['native'][str(batch)]}/s, reference {res['reference'][str(batch)]}/s, "
              f"ratio {res['native'][str(batch)] / res['reference'][str(batch)]:.1f}x", flush=True)

    out = {"traces_per_s": {"native": res["native"], "reference": res["reference"]},
           "native_2_threads_per_s": res["native_2_threads"],
           "speedup": {b: round(res["native"][b] / res["reference"][b], 2) for b in ("1", "1024")},
           "n_distinct_traces": len(traces)}
    previous = os.path.join(HERE, "results", "trace_features.json")
    if args.skip_import and os.path.exists(previous):
        out["import_tensor_intrin_s"] = json.load(open(previous)).get("import_tensor_intrin_s")
    else:
        import fast_tuning

        with tempfile.TemporaryDirectory() as d:
            imp = fast_tuning.measure_imports(d)
        out["import_tensor_intrin_s"] = {"before": imp["stock"].get("tensor_intrin_s"),
                                         "after": imp["patched"].get("tensor_intrin_s")}
    out.update(machine=machine(), date=today())
    print(json.dumps(out, indent=2))
    print("wrote", write_result("trace_features.json", out))


if __name__ == "__main__":
    main()
