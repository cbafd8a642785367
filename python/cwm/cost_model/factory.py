"""The cost-model factory: MetaSchedule cost models by name, as ``ms.cost_model.CostModel.create`` does.

:func:`create` builds a registered cost model from its name and options; :func:`registered`
lists the names (the choices of ``cwm.tune``, ``cwm.compile``, the ``cwm-tune`` pass and the
``--cost-model`` flags); :func:`register` adds one. :func:`resolve` is what the tuners call
(:func:`cwm.tuning.tune.tune_tir`, :func:`cwm.tuning.relax_model.tune_model`,
``cwm.compile``): a ``CostModel`` instance is used as is, a registered name goes to
:func:`create`, any other name to MetaSchedule's ``CostModel.create`` (e.g. ``"mlp"``).

Built in (every constructor also takes ``num_cores``, the tuning threads, and ``seed``):

* ``"cwm"`` (option ``model_dir``) -> :class:`~cwm.cost_model.cwm_model.CWMCostModel` on
  ``model_dir`` (None: the shipped model, :func:`cwm.model.default_model_dir`), adapted with
  ``AdaptConfig(seed=seed)``;
* ``"xgb"`` -> ``XGBModel(num_tuning_cores=num_cores)``, MetaSchedule's defaults otherwise;
* ``"xgb-pretrained"`` (options ``pretrained_xgb``, ``dataset``, ``cache_dir``) -> ``XGBModel``
  loaded from ``pretrained_xgb`` (a file in cwm's pickle-free format, written by this model's
  ``save`` or :func:`~cwm.cost_model.xgb_pretrained.save_xgb_model`; TVM's pickle-based
  ``XGBModel.save`` tars are refused), or pre-trained on the training split of ``dataset`` and
  cached under ``cache_dir`` (:mod:`cwm.cost_model.xgb_pretrained`). Both XGB models
  ``save``/``load`` in that format, never through pickle;
* ``"random"`` -> MetaSchedule's ``RandomModel(seed=seed)``.

Options that the chosen model does not read are ignored, so one set of options (those of
``cwm.tune``) can travel with any name; an option that no registered model reads is a
``TypeError``. Importing this module is cheap: the constructors import TVM and torch.
"""
from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Callable


@dataclass(frozen=True)
class CostModelEntry:
    """A registered cost model: ``build(num_cores=, seed=, **options)`` and its options' defaults."""

    name: str
    build: Callable[..., Any]
    options: dict = field(default_factory=dict)
    help: str = ""


_REGISTRY: dict[str, CostModelEntry] = {}


def register(name: str, options: dict | None = None, help: str = ""):  # noqa: A002 (argparse's word)
    """Decorator registering ``build(num_cores, seed, **options) -> CostModel`` under ``name``.

    ``options`` maps each option the model reads to its default. A name is registered once.
    """
    def decorate(build):
        if name in _REGISTRY:
            raise ValueError(f"cost model {name!r} is registered already")
        _REGISTRY[name] = CostModelEntry(name, build, dict(options or {}), help)
        return build

    return decorate


def registered() -> tuple:
    """The registered names, in registration order (the built-ins first)."""
    return tuple(_REGISTRY)


def entry(name: str) -> CostModelEntry:
    """The registration of ``name``; ``ValueError`` listing the registered names otherwise."""
    try:
        return _REGISTRY[name]
    except KeyError:
        raise ValueError(f"unknown cost model {name!r}; registered: {list(_REGISTRY)}") from None


def create(name: str, num_cores: int = 2, *, seed: int = 0, **options):
    """A new cost model of the registered kind ``name`` (see the module docstring)."""
    chosen = entry(name)
    known = {option for registered_entry in _REGISTRY.values() for option in registered_entry.options}
    unknown = sorted(set(options) - known)
    if unknown:
        raise TypeError(f"cost-model option(s) {unknown} are read by no registered cost model "
                        f"(known options: {sorted(known)})")
    kwargs = {option: options.get(option, default) for option, default in chosen.options.items()}
    return chosen.build(num_cores=num_cores, seed=seed, **kwargs)


def resolve(spec="xgb", num_cores: int = 2, *, seed: int = 0, **options):
    """A MetaSchedule cost model from ``spec``: an instance as is, a registered name through
    :func:`create`, any other name through MetaSchedule's ``CostModel.create``."""
    if not isinstance(spec, str):
        return spec
    if spec in _REGISTRY:
        return create(spec, num_cores, seed=seed, **options)
    from tvm.s_tir import meta_schedule as ms

    return ms.cost_model.CostModel.create(spec)


# ---------------------------------------------------------------------------- built-ins
@register("cwm", options={"model_dir": None}, help="the world model, adapted to the task as it is measured")
def _cwm(num_cores: int, seed: int, model_dir=None):
    from cwm.cost_model.cwm_model import AdaptConfig, CWMCostModel

    return CWMCostModel(model_dir=model_dir, config=AdaptConfig(seed=seed))


@register("xgb", help="MetaSchedule's XGBModel at its defaults")
def _xgb(num_cores: int, seed: int):
    from cwm.cost_model.xgb_pretrained import make_xgb_model

    return make_xgb_model(num_tuning_cores=num_cores)  # XGBModel, saved/loaded without pickle


@register("xgb-pretrained", options={"pretrained_xgb": None, "dataset": "data/dataset", "cache_dir": None},
          help="XGBModel pre-trained on the dataset's training records")
def _xgb_pretrained(num_cores: int, seed: int, pretrained_xgb=None, dataset="data/dataset", cache_dir=None):
    from cwm.cost_model.xgb_pretrained import load_pretrained_xgb, pretrained_xgb_path

    path = pretrained_xgb or pretrained_xgb_path(dataset, seed=seed, cache_dir=cache_dir, num_threads=num_cores)
    return load_pretrained_xgb(path, num_cores=num_cores, seed=seed)


@register("random", help="MetaSchedule's RandomModel")
def _random(num_cores: int, seed: int):
    from tvm.s_tir import meta_schedule as ms

    return ms.cost_model.RandomModel(seed=seed)
