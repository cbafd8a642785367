"""Experiment: train the TransH transition on the unmeasured corpus to predict physical facts of
prefix states, and check what transfers (issue #12, deliverable 3; a measurement, not the shipped
model).

The architecture is TransH (with ``--state-dependent``, the form whose action parameters read the
state, ``TransitionConfig.state_dependent``; the C++ core evaluates both); the training signal is
new: a decoder head reads the rolled-out state after 1/3, 2/3 and all of
each trajectory's actions and must give the pooled per-store features of the real state there
(multi-step loss). Trained on 75% of the corpus workloads; reported on the held-out 25% (by
family) and on the measured dataset's *training* tasks, whose ranking is the probe's
task-grouped CV on the new rollout. No held-out task of the dataset is used.

    PYTHONPATH=python .venv/bin/python bench/transition_corpus.py [--epochs 30] [--minutes 15]
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


def load_corpus(corpus: Path, model, log=print) -> list[dict]:
    import tvm

    from cwm import native

    from cwm.corpus.generator import build

    manifest = json.loads((corpus / "manifest.json").read_text())
    listing = {f"{e['index']:05d}": e for e in manifest["listing"]}
    out = []
    for path in sorted((corpus / "shards").glob("*.npz")):
        if path.name.endswith(".tmp.npz"):
            continue
        with np.load(path, allow_pickle=False) as f:
            if f["store"].shape[-1] == 0:
                continue
            entry = listing[path.name.split("-", 1)[0]]
            traces, prefix, store = list(f["traces"]), f["prefix"], f["store"].astype(np.float32)
            mod = tvm.ir.load_json(str(f["workload"])) if "workload" in f.files else build(entry["family"],
                                                                                           entry["params"])
        ok = np.isfinite(store).all((1, 2))
        if ok.sum() < 2:
            continue
        fb = native.featurize_batch([t for t, k in zip(traces, ok) if k])
        out.append({"family": entry["family"], "z0": model.z0(mod), "fb": fb,
                    "prefix": prefix[ok], "store": store[ok]})
    log(f"{len(out)} workloads, {sum(len(t['store']) for t in out)} trajectories")
    return out


class Decoder:
    """Standardization of the targets + an MLP head, trained with the transition."""

    def __init__(self, dim, width, ym, ys):
        import torch

        self.ym, self.ys = torch.tensor(ym, dtype=torch.float32), torch.tensor(ys, dtype=torch.float32)
        self.net = torch.nn.Sequential(torch.nn.Linear(dim, 256), torch.nn.GELU(), torch.nn.Linear(256, width))


def rollout_prefix_states(transition, task, tcfg):
    """``[N, P, D]`` rolled-out states at the task's prefix points (torch, with autograd)."""
    import torch

    from cwm.model.transition import tensors

    kind, hashed, small, numbers = tensors(task["fb"], tcfg)
    z0 = torch.tensor(np.repeat(task["z0"][None], len(kind), 0), dtype=torch.float32)
    states = transition(z0, kind, hashed, small, numbers, return_all=True)  # [N, T+1, D]
    idx = torch.tensor(np.minimum(task["prefix"], states.shape[1] - 1), dtype=torch.long)
    return states.gather(1, idx.unsqueeze(-1).expand(-1, -1, states.shape[-1]))


def errors(transition, dec, tasks, tcfg) -> dict:
    """Standardized MSE of the final state's features, overall and within task (as in the probe)."""
    import torch

    num = den = tot = cnt = 0.0
    with torch.no_grad():
        for t in tasks:
            pred = dec.net(rollout_prefix_states(transition, t, tcfg)[:, -1]).numpy()
            y = (t["store"][:, -1] - dec.ym.numpy()) / dec.ys.numpy()
            tot += ((pred - y) ** 2).sum()
            cnt += y.size
            dy, dp = y - y.mean(0), pred - pred.mean(0)
            num += ((dp - dy) ** 2).sum()
            den += (dy ** 2).sum()
    return {"error": float(tot / cnt), "within_task": float(num / den)}


