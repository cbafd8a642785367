"""Does breadth close the generalization gap? A decoder from the rollout to physical facts,
fitted on more and more generated workloads, scored on workloads it never saw (issue #12).

For each corpus workload (``cwm corpus build``), the shipped world model gives ``z_0`` and the
rollout ``ẑ_T`` of every sampled trajectory; the target is the pooled per-store features of
the real final state. A ridge decoder (:class:`cwm.model.probe.StoreDecoder`) is fitted on N
training workloads and its standardized error (1.0 = predicting the mean) is reported on the
fitting workloads and on a fixed set of held-out generated workloads, per family. Nothing is
measured; the held-out tasks of the measured dataset are never in the corpus.

    PYTHONPATH=python .venv/bin/python bench/corpus_breadth.py [--corpus data/corpus]
"""
from __future__ import annotations

import argparse
import json
import platform
import sys
import time
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "bench"))


def corpus_tasks(corpus: Path, model, log=print) -> list[dict]:
    import tvm

    from cwm.corpus.generator import build

    manifest = json.loads((corpus / "manifest.json").read_text())
    listing = {f"{e['index']:05d}": e for e in manifest["listing"]}
    target = manifest["target"]
    tasks = []
    for path in sorted((corpus / "shards").glob("*.npz")):
        if path.name.endswith(".tmp.npz"):
            continue
        entry = listing[path.name.split("-", 1)[0]]
        with np.load(path, allow_pickle=False) as f:
            traces, store = list(f["traces"]), f["store"][:, -1].astype(np.float32)
            saved = str(f["workload"]) if "workload" in f.files else None
        ok = np.isfinite(store).all(1) if store.shape[-1] else np.zeros(len(traces), bool)
        if ok.sum() < 2:
            continue
        mod = tvm.ir.load_json(saved) if saved else build(entry["family"], entry["params"])
        fb = model.featurize(mod, [t for t, k in zip(traces, ok) if k])
        z0 = model.z0(mod)
        zt = model.rollout(z0, fb)
        stats = model.raw_features(zt, fb, target, z0)[:, len(z0):]
        tasks.append({"key": entry["key"], "family": entry["family"], "z0": z0, "zt_hat": zt, "stats": stats,
                      "store": store[ok]})
        if len(tasks) % 50 == 0:
            log(f"{len(tasks)} workloads read")
    return tasks


def zoo_transfer(pools: dict, model, args, log=print) -> dict:
    """A decoder fitted on each pool of generated workloads, applied to the measured dataset's
    *training* tasks (real network subgraphs, fused): its error there, and the task-grouped CV
    ranking of its decoded features (the probe's protocol and ``cwm probe``'s cache)."""
    from cwm.dataset.loader import DatasetLoader
    from cwm.model import default_model_dir
    from cwm.model.probe import StoreDecoder, cross_validate
    from cwm.model.fingerprint import model_fingerprint
    from cwm.model.probe_features import task_representations
    from cwm.model.ranker import RankerConfig

    model_dir = args.model_dir or default_model_dir()
    loader = DatasetLoader(args.dataset)
    target = loader.store.manifest().get("target") or {"kind": "llvm"}
    tasks = []
    for key in loader.task_keys("train"):
        arrays = task_representations(loader, model, key, target, args.probe_cache, model_fingerprint(model_dir),
                                      64, args.seed)
        if arrays is not None:
            tasks.append({"key": key, **arrays, "weight": 1.0})
    out = {}
    for name, pool in pools.items():
        if not pool:
            continue
        dec = StoreDecoder().fit(pool)
        decoded = [{**t, "store": dec.predict(t)} for t in tasks]
        cv = cross_validate(decoded, 5, args.seed, RankerConfig(n_estimators=100, max_depth=6, seed=args.seed),
                            lambda *_: None, names=("store", "store+stats"))["representations"]
        out[name] = {"fit_workloads": len(pool), "tasks": len(tasks), "decoder_error": dec.error(tasks),
                     "decoder_within_task_error": dec.within_task_error(tasks),
                     "ranking_decoded": cv["store"], "ranking_decoded_plus_stats": cv["store+stats"]}
        log(f"decoder fitted on {name} ({len(pool)} workloads), on {len(tasks)} zoo training tasks: "
            f"std-MSE {out[name]['decoder_error']:.3f} (within task {out[name]['decoder_within_task_error']:.3f}), pairwise {cv['store']['pairwise_acc']:.3f} "
            f"(+stats {cv['store+stats']['pairwise_acc']:.3f})")
    return out


