"""``collabecon flower`` for CoBo (``--algorithm cobo``, Hashemi et al. 2024, Algorithm 1: a
round of several exchanges through the split strategy) and the federations with their own
server loop, through :func:`collabecon.cli.main` in process: IP-FL's token economy (``flower ACTION ipfl``, Khan et al., Alg. 1) and
defection-free collaboration between two firms (``flower ACTION defection-free``, Werner 2024,
Algorithm 5). Refusals are one line and exit code 2 before any work; ``prepare`` writes each
node's partition and the server's files; a simulation gives the models of the in-process
drivers for the same seed (the IP-FL and two-firm simulations are slow: Ray starts once per
``simulate``)."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest
import torch

from collabecon.cli import main
from learning.train import TrainConfig, train

pytestmark = pytest.mark.flower

TINY = [
    "--dataset", "digits", "--model", "mlp", "--clients", "4", "--rounds", "2",
    "--local-steps", "2", "--batch-size", "8",
]  # fmt: skip
IPFL = [
    "ipfl", "--dataset", "digits", "--model", "linear", "--clients", "4", "--rounds", "2",
    "--local-steps", "2",
]  # fmt: skip
FIRMS = [
    "defection-free", "--firms", "3", "--model", "mlp", "--dataset", "digits", "--size", "100",
    "--target-per-class", "20", "--lr", "0.1", "--init-epochs", "2", "--rounds", "2",
]  # fmt: skip
DUOPOLY = [
    "defection-free", "--dataset", "digits", "--size", "150", "--target-per-class", "20",
    "--rounds", "2", "--lr", "0.5", "--batch-size", "50", "--init-epochs-high", "5",
    "--q-max", "1",
]  # fmt: skip


def _exit_code(argv: list[str]) -> int:
    try:
        return main(argv)
    except SystemExit as stop:  # argparse's refusals
        return int(stop.code or 0)


@pytest.mark.parametrize(
    ("argv", "message"),
    [
        (["simulate", "--clients", "4", *IPFL], "--clients before 'ipfl'"),
        (["simulate", *IPFL, "--compare"], "--compare"),
        (["simulate", *IPFL, "--resume", "--checkpoint", "ck"], "--checkpoint, --resume"),
        (["deploy", *IPFL, "--device", "cuda"], "computes on the CPU"),
        (["simulate", *IPFL, "--cold-start", "f1_kmeans"], "--cold-start"),
        (["simulate", *IPFL, "--clusters", "5"], "--clusters must not exceed"),
        (["simulate", *IPFL, "--cpus", "0"], "--cpus must be an integer >= 1"),
        (["simulate", *IPFL, "--out", "@FILE"], "is a file, not a directory"),
        (["simulate", *DUOPOLY, "--scheme", "complete"], "--scheme 'complete'"),
        (["simulate", *DUOPOLY, "--figures"], "--figures"),
        (["simulate", *DUOPOLY, "--inner", "oracle"], "--inner 'oracle'"),
        (["simulate", *DUOPOLY, "--train-alone"], "--train-alone"),
        (["prepare", *DUOPOLY, "--q-max", "1.5"], "--q-max must lie in (0, 1]"),
        (["prepare", *DUOPOLY, "--rounds", "0"], "--rounds must be an integer >= 1"),
        (["simulate", *FIRMS, "--figures"], "--figures has no effect with --firms"),
        (["simulate", *FIRMS, "--device", "cuda"], "computes on the CPU"),
        (["prepare", *FIRMS[:2], "13", *FIRMS[3:]], "--firms must be 2 to 12"),
        (["deploy", *FIRMS[:2], "1000000000", *FIRMS[3:]], "--firms must be 2 to 12"),
        (["prepare", *TINY, "--algorithm", "fedavg,cobo"], "prepare runs one experiment"),
        (["simulate", *TINY, "--algorithm", "cobo", "--algorithm-arg", "nope=1"], "unknown nope"),
        (["simulate", "cobo"], "invalid choice: 'cobo'"),
    ],
)
def test_refusals_are_one_line_and_exit_2_before_any_work(
    argv, message, tmp_path, monkeypatch, capsys
):
    plain = tmp_path / "plain.txt"
    plain.write_text("a file\n")
    work = tmp_path / "work"
    work.mkdir()
    monkeypatch.chdir(work)
    assert _exit_code(["flower", *(str(plain) if a == "@FILE" else a for a in argv)]) == 2
    err = capsys.readouterr().err
    assert err.startswith("collabecon flower") and err.count("\n") == 1, err
    assert message in err
    assert not list(work.iterdir())


@pytest.mark.parametrize(
    ("argv", "kind", "nodes", "server"),
    [
        ([*TINY, "--algorithm", "cobo"], "split", 4, ["meta.json"]),
        (IPFL, "ipfl", 4, ["meta.json", "server.pt"]),
        (DUOPOLY, "defection-free", 2, ["meta.json", "server.npz"]),
        ([*FIRMS, "--scheme", "one-sided-low"], "defection-free-n", 3, ["meta.json", "server.npz"]),
    ],
)
def test_prepare_writes_each_nodes_partition_and_the_servers_files(
    argv, kind, nodes, server, tmp_path, capsys
):
    from learning.runtimes.flower.apps import run_kind

    assert main(["flower", "prepare", "--json", *argv, "--out", str(tmp_path)]) == 0
    result = json.loads(capsys.readouterr().out)
    data = tmp_path / "data"
    assert result["clients"] == nodes and result["server_files"] == server
    assert sorted(p.name for p in data.iterdir()) == sorted(
        [*server, *(f"partition-{k}.npz" for k in range(nodes))]
    )
    assert run_kind(str(data)) == kind  # the server loop the deployed ServerApp picks
    assert str(data) in (tmp_path / "app" / "pyproject.toml").read_text()


def test_simulate_runs_fedavg_and_cobo_on_the_same_nodes_as_in_process(tmp_path, capsys):
    """One simulation, two runs through the split strategy: FedAvg and CoBo, each with the
    client models, training losses and test accuracies of :func:`learning.train.train` for
    the same seed."""
    from collabecon.cli.flower import render

    argv = [*TINY, "--algorithm", "fedavg,cobo", "--cpus", "2", "--out", str(tmp_path)]
    assert main(["flower", "simulate", "--json", *argv]) == 0
    result = json.loads(capsys.readouterr().out)
    assert [r["config"]["algorithm"] for r in result["runs"]] == ["fedavg", "cobo"]
    references = [train(TrainConfig(**r["config"]), device="cpu") for r in result["runs"]]
    for run, reference in zip(result["runs"], references, strict=True):
        models = torch.load(Path(run["result"]).parent / "models.pt", weights_only=True)
        for name, value in reference.models.items():
            np.testing.assert_allclose(models[name].numpy(), value.numpy(), rtol=0, atol=1e-6)
        np.testing.assert_allclose(
            [h["train_loss"] for h in run["history"]],
            [h.train_loss for h in reference.history],
            rtol=1e-6,
        )
        assert run["mean_accuracy"] == pytest.approx(reference.history[-1].test_accuracy, abs=1e-12)
    lines = render(result).splitlines()
    assert lines[0].split()[:2] == ["algorithm", "clients"]
    assert [line.split()[0] for line in lines[2:4]] == ["fedavg", "cobo"]


@pytest.mark.slow
def test_simulate_ipfl_keeps_the_ledger_of_the_in_process_driver(tmp_path, capsys):
    """The ledger (bids, payers, balances and pools every round) and the cluster accuracy
    of ``collabecon flower simulate ipfl`` equal :func:`learning.drivers.ipfl.run_ipfl`'s for the
    run its flags configure."""
    from learning.drivers.ipfl import run_ipfl
    from learning.runtimes.flower.ipfl import ipfl_run_from_dict

    assert main(["flower", "simulate", "--json", *IPFL, "--cpus", "2", "--out", str(tmp_path)]) == 0
    ours = json.loads(capsys.readouterr().out)["runs"][0]
    reference = run_ipfl(ipfl_run_from_dict(ours["run"]))
    assert ours["tokens_end"] == reference.tokens_end.tolist()
    for a, b in zip(ours["history"], reference.history, strict=True):
        assert a["selected"] == b["selected"] and a["bids"] == b["bids"]
        assert a["tokens"] == b["tokens"] and a["pools"] == b["pools"]
    np.testing.assert_allclose(ours["cluster_accuracy"], reference.cluster_accuracy, atol=1e-12)


@pytest.mark.slow
def test_simulate_defection_free_plays_as_the_in_process_command(tmp_path, capsys):
    """``collabecon flower simulate defection-free`` and ``collabecon defection-free`` with the
    same flags: the same qualities, hence the same market, every round."""
    assert (
        main(["flower", "simulate", "--json", *DUOPOLY, "--cpus", "2", "--out", str(tmp_path)]) == 0
    )
    ours = json.loads(capsys.readouterr().out)["runs"][0]["runs"]["defection-free"]
    assert main(["defection-free", "--json", *DUOPOLY[1:]]) == 0
    reference = json.loads(capsys.readouterr().out)
    assert len(ours["rounds"]) == len(reference["rounds"]) == 3
    for a, b in zip(ours["rounds"], reference["rounds"], strict=True):
        assert {k: a[k] for k in ("q_l", "q_h", "U_l", "U_h")} == {
            k: b[k] for k in ("q_l", "q_h", "U_l", "U_h")
        }
    assert ours["revenue_never_decreased"]
