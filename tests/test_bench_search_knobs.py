"""bench/search_knobs.py: how an arm is read and how arms are paired (no tuning here)."""
from __future__ import annotations

import math
import sys
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "bench"))


def test_an_arm_sets_search_knobs_and_the_temperature():
    from search_knobs import knob_search, parse_arm

    assert parse_arm("base") == ({}, {})
    assert parse_arm("num_trials_per_iter=8+temperature=2") == ({"num_trials_per_iter": 8}, {"temperature": 2.0})
    settings, adapt = knob_search("genetic_num_iters=4+population_size=256")
    assert (settings.genetic_num_iters, settings.population_size, adapt.temperature) == (4, 256, 1.0)
    assert knob_search("eps_greedy=0.25")[0].eps_greedy == 0.25 and settings.eps_greedy == 0.05
    # the rest is CWM's default search, the seeded profile
    assert (settings.seed_trials, settings.seed_placement, settings.num_trials_per_iter) == (8, "last", 16)


def test_an_arm_sets_the_task_model():
    from search_knobs import knob_search, parse_arm

    assert parse_arm("kind=blend+half_weight_at=32") == ({}, {"kind": "blend", "half_weight_at": 32})
    adapt = knob_search("kind=blend+half_weight_at=32")[1]
    assert (adapt.kind, adapt.half_weight_at, adapt.temperature) == ("blend", 32, 1.0)
    with pytest.raises(ValueError, match="kind must be one of"):
        knob_search("kind=ensemble")
    with pytest.raises(SystemExit, match="unknown key 'seed'"):
        parse_arm("seed=3")  # the run's seed is --seeds'


def test_ranker_data_names_an_existing_root_and_is_not_a_search_setting(tmp_path):
    from search_knobs import parse_arm, ranker_data_of

    assert parse_arm("ranker_data=somewhere+temperature=2") == ({}, {"temperature": 2.0})
    assert ranker_data_of("base") is None and ranker_data_of("temperature=2") is None
    with pytest.raises(SystemExit, match="no dataset root"):
        ranker_data_of("ranker_data=no_such_root_here")
    (tmp_path / "manifest.json").write_text("{}")
    assert ranker_data_of(f"num_trials_per_iter=8+ranker_data={tmp_path}") == str(tmp_path)


def test_add_columns_gives_the_prior_more_trace_columns_and_is_not_a_search_setting():
    from search_knobs import _prior_tag, columns_of, parse_arm

    shipped = ("compute_locations",)
    assert columns_of("base", shipped) == shipped and columns_of("temperature=1.0", shipped) == shipped
    cols = columns_of("add_columns=loop_tiles+temperature=1.0", shipped)
    assert cols == ("compute_locations", "loop_tiles") and _prior_tag((cols, None), shipped) == "+loop_tiles"
    assert _prior_tag((shipped, None), shipped) == ""  # the shipped prior keeps the untagged cache
    assert columns_of("add_columns=loop_tiles/vector_alignment", shipped)[0] == "vector_alignment"  # row order
    assert parse_arm("add_columns=loop_tiles+temperature=1.0") == ({}, {"temperature": 1.0})
    with pytest.raises(SystemExit, match="unknown trace-column family"):
        columns_of("add_columns=loop_tile", shipped)
    with pytest.raises(SystemExit, match="drop ranker_data and pessimism"):
        columns_of("add_columns=loop_tiles+pessimism=1", shipped)


def test_transition_names_a_saved_transh_for_the_prior_and_is_not_a_search_setting(tmp_path):
    from search_knobs import _prior_tag, parse_arm, transition_of

    assert transition_of("base") is None and transition_of("temperature=1.0") is None
    with pytest.raises(SystemExit, match="no saved transition"):
        transition_of(f"transition={tmp_path}")
    (tmp_path / "transition.json").write_text("{}")
    (tmp_path / "transition.safetensors").write_bytes(b"")
    assert transition_of(f"transition={tmp_path}+temperature=1.0") == str(tmp_path)
    assert parse_arm(f"transition={tmp_path}+temperature=1.0") == ({}, {"temperature": 1.0})
    shipped = ("compute_locations",)
    assert _prior_tag((shipped, str(tmp_path)), shipped) == f"+transition_{tmp_path.name}"
    with pytest.raises(SystemExit, match="drop ranker_data and pessimism"):
        transition_of(f"transition={tmp_path}+ranker_data=x")


def test_a_fold_ranker_sees_no_task_of_its_network_in_any_root():
    from fold_rankers import fitted_keys

    rows = {"a": 0, "b": 0, "c": 0, "/x/dagger:a": 0, "/x/dagger:c": 0, "/x/control:b": 0, "/x/control:c": 0}
    folds = {"net1": ["a", "b"], "net2": ["c"]}
    # rows holding two extra roots' groups: a fold ranker is fitted on one extra root's only
    assert fitted_keys(rows, folds, "net1", "/x/dagger") == ["/x/dagger:c", "c"]
    assert fitted_keys(rows, folds, "net2", "/x/dagger") == ["/x/dagger:a", "a", "b"]
    assert fitted_keys(rows, folds, "net2", "/x/control") == ["/x/control:b", "a", "b"]
    assert fitted_keys(rows, folds, "net1", None) == ["c"]  # the shipped roots only