def main(argv=None) -> int:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--corpus", default=str(ROOT / "data" / "corpus"),
                   help="corpus directory, or several separated by commas (disjoint parts: --exclude-corpus)")
    p.add_argument("--dataset", default=str(ROOT / "data" / "dataset"))
    p.add_argument("--probe-cache", default=str(Path.home() / ".cache" / "cwm" / "probe"))
    p.add_argument("--epochs", type=int, default=30)
    p.add_argument("--minutes", type=float, default=15.0, help="stop training after this long")
    p.add_argument("--seed", type=int, default=0)
    p.add_argument("--state-dependent", action="store_true",
                   help="action parameters also read the state (TransitionConfig.state_dependent)")
    p.add_argument("--hidden", type=int, default=None,
                   help="a fresh TransH with this hidden size instead of the shipped weights (experiment)")
    p.add_argument("--translation-bound", type=float, default=None, metavar="B",
                   help="cap each translation's length at B (TransitionConfig.translation_bound; decision 96: "
                        "the shipped transition's long translations erase the state)")
    p.add_argument("--normalize-state", choices=("true", "false"), default=None,
                   help="put each state back on the unit sphere (default: as the shipped transition)")
    p.add_argument("--out", default=None,
                   help="default bench/results/transition_corpus[_state][_hN][_bB][_unnormalized].json")
    p.add_argument("--save", default=None,
                   help="also write the trained TransH (transition.safetensors + transition.json, for "
                        "tools/refit_ranker.py --transition) and its decoder (decoder.safetensors) to this directory")
    args = p.parse_args(argv)
    import torch

    from checkpoint import write_json
    from cwm.model import default_model_dir
    from cwm.model.world_model import WorldModel

    torch.manual_seed(args.seed)
    start = time.perf_counter()
    model = WorldModel.load(default_model_dir())
    tcfg = model.tcfg
    tasks = [t for corpus in args.corpus.split(",") for t in load_corpus(Path(corpus), model)]
    order = np.random.default_rng(args.seed).permutation(len(tasks))
    n_held = int(round(0.25 * len(tasks)))
    held, fit = [tasks[i] for i in order[:n_held]], [tasks[i] for i in order[n_held:]]
    y = np.concatenate([t["store"].reshape(-1, t["store"].shape[-1]) for t in fit])
    std = y.std(0)
    dec = Decoder(tcfg.dim, y.shape[1], y.mean(0), np.where(std < 1e-3, 1.0, std))
    base = model.transition
    if args.hidden:
        from dataclasses import replace

        from cwm.model.transition import TransH

        tcfg = replace(tcfg, hidden=args.hidden)
        base = TransH(tcfg)
    if args.state_dependent:
        from cwm.model.transition import with_state_read

        base = with_state_read(base)  # S = 0: starts as the plain rollout
    if args.translation_bound is not None or args.normalize_state is not None:
        base = with_rollout_form(base, args.translation_bound, args.normalize_state)
    transition, tcfg = base, base.cfg
    transition.train()
    opt = torch.optim.Adam(list(transition.parameters()) + list(dec.net.parameters()), lr=3e-3)
    before = {"fit": errors(transition, dec, fit, tcfg), "heldout": errors(transition, dec, held, tcfg)}
    history = []
    for epoch in range(args.epochs):
        if time.perf_counter() - start > 60 * args.minutes:
            break
        losses = []
        for i in np.random.default_rng([args.seed, epoch]).permutation(len(fit)):
            t = fit[i]
            states = rollout_prefix_states(transition, t, tcfg)
            target = (torch.tensor(t["store"]) - dec.ym) / dec.ys
            loss = torch.nn.functional.mse_loss(dec.net(states), target)
            opt.zero_grad()
            loss.backward()
            opt.step()
            losses.append(float(loss))
        history.append(float(np.mean(losses)))
        print(f"epoch {epoch + 1}: train loss {history[-1]:.3f} ({time.perf_counter() - start:.0f} s)", flush=True)
    transition.eval()
    after = {"fit": errors(transition, dec, fit, tcfg), "heldout": errors(transition, dec, held, tcfg)}
    by_family = {}
    for fam in sorted({t["family"] for t in tasks}):
        f_fit, f_held = [t for t in fit if t["family"] == fam], [t for t in held if t["family"] == fam]
        if f_fit and f_held:
            by_family[fam] = {"fit": errors(transition, dec, f_fit, tcfg), "heldout": errors(transition, dec, f_held, tcfg)}
    print(f"before {before}\nafter {after}")
    if args.save:
        save_weights(Path(args.save), transition, dec, tcfg, args)
    zoo = zoo_ranking(model, transition, dec, tcfg, args)
    name = "transition_corpus" + ("_state" if args.state_dependent else "")
    name += f"_h{args.hidden}" if args.hidden else ""
    name += f"_b{args.translation_bound:g}" if args.translation_bound else ""
    name += "_unnormalized" if not tcfg.normalize_state else ""
    out = args.out or str(ROOT / "bench" / "results" / f"{name}.json")
    write_json(out, {
        "benchmark": "transition_corpus", "state_dependent": bool(args.state_dependent),
        "transition": {"hidden": tcfg.hidden, "dim": tcfg.dim, "init": "fresh" if args.hidden else "shipped",
                       "translation_bound": tcfg.translation_bound, "normalize_state": tcfg.normalize_state},
        "date": time.strftime("%Y-%m-%d"), "host": platform.machine(),
        "workloads": {"fit": len(fit), "heldout": len(held)},
        "trajectories": int(sum(len(t["store"]) for t in tasks)), "epochs": len(history), "loss": history,
        "decoder_error_before": before, "decoder_error_after": after, "by_family": by_family, "zoo": zoo,
        "seconds": round(time.perf_counter() - start, 1)})
    return 0


