"""The world model as one object: encoder ``E``, TransH transition ``F``, LambdaRank ranker.

Scoring a task's candidates: ``z_0 = E(workload)`` once per workload (cached), then for each
candidate its canonical action arrays are rolled out ``ẑ_T = F(...F(z_0, a_1)..., a_T)``, and
the ranker scores ``[ẑ_T - z_0, action statistics, trace structure, hardware features]`` (the
predicted final state as its displacement from the start, comparable across tasks; the trace
structure of :mod:`cwm.model.trace_structure` from model v4 on; then each family of
:mod:`cwm.model.trace_columns` whose flag the manifest sets, e.g. ``"compute_locations": true``,
docs/decisions.md §66, §67). Higher = predicted faster.

Model directory (``save``/``load``)::

    manifest.json          format, version, configs, feature names, vocabulary, training data, metrics
    encoder/               StateEncoder.save (safetensors + tokenizer)
    transition.safetensors TransH weights
    ranker.json            XGBoost model (+ ranker.json.config)
    sequence.safetensors   v6: the sequence head (:mod:`cwm.model.sequence_head`), blended into
                           the ranker's margin
"""
from __future__ import annotations

import json
from pathlib import Path

import numpy as np

from cwm.actions.vocab import KINDS
from cwm.model import action_stats, trace_columns, trace_structure
from cwm.model.transition import TransitionConfig

#: 4: the ranker also sees the trace structure; 3: ẑ_T - z_0 and action statistics (2: ẑ_T)
FORMAT, VERSION = "cwm-world-model", 4
#: v5 = v4 whose TransH reads the state (``TransitionConfig.state_dependent``): a scorer that
#: reads only v4 refuses it instead of ignoring the field and rolling out the plain form
STATE_READ_VERSION = 5
#: v6 = v4 with a sequence head (:mod:`cwm.model.sequence_head`): a scorer that reads only v4/v5
#: refuses it instead of scoring without the head
SEQUENCE_HEAD_VERSION = 6
READS = (3, 4, 5, 6)  # versions this cwm scores with (3 without the trace structure)


def feature_names(dim: int, structure: bool = True, centred: bool = False, columns=()) -> list[str]:
    """The ranker's column names; ``columns``: the :mod:`cwm.model.trace_columns` families taken."""
    names = ([f"dz{i}" for i in range(dim)] + list(action_stats.NAMES) +
             (list(trace_structure.NAMES) if structure else []) +
             trace_columns.names(columns) + list(action_stats.HW_FEATURES))
    if centred:
        from cwm.model.centring import centred_names

        return centred_names(names)
    return names


