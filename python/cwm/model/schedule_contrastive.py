"""The encoder trained to tell schedules apart (issue #12, deliverable 4).

:mod:`cwm.model.contrastive` makes two *different* states of one task a positive pair, so it
teaches ``E`` to map every schedule of a workload to one point. This recipe does the opposite:

* **Positives** are the same program twice: each view renamed independently
  (:func:`cwm.model.augment.rename_identifiers`) and cropped independently to at most
  ``train_max_windows`` windows, so a view must carry what the whole program is, not its names.
* **Negatives** are every other view of the batch, and a batch holds ``schedules_per_group``
  schedules of each of its ``groups_per_batch`` tasks: other schedules of the same workload are
  negatives, the hardest ones.
* **An auxiliary head** (linear, on ``z`` standardized by a batch norm without parameters:
  unit-norm states of one encoder differ by little, and a plain linear head on them would need
  weights far from its initialisation) predicts the program's physical facts: MetaSchedule's
  per-store features pooled over stores (:mod:`cwm.model.probe_features`), as
  ``sign(x) log1p(|x|)``, standardized on the training items. Its loss has two terms of equal
  weight: the features themselves, and their deviation from the mean of the batch's other
  schedules of the same task (what ranking a task's candidates needs).

Loss: NT-Xent at ``temperature`` + ``aux_weight`` × the head's mean squared error. AdamW with
linear warm-up and cosine decay, gradients clipped at 1. Seeded; ``checkpoint`` (a path) is
written every ``checkpoint_every`` steps and read back on start, so an interrupted run resumes
with the same weights, optimiser, schedule and sampler state.

Items are ``{"group": str, "text": str, "features": [float, ...]}``; whole groups are held out
(``holdout_groups``) to report the head's error on workloads the encoder never saw.
"""
from __future__ import annotations

import random
import time
from dataclasses import dataclass
from pathlib import Path

import numpy as np
import torch
import torch.nn.functional as F

from cwm.model.augment import rename_identifiers
from cwm.model.contrastive import _crop, nt_xent, warmup_cosine


@dataclass
class ScheduleContrastiveConfig:
    seed: int = 0
    groups_per_batch: int = 6
    schedules_per_group: int = 3
    temperature: float = 0.1
    aux_weight: float = 1.0
    lr: float = 5e-4
    weight_decay: float = 0.01
    warmup_steps: int = 10
    max_steps: int = 300
    time_budget_s: float | None = None
    train_max_windows: int = 2
    holdout_groups: float = 0.1
    checkpoint_every: int = 25
    log_every: int = 10
    #: where the encoder and the head train: "cpu", or "cuda" on a lent GPU, where thousands of
    #: steps and whole-program views (a larger ``train_max_windows``) fit in minutes; the
    #: checkpoint then holds the CUDA generator too, and a CPU run reads it back (map_location)
    device: str = "cpu"


def signed_log(x: np.ndarray) -> np.ndarray:
    return np.sign(x) * np.log1p(np.abs(x))


class FeatureScaler:
    """``signed_log`` then standardization on the fitting items; constant columns map to 0."""

    def __init__(self, rows: np.ndarray):
        y = signed_log(np.asarray(rows, np.float64))
        self.mean = np.nanmean(y, 0)
        std = np.nanstd(y, 0)
        self.scale = np.where(std > 1e-6, std, np.inf)

    def __call__(self, rows) -> np.ndarray:
        y = (signed_log(np.asarray(rows, np.float64)) - self.mean) / self.scale
        return np.nan_to_num(y, nan=0.0).astype(np.float32)


def split_items(items: list[dict], frac: float, seed: int) -> tuple[dict, dict]:
    """``({group: [item, ...]}, {group: [...]})``: fitting groups and whole held-out groups."""
    groups = {}
    for it in items:
        groups.setdefault(it["group"], []).append(it)
    names = sorted(groups)
    random.Random(seed).shuffle(names)
    k = int(round(frac * len(names))) if len(names) > 2 else 0
    held = set(names[:k])
    return ({g: groups[g] for g in sorted(groups) if g not in held},
            {g: groups[g] for g in sorted(groups) if g in held})


def aux_loss(pred: torch.Tensor, target: torch.Tensor, group_ids: list[int]) -> torch.Tensor:
    """Mean squared error of the features plus of their deviation from the group's mean."""
    ids = torch.tensor(group_ids, device=pred.device)
    onehot = F.one_hot(ids).to(pred.dtype)
    counts = onehot.sum(0, keepdim=True).t()
    mean_p = (onehot.t() @ pred) / counts
    mean_t = (onehot.t() @ target) / counts
    return F.mse_loss(pred, target) + F.mse_loss(pred - mean_p[ids], target - mean_t[ids])


def head_error(encoder, head, groups: dict, scaler: FeatureScaler, max_per_group: int = 4,
               max_groups: int = 40) -> dict:
    """The head's standardized squared error on the first ``max_groups`` of ``groups`` (full texts,
    eval mode; encoding is the cost): overall and within task (each task's mean removed from
    prediction and target)."""
    rows = [it for g in sorted(groups)[:max_groups] for it in groups[g][:max_per_group]]
    if not rows:
        return {}
    with torch.no_grad():
        z = encoder.encode([it["text"] for it in rows])
        head.eval()
        pred = head(z).double().cpu().numpy()
        head.train()
    target = scaler(np.array([it["features"] for it in rows]))
    gid = np.array([it["group"] for it in rows])
    within_p, within_t = pred.copy(), target.astype(np.float64).copy()
    for g in set(gid):
        m = gid == g
        within_p[m] -= within_p[m].mean(0)
        within_t[m] -= within_t[m].mean(0)
    live = np.isfinite(scaler.scale)
    return {"mse": float(np.mean((pred - target)[:, live] ** 2)),
            "within_task_mse": float(np.mean((within_p - within_t)[:, live] ** 2)),
            "within_task_target_var": float(np.mean(within_t[:, live] ** 2)), "texts": len(rows)}