def main(argv=None) -> int:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--corpus", default=str(ROOT / "data" / "corpus"))
    p.add_argument("--model-dir", default=None)
    p.add_argument("--heldout", type=float, default=0.25, help="fraction of workloads held out")
    p.add_argument("--seed", type=int, default=0)
    p.add_argument("--dataset", default=str(ROOT / "data" / "dataset"))
    p.add_argument("--probe-cache", default=str(Path.home() / ".cache" / "cwm" / "probe"),
                   help="cwm probe's cache of the dataset's representations (filled when missing)")
    p.add_argument("--out", default=str(ROOT / "bench" / "results" / "corpus_breadth.json"))
    args = p.parse_args(argv)
    from cwm.model import default_model_dir
    from cwm.model.probe import StoreDecoder
    from cwm.model.world_model import WorldModel
    from checkpoint import write_json

    start = time.perf_counter()
    model = WorldModel.load(args.model_dir or default_model_dir())
    tasks = corpus_tasks(Path(args.corpus), model)
    rng = np.random.default_rng(args.seed)
    order = rng.permutation(len(tasks))
    n_held = max(1, int(round(args.heldout * len(tasks))))
    held = [tasks[i] for i in order[:n_held]]
    pool = [tasks[i] for i in order[n_held:]]
    sizes = sorted({n for n in (10, 30, 100, 300, len(pool)) if n <= len(pool)})
    rows = []
    for n in sizes:
        fit = pool[:n]
        dec = StoreDecoder().fit(fit)
        fams = sorted({t["family"] for t in held})
        rows.append({"train_workloads": n, "fit_error": dec.error(fit), "heldout_error": dec.error(held),
                     "fit_within_task": dec.within_task_error(fit), "heldout_within_task": dec.within_task_error(held),
                     "heldout_by_family": {f: dec.error([t for t in held if t["family"] == f]) for f in fams}})
        print(f"N={n:4d}: decoder std-MSE fit {rows[-1]['fit_error']:.3f}, held-out {rows[-1]['heldout_error']:.3f}; "
              f"within-task fit {rows[-1]['fit_within_task']:.3f}, held-out {rows[-1]['heldout_within_task']:.3f}")
    from cwm.model.probe import MlpStoreDecoder

    mlp = MlpStoreDecoder(seed=args.seed).fit(pool)
    mlp_row = {"train_workloads": len(pool), "fit_error": mlp.error(pool), "heldout_error": mlp.error(held),
               "fit_within_task": mlp.within_task_error(pool), "heldout_within_task": mlp.within_task_error(held)}
    print(f"MLP decoder, N={len(pool)}: {mlp_row}")
    zoo = zoo_transfer({"operators": [t for t in pool if not t["family"].startswith("block_")],
                        "operators+blocks": pool}, model, args)
    write_json(str(args.out), {
        "benchmark": "corpus_breadth", "date": time.strftime("%Y-%m-%d"), "host": platform.machine(),
        "corpus": str(args.corpus), "workloads": len(tasks), "heldout_workloads": n_held,
        "trajectories": int(sum(len(t["store"]) for t in tasks)), "decoder": "ridge on [zt_hat - z0, stats]",
        "target": "pooled per-store features of the final state (standardized on the fitting set)",
        "rows": rows, "mlp_decoder": mlp_row, "zoo_transfer": zoo, "seconds": round(time.perf_counter() - start, 1)})
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