@pytest.mark.parametrize("arm, message", [("trials=8", "unknown key"), ("num_trials_per_iter", "not key=value"),
                                          ("num_trials_per_iter=eight", "must be of type int")])
def test_a_bad_arm_is_refused_with_a_message(arm, message):
    from search_knobs import parse_arm

    with pytest.raises(SystemExit, match=message):
        parse_arm(arm)


def test_an_invalid_setting_is_refused_before_anything_runs():
    from search_knobs import main

    with pytest.raises(ValueError, match="init_min_unmeasured must be <= population_size"):
        main(["--arms", "base,population_size=8"])
    with pytest.raises(ValueError, match=r"eps_greedy must be in \[0, 1\]"):
        main(["--arms", "base,eps_greedy=1.5"])


def test_arms_are_paired_with_the_first_arm_of_the_same_task_and_seed():
    from search_knobs import summary

    def row(task, seed, arm, curve):
        return {"task": task, "seed": seed, "arm": arm, "curve": curve, "wall_s": 2.0 if arm == "x" else 1.0}

    flat = [None] * 31
    rows = [row("a", 0, "base", flat + [100.0] * 33),
            row("a", 0, "x", flat + [200.0] + [50.0] * 32),   # at 32: 2.0; at 64: 0.5
            row("a", 1, "x", flat + [10.0] * 33),             # no baseline of seed 1: not paired
            row("b", 0, "base", flat + [10.0] * 33),
            row("b", 0, "x", flat + [10.1] * 33)]             # within 2 %: neither faster nor slower
    out = summary(rows, ["base", "x"])
    assert out["baseline_arm"] == "base" and out["runs"] == 5
    x = out["arms"]["x"]
    assert x["at_64"]["pairs"] == 2
    assert x["at_64"]["geomean_best_over_baseline"] == pytest.approx(math.sqrt(0.5 * 1.01))
    assert (x["at_64"]["faster"], x["at_64"]["slower"]) == (1, 0)
    assert x["at_32"]["geomean_best_over_baseline"] == pytest.approx(math.sqrt(2.0 * 1.01))
    assert x["wall_s_mean"] == pytest.approx(2.0)
    assert out["arms"]["base"]["at_64"]["geomean_best_over_baseline"] == pytest.approx(1.0)


def test_each_arm_runs_first_about_equally_often_and_a_pair_runs_back_to_back():
    from collections import Counter

    from search_knobs import run_order

    tasks = [{"key": k} for k in "abcde"]
    arms = ["base", "x", "y"]
    order = run_order([0, 1], tasks, arms)
    assert len(order) == len({(s, t["key"], a) for s, t, a in order}) == 2 * 5 * 3
    groups = [order[i:i + 3] for i in range(0, len(order), 3)]
    # each (task, seed) runs all its arms, one after another
    assert all(len({(s, t["key"]) for s, t, _ in g}) == 1 and sorted(a for *_, a in g) == sorted(arms)
               for g in groups)
    assert Counter(g[0][2] for g in groups) == {"base": 4, "x": 3, "y": 3}  # 10 pairs: as even as 3 arms allow
    # two arms alternate which runs first
    two = run_order([0], tasks[:4], ["base", "x"])
    assert [two[i][2] for i in range(0, 8, 2)] == ["base", "x", "base", "x"]


def test_a_checkpoint_of_another_host_is_refused(tmp_path):
    from checkpoint import check_host
    from search_knobs import Runs

    runs = Runs(str(tmp_path / "runs.jsonl"))
    runs.append({"task": "a", "arm": "base", "seed": 0, "curve": [], "machine": "host A"})
    assert ("a", "base", 0) in runs.done
    with pytest.raises(SystemExit, match="host A"):
        check_host(Runs(runs.path), "host B")


def test_report_table_leaves_the_baseline_out_and_shows_the_wall_time():
    from report import search_knobs_table
    from search_knobs import summary

    def row(task, arm, best, wall):
        return {"task": task, "seed": 0, "arm": arm, "curve": [best] * 64, "wall_s": wall}

    rows = [row("a", "base", 100.0, 30.0), row("a", "num_trials_per_iter=8", 90.0, 40.0),
            row("b", "base", 10.0, 30.0), row("b", "num_trials_per_iter=8", 11.0, 50.0)]
    table = search_knobs_table({**summary(rows, ["base", "num_trials_per_iter=8"]), "machine": "a host",
                                "date": "2026-12-06"})
    lines = [line for line in table if line.startswith("| ")][1:]  # the header first
    assert len(lines) == 1
    cells = [c.strip() for c in lines[0].strip("|").split("|")]
    assert cells[0] == "num_trials_per_iter=8" and cells[2] == f"{math.sqrt(0.9 * 1.1):.3f}"
    assert cells[3] == "0.900-1.100" and cells[4] == "1 / 1" and cells[6] == "45 s"


