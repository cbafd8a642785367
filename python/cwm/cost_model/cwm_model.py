"""``CWMCostModel``: the world model as a MetaSchedule cost model, adapted to each task online.

**predict(context, candidates).** Each candidate's trace is serialised exactly as the dataset
stores it (:func:`cwm.actions.trace_io.trace_to_json` of ``candidate.sch.trace``, post-processing
included), featurised by the native core and rolled out by TransH from ``z_0 = E(context.mod)``
(cached per workload by :meth:`WorldModel.z0`); the shipped ranker gives the prior margin
``m_prior`` (identical to :meth:`WorldModel.score`). Once the task has enough measurements its
task model adapts it (below), e.g. ``m = m_prior + w(n) * delta(x)``. MetaSchedule wants a
non-negative score, higher = better, used both as a max-heap key across the evolutionary rounds
and as multinomial weights when picking mutation parents, so scores must not depend on the
batch they were predicted in. The score is ``exp(m / temperature)``: strictly increasing in
``m`` (same order as the ranker), always > 0, and batch-independent. For a pairwise-logistic
margin, ``exp(m_i) / (exp(m_i) + exp(m_j))`` is the predicted probability that ``i`` is faster
than ``j`` (Bradley-Terry), which makes it a natural sampling weight.

**update(context, candidates, results): prior + task model.** Measured candidates of a task are
kept (trace, CWM features, prior margin, median latency; a runner error, no ``run_secs`` or a
failure marker ``>= 1e10`` s counts as the worst, latency ``inf``), and after each batch the
task model of ``AdaptConfig.kind`` is fitted from scratch on them
(:mod:`cwm.cost_model.task_adaptation`): the ``"residual"`` (default), a small ``rank:pairwise``
booster started from the prior's margins and shrunk by ``w(n) = n / (n + half_weight_at)`` (n =
valid measurements; 1/3 at 8, 1/2 at 16, 0.8 at 64), or the ``"blend"``, a regression of ``-log
latency`` on the measurements alone, brought to the prior's scale and weighed ``w(n)`` against
it. Refitting is cheap (tens of rows, one thread: a few ms) and deterministic (fixed seed, no
subsampling). Tasks are keyed by the structural hash of ``context.mod``.

**save(path) / load(path).** One JSON file: format/version, the prior's directory and a
fingerprint of its files, the :class:`AdaptConfig`, and per task the measured traces,
latencies, features, prior margins, the task model's booster (raw UBJSON, base64) and, for a
blend, its calibration (format v2; v1 files, residuals only, still load). ``load``
restores exactly that state into a model whose prior has the same fingerprint, so predictions
are identical; :meth:`CWMCostModel.from_file` builds the model from the saved prior path.
"""
from __future__ import annotations

import base64
import hashlib
import json
import math
import time
from dataclasses import asdict
from pathlib import Path

import numpy as np
from tvm.ir.utils import derived_object
from tvm.s_tir.meta_schedule.cost_model import PyCostModel

from cwm.cost_model.task_adaptation import AdaptConfig, TaskModel, fit_task_model

FORMAT, VERSION = "cwm-cost-model", 2
#: v1: residual task models only (no ``calibration``, no ``AdaptConfig.kind``)
READABLE_VERSIONS = (1, 2)
#: MetaSchedule stores failed builds/runs with this run time (seconds).
FAILED_SECS = 1e10
_LOG_SCORE_CLIP = 60.0  # exp(+-60) stays far inside float64 and above 0


def latency_of(result) -> float:
    """Median run time (s) of a MetaSchedule ``RunnerResult``; ``inf`` for a failed candidate."""
    secs = [float(s) for s in (result.run_secs or [])]
    if result.error_msg or not secs or max(secs) >= FAILED_SECS:
        return math.inf
    return float(np.median(secs))


class _Task:
    """What was measured in one task, and the task model fitted on it."""

    def __init__(self, n_features: int):
        self.traces: list[str] = []
        self.latencies: list[float] = []  # seconds, inf = failed
        self.features = np.zeros((0, n_features), np.float32)
        self.prior = np.zeros(0, np.float64)  # prior margins of the measured rows
        self.model = None  # TaskModel or None (the prior alone)
        self.n_fit = 0  # valid measurements the task model was fitted on

    @property
    def n_valid(self) -> int:
        return int(np.isfinite(np.asarray(self.latencies, np.float64)).sum())


def _b64(array: np.ndarray) -> str:
    return base64.b64encode(np.ascontiguousarray(array).tobytes()).decode("ascii")


def _unb64(text: str, dtype, shape) -> np.ndarray:
    return np.frombuffer(base64.b64decode(text), dtype=dtype).reshape(shape).copy()


