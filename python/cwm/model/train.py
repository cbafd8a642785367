"""``cwm train``: train the world model on the training split of the dataset, write a model dir.

Phases (each with a step/time budget, all seeded): (1) tokenizer + contrastive encoder on
states of the training tasks (groups = tasks); (2) TransH by multi-step rollout against the
frozen encoder; (3) LambdaRank ranker on ``[ẑ_T, action stats, hardware]`` of every training
trajectory, one group per task. Held-out (test) tasks are never read.
"""
from __future__ import annotations

import hashlib
import json
import random
import time
from dataclasses import asdict, dataclass, field

import numpy as np

from cwm.model.ranker import RankerConfig
from cwm.model.rollout_training import RolloutConfig
from cwm.model.transition import TransitionConfig


@dataclass
class TrainConfig:
    seed: int = 0
    # (1) encoder
    states_per_task: int = 16  # contrastive texts per training task
    encoder_steps: int = 400
    encoder_time_s: float = 1800.0
    encoder_eval: bool = True  # retrieval metrics before/after contrastive training (costs encodes)
    #: a trained encoder's directory (e.g. tools/train_schedule_encoder.py's): phase 1 is skipped
    encoder_dir: str | None = None
    # (2) transition
    rollout_trajectories: int = 1500
    rollout: RolloutConfig = field(default_factory=lambda: RolloutConfig(epochs=100, lr=1e-2, margin=-0.5))
    transition: TransitionConfig = field(default_factory=lambda: TransitionConfig(hidden=64))
    # (3) ranker
    ranker: RankerConfig = field(default_factory=RankerConfig)
    #: the ranker reads each row beside the row less the mean row of this many seeded samples of
    #: the task's design space (0: the rows alone); docs/decisions.md §62
    centring_samples: int = 32


def _training_trajectories(loader, seed: int):
    by_task = {}
    for key in loader.task_keys("train"):
        trajs = [t for t in loader.trajectories(key) if t.latency is not None]
        if len(trajs) >= 2:
            by_task[key] = trajs
    if len(by_task) < 2:
        raise ValueError(f"need at least 2 training tasks with measured records, found {len(by_task)}")
    return by_task


