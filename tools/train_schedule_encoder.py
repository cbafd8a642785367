"""Train the state encoder to tell schedules apart (issue #12, deliverable 4), and judge it.

Two steps, resumable:

    # TVM: final programs of the breadth workloads' measured candidates, with the pooled
    # per-store features of each (from the probe's cache when it holds them)
    python tools/train_schedule_encoder.py prepare --data data/dataset_breadth --exclude-data data/dataset \\
        --per-task 12 --out work_dirs/enc/items
    # torch only: fine-tune the shipped encoder with cwm.model.schedule_contrastive
    python tools/train_schedule_encoder.py train work_dirs/enc/items \\
        --model python/cwm/default_model --out work_dirs/enc/encoder --steps 300

Where a GPU is lent, ``train`` runs there (``--device cuda --max-windows 16 --steps 3000``): it
needs torch, transformers and this checkout's ``python/`` only, and the items folder travels with
the command (the device tool's ``carry``); the encoder comes back in ``--out``.

``--exclude-data``'s tasks (training and held-out) are never prepared: the zoo's training tasks
are what the network-out probe validates on, and its held-out tasks are the final report's.
Judge the encoder with ``cwm probe`` on a copy of the model given it (``et+stats`` against
``z0+stats``): ``cp -r python/cwm/default_model DIR && rm -r DIR/encoder && cp -r
work_dirs/enc/encoder DIR/encoder``.
"""
from __future__ import annotations

import argparse
import gzip
import json
import time
from pathlib import Path

import numpy as np


def prepare(data: str, exclude: list[str], per_task: int, out: Path, cache_dir: Path, seed: int,
            candidates: int) -> None:
    from cwm.dataset.loader import DatasetLoader
    from cwm.model.probe_features import pooled_store_features, probe_subset

    loader = DatasetLoader(data)
    target = loader.store.manifest().get("target") or {"kind": "llvm"}
    skip = set()
    for root in exclude:
        other = DatasetLoader(root)
        skip |= set(other.task_keys("train")) | set(other.task_keys("test"))
    skip |= set(loader.task_keys("test"))
    keys = [k for k in loader.task_keys("train") if k not in skip]
    out.mkdir(parents=True, exist_ok=True)
    start = time.perf_counter()
    for i, key in enumerate(keys):
        path = out / f"{key}.jsonl.gz"
        if path.exists():  # resume: a task's file is written whole or not at all
            continue
        trajs = probe_subset(loader.trajectories(key), candidates, 0)
        lat = np.array([t.latency if t.latency is not None else np.inf for t in trajs], np.float64)
        if np.isfinite(lat).sum() < 2:
            continue
        store, ok = pooled_store_features(loader, key, loader.workload(key), trajs, target, cache_dir, candidates, 0,
                                          lat)
        usable = np.flatnonzero(ok)
        chosen = np.random.default_rng([seed, i]).choice(usable, min(per_task, len(usable)), replace=False)
        tmp = path.with_name(path.name + ".tmp")
        with gzip.open(tmp, "wt") as f:
            for j in sorted(chosen):
                f.write(json.dumps({"group": key, "text": trajs[j].final_text,
                                    "features": [float(x) for x in store[j]]}) + "\n")
        tmp.replace(path)
        if (i + 1) % 20 == 0:
            print(f"{i + 1}/{len(keys)} tasks ({time.perf_counter() - start:.0f} s)", flush=True)


def train(items_path: Path, model_dir: str, out: Path, steps: int, seed: int, aux_weight: float,
          checkpoint: Path, device: str = "cpu", max_windows: int = 2) -> None:
    from cwm.model.encoder import StateEncoder
    from cwm.model.schedule_contrastive import ScheduleContrastiveConfig, train_schedule_encoder

    items = []
    for path in sorted(Path(items_path).glob("*.jsonl.gz")):
        with gzip.open(path, "rt") as f:
            items += [json.loads(line) for line in f if line.strip()]
    encoder = StateEncoder.load(Path(model_dir) / "encoder")
    cfg = ScheduleContrastiveConfig(seed=seed, max_steps=steps, aux_weight=aux_weight, device=device,
                                    train_max_windows=max_windows)
    encoder, head, metrics = train_schedule_encoder(encoder, items, cfg, checkpoint=checkpoint)
    encoder.save(out)
    summary = {k: v for k, v in metrics.items() if k not in ("loss", "nce", "aux")}
    summary["nce_first_last"] = [metrics["nce"][:10], metrics["nce"][-10:]]
    summary["aux_first_last"] = [metrics["aux"][:10], metrics["aux"][-10:]]
    summary["config"] = cfg.__dict__
    (out / "training.json").write_text(json.dumps(summary, indent=1) + "\n")
    print(json.dumps({k: summary[k] for k in ("before", "after", "steps", "stopped_by")}, indent=1))


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    sub = p.add_subparsers(dest="step", required=True)
    pp = sub.add_parser("prepare")
    pp.add_argument("--data", default="data/dataset_breadth")
    pp.add_argument("--exclude-data", action="append", default=[])
    pp.add_argument("--per-task", type=int, default=12)
    pp.add_argument("--candidates", type=int, default=64, help="the probe's subset of each task (its cache)")
    pp.add_argument("--cache-dir", type=Path, default=Path.home() / ".cache" / "cwm" / "probe")
    pp.add_argument("--seed", type=int, default=0)
    pp.add_argument("--out", type=Path, required=True)
    pt = sub.add_parser("train")
    pt.add_argument("items", type=Path)
    pt.add_argument("--model", default="python/cwm/default_model")
    pt.add_argument("--out", type=Path, required=True)
    pt.add_argument("--steps", type=int, default=300)
    pt.add_argument("--seed", type=int, default=0)
    pt.add_argument("--aux-weight", type=float, default=1.0)
    pt.add_argument("--checkpoint", type=Path, default=None, help="default: OUT.ckpt")
    pt.add_argument("--device", default="cpu", help="cpu, or cuda where a GPU is lent (torch only: no TVM there)")
    pt.add_argument("--max-windows", type=int, default=2,
                    help="windows of 256 tokens a training view keeps (2 on 2 cores; a GPU takes whole programs)")
    a = p.parse_args()
    if a.step == "prepare":
        prepare(a.data, a.exclude_data, a.per_task, a.out, a.cache_dir, a.seed, a.candidates)
    else:
        train(a.items, a.model, a.out, a.steps, a.seed, a.aux_weight, a.checkpoint or a.out.with_suffix(".ckpt"),
              a.device, a.max_windows)


if __name__ == "__main__":
    main()
