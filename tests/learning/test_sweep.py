"""``collabecon sweep`` and :mod:`learning.runtimes.sweep`: per-run results, resume, retries, failures."""

import csv
import json
import os
import shutil
import signal
import socket
import subprocess
import sys
import time
from pathlib import Path

import pytest

import learning
import learning.runtimes.sweep as sweep_module
from collabecon.cli import main
from learning.runtimes.sweep import ResultStore, plan, serial_runner, sweep

TRAIN = {"dataset": "digits", "model": "mlp", "clients": 2, "rounds": 1, "local_steps": 1}
#: lr 1e38 makes the MLP's training loss NaN in round 1: a run that raises DivergedError
CONFIG = (
    '[train]\ndataset = "digits"\nmodel = "mlp"\nclients = 2\nrounds = 1\nlocal_steps = 1\n'
    "[grid]\nlr = [0.05, 1e38]\nseed = [0]\n"
)


def _sweep(capsys, tmp_path, *extra):
    config = tmp_path / "grid.toml"
    config.write_text(CONFIG)
    code = main(["sweep", "--json", str(config), "--out", str(tmp_path), *extra])
    captured = capsys.readouterr()
    return code, json.loads(captured.out), captured.err


def test_a_run_that_raises_is_reported_and_the_others_are_kept(capsys, tmp_path):
    code, out, err = _sweep(capsys, tmp_path, "--retries", "0")
    assert code == 1  # a run failed
    assert out["runs"] == 2 and out["finished"] == 1 and out["resumed"] == 0
    (failed,) = out["failed"]
    assert failed["grid"] == {"lr": 1e38, "seed": 0} and failed["attempts"] == 1
    assert "DivergedError" in failed["error"] and "DivergedError" in err
    error_file = tmp_path / "grid.runs" / f"{failed['key']}.error.txt"
    assert str(error_file) == failed["error_file"]
    assert "Traceback" in error_file.read_text()
    with open(out["csv"]) as fh:
        rows = list(csv.DictReader(fh))
    assert [(r["lr"], r["seed"]) for r in rows] == [("0.05", "0")]
    results = sorted(p.name for p in (tmp_path / "grid.runs").iterdir())
    assert len(results) == 2 and sum(n.endswith(".json") for n in results) == 1


def test_the_same_command_again_resumes_and_runs_only_what_failed(capsys, tmp_path, monkeypatch):
    _sweep(capsys, tmp_path, "--retries", "0")
    calls = []
    real = sweep_module.run_point
    monkeypatch.setattr(
        sweep_module, "run_point", lambda fields, *a: calls.append(fields["lr"]) or real(fields, *a)
    )
    code, out, _ = _sweep(capsys, tmp_path, "--retries", "0")
    assert calls == [1e38]  # the finished run is read back, the failed one is tried again
    assert code == 1 and out["resumed"] == 1 and out["finished"] == 1
    assert len(out["rows"]) == 1


def test_a_result_file_of_another_configuration_is_run_again(tmp_path):
    runs = plan(TRAIN, {"seed": [0, 1]})
    store = ResultStore(tmp_path)
    first = sweep(runs, store, serial_runner)
    assert first.resumed == [] and len(first.measures) == 2
    path = store.result_path(runs[0])
    record = json.loads(path.read_text())
    record["config"]["rounds"] = 7  # as if written by a run of another configuration
    path.write_text(json.dumps(record))
    again = sweep(runs, store, serial_runner)
    assert again.resumed == [runs[1].key]
    assert json.loads(path.read_text())["config"] == runs[0].config
    assert not [p for p in tmp_path.iterdir() if p.name.endswith(".tmp")]


def test_the_run_key_names_the_whole_configuration():
    (a,) = plan(TRAIN, {"seed": [0]})
    (b,) = plan({**TRAIN, "momentum": 0.9}, {"seed": [0]})  # the default, spelt out
    (c,) = plan({**TRAIN, "momentum": 0.5}, {"seed": [0]})
    assert a.key == b.key and a.key != c.key
    assert a.config["momentum"] == 0.9 and len(a.key) == 16


