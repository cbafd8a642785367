"""Smoke training of the state encoder on real TIR states; prints metrics before/after.

Groups (one per workload/task, states at spaced prefixes of several candidates):

* the 6 workloads of ``tests/data/traces.jsonl.gz`` (real MetaSchedule traces), plus for
  the non-matmul ones their odd-extent variants (unscheduled and :func:`tile_outer`-ed,
  as training positives; matmul's stay held out for the peeling metric);
* up to ``--max-tasks`` tasks of ``data/dataset`` that already have records (the train
  split by default: the test tasks stay unseen; ``--all-tasks`` to use every task).

Usage::

    python tools/train_encoder_smoke.py [--budget 240] [--steps 400] [--out work_dirs/encoder_smoke]
"""
from __future__ import annotations

import argparse
import gzip
import json
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]


def spaced(seq, k):
    if len(seq) <= k:
        return list(seq)
    return [seq[round(i * (len(seq) - 1) / (k - 1))] for i in range(k)]


def fixture_groups(per_group: int, traces_per_group: int) -> dict:
    from cwm import workloads
    from cwm.model.augment import odd_extent_variant, tile_outer
    from cwm.replay import action_states

    with gzip.open(ROOT / "tests/data/traces.jsonl.gz", "rt") as f:
        records = [json.loads(line) for line in f]
    groups = {}
    for name in sorted({r["workload"] for r in records}):
        mod = workloads.get(name)
        recs = spaced([r for r in records if r["workload"] == name], traces_per_group)
        texts = []
        for r in recs:
            states = action_states(mod, r["trace"])
            texts += [s.script() for s in spaced(states, 2 + per_group // len(recs))]
        texts = spaced(list(dict.fromkeys(texts)), per_group)
        if not name.startswith("matmul"):
            odd = odd_extent_variant(name)
            texts += [odd.script(), tile_outer(odd).script(), tile_outer(mod).script()]
        groups[name] = list(dict.fromkeys(texts))
    return groups


def dataset_groups(root: Path, max_tasks: int, per_group: int, all_tasks: bool) -> dict:
    from cwm.dataset.loader import DatasetLoader

    if not (root / "tasks").is_dir():
        return {}
    loader = DatasetLoader(root, skip_corrupt=True)
    groups = {}
    for key in loader.task_keys(None if all_tasks else "train"):
        if len(groups) >= max_tasks:
            break
        trajs = loader.trajectories(key)
        if not trajs:
            continue
        texts = []
        for t in spaced(trajs, 8):
            try:
                states = t.states()
            except Exception as e:  # noqa: BLE001 - a trace that does not replay is skipped
                print(f"  skip a trajectory of {key}: {type(e).__name__}: {e}", file=sys.stderr)
                continue
            texts += [s.script() for s in spaced(states, 2 + per_group // min(8, len(trajs)))]
        texts = spaced(list(dict.fromkeys(texts)), per_group)
        if len(texts) >= 2:
            groups[f"task:{key}:{loader.store.get_task(key).get('name', '')}"] = texts
    return groups


def fmt(m: dict | None) -> str:
    if not m:
        return "  (none)"
    return "\n".join(f"  {k:40s} {v:.4f}" if isinstance(v, float) else f"  {k:40s} {v}" for k, v in m.items())


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--budget", type=float, default=230.0, help="training wall-clock budget (s)")
    ap.add_argument("--steps", type=int, default=300)
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--threads", type=int, default=1)
    ap.add_argument("--p-rename", type=float, default=0.8, help="probability a view is renamed")
    ap.add_argument("--per-group", type=int, default=30)
    ap.add_argument("--max-tasks", type=int, default=20)
    ap.add_argument("--all-tasks", action="store_true")
    ap.add_argument("--dataset", default=str(ROOT / "data/dataset"))
    ap.add_argument("--out", default=str(ROOT / "work_dirs/encoder_smoke"))
    args = ap.parse_args(argv)

    import torch

    torch.set_num_threads(args.threads)
    import cwm  # noqa: F401  (fast TVMScript parsing)
    from cwm.model.contrastive import ContrastiveConfig, train_encoder

    t0 = time.monotonic()
    groups = fixture_groups(args.per_group, traces_per_group=8)
    groups.update(dataset_groups(Path(args.dataset), args.max_tasks, args.per_group, args.all_tasks))
    print(f"{len(groups)} groups, {sum(map(len, groups.values()))} texts "
          f"({time.monotonic() - t0:.1f}s to build)")
    for g, texts in groups.items():
        print(f"  {g:60s} {len(texts):3d} texts, median {sorted(map(len, texts))[len(texts) // 2]} chars")
    cfg = ContrastiveConfig(seed=args.seed, max_steps=args.steps, time_budget_s=args.budget,
                            p_rename=args.p_rename, warmup_steps=min(20, max(1, args.steps // 10)))
    enc, metrics = train_encoder(groups, cfg)
    print("\nbefore training:\n" + fmt(metrics.get("before")))
    print("after training:\n" + fmt(metrics["after"]))
    loss = metrics["loss"]
    print(f"\n{metrics['steps']} steps in {metrics['train_seconds']:.1f}s "
          f"(stopped by {metrics['stopped_by']}); "
          f"loss first 10 mean {sum(loss[:10]) / max(1, len(loss[:10])):.4f}, "
          f"last 10 mean {sum(loss[-10:]) / max(1, len(loss[-10:])):.4f}")
    out = Path(args.out)
    enc.save(out)
    (out / "metrics.json").write_text(json.dumps(metrics, indent=1) + "\n")
    print(f"saved to {out} ({time.monotonic() - t0:.0f}s total)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