def test_a_second_process_on_the_same_checkpoint_is_refused(tmp_path):
    from checkpoint import Lock
    from search_knobs import run_arms

    path = str(tmp_path / "runs.jsonl")
    with Lock(path, "the first run"):
        with pytest.raises(SystemExit, match="lock held"):
            run_arms(None, None, None, ["base"], None, [0], 1, tmp_path, path)


def test_runs_of_another_host_are_refused_with_the_option_that_names_a_new_checkpoint(tmp_path, capsys):
    from search_knobs import Runs, main, run_arms

    path = str(tmp_path / "runs.jsonl")
    Runs(path).append({"task": "a", "arm": "base", "seed": 0, "curve": [], "machine": "another host"})
    with pytest.raises(SystemExit, match="pass a new --runs"):
        run_arms(None, None, None, ["base"], None, [0], 1, tmp_path, path)
    with pytest.raises(SystemExit) as refused:
        main(["--arms", "base", "--runs", "x.jsonl", "--what"])
    # argparse refuses what it does not know, and names only --what: --runs is an option
    assert refused.value.code == 2 and "unrecognized arguments: --what" in capsys.readouterr().err


def test_the_fold_rankers_cache_names_the_rows_it_was_fitted_on():
    """A shipped model with other trace columns, another ranker config or other transition weights
    reads no cached fold ranker of the last one (the cache of decision 106's refit held rankers
    fitted on rows 14 columns narrower under the same name)."""
    import dataclasses
    from types import SimpleNamespace

    import torch

    from cwm.model.ranker import RankerConfig
    from cwm.model.transition import TransitionConfig
    from fold_rankers import rows_fingerprint

    def model(columns=("loop_tiles",), cfg=RankerConfig(), weight=0.0):
        transition = torch.nn.Linear(2, 2)
        torch.nn.init.constant_(transition.weight, weight)
        torch.nn.init.constant_(transition.bias, 0.0)
        return SimpleNamespace(meta={"version": 6}, columns=columns, ranker=SimpleNamespace(cfg=cfg),
                               tcfg=TransitionConfig(), transition=transition)

    shipped = rows_fingerprint(model())
    assert rows_fingerprint(model()) == shipped  # the same model: the same cache
    assert len(shipped) == 12
    others = {rows_fingerprint(model(columns=("loop_tiles", "tile_footprint"))),
              rows_fingerprint(model(cfg=dataclasses.replace(RankerConfig(), max_depth=3))),
              rows_fingerprint(model(weight=0.5))}
    assert shipped not in others and len(others) == 3


def test_runs_longer_than_64_trials_are_read_at_their_count_too_and_tabled(tmp_path):
    from report import search_knobs_table
    from search_knobs import Runs, check_trials, summary

    def row(task, arm, curve):
        return {"task": task, "seed": 0, "arm": arm, "trials": 128, "curve": curve, "wall_s": 60.0}

    rows = [row("a", "base", [100.0] * 128), row("a", "kind=blend", [100.0] * 64 + [80.0] * 64),
            row("b", "base", [10.0] * 128), row("b", "kind=blend", [10.0] * 128)]
    arms = summary(rows, ["base", "kind=blend"])["arms"]
    assert sorted(arms["kind=blend"]) == ["at_128", "at_32", "at_64", "wall_s_mean"]
    assert arms["kind=blend"]["at_64"]["geomean_best_over_baseline"] == pytest.approx(1.0)
    assert arms["kind=blend"]["at_128"]["geomean_best_over_baseline"] == pytest.approx(math.sqrt(0.8))
    table = search_knobs_table({"baseline_arm": "base", "arms": arms, "machine": "a host", "date": "2026-12-07"})
    header, line = [x for x in table if x.startswith("| ")][0], [x for x in table if x.startswith("| ")][1]
    assert "at 128 trials" in header and header.count("|") == line.count("|")
    assert line.split("|")[7].strip() == f"{math.sqrt(0.8):.3f}"
    # a checkpoint holds one trial count: 64-trial runs (rows from before the field: 64) refuse 128
    runs = Runs(str(tmp_path / "runs.jsonl"))
    runs.append({"task": "a", "arm": "base", "seed": 0, "curve": [], "machine": "m"})
    check_trials(runs.rows, 64, runs.path)
    with pytest.raises(SystemExit, match=r"holds runs of \[64\] trials, not 128"):
        check_trials(runs.rows, 128, runs.path)