def test_a_run_that_fails_once_succeeds_on_its_retry(tmp_path, monkeypatch):
    real = sweep_module.run_point
    failures = []

    def flaky(fields, device, data_dir):
        if not failures:
            failures.append(fields["seed"])
            raise RuntimeError("worker lost")
        return real(fields, device, data_dir)

    monkeypatch.setattr(sweep_module, "run_point", flaky)
    runs = plan(TRAIN, {"seed": [0]})
    seen = []
    result = sweep(runs, ResultStore(tmp_path), serial_runner, retries=1, on_outcome=seen.append)
    assert failures == [0] and result.failed == [] and len(result.measures) == 1
    assert seen[0].attempts == 2


@pytest.mark.slow
def test_a_process_pool_retries_a_run_that_raises_and_keeps_the_others(capsys, tmp_path):
    code, out, _ = _sweep(capsys, tmp_path, "--workers", "2", "--retries", "1")
    assert code == 1 and out["finished"] == 1 and out["workers"] == 2
    (failed,) = out["failed"]
    assert failed["attempts"] == 2 and "DivergedError" in failed["error"]


@pytest.mark.parametrize(
    ("extra", "message"),
    [
        (["--retries", "-1"], "--retries must be an integer in [0, 10], got -1"),
        (["--retries", "11"], "--retries must be an integer in [0, 10], got 11"),
        (["--gpus-per-run", "0"], "--gpus-per-run must be a fraction in (0, 1] or a whole"),
        (["--gpus-per-run", "inf"], "--gpus-per-run must be a fraction in (0, 1] or a whole"),
        (["--gpus-per-run", "1.5"], "a whole number of GPUs, got 1.5"),
        (["--gpus-per-run", "0.5"], "--gpus-per-run 0.5 needs --engine ray and --device cuda"),
        (["--address", "auto"], "--address 'auto' needs --engine ray"),
        (["--engine", "ray", "--address", "nohost"], "--address must be 'auto' or HOST:PORT"),
        (["--engine", "ray", "--address", "h:0"], "--address must be 'auto' or HOST:PORT"),
        (
            ["--engine", "ray", "--address", "auto", "--workers", "2"],
            "--workers 2 with --address 'auto': the cluster runs the sweep on its own CPUs",
        ),
        (["--connect-timeout", "2"], "--connect-timeout 2 needs --address"),
        (["--workers", str((os.cpu_count() or 1) + 1)], "is more than the"),
    ],
)
def test_bad_sweep_flags_exit_2_before_running(capsys, tmp_path, extra, message):
    config = tmp_path / "grid.toml"
    config.write_text(CONFIG)
    assert main(["sweep", str(config), "--out", str(tmp_path), *extra]) == 2
    assert message in capsys.readouterr().err
    assert sorted(p.name for p in tmp_path.iterdir()) == ["grid.toml"]


@pytest.mark.parametrize(
    ("grid", "message"),
    [
        ("seed = [0, -1]", "grid point 2 of 2 (seed = -1): seed must be an integer >= 0, got -1"),
        (
            '"partition_params.zeta" = [1]',
            "grid point 1 of 1 (partition_params.zeta = 1): partition 'iid' takes no parameters",
        ),
        ('engine = ["loop", "nope"]', "(engine = \"nope\"): 'engine' must be one of"),
        ("lr = [0.1, 0.1]", "grid point 2 of 2 (lr = 0.1): the same configuration as point 1"),
        ("rounds = [1, 2]", "'rounds' is set in [train] and listed in [grid]"),
        ("\n".join(f"a{i} = [{', '.join('0' * 10)}]" for i in range(5)), "= 100000 points"),
    ],
)
def test_a_bad_grid_point_is_named_before_any_run(capsys, tmp_path, grid, message):
    config = tmp_path / "grid.toml"
    config.write_text(CONFIG.replace("lr = [0.05, 1e38]\nseed = [0]", grid))
    assert main(["sweep", str(config), "--out", str(tmp_path)]) == 2
    err = capsys.readouterr().err
    assert message in err and err.count("\n") == 1, err
    assert sorted(p.name for p in tmp_path.iterdir()) == ["grid.toml"]


