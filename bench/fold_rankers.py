"""The fold rankers of the training-task benches (issue #12; training tasks only): the shipped
model's ranker refitted without every task of one network, so a prior never saw the task it
ranks (the probe's ``--group-by network`` folds).

- :func:`training_rows`: the ranker rows and latencies of every training task of the shipped
  roots and of any extra root (its tasks groups of their own);
- :func:`fold_priors`: one ranker a left-out network (``bench/search_knobs.py``'s priors);
- :func:`bootstrap_rankers` and :class:`PessimisticRanker`: an ensemble a left-out network,
  each fitted on a bootstrap sample of the tasks, scored as its mean less ``k`` times its
  spread (decision 85).

Fitted rankers are cached under the caller's work root and read back on resume, under names that
carry :func:`rows_fingerprint` of the model whose rows they were fitted on: a cache written for
one shipped model is never read back for the next one.
"""
from __future__ import annotations

import time
from pathlib import Path

from common import log


def rows_fingerprint(model) -> str:
    """12 hex digits that change whenever the model's ranker rows or ranker config may: its
    manifest, its trace-column families, its ranker and transition configs and its transition's weights."""
    import dataclasses
    import hashlib
    import json

    h = hashlib.sha256(json.dumps([model.meta, list(model.columns), dataclasses.asdict(model.ranker.cfg),
                                   dataclasses.asdict(model.tcfg)], sort_keys=True, default=str).encode())
    for name, tensor in sorted(model.transition.state_dict().items()):
        h.update(name.encode())
        h.update(tensor.detach().cpu().numpy().tobytes())
    return h.hexdigest()[:12]


def training_rows(model, union, extra_roots: str | list[str] | None = None) -> tuple[dict, dict]:
    """``(rows, folds)``: ``task -> (ranker rows, latencies)`` of every training task of ``union``
    and, with ``extra_roots`` (one root or several), of each such root's tasks as groups of their
    own (keyed ``<root>:<task>``); ``network -> the training tasks (the union's and the extra
    roots') of that network`` (the probe's ``--group-by network`` folds)."""
    import numpy as np

    from cwm.dataset.loader import DatasetLoader
    from cwm.model.probe import network_folds
    from cwm.model.train import _training_trajectories, ranker_rows

    seed = model.meta.get("config", {}).get("seed", 0)
    by_task = _training_trajectories(union, seed)
    log(f"ranker rows of {len(by_task)} training tasks ...")
    rows = {key: (feats, np.array([t.latency for t in trajs])) for key, trajs, _, feats
            in ranker_rows(model, union, by_task)}
    networks_of = {k: sorted(union.store.get_task(k).get("networks") or {}) for k in union.task_keys("train")}
    for extra_root in [extra_roots] if isinstance(extra_roots, str) else extra_roots or ():
        extra = DatasetLoader(extra_root)
        extra_tasks = _training_trajectories(extra, seed)
        log(f"ranker rows of {len(extra_tasks)} tasks of {extra_root} ...")
        rows.update({f"{extra_root}:{key}": (feats, np.array([t.latency for t in trajs])) for key, trajs, _, feats
                     in ranker_rows(model, extra, extra_tasks)})
        # a task the union has too few records of to rank is still its network's
        networks_of.update({k: sorted(extra.store.get_task(k).get("networks") or {}) for k in extra_tasks})
    return rows, dict(network_folds(networks_of))


def fitted_keys(rows: dict, folds: dict, network: str, extra_root: str | None) -> list[str]:
    """The groups a fold ranker without ``network`` is fitted on: every task of ``rows`` but
    that network's, and an extra root's copy of one of them (``<root>:<task>``) neither; an extra
    root's groups only where it is ``extra_root`` (``rows`` may hold several roots')."""
    left_out = set(folds.get(network, ()))
    return sorted(k for k in rows if k.rpartition(":")[2] not in left_out
                  and (":" not in k or k.rpartition(":")[0] == extra_root))


def fit_on(cfg, rows: dict, keys: list[str]):
    """A :class:`cwm.model.ranker.Ranker` of config ``cfg`` fitted on ``rows``' groups ``keys``,
    each listed key its own ranking group (a key listed twice: two groups)."""
    import numpy as np

    from cwm.model.ranker import Ranker

    return Ranker(cfg).fit(np.concatenate([rows[k][0] for k in keys]), np.concatenate([rows[k][1] for k in keys]),
                           np.concatenate([np.full(len(rows[k][1]), i) for i, k in enumerate(keys)]))


