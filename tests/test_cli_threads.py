"""``--threads N`` of every command that trains: accepted, refused when invalid, and set.

``collabecon.cli.main`` sets torch's CPU threads to ``--threads`` (by default the physical
cores this process may use) before the command's work starts and puts the count back after
it; a value below 1 or above the CPUs of this process is one line on stderr and exit code 2.
The commands' own work is replaced by a stub that records the thread count it runs on.
"""

from __future__ import annotations

import importlib

import pytest
import torch

from collabecon.cli import COMMANDS, main
from learning import threads as threads_module
from learning.threads import cpus, physical_cores, use_threads, worker_share

#: a parsable invocation of every command that trains, and the module whose ``run`` does it
TRAINING: dict[str, tuple[list[str], str]] = {
    "train": (["train"], "train"),
    "ipfl": (["ipfl"], "ipfl"),
    "cobo": (["cobo"], "cobo"),
    "defection-free": (["defection-free"], "defection-free"),
    "demo": (["demo"], "demo"),
    "table1": (["table1"], "table1"),
    "sweep": (["sweep", "grid.toml"], "sweep"),
    "privacy curve": (["privacy", "curve", "--out", "curve"], "privacy"),
    "reproduce": (["reproduce", "--out", "report"], "reproduce"),
    "flower simulate": (["flower", "simulate"], "flower"),
    "flower simulate ipfl": (["flower", "simulate", "ipfl"], "flower"),
    "bench engine": (["bench", "engine"], "bench"),
    "bench all-pairs": (["bench", "all-pairs"], "bench"),
    "bench dp": (["bench", "dp"], "bench"),
}


@pytest.fixture
def seen(monkeypatch, tmp_path):
    """Every command's ``run`` replaced by one that records torch's thread count."""
    monkeypatch.chdir(tmp_path)  # the output folders the commands lock
    counts: list[int] = []

    def record(args):
        counts.append(torch.get_num_threads())
        return {"threads": torch.get_num_threads()}

    for name in {module for _, module in TRAINING.values()}:
        module = importlib.import_module(COMMANDS[name][0])
        monkeypatch.setattr(module, "run", record)
        monkeypatch.setattr(module, "exit_status", lambda result: 0, raising=False)
    return counts


@pytest.mark.parametrize("name", list(TRAINING))
def test_the_flag_sets_torchs_threads_for_the_run_and_puts_them_back(name, seen, capsys):
    argv, _ = TRAINING[name]
    before = torch.get_num_threads()
    want = 1 if before != 1 else min(2, cpus())
    assert main([*argv, "--threads", str(want), "--json"]) == 0
    assert seen == [want]
    assert torch.get_num_threads() == before
    capsys.readouterr()


def test_the_demo_trains_on_one_thread_unless_told(seen, capsys, monkeypatch):
    # its small models spend several times the CPU per step on more threads
    monkeypatch.delenv("OMP_NUM_THREADS", raising=False)
    assert main(["demo", "--json"]) == 0
    assert main(["demo", "--threads", str(cpus()), "--json"]) == 0
    assert seen == [1, cpus()]
    capsys.readouterr()


@pytest.mark.parametrize("name", ["train", "bench engine", "flower simulate ipfl"])
@pytest.mark.parametrize("omp", [None, "1", "100000", "two"])
def test_the_default_is_omp_num_threads_else_the_physical_cores(
    name, omp, seen, capsys, monkeypatch
):
    if omp is None:
        monkeypatch.delenv("OMP_NUM_THREADS", raising=False)
    else:
        monkeypatch.setenv("OMP_NUM_THREADS", omp)
    want = {None: physical_cores(), "1": 1, "100000": cpus(), "two": physical_cores()}[omp]
    before = torch.get_num_threads()
    assert main([*argv_of(name), "--json"]) == 0
    assert seen == [want]
    assert torch.get_num_threads() == before
    capsys.readouterr()


def argv_of(name: str) -> list[str]:
    """The invocation of ``name`` in :data:`TRAINING`."""
    return TRAINING[name][0]