def test_runs_whose_data_exceed_the_memory_are_refused(capsys, tmp_path, monkeypatch):
    import econ.validation

    monkeypatch.setattr(econ.validation, "_physical_memory", lambda: 1000)  # 1 kB
    config = tmp_path / "grid.toml"
    config.write_text(CONFIG)
    assert main(["sweep", str(config), "--out", str(tmp_path)]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and "of memory, more than the 1e+03 B this machine has" in err
    assert sorted(p.name for p in tmp_path.iterdir()) == ["grid.toml"]


def test_a_grid_is_sized_from_its_lists_before_it_is_expanded(monkeypatch):
    def expand(*lists):
        raise AssertionError("the grid was expanded")

    monkeypatch.setattr(sweep_module.itertools, "product", expand)
    grid = {f"a{i}": list(range(100)) for i in range(12)}
    assert sweep_module.grid_size({"a": [1, 2], "b": [1, 2, 3]}) == 6
    with pytest.raises(ValueError, match=r"= 10{24} points, more than the 10000"):
        plan(TRAIN, grid)


@pytest.mark.parametrize("out", [True, False])
def test_a_sweep_into_a_locked_results_folder_is_refused(capsys, tmp_path, monkeypatch, out):
    from collabecon.cli._lock import output_lock

    config = tmp_path / "grid.toml"
    config.write_text(CONFIG)
    monkeypatch.chdir(tmp_path)
    flags = ["--out", str(tmp_path / "out")] if out else []
    folder = (tmp_path / "out" if out else tmp_path) / "grid.runs"
    with output_lock("--out", folder):  # held by a live process: this one
        assert main(["sweep", str(config), *flags]) == 2
    err = capsys.readouterr().err
    assert f"--out {str(folder)!r} is in use by a running process (pid {os.getpid()}" in err
    assert err.count("\n") == 1
    assert not folder.exists()


def _workers(driver: int) -> list[int]:
    """The pool workers of process ``driver``: its children started by multiprocessing's spawn."""
    found = []
    for proc in Path("/proc").iterdir():
        if not proc.name.isdigit():
            continue
        try:
            stat = (proc / "stat").read_text()
            command = (proc / "cmdline").read_bytes()
        except OSError:  # the process ended meanwhile
            continue
        if int(stat.rsplit(")", 1)[1].split()[1]) == driver and b"spawn_main" in command:
            found.append(int(proc.name))
    return found


def _running(pid: int) -> bool:
    """Whether ``pid`` is a process that has not ended (a zombie has ended)."""
    try:
        return (Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0]) != "Z"
    except OSError:
        return False


def _has_torch(pid: int) -> bool:
    try:
        return "libtorch" in Path(f"/proc/{pid}/maps").read_text()
    except OSError:
        return False


@pytest.mark.slow
@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="reads the processes in /proc")
def test_the_workers_of_a_pool_end_with_a_driver_killed_by_sigkill(tmp_path):
    config = tmp_path / "long.toml"
    config.write_text(CONFIG.replace("rounds = 1", "rounds = 100000").replace("1e38", "0.1"))
    argv = [sys.executable, "-m", "collabecon.cli", "sweep", str(config), "--workers", "2"]
    root = Path(learning.__file__).parent.parent
    driver = subprocess.Popen(
        [*argv, "--out", str(tmp_path)],
        cwd=root,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )
    workers: list[int] = []
    try:
        deadline = time.monotonic() + 300
        # a worker maps libtorch once its initializer has run, after arming the signal
        while len(workers) < 2 or not all(_has_torch(w) for w in workers):
            assert driver.poll() is None, "the sweep ended before its workers started"
            assert time.monotonic() < deadline, f"no two workers within 300 s: {workers}"
            time.sleep(0.1)
            workers = _workers(driver.pid)
        driver.send_signal(signal.SIGKILL)
        driver.wait()
        deadline = time.monotonic() + 10
        while any(_running(w) for w in workers) and time.monotonic() < deadline:
            time.sleep(0.1)
        assert not [w for w in workers if _running(w)], "workers outlived their driver"
    finally:
        if driver.poll() is None:
            driver.kill()
            driver.wait()
        for worker in workers:
            if _running(worker):
                os.kill(worker, signal.SIGKILL)