def with_rollout_form(base, translation_bound: float | None, normalize_state: str | None):
    """A TransH holding ``base``'s weights with its translations capped at ``translation_bound``
    and/or its per-step normalisation set (``"true"``/``"false"``); ``None`` keeps ``base``'s."""
    from dataclasses import replace

    from cwm.model.transition import TransH

    changes = {**({"translation_bound": translation_bound} if translation_bound is not None else {}),
               **({"normalize_state": normalize_state == "true"} if normalize_state is not None else {})}
    out = TransH(replace(base.cfg, **changes))
    out.load_state_dict(base.state_dict())
    return out


def save_weights(out: Path, transition, dec, tcfg, args) -> None:
    """The trained transition in the model directory's layout, and its decoder with the scales."""
    from safetensors.numpy import save_file

    out.mkdir(parents=True, exist_ok=True)
    save_file({k: v.detach().cpu().numpy() for k, v in transition.state_dict().items()},
              str(out / "transition.safetensors"))
    weights = {f"net.{k}": v.detach().cpu().numpy() for k, v in dec.net.state_dict().items()}
    save_file({**weights, "ym": dec.ym.numpy(), "ys": dec.ys.numpy()}, str(out / "decoder.safetensors"))
    (out / "transition.json").write_text(json.dumps({"transition": tcfg.to_dict(), "corpus": args.corpus,
                                                     "seed": args.seed}, indent=1) + "\n")


def zoo_ranking(model, transition, dec, tcfg, args) -> dict:
    """The corpus-trained rollout on the dataset's training tasks: decoder error on their real
    final states, and the probe's task-grouped ranking CV on ``[ẑ_T - z_0, stats]`` and on the
    decoded features (+ stats)."""
    import torch

    from cwm import native
    from cwm.dataset.loader import DatasetLoader
    from cwm.model import default_model_dir
    from cwm.model.probe import cross_validate
    from cwm.model.fingerprint import model_fingerprint
    from cwm.model.probe_features import probe_subset, task_representations
    from cwm.model.ranker import RankerConfig
    from cwm.model.transition import tensors

    loader = DatasetLoader(args.dataset)
    target = loader.store.manifest().get("target") or {"kind": "llvm"}
    fingerprint = model_fingerprint(default_model_dir())
    tasks = []
    for key in loader.task_keys("train"):
        arrays = task_representations(loader, model, key, target, args.probe_cache, fingerprint, 64, args.seed,
                                      with_et=False)
        if arrays is None:
            continue
        trajs = probe_subset(loader.trajectories(key), 64, args.seed)  # the candidates the cache holds
        fb = native.featurize_batch([t.trace for t in trajs])
        kind, hashed, small, numbers = tensors(fb, tcfg)
        with torch.no_grad():
            zt = transition(torch.tensor(np.repeat(arrays["z0"][None], len(kind), 0)), kind, hashed, small, numbers)
            decoded = dec.net(zt).numpy() * dec.ys.numpy() + dec.ym.numpy()
        tasks.append({"key": key, **arrays, "zt_hat": zt.numpy(), "store_true": arrays["store"],
                      "store": decoded, "weight": 1.0})
    ys, ym = dec.ys.numpy(), dec.ym.numpy()
    err = [(((t["store"] - t["store_true"]) / ys) ** 2)[np.isfinite(t["store_true"]).all(1)].mean() for t in tasks]
    cv = cross_validate(tasks, 5, args.seed, RankerConfig(n_estimators=100, max_depth=6, seed=args.seed),
                        lambda *_: None, names=("zt_hat", "zt_hat+stats", "store", "store+stats"))["representations"]
    print(f"zoo training tasks: decoder error {np.mean(err):.3f}; ranking {json.dumps(cv)}")
    return {"tasks": len(tasks), "decoder_error": float(np.mean(err)), "ranking": cv,
            "note": "ranking: 5-fold task-grouped CV over the dataset's training tasks, 64 candidates a task"}


if __name__ == "__main__":
    raise SystemExit(main())
