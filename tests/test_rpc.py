"""Distributed measurement: a local RPC tracker + two servers on 127.0.0.1 measure a tuning run.

One tracker and two ``tvm.exec.rpc_server`` processes are started for the whole module (about
10 s: each imports TVM), then stopped. ~45 s in all on a loaded 2-vCPU box (with the `cwm tune --rpc` CLI test).
"""
from __future__ import annotations

import glob
import os

import numpy as np
import pytest


@pytest.fixture(scope="module")
def cluster(tmp_path_factory):
    from cwm.tuning.rpc import local_rpc_cluster

    with local_rpc_cluster(n_servers=2, key="cwm-test", log_dir=str(tmp_path_factory.mktemp("rpc_logs"))) as c:
        yield c


def test_rpc_spec_parsing():
    from cwm.tuning.rpc import parse_rpc_spec

    assert parse_rpc_spec("127.0.0.1:9190:rtx4090") == ("127.0.0.1", 9190, "rtx4090")
    assert parse_rpc_spec("::1:9190:k") == ("::1", 9190, "k")  # the host may hold ':' (IPv6)
    for bad in ("127.0.0.1:9190", "host:port:key", ":9190:k", "h:9190:"):
        with pytest.raises(ValueError):
            parse_rpc_spec(bad)


def test_local_cluster_registers_both_servers(cluster):
    from cwm.tuning.rpc import tracker_summary

    summary = tracker_summary(cluster.tracker_host, cluster.tracker_port)
    assert summary["queue_info"]["cwm-test"]["free"] == 2
    assert cluster.spec == f"127.0.0.1:{cluster.tracker_port}:cwm-test"
    assert all(s.alive() for s in cluster.servers)
    # children got the TVMScript start-up patch through PYTHONPATH
    from cwm import tvm_patch
    from cwm.tuning.rpc import child_env

    assert child_env()["PYTHONPATH"].split(os.pathsep)[0] == tvm_patch.SITE_DIR


def test_tune_through_rpc_runner_all_trials_valid(cluster, tmp_path):
    from tvm.s_tir import meta_schedule as ms

    from cwm import workloads
    from cwm.tuning.settings import FastSettings
    from cwm.tuning.tune import tune_tir

    runner = cluster.runner()
    assert isinstance(runner, ms.runner.RPCRunner)
    settings = FastSettings(builder_kind="in-process", num_trials_per_iter=8, population_size=32,
                            init_min_unmeasured=8)
    config = runner.evaluator_config  # the same measurement knobs as the local runners
    assert (config.number, config.repeat, config.min_repeat_ms) == (settings.number, settings.repeat,
                                                                    settings.min_repeat_ms)
    out = tune_tir(workloads.matmul(64), "llvm", trials=8, work_dir=str(tmp_path / "wd"), runner=runner,
                   settings=settings, cost_model="random")
    assert out.n_records == 8 and out.n_valid == 8, out.records
    for record in out.records:
        assert record["run_secs"] and all(0 < s < 1 for s in record["run_secs"]), record
        assert not record.get("run_error") and not record.get("build_error")
    # the servers, not this process, loaded and ran the artifacts
    loads = [open(s.log_path).read().count("load_module") for s in cluster.servers]
    assert sum(loads) >= 8, loads


def test_so_artifact_runs_on_a_server(cluster):
    """``export_so`` artifacts (for servers without a compiler) load and run remotely."""
    import tvm
    from tvm import rpc

    from cwm import workloads
    from cwm.tuning import host_target
    from cwm.tuning.rpc import export_so

    target = host_target()
    path = export_so(tvm.compile(workloads.matmul(16), target=target))
    session = rpc.connect_tracker(cluster.tracker_host, cluster.tracker_port).request("cwm-test",
                                                                                    session_timeout=60)
    session.upload(path, "mm.so")
    func = session.load_module("mm.so")["main"]
    dev = session.cpu(0)
    a = np.random.default_rng(0).standard_normal((16, 16)).astype("float32")
    b = np.random.default_rng(1).standard_normal((16, 16)).astype("float32")
    args = [tvm.runtime.tensor(a, dev), tvm.runtime.tensor(b, dev), tvm.runtime.tensor(np.zeros((16, 16), "float32"), dev)]
    func(*args)
    np.testing.assert_allclose(args[2].numpy(), a @ b, rtol=1e-4, atol=1e-4)
    for leftover in glob.glob(os.path.join(os.path.dirname(path), "*")):
        os.remove(leftover)
    os.rmdir(os.path.dirname(path))


def test_cli_tune_through_rpc(cluster, tmp_path, capsys):
    """``cwm tune ... --rpc HOST:PORT:KEY`` measures on the cluster's servers (CLI main, in-process)."""
    import math
    import re

    from cwm.tuning.cli import main

    loads_before = sum(open(s.log_path).read().count("load_module") for s in cluster.servers)
    rc = main(["matmul_256", "--trials", "8", "--cost-model", "random", "--rpc", cluster.spec,
               "--rpc-workers", "2", "--rpc-timeout", "30", "--work-dir", str(tmp_path / "wd")])
    out = capsys.readouterr().out
    assert rc == 0, out
    assert f"RPC {cluster.spec}" in out and "measured (8 valid) of 8 requested" in out, out
    best = float(re.search(r"best latency\s+([0-9.]+) us", out).group(1))
    assert math.isfinite(best) and best > 0
    loads = sum(open(s.log_path).read().count("load_module") for s in cluster.servers)
    assert loads - loads_before >= 8  # measured remotely, not here


def test_cli_rejects_a_bad_rpc_spec(capsys):
    from cwm.tuning.cli import main

    with pytest.raises(SystemExit) as exit_info:
        main(["matmul_256", "--rpc", "127.0.0.1:9190"])
    assert exit_info.value.code == 2
    assert "host:port:key" in capsys.readouterr().err