class _Recorded(Exception):
    pass


@pytest.mark.ray
@pytest.mark.parametrize(
    ("address", "device", "init", "gpus"),
    [
        ("auto", "cuda", {"address": "auto", "log_to_driver": False}, 0.25),
        ("10.0.0.1:6379", "cpu", {"address": "10.0.0.1:6379", "log_to_driver": False}, 0),
        (None, None, {"num_cpus": 3, "log_to_driver": False}, 0),
    ],
)
def test_ray_joins_a_cluster_without_resource_overrides(monkeypatch, address, device, init, gpus):
    import ray

    calls = {}
    monkeypatch.setattr(ray, "is_initialized", lambda: False)
    monkeypatch.setattr(ray, "init", lambda **kw: calls.setdefault("init", kw))
    monkeypatch.setattr(ray, "shutdown", lambda: calls.setdefault("shutdown", True))

    class _Remote:
        def options(self, **kw):
            calls["options"] = kw
            raise _Recorded

    monkeypatch.setattr(ray, "remote", lambda fn: _Remote())
    runner = sweep_module.ray_runner(address, 3, 0.25)
    with pytest.raises(_Recorded):
        list(runner(plan(TRAIN, {"seed": [0]}), device, None, 2))
    env = calls["init"].pop("runtime_env")
    assert calls["init"] == init
    assert [p.rsplit("/", 1)[1] for p in env["py_modules"]] == ["econ", "games", "learning"]
    assert "data/" in env["excludes"] and "__pycache__" in env["excludes"]
    assert calls["options"] == {"num_gpus": gpus, "max_retries": 2, "retry_exceptions": True}
    assert calls["shutdown"]


@pytest.mark.ray
def test_sweep_on_a_local_ray_reports_the_failed_run_and_keeps_the_other(capsys, tmp_path):
    import ray

    ray.init(
        num_cpus=1,
        include_dashboard=False,
        log_to_driver=False,
        runtime_env=sweep_module.runtime_env(),
    )
    try:
        code, out, _ = _sweep(capsys, tmp_path, "--engine", "ray", "--retries", "1")
    finally:
        ray.shutdown()
    assert code == 1 and out["engine"] == "ray" and out["finished"] == 1
    (failed,) = out["failed"]
    assert failed["attempts"] == 2 and "DivergedError" in failed["error"]
    assert "\x1b[" not in (tmp_path / "grid.runs" / f"{failed['key']}.error.txt").read_text()


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def _one_line_refusal(capsys, tmp_path, *flags) -> str:
    config = tmp_path / "grid.toml"
    config.write_text(CONFIG)
    code = main(["sweep", str(config), "--out", str(tmp_path), "--engine", "ray", *flags])
    err = capsys.readouterr().err
    assert code == 2 and err.count("\n") == 1 and "Traceback" not in err, err
    assert sorted(p.name for p in tmp_path.iterdir()) == ["grid.toml"]
    return err


@pytest.mark.ray
def test_an_address_where_nothing_listens_is_refused_in_one_line(capsys, tmp_path):
    port = _free_port()  # closed again: nothing listens there
    err = _one_line_refusal(
        capsys, tmp_path, "--address", f"127.0.0.1:{port}", "--connect-timeout", "2"
    )
    assert f"no Ray cluster answers at 127.0.0.1:{port} within 2 s" in err