def prior_fingerprint(model_dir) -> str:
    """SHA-256 over the files that define a model directory's scores (manifest, TransH, ranker,
    the sequence head of a v6 model)."""
    h = hashlib.sha256()
    for name in ("manifest.json", "transition.safetensors", "ranker.json", "ranker.json.config",
                 "sequence.safetensors"):
        path = Path(model_dir) / name
        h.update(name.encode())
        h.update(path.read_bytes() if path.exists() else b"")
    return h.hexdigest()


@derived_object
class CWMCostModel(PyCostModel):
    """The CWM world model as a MetaSchedule cost model (``cost_model=`` of ``tune_tir``...).

    ``model_dir``: a directory written by ``cwm train`` (default: the shipped model,
    :func:`cwm.model.default_model_dir`, which raises ``FileNotFoundError`` if absent).
    ``world_model``: an already loaded :class:`~cwm.model.world_model.WorldModel` to use as
    the prior instead of loading ``model_dir`` again (``model_dir`` is then only recorded).
    ``config``: :class:`AdaptConfig`; ``num_threads``: threads of the native rollout.
    """

    def __init__(self, model_dir=None, config: AdaptConfig | None = None, num_threads: int = 1,
                 world_model=None):
        super().__init__()
        if world_model is None:
            from cwm.model import default_model_dir
            from cwm.model.world_model import WorldModel

            model_dir = Path(model_dir) if model_dir is not None else default_model_dir()
            world_model = WorldModel.load(model_dir)
        self.world_model = world_model
        if getattr(world_model.ranker, "booster", None) is not None:
            # the ranker scores a few hundred rows per call: OpenMP threads only add contention
            world_model.ranker.booster.set_param({"nthread": int(num_threads)})
        self.model_dir = Path(model_dir).resolve() if model_dir is not None else None
        self.prior_sha256 = prior_fingerprint(self.model_dir) if self.model_dir is not None else None
        self.config = config or AdaptConfig()
        self.num_threads = int(num_threads)
        self._tasks: dict[str, _Task] = {}
        self.stats = {"predict_calls": 0, "predicted": 0, "predict_s": 0.0,
                      "update_calls": 0, "measured": 0, "update_s": 0.0, "fits": 0, "fit_s": 0.0}

    @classmethod
    def from_file(cls, path, num_threads: int = 1):
        """A model with the prior named in the file written by :meth:`save`, state loaded."""
        data = json.loads(Path(path).read_text())
        if not data.get("model_dir"):
            raise ValueError(f"{path} names no prior model directory; build the model and call load()")
        model = cls(model_dir=data["model_dir"], config=AdaptConfig(**data["config"]), num_threads=num_threads)
        model.load(str(path))
        return model

    # ------------------------------------------------------------ offline API
    def _prior(self, workload, traces, target):
        """``(features [N, F], prior margins [N])``; the margins equal ``WorldModel.score``."""
        wm = self.world_model
        fb = wm.featurize(workload, list(traces))
        z0 = wm.z0(workload)
        reference = wm.reference(workload, target) if wm.centring else None
        feats = wm.features(wm.rollout(z0, fb, num_threads=self.num_threads), fb, target, z0, reference)
        return feats, np.asarray(wm.margins(feats, fb), np.float64)

    def margins(self, workload, traces, target) -> np.ndarray:
        """Log-scores of trace JSON texts of ``workload``: prior + ``w(n)`` * the task's residual."""
        from cwm.workload_key import task_key

        if len(traces) == 0:
            return np.zeros(0, np.float64)
        feats, margin = self._prior(workload, traces, target)
        task = self._tasks.get(task_key(workload))
        if task is not None and task.model is not None:
            margin = task.model.margin(feats, margin)
        return margin

    def score_traces(self, workload, traces, target) -> np.ndarray:
        """What :meth:`predict` returns for these traces: ``exp(margin / temperature)``, > 0."""
        m = self.margins(workload, traces, target) / self.config.temperature
        return np.exp(np.clip(m, -_LOG_SCORE_CLIP, _LOG_SCORE_CLIP))

    def observe(self, workload, traces, latencies_s, target) -> None:
        """Add measured traces of ``workload`` (latency in s; ``inf``/NaN = failed) and refit."""
        from cwm.workload_key import task_key

        if len(traces) != len(latencies_s):
            raise ValueError(f"{len(traces)} traces but {len(latencies_s)} latencies")
        if len(traces) == 0:
            return
        lat = [float(x) if x is not None and np.isfinite(x) and 0 < x < FAILED_SECS else math.inf
               for x in latencies_s]
        feats, prior = self._prior(workload, traces, target)
        task = self._tasks.setdefault(task_key(workload), _Task(feats.shape[1]))
        task.traces.extend(traces)
        task.latencies.extend(lat)
        task.features = np.concatenate([task.features, feats.astype(np.float32)])
        task.prior = np.concatenate([task.prior, prior])
        self._fit(task)

    def task_state(self, workload) -> dict:
        """``{"measured", "valid", "adapted", "weight"}`` of ``workload``'s task."""
        from cwm.workload_key import task_key

        task = self._tasks.get(task_key(workload))
        if task is None:
            return {"measured": 0, "valid": 0, "adapted": False, "weight": 0.0}
        return {"measured": len(task.latencies), "valid": task.n_valid, "adapted": task.model is not None,
                "weight": task.model.weight if task.model is not None else 0.0}

    def _fit(self, task: _Task) -> None:
        start = time.perf_counter()
        task.model = fit_task_model(task.features, task.prior, task.latencies, self.config)
        task.n_fit = task.n_valid if task.model is not None else 0
        if task.model is not None:
            self.stats["fits"] += 1
            self.stats["fit_s"] += time.perf_counter() - start

    # ------------------------------------------------------ MetaSchedule API
    def predict(self, context, candidates) -> np.ndarray:
        from cwm.actions.trace_io import trace_to_json

        start = time.perf_counter()
        traces = [trace_to_json(c.sch.trace) for c in candidates]
        out = self.score_traces(context.mod, traces, context.target).astype(np.float64)
        self.stats["predict_calls"] += 1
        self.stats["predicted"] += len(traces)
        self.stats["predict_s"] += time.perf_counter() - start
        return out

    def update(self, context, candidates, results) -> None:
        from cwm.actions.trace_io import trace_to_json

        start = time.perf_counter()
        traces = [trace_to_json(c.sch.trace) for c in candidates]
        self.observe(context.mod, traces, [latency_of(r) for r in results], context.target)
        self.stats["update_calls"] += 1
        self.stats["measured"] += len(traces)
        self.stats["update_s"] += time.perf_counter() - start

    def save(self, path: str) -> None:
        tasks = {}
        for key, t in sorted(self._tasks.items()):
            tasks[key] = {
                "traces": t.traces,
                "latency_s": [x if math.isfinite(x) else None for x in t.latencies],
                "n_features": int(t.features.shape[1]),
                "features": _b64(t.features.astype(np.float32)),
                "prior": _b64(t.prior.astype(np.float64)),
                "delta": base64.b64encode(bytes(t.model.booster.save_raw("ubj"))).decode("ascii") if t.model else None,
                "calibration": list(t.model.calibration) if t.model and t.model.calibration else None,
                "n_fit": t.n_fit,
            }
        data = {"format": FORMAT, "version": VERSION,
                "model_dir": str(self.model_dir) if self.model_dir is not None else None,
                "prior_sha256": self.prior_sha256, "config": asdict(self.config), "tasks": tasks}
        Path(path).parent.mkdir(parents=True, exist_ok=True)
        tmp = Path(str(path) + ".tmp")
        tmp.write_text(json.dumps(data))
        tmp.replace(path)

    def load(self, path: str) -> None:
        data = json.loads(Path(path).read_text())
        if data.get("format") != FORMAT or data.get("version") not in READABLE_VERSIONS:
            raise ValueError(f"{path}: not a {FORMAT} v{'/v'.join(map(str, READABLE_VERSIONS))} file "
                             f"(format {data.get('format')!r} v{data.get('version')!r})")
        if data.get("prior_sha256") != self.prior_sha256:
            raise ValueError(f"{path} was saved with another prior model ({data.get('model_dir')}) than this "
                             f"one ({self.model_dir}); use CWMCostModel.from_file({str(path)!r})")
        import xgboost as xgb

        config = AdaptConfig(**data["config"])
        tasks = {}
        for key, d in data["tasks"].items():
            t = _Task(d["n_features"])
            n = len(d["latency_s"])
            t.traces = list(d["traces"])
            t.latencies = [math.inf if x is None else float(x) for x in d["latency_s"]]
            t.features = _unb64(d["features"], np.float32, (n, d["n_features"]))
            t.prior = _unb64(d["prior"], np.float64, (n,))
            t.n_fit = int(d["n_fit"])
            if d["delta"] is not None:
                booster = xgb.Booster()
                booster.load_model(bytearray(base64.b64decode(d["delta"])))
                booster.set_param({"nthread": 1})
                calibration = d.get("calibration")  # v1 files hold residuals only
                t.model = TaskModel(config.kind, booster, config.weight(t.n_fit),
                                    tuple(calibration) if calibration else None)
            tasks[key] = t
        self.config = config
        self._tasks = tasks