def train_schedule_encoder(encoder, items: list[dict], cfg: ScheduleContrastiveConfig | None = None,
                           checkpoint=None, log=print):
    """Fine-tune ``encoder`` (a :class:`~cwm.model.encoder.StateEncoder`) on ``items`` in place;
    returns ``(encoder, head, metrics)``."""
    cfg = cfg or ScheduleContrastiveConfig()
    fit, held = split_items(items, cfg.holdout_groups, cfg.seed)
    groups = [g for g in fit if len(fit[g]) >= 2]
    if len(groups) < 2:
        raise ValueError(f"schedule-contrastive training needs 2 groups with 2 schedules each, got {len(groups)}")
    scaler = FeatureScaler(np.array([it["features"] for g in groups for it in fit[g]]))
    torch.manual_seed(cfg.seed)
    device = torch.device(cfg.device)
    head = torch.nn.Sequential(torch.nn.BatchNorm1d(encoder.dim, affine=False),
                               torch.nn.Linear(encoder.dim, len(scaler.mean))).to(device)
    encoder.to(device)
    params = list(encoder.parameters()) + list(head.parameters())
    opt = torch.optim.AdamW(params, lr=cfg.lr, weight_decay=cfg.weight_decay)
    sched = torch.optim.lr_scheduler.LambdaLR(opt, warmup_cosine(cfg.warmup_steps, cfg.max_steps))
    rng = random.Random(cfg.seed + 1)
    metrics = {"fit_groups": len(groups), "heldout_groups": len(held),
               "fit_texts": sum(len(fit[g]) for g in groups), "loss": [], "nce": [], "aux": []}
    start_step = 0
    ckpt = Path(checkpoint) if checkpoint else None
    if ckpt is not None and ckpt.is_file():
        state = torch.load(ckpt, weights_only=True, map_location=device)
        encoder.load_state_dict(state["encoder"])
        head.load_state_dict(state["head"])
        opt.load_state_dict(state["opt"])
        sched.load_state_dict(state["sched"])
        rng.setstate(state["rng"])
        torch.set_rng_state(state["torch_rng"].cpu())
        if device.type == "cuda" and "cuda_rng" in state:
            torch.cuda.set_rng_state(state["cuda_rng"].cpu(), device)
        metrics = state["metrics"]
        start_step = state["step"]
        log(f"resumed at step {start_step} from {ckpt}")
    else:
        metrics["before"] = {"fit": head_error(encoder, head, fit, scaler), "heldout": head_error(encoder, head, held, scaler)}
    tok = encoder.tokenizer
    encoder.train()
    t0 = time.monotonic()
    for step in range(start_step, cfg.max_steps):
        if cfg.time_budget_s is not None and time.monotonic() - t0 > cfg.time_budget_s:
            metrics["stopped_by"] = "time"
            break
        ids, targets, gids = [], [], []
        for gi, g in enumerate(rng.sample(groups, min(cfg.groups_per_batch, len(groups)))):
            for it in rng.sample(fit[g], min(cfg.schedules_per_group, len(fit[g]))):
                for _ in range(2):
                    ids.append(_crop(tok.encode(rename_identifiers(it["text"], rng)), encoder.config,
                                     cfg.train_max_windows, rng))
                targets.append(it["features"])
                gids.append(gi)
        z = encoder(None, ids=ids)
        nce = nt_xent(z, cfg.temperature)
        target = torch.from_numpy(scaler(np.array(targets))).to(device)
        pred = head(torch.cat([z[0::2], z[1::2]])).view(2, -1, len(scaler.mean)).mean(0)
        aux = aux_loss(pred, target, gids)
        loss = nce + cfg.aux_weight * aux
        opt.zero_grad()
        loss.backward()
        torch.nn.utils.clip_grad_norm_(params, 1.0)
        opt.step()
        sched.step()
        for k, v in (("loss", loss), ("nce", nce), ("aux", aux)):
            metrics[k].append(float(v.item()))
        if cfg.log_every and step % cfg.log_every == 0:
            log(f"step {step:4d}  nce {nce.item():.3f}  aux {aux.item():.3f}  {time.monotonic() - t0:6.1f}s")
        if ckpt is not None and (step + 1) % cfg.checkpoint_every == 0:
            state = {"encoder": encoder.state_dict(), "head": head.state_dict(), "opt": opt.state_dict(),
                     "sched": sched.state_dict(), "rng": rng.getstate(), "torch_rng": torch.get_rng_state(),
                     "metrics": metrics, "step": step + 1}
            if device.type == "cuda":
                state["cuda_rng"] = torch.cuda.get_rng_state(device)
            _save_checkpoint(ckpt, state)
    else:
        metrics["stopped_by"] = "steps"
    encoder.eval()
    metrics["steps"] = len(metrics["loss"])
    metrics["after"] = {"fit": head_error(encoder, head, fit, scaler), "heldout": head_error(encoder, head, held, scaler)}
    metrics["device"] = str(device)
    return encoder.cpu(), head.cpu(), metrics


def _save_checkpoint(path: Path, state: dict) -> None:
    tmp = path.with_name(path.name + ".tmp")
    torch.save(state, tmp)
    tmp.replace(path)