class WorldModel:
    def __init__(self, encoder, transition, tcfg: TransitionConfig, ranker, meta: dict | None = None,
                 structure: bool = True, columns=(), sequence_head=None):
        self.encoder, self.transition, self.tcfg, self.ranker = encoder, transition, tcfg, ranker
        self.sequence_head = sequence_head  # a SequenceHead (model v6) or None
        self.meta = meta or {}
        self.structure = structure  # the ranker's rows include the trace structure (model v4)
        self.columns = columns  # ... and these trace-column families (manifest flags); see the setter
        self._z0: dict[str, np.ndarray] = {}
        self._facts: dict[str, str] = {}  # task -> its facts' JSON text (cwm.model.tile_footprint)
        self._last_key = None  # (the last workload object, its task key)
        self._samples: dict[tuple, object] = {}  # (task, target) -> FeatureBatch of design-space samples
        self._references: dict[tuple, np.ndarray] = {}  # (task, target) -> reference row
        self._core = None  # native TransH evaluator, built on first use

    @property
    def columns(self) -> tuple[str, ...]:
        """The :mod:`cwm.model.trace_columns` families the rows hold, in row order."""
        return self._columns

    @columns.setter
    def columns(self, families) -> None:
        self._columns = trace_columns.ordered(families)  # once here, not on every scoring call

    @property
    def centring(self) -> dict | None:
        """``{"samples", "seed"}`` when the ranker reads its rows beside the rows less the task's
        design-space reference (:mod:`cwm.model.centring`); None otherwise."""
        return self.meta.get("centring")

    def use_transition(self, source) -> None:
        """Roll out with the TransH saved in ``source`` (``transition.safetensors`` with the config of
        ``transition.json``, as ``bench/transition_corpus.py --save`` writes them) in place of this
        model's. The state size must be the model's (the encoder gives ``z_0`` and the ranker reads
        ``ẑ_T - z_0``); the hidden size, the state read and the rollout form may differ. The ranker
        is left as it is: refit it (``tools/refit_ranker.py --transition``) before scoring with it."""
        import json
        from pathlib import Path

        from safetensors.torch import load_file

        from cwm.model.transition import TransH

        source = Path(source)
        saved = json.loads((source / "transition.json").read_text())
        tcfg = TransitionConfig(**saved["transition"])
        if tcfg.dim != self.tcfg.dim:
            raise ValueError(f"{source}: a transition of state size {tcfg.dim}; the model's encoder gives {self.tcfg.dim}")
        transition = TransH(tcfg)
        transition.load_state_dict(load_file(str(source / "transition.safetensors")))
        transition.eval()
        self.transition, self.tcfg = transition, tcfg
        self._core = None  # the native evaluator holds the old weights
        self._references.clear()  # centring references are rollouts too
        self.meta["transition_source"] = {k: v for k, v in saved.items() if k != "transition"}

    # ----------------------------------------------------------------- pieces
    def _task_key(self, workload) -> str:
        """:func:`cwm.workload_key.task_key` of ``workload``, remembered for the last workload object:
        one scoring call asks it for ``z_0``, the reference and the facts, and a structural hash
        costs about 40 µs."""
        if self._last_key is None or self._last_key[0] is not workload:
            from cwm.workload_key import task_key

            self._last_key = (workload, task_key(workload))
        return self._last_key[1]

    def z0(self, workload) -> np.ndarray:
        """``E(s_0)`` of an unscheduled workload (IRModule), cached by structural hash."""
        key = self._task_key(workload)
        if key not in self._z0:
            import torch

            with torch.no_grad():
                self._z0[key] = self.encoder.encode([workload.script()]).numpy()[0].astype(np.float32)
        return self._z0[key]

    def task_facts(self, workload) -> str:
        """The facts of an unscheduled workload that a task family reads
        (:func:`cwm.model.tile_footprint.task_facts`, as JSON text), cached by structural hash."""
        from cwm.model.tile_footprint import facts_text, task_facts

        key = self._task_key(workload)
        if key not in self._facts:
            self._facts[key] = facts_text(task_facts(workload))
        return self._facts[key]

    def featurize(self, workload, traces, num_threads: int = 1):
        """The :class:`FeatureBatch` of one workload's candidate traces, with what the model's
        families read (:meth:`with_facts`; a task family's tiled nests are read in the same parse)."""
        from cwm import native

        fb = native.featurize_batch(traces, num_threads=num_threads, nests=self._takes_task_family())
        return self.with_facts(fb, workload)

    def with_facts(self, fb, workload):
        """``fb`` (a batch of ``workload``'s candidates) with the task's facts attached when the model
        takes a task family (:data:`trace_columns.TASK_FAMILIES`); ``fb`` itself."""
        if self._takes_task_family() and fb.facts is None:
            fb.facts = self.task_facts(workload)
        return fb

    def _takes_task_family(self) -> bool:
        return any(f in trace_columns.TASK_FAMILIES for f in self.columns)

    def rollout(self, z0: np.ndarray, fb, num_threads: int = 1) -> np.ndarray:
        """``ẑ_T`` for every trace of a :class:`FeatureBatch`, from one ``z0 [D]`` (native core)."""
        if self._core is None:
            from cwm import native
            from cwm.model.transition import numpy_weights

            self._core = native.transition_core(numpy_weights(self.transition), self.tcfg)
        z = np.ascontiguousarray(np.repeat(z0[None].astype(np.float32), fb.ints.shape[0], 0))
        return self._core.rollout(z, fb.ints, fb.numbers, num_threads=num_threads)

    def features(self, z_t: np.ndarray, fb, target, z0: np.ndarray, reference: np.ndarray | None = None) -> np.ndarray:
        """Ranker rows: :meth:`raw_features`, and with :attr:`centring` beside them the same rows
        less ``reference`` (:meth:`reference`, required then)."""
        rows = self.raw_features(z_t, fb, target, z0)
        if not self.centring:
            return rows
        if reference is None:
            raise ValueError("this model centres its ranker rows: pass the task's reference (WorldModel.reference)")
        from cwm.model.centring import centred

        return centred(rows, reference)

    def _task_target(self, workload, target) -> tuple[tuple[str, str], dict]:
        import json

        t = target if isinstance(target, dict) else json.loads(str(target))
        return (self._task_key(workload), json.dumps(t, sort_keys=True)), t

    def _sampling_key(self, workload, target, samples, seed) -> tuple[tuple, dict]:
        """``((task, target, samples, seed), target dict)``; ``samples`` / ``seed`` default to :attr:`centring`'s."""
        key, t = self._task_target(workload, target)
        samples = int(self.centring["samples"]) if samples is None else int(samples)
        seed = int(self.centring["seed"]) if seed is None else int(seed)
        return (*key, samples, seed), t

    def design_samples(self, workload, target, samples: int | None = None, seed: int | None = None):
        """The :class:`FeatureBatch` of the task's seeded design-space samples (cached), or None
        when MetaSchedule draws none (its design-space generation fails on the workload).
        ``samples`` / ``seed``: :attr:`centring`'s unless given (``cwm probe`` asks any model)."""
        key, t = self._sampling_key(workload, target, samples, seed)
        if key not in self._samples:
            from cwm.design_sample import sample_traces

            try:
                traces = sample_traces(workload, t, key[2], key[3])
            except Exception as error:  # noqa: BLE001 - a ScheduleError, or TVM's TVMError for the same
                import warnings

                warnings.warn(f"task {key[0]}: no design-space samples ({type(error).__name__}); its rows are "
                              "centred on zeros (the centred copy equals the rows)", stacklevel=2)
                traces = []
            self._samples[key] = self.featurize(workload, traces) if traces else None
        return self._samples[key]

    def reference(self, workload, target, samples: int | None = None, seed: int | None = None) -> np.ndarray:
        """The task's reference row: the mean :meth:`raw_features` row of its design-space samples
        (:func:`cwm.model.centring.mean_row`); zeros when there are none."""
        from cwm.model.centring import mean_row

        key, _ = self._sampling_key(workload, target, samples, seed)
        if key not in self._references:
            fb = self.design_samples(workload, target, samples, seed)
            z0 = self.z0(workload)
            width = len(feature_names(self.tcfg.dim, self.structure, columns=self.columns))
            self._references[key] = (np.zeros(width, np.float32)
                                     if fb is None else mean_row(self.raw_features(self.rollout(z0, fb), fb, target, z0)))
        return self._references[key]

    def raw_features(self, z_t: np.ndarray, fb, target, z0: np.ndarray) -> np.ndarray:
        """Rows ``[ẑ_T - z_0, action statistics, trace structure, trace-column families,
        hardware]`` (docs/decisions.md §15, §44, §66, §67, §95, §104); a task family needs ``fb``
        from :meth:`featurize` or :meth:`with_facts`."""
        from cwm import native

        stats = [native.sequence_stats(fb)]  # identical to action_stats.sequence_stats (parity-tested)
        if self.structure:
            stats.append(native.structure_stats(fb))  # identical to trace_structure.structure_stats
        hardware = action_stats.hardware_features(target)
        stats += trace_columns.native_columns(self.columns, fb, int(hardware[0]))  # identical to their specs
        hw = np.repeat(hardware[None], len(stats[0]), 0)
        dz = z_t.astype(np.float32) - np.asarray(z0, np.float32)
        return np.concatenate([dz, *stats, hw], 1)

    def margins(self, features: np.ndarray, fb) -> np.ndarray:
        """The ranker's margins of ranker rows ``features``, blended with the sequence head's
        scores of the same candidates' actions ``fb`` when the model has one (v6)."""
        ranker = self.ranker.predict(features)
        if self.sequence_head is None:
            return ranker
        return self.sequence_head.margins(ranker, fb)

    def score(self, workload, traces, target) -> np.ndarray:
        """Scores of candidate traces (JSON texts) of one workload; higher = predicted faster."""
        fb = self.featurize(workload, traces)
        z0 = self.z0(workload)
        reference = self.reference(workload, target) if self.centring else None
        return self.margins(self.features(self.rollout(z0, fb), fb, target, z0, reference), fb)

    # ------------------------------------------------------------------ files
    def save(self, directory) -> None:
        from safetensors.numpy import save_file

        d = Path(directory)
        d.mkdir(parents=True, exist_ok=True)
        self.encoder.save(d / "encoder")
        save_file({k: v.detach().cpu().numpy() for k, v in self.transition.state_dict().items()},
                  str(d / "transition.safetensors"))
        self.ranker.save(str(d / "ranker.json"))
        if self.tcfg.state_dependent and not self.structure:
            raise ValueError("a transition that reads the state needs the trace structure (model v5 = v4 + it)")
        if self.columns and not self.structure:
            raise ValueError(f"the trace-column families ({', '.join(self.columns)}) come after the trace "
                             "structure (model v4 and later)")
        if self.sequence_head is not None and (self.tcfg.state_dependent or not self.structure):
            raise ValueError("a sequence head (model v6) goes with a v4 model: the trace structure, a plain TransH")
        version = (SEQUENCE_HEAD_VERSION if self.sequence_head is not None else STATE_READ_VERSION
                   if self.tcfg.state_dependent else VERSION if self.structure else 3)
        from cwm.model import sequence_head

        self.meta.pop(sequence_head.META_KEY, None)
        (d / sequence_head.FILE).unlink(missing_ok=True)
        if self.sequence_head is not None:
            self.meta[sequence_head.META_KEY] = self.sequence_head.save(d)
        manifest = {"format": FORMAT, "version": version, "transition": self.tcfg.to_dict(),
                    "feature_names": feature_names(self.tcfg.dim, self.structure, bool(self.centring), self.columns),
                    **{family: True for family in self.columns},
                    "action_kinds": list(KINDS),
                    **self.meta}
        (d / "manifest.json").write_text(json.dumps(manifest, indent=1, sort_keys=True) + "\n")

    @classmethod
    def load(cls, directory, refit_ranker: bool = False) -> "WorldModel":
        """Read a model directory (v3 or v4). ``refit_ranker`` also accepts a v2 directory (same
        encoder and transition files, ranker on other features) for ``tools/refit_ranker.py``, and
        gives the model v4's features whatever the directory had."""
        import torch
        from safetensors.torch import load_file

        from cwm.model.encoder import StateEncoder
        from cwm.model.ranker import Ranker
        from cwm.model.transition import TransH

        d = Path(directory)
        if not (d / "manifest.json").exists():
            raise FileNotFoundError(f"{d} is not a CWM model directory (no manifest.json)")
        manifest = json.loads((d / "manifest.json").read_text())
        versions = READS + (2,) if refit_ranker else READS
        if manifest.get("format") != FORMAT or manifest.get("version") not in versions:
            raise ValueError(f"{d}: model format {manifest.get('format')} v{manifest.get('version')}, "
                             f"this cwm reads {FORMAT} v{'/v'.join(map(str, READS))}")
        if manifest.get("action_kinds") != list(KINDS):
            raise ValueError(f"{d}: the model was trained with another action vocabulary; retrain it")
        tcfg = TransitionConfig(**manifest["transition"])
        if tcfg.state_dependent != (manifest["version"] == STATE_READ_VERSION):
            raise ValueError(f"{d}: a v{manifest['version']} model "
                             f"{'cannot have' if tcfg.state_dependent else 'must have'} transition.state_dependent = true")
        transition = TransH(tcfg)
        transition.load_state_dict(load_file(str(d / "transition.safetensors")))
        transition.eval()
        encoder = StateEncoder.load(d / "encoder")
        encoder.eval()
        derived = ("format", "version", "transition", "feature_names", "action_kinds",
                   *trace_columns.FAMILIES)  # save() writes these
        meta = {k: v for k, v in manifest.items() if k not in derived}
        structure = refit_ranker or manifest["version"] >= 4
        head = None
        if manifest["version"] == SEQUENCE_HEAD_VERSION:
            from cwm.model.sequence_head import META_KEY, SequenceHead

            if META_KEY not in meta:
                raise ValueError(f"{d}: a v6 model without its manifest's {META_KEY}")
            head = SequenceHead.load(d, meta[META_KEY])
        for family in trace_columns.FAMILIES:
            if manifest.get(family, False) not in (True, False):
                raise ValueError(f"{d}: the manifest's {family} must be true or false")
        columns = tuple(family for family in trace_columns.FAMILIES if manifest.get(family, False))
        if not refit_ranker and manifest.get("feature_names") != feature_names(
                tcfg.dim, structure, bool(meta.get("centring")), columns):
            raise ValueError(f"{d}: the manifest's feature_names are not model v{manifest['version']}'s")
        return cls(encoder, transition, tcfg, Ranker.load(str(d / "ranker.json")), meta, structure, columns, head)