@pytest.mark.parametrize("name", list(TRAINING))
@pytest.mark.parametrize("bad", ["0", "-1", "100000"])
def test_a_bad_count_is_one_line_and_exit_2(name, bad, seen, capsys):
    argv, _ = TRAINING[name]
    before = torch.get_num_threads()
    assert main([*argv, "--threads", bad]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and "--threads" in err
    assert ("must be an integer >= 1" in err) if bad != "100000" else ("CPUs" in err)
    assert seen == [] and torch.get_num_threads() == before


@pytest.mark.parametrize("bad", ["1.5", "two"])
def test_a_count_that_is_no_integer_is_one_line_and_exit_2(bad, seen, capsys):
    with pytest.raises(SystemExit) as stop:
        main(["train", "--threads", bad])
    assert stop.value.code == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and "--threads" in err and seen == []


@pytest.mark.parametrize(
    ("argv", "why"),
    [
        (["flower", "prepare", "--threads", "1"], "has no effect with prepare"),
        (["flower", "deploy", "ipfl", "--threads", "1"], "has no effect with deploy"),
        (["sweep", "grid.toml", "--engine", "ray", "--threads", "1"], "--engine ray"),
    ],
)
def test_threads_where_they_set_nothing_are_refused(argv, why, capsys, tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    assert main(argv) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and "--threads" in err and why in err


def test_commands_that_do_not_train_take_no_threads(capsys):
    with pytest.raises(SystemExit) as stop:
        main(["market", "--qualities", "0.3", "0.8", "--threads", "1"])
    assert stop.value.code == 2
    capsys.readouterr()


def test_use_threads_returns_the_count_it_replaced_and_refuses_zero():
    before = torch.get_num_threads()
    try:
        assert use_threads(1) == before
        assert torch.get_num_threads() == 1
    finally:
        torch.set_num_threads(before)
    with pytest.raises(ValueError, match="threads must be an integer >= 1, got 0"):
        use_threads(0)


def test_workers_share_the_threads_of_this_process():
    before = torch.get_num_threads()
    try:
        torch.set_num_threads(1)
        assert [worker_share(w) for w in (1, 2, 8)] == [1, 1, 1]
        if cpus() >= 2:
            torch.set_num_threads(2)
            assert [worker_share(w) for w in (1, 2, 3)] == [2, 1, 1]
    finally:
        torch.set_num_threads(before)


#: /proc/cpuinfo of one package with two cores of two hardware threads each (SMT)
SMT_CPUINFO = "\n\n".join(
    f"processor\t: {cpu}\nphysical id\t: 0\ncore id\t\t: {core}\nsiblings\t: 4\n"
    for cpu, core in ((0, 0), (1, 1), (2, 0), (3, 1))
)


def test_cpuinfo_counts_hardware_threads_of_one_core_once():
    count = threads_module._cores_from_cpuinfo
    assert count({0, 1, 2, 3}, SMT_CPUINFO) == {("0", "0"), ("0", "1")}
    assert count({0, 2}, SMT_CPUINFO) == {("0", "0")}  # affinity: two siblings, one core
    assert count({0, 1, 4}, SMT_CPUINFO) is None  # an allowed CPU that is not listed
    assert count({0}, "processor\t: 0\nBogoMIPS\t: 50\n") is None  # no core ids


def test_physical_cores_reads_sysfs_then_cpuinfo_then_counts_cpus(tmp_path, monkeypatch):
    monkeypatch.setattr(threads_module, "_allowed", lambda: {0, 1, 2, 3})
    for cpu, core in ((0, 0), (1, 1), (2, 0), (3, 1)):
        folder = tmp_path / "sys" / f"cpu{cpu}" / "topology"
        folder.mkdir(parents=True)
        (folder / "physical_package_id").write_text("0\n")
        (folder / "core_id").write_text(f"{core}\n")
    monkeypatch.setattr(threads_module, "_TOPOLOGY", str(tmp_path / "sys/cpu{cpu}/topology"))
    assert physical_cores() == 2
    monkeypatch.setattr(threads_module, "_TOPOLOGY", str(tmp_path / "none/cpu{cpu}"))
    (tmp_path / "cpuinfo").write_text(SMT_CPUINFO)
    monkeypatch.setattr(threads_module, "_CPUINFO", str(tmp_path / "cpuinfo"))
    assert physical_cores() == 2
    monkeypatch.setattr(threads_module, "_CPUINFO", str(tmp_path / "missing"))
    assert physical_cores() == 4


@pytest.mark.slow
def test_a_spawned_worker_runs_on_the_threads_it_is_given():
    import multiprocessing
    from concurrent.futures import ProcessPoolExecutor

    want = min(2, cpus())  # the tests' own processes run on one (OMP_NUM_THREADS=1)
    with ProcessPoolExecutor(
        1,
        mp_context=multiprocessing.get_context("spawn"),
        initializer=threads_module.start_worker,
        initargs=(want,),
    ) as pool:
        assert pool.submit(torch.get_num_threads).result() == want