def _contrastive_groups(by_task: dict, per_task: int, seed: int) -> dict:
    rng = random.Random(seed)
    groups = {}
    for key, trajs in by_task.items():
        texts = {trajs[0].initial_text}
        for t in rng.sample(trajs, min(len(trajs), max(1, per_task // 3))):
            states = t.states()
            for k in {len(states) // 2, len(states) - 1}:
                texts.add(states[k].script())
        groups[key] = sorted(texts)[:per_task]
    return groups


def _data_hash(loader) -> dict:
    manifest = loader.store.manifest()
    shards = {k: v["sha256"] for k, v in manifest.get("shards", {}).items() if k in set(loader.task_keys("train"))}
    return {"train_shards": len(shards), "sha256": hashlib.sha256(json.dumps(shards, sort_keys=True).encode()).hexdigest()}


class _Stages:
    """Checkpoints of the expensive phases in ``out_dir/.stages``, keyed by config + data hash.

    ``cwm train`` killed after a phase restarts from the next one with the same result (the
    phases are seeded); a changed config or dataset starts over. Removed after a full run."""

    def __init__(self, out_dir, key_material: dict):
        from pathlib import Path

        self.dir = Path(out_dir) / ".stages"
        self.key = hashlib.sha256(json.dumps(key_material, sort_keys=True, default=str).encode()).hexdigest()[:16]
        if (self.dir / "key").exists() and (self.dir / "key").read_text() != self.key:
            import shutil

            shutil.rmtree(self.dir)
        self.dir.mkdir(parents=True, exist_ok=True)
        (self.dir / "key").write_text(self.key)

    def encoder(self):
        from cwm.model.encoder import StateEncoder

        path = self.dir / "encoder"
        return (StateEncoder.load(path), json.loads((self.dir / "encoder_metrics.json").read_text())) \
            if (self.dir / "encoder_metrics.json").exists() else None

    def save_encoder(self, encoder, metrics: dict) -> None:
        encoder.save(self.dir / "encoder")
        (self.dir / "encoder_metrics.json").write_text(json.dumps(_jsonable(metrics)))

    def rollout_data(self):
        from cwm.model.rollout_training import RolloutData

        path = self.dir / "rollout_data.npz"
        if not path.exists():
            return None
        with np.load(path) as f:
            return RolloutData(**{k: f[k] for k in f.files})

    def save_rollout_data(self, data) -> None:
        tmp = self.dir / "rollout_data.tmp.npz"
        np.savez(tmp, **asdict(data))
        tmp.replace(self.dir / "rollout_data.npz")

    def done(self) -> None:
        import shutil

        shutil.rmtree(self.dir, ignore_errors=True)


def fit_ranker(model, loader, by_task: dict, rcfg: RankerConfig):
    """Phase 3: the LambdaRank ranker on every training trajectory, one query group per task."""
    from cwm.model.ranker import Ranker

    feats, lats, groups_idx = [], [], []
    for gi, (_, trajs, _, rows) in enumerate(ranker_rows(model, loader, by_task)):
        feats.append(rows)
        lats.append([t.latency for t in trajs])
        groups_idx.append(np.full(len(trajs), gi))
    return Ranker(rcfg).fit(np.concatenate(feats), np.concatenate(lats), np.concatenate(groups_idx))


def ranker_rows(model, loader, by_task: dict):
    """``(key, trajectories, FeatureBatch, ranker rows)`` of every task of ``by_task``, in key order."""
    from cwm.target_spec import host_target

    target = loader.store.manifest().get("target") or json.loads(str(host_target()))
    for key, trajs in sorted(by_task.items()):
        workload = loader.workload(key)
        fb = model.featurize(workload, [t.trace for t in trajs])
        z0 = model.z0(workload)
        reference = model.reference(workload, target) if model.centring else None
        yield key, trajs, fb, model.features(model.rollout(z0, fb), fb, target, z0, reference)


def train_world_model(root, out_dir, cfg: TrainConfig = TrainConfig(), log=print) -> dict:
    """``root``: a dataset root, or a list of them read as one (:mod:`cwm.dataset.union`; the
    first root's split decides the held-out tasks, which no phase reads)."""
    import torch

    from cwm.dataset.union import open_datasets
    from cwm.model.contrastive import ContrastiveConfig, train_encoder
    from cwm.model.encoder import EncoderConfig
    from cwm.model.rollout_training import build_rollout_data, rollout_error, train_transition
    from cwm.model.world_model import WorldModel

    t_start = time.time()
    torch.manual_seed(cfg.seed)
    loader = open_datasets(root)
    by_task = _training_trajectories(loader, cfg.seed)
    n_traj = sum(len(v) for v in by_task.values())
    log(f"training tasks: {len(by_task)}, trajectories: {n_traj}")

    stages = _Stages(out_dir, {"config": asdict(cfg), "data": _data_hash(loader)})
    resumed = stages.encoder()
    if resumed is None and cfg.encoder_dir:
        from cwm.model.encoder import StateEncoder

        encoder = StateEncoder.load(cfg.encoder_dir)
        if encoder.dim != cfg.transition.dim:
            raise ValueError(f"{cfg.encoder_dir}: an encoder of size {encoder.dim}; the transition's state has "
                             f"{cfg.transition.dim}")
        stages.save_encoder(encoder, {"steps": 0, "from": str(cfg.encoder_dir)})
        encoder, enc_metrics = stages.encoder()
    elif resumed is None:
        groups = _contrastive_groups(by_task, cfg.states_per_task, cfg.seed)
        ccfg = ContrastiveConfig(seed=cfg.seed, encoder=EncoderConfig(out_dim=cfg.transition.dim),
                                 max_steps=cfg.encoder_steps, time_budget_s=cfg.encoder_time_s, log_every=0,
                                 eval_robustness=False, eval_before=cfg.encoder_eval)
        encoder, enc_metrics = train_encoder(groups, ccfg)
        stages.save_encoder(encoder, enc_metrics)
        encoder, enc_metrics = stages.encoder()  # the saved copy: a resumed run continues from the same bits
    else:
        encoder, enc_metrics = resumed
        log(f"encoder: resumed from {stages.dir}")
    encoder.eval()
    log(f"encoder: {enc_metrics['steps']} steps, after: {enc_metrics.get('after')}")

    def encode(texts):
        with torch.no_grad():
            return encoder.encode(texts).numpy()

    data = stages.rollout_data()
    if data is None:
        rng = random.Random(cfg.seed)
        per_task = max(1, cfg.rollout_trajectories // len(by_task))
        sample = [t for trajs in by_task.values() for t in rng.sample(trajs, min(per_task, len(trajs)))]
        data = build_rollout_data(sample, encode, cfg.rollout)
        stages.save_rollout_data(data)
    else:
        log(f"rollout data: resumed from {stages.dir}")
    transition, history = train_transition(data, cfg.transition, cfg.rollout, log=lambda *_: None)
    roll_metrics = rollout_error(transition, data, cfg.transition)
    log(f"transition: {len(history)} epochs, {roll_metrics}")

    from cwm.model.centring import centring_meta

    model = WorldModel(encoder, transition, cfg.transition, None, centring_meta(cfg.centring_samples))
    model.ranker = fit_ranker(model, loader, by_task, cfg.ranker)
    metrics = {"encoder": {k: v for k, v in enc_metrics.items() if k != "loss"}, "transition": roll_metrics,
               "ranker_rows": int(sum(len(v) for v in by_task.values())), "train_tasks": len(by_task),
               "wall_s": round(time.time() - t_start, 1)}
    model.meta = {"config": _jsonable(asdict(cfg)), "training_data": _data_hash(loader), "metrics": _jsonable(metrics),
                  **centring_meta(cfg.centring_samples)}
    model.save(out_dir)
    stages.done()
    log(f"wrote {out_dir} in {metrics['wall_s']} s")
    return metrics


def _jsonable(x):
    return json.loads(json.dumps(x, default=lambda o: o.tolist() if hasattr(o, "tolist") else str(o)))