def fold_priors(model, union, networks: set[str], work_root: Path, extra_root: str | None = None,
                rows_and_folds: tuple[dict, dict] | None = None, tag: str = "") -> dict:
    """``network -> Ranker`` fitted without any task of that network (module docstring); with
    ``extra_root``, also on that root's tasks (:func:`training_rows`), those of the left-out
    network left out too. ``rows_and_folds``: :func:`training_rows`'s, when already computed;
    ``tag``: added to the cached files' names (a model whose rows differ from the shipped one's)."""
    from cwm.model.ranker import Ranker

    tag = (f"+{Path(extra_root).name}" if extra_root else "") + tag
    fingerprint = rows_fingerprint(model)
    paths = {n: work_root / f"ranker_without_{n}{tag}.{fingerprint}.json" for n in networks}
    missing = sorted(n for n in networks if not paths[n].exists())
    if missing:
        rows, folds = rows_and_folds or training_rows(model, union, extra_root)
        for network in missing:
            keep = fitted_keys(rows, folds, network, extra_root)
            start = time.perf_counter()
            ranker = fit_on(model.ranker.cfg, rows, keep)
            work_root.mkdir(parents=True, exist_ok=True)
            ranker.save(str(paths[network]))
            log(f"ranker without {network}{tag}: {len(keep)} tasks, {time.perf_counter() - start:.0f} s")
    return {n: Ranker.load(str(paths[n])) for n in networks}


class PessimisticRanker:
    """Rankers' mean score less ``k`` times their spread (population std) per candidate, each
    ranker's margins centred first (:func:`combine`): ``predict`` as
    :class:`cwm.model.ranker.Ranker` has, for the candidates of one task.

    ``anchored=False`` centres over the candidates of each call (offline: one call a task), so a
    score depends on its batch. ``anchored=True`` (a search, one instance a task) centres every
    call by each ranker's mean over the *first* call's candidates, so scores are
    batch-independent from then on, as MetaSchedule's max-heap across rounds needs."""

    def __init__(self, rankers: list, k: float = 0.0, anchored: bool = False):
        if not rankers:
            raise ValueError("a pessimistic ranker needs at least one ranker")
        self.rankers, self.k, self.anchored, self.offsets = list(rankers), float(k), anchored, None

    def scores(self, features):
        """``(rankers, candidates)`` margins."""
        import numpy as np

        return np.stack([np.asarray(r.predict(features), np.float64) for r in self.rankers])

    def predict(self, features):
        scores = self.scores(features)
        if not self.anchored:
            return combine(scores, self.k)
        if self.offsets is None:
            self.offsets = scores.mean(1, keepdims=True)
        return combine(scores, self.k, self.offsets)


def combine(scores, k: float, offsets=None):
    """``mean - k * std`` over axis 0 of ``(rankers, candidates)`` scores, each ranker's row
    centred first (``offsets``, one a ranker; None: its mean over these candidates): a ranker's
    own offset then moves neither the spread nor the order."""
    import numpy as np

    scores = np.asarray(scores, np.float64)
    scores = scores - (scores.mean(1, keepdims=True) if offsets is None else offsets)
    return scores.mean(0) - k * scores.std(0)


def bootstrap_groups(keys: list[str], draw: int) -> list[str]:
    """``len(keys)`` tasks drawn with replacement (seeded by ``draw``; sorted keys first, so the
    draw does not depend on the caller's order)."""
    import numpy as np

    keys = sorted(keys)
    return [keys[i] for i in np.random.default_rng(draw).integers(0, len(keys), len(keys))]


def bootstrap_rankers(model, rows_and_folds, networks, draws: int, work_root: Path) -> dict:
    """``network -> [Ranker]``: ``draws`` rankers fitted without any task of that network, each
    on its own bootstrap sample of the other tasks of the shipped roots (ranker seed = draw);
    cached, resumable. ``rows_and_folds``: :func:`training_rows`'s, or a function giving them,
    called only when some ranker is not cached yet."""
    import dataclasses

    from cwm.model.ranker import Ranker

    out, fingerprint = {}, rows_fingerprint(model)
    for network in sorted(networks):
        out[network] = []
        for draw in range(draws):
            path = work_root / "ensemble" / fingerprint / f"ranker_without_{network}_boot{draw}.json"
            if not path.exists():
                if callable(rows_and_folds):
                    rows_and_folds = rows_and_folds()
                rows, folds = rows_and_folds
                keep = fitted_keys(rows, folds, network, None)
                picked = bootstrap_groups(keep, draw)
                start = time.perf_counter()
                ranker = fit_on(dataclasses.replace(model.ranker.cfg, seed=draw), rows, picked)
                path.parent.mkdir(parents=True, exist_ok=True)
                ranker.save(str(path))
                log(f"ranker without {network}, draw {draw}: {len(set(picked))} of {len(keep)} tasks, "
                    f"{time.perf_counter() - start:.0f} s")
            out[network].append(Ranker.load(str(path)))
    return out