@pytest.mark.ray
def test_address_auto_without_a_cluster_is_refused_in_one_line(capsys, tmp_path, monkeypatch):
    from ray._private import services

    monkeypatch.delenv("RAY_ADDRESS", raising=False)
    monkeypatch.setattr(services, "find_gcs_addresses", lambda: [])  # no cluster running
    monkeypatch.setattr(services, "find_bootstrap_address", lambda temp_dir: None)
    err = _one_line_refusal(capsys, tmp_path, "--address", "auto")
    assert "no running Ray cluster was found on this machine" in err


#: six runs slow enough to be caught midway; lr 1e38 makes two of them raise
CLUSTER_CONFIG = (
    '[train]\ndataset = "digits"\nmodel = "mlp"\nclients = 2\nrounds = 10\nlocal_steps = 5\n'
    "[grid]\nseed = [0, 1]\nlr = [0.05, 0.1, 1e38]\n"
)


@pytest.mark.ray
@pytest.mark.slow
def test_sweep_on_a_ray_cluster_survives_a_raising_run_and_resumes_after_a_kill(tmp_path):
    """``ray start --head``, a sweep with ``--address auto`` killed (SIGKILL) after its second
    result, then the same command with ``--address HOST:PORT`` finishes the rest."""
    ray_bin = shutil.which("ray")
    if ray_bin is None:
        pytest.skip("the 'ray' command is not on PATH")
    port = _free_port()
    config = tmp_path / "cluster.toml"
    config.write_text(CLUSTER_CONFIG)
    folder = tmp_path / "cluster.runs"
    argv = [sys.executable, "-m", "collabecon.cli", "sweep", "--json", str(config)]
    argv += ["--engine", "ray", "--retries", "1", "--out", str(tmp_path)]
    root = Path(learning.__file__).parent.parent
    env = {**os.environ, "RAY_ACCEL_ENV_VAR_OVERRIDE_ON_ZERO": "0"}
    head = [ray_bin, "start", "--head", f"--port={port}", "--num-cpus=1"]
    subprocess.run(
        [*head, "--include-dashboard=false", "--disable-usage-stats"],
        check=True,
        capture_output=True,
        cwd=tmp_path,  # the workers find the packages in the runtime_env, not in a cwd
        env=env,
    )
    try:
        driver = subprocess.Popen(
            [*argv, "--address", "auto"],
            cwd=root,
            env=env,
            stdout=subprocess.DEVNULL,
            stderr=subprocess.DEVNULL,
        )
        deadline = time.monotonic() + 300
        while len(list(folder.glob("*.json"))) < 2 and driver.poll() is None:
            assert time.monotonic() < deadline, "no two results within 300 s"
            time.sleep(0.05)
        driver.send_signal(signal.SIGKILL)
        driver.wait()
        before = {p.name: p.stat().st_mtime_ns for p in folder.glob("*.json")}
        assert 2 <= len(before) < 4, before  # killed midway: some results, not all
        assert not list(folder.glob(".*.tmp"))  # no half-written result
        assert not (tmp_path / "cluster.csv").exists()

        done = subprocess.run(
            [*argv, "--address", f"127.0.0.1:{port}"],
            cwd=root,
            env=env,
            capture_output=True,
            text=True,
            timeout=600,
        )
    finally:
        subprocess.run([ray_bin, "stop", "--force"], capture_output=True, env=env)
    assert done.returncode == 1, done.stderr  # the two diverging runs failed
    out = json.loads(done.stdout)
    assert out["runs"] == 6 and out["finished"] == 4 and out["resumed"] == len(before)
    assert sorted((f["grid"]["seed"], f["attempts"]) for f in out["failed"]) == [(0, 2), (1, 2)]
    assert {f["grid"]["lr"] for f in out["failed"]} == {1e38}
    for name, mtime in before.items():  # the results from before the kill were kept as they were
        assert (folder / name).stat().st_mtime_ns == mtime
    with open(out["csv"]) as fh:
        rows = list(csv.DictReader(fh))
    assert [(r["seed"], r["lr"]) for r in rows] == [
        ("0", "0.05"),
        ("0", "0.1"),
        ("1", "0.05"),
        ("1", "0.1"),
    ]
    assert len(list(folder.glob("*.error.txt"))) == 2
