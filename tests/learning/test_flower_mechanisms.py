"""Mechanisms on Flower: IP-FL's token economy with the ledger on the server
(Khan et al., Alg. 1), defection-free collaboration between two firms with the mediator on
the server (Werner 2024, Algorithm 5) and CoBo through the split strategy, the pair
gradients on the clients (Hashemi et al. 2024, Algorithm 1), in one Flower simulation,
against the in-process drivers for the same seed."""

from __future__ import annotations

import dataclasses
import time

import numpy as np
import pytest

from learning.drivers.defection_free import DuopolySetup, TorchFirms
from learning.drivers.defection_free_n import NFirmSetup, TorchNFirms, run_n_firms
from learning.drivers.defection_free_schemes import run_schemes
from learning.drivers.ipfl import IPFLRun, run_ipfl
from learning.train import TrainConfig, train

IPFL = IPFLRun(dataset="digits", model="linear", clients=8, rounds=4, local_steps=2, eval_every=2)
DUOPOLY = DuopolySetup(
    dataset="digits",
    model="mlp",
    size=150,
    target_per_class=20,
    lr=0.1,
    batch_size=32,
    init_epochs=(0, 3),
    max_inner=5,
)
DUOPOLY_SEED, DUOPOLY_ROUNDS, DUOPOLY_STREAM = 0, 3, 1
FIRMS = NFirmSetup(
    firms=3, dataset="digits", model="mlp", size=100, target_per_class=20, lr=0.1, init_epochs=2
)
FIRMS_SEED, FIRMS_ROUNDS, FIRMS_Q_MAX = 4, 2, 0.9
FIRM_SCHEMES = ("defection-free", "one-sided-low")
COBO = TrainConfig(
    algorithm="cobo",
    dataset="digits",
    model="mlp",
    clients=4,
    rounds=3,
    local_steps=2,
    batch_size=8,
    momentum=0.9,
    seed=2,
)


@pytest.fixture(scope="module")
def simulated(tmp_path_factory):
    from learning.runtimes.flower.duopoly import write_duopoly_partitions
    from learning.runtimes.flower.ipfl import write_ipfl_partitions
    from learning.runtimes.flower.n_firms import write_n_firm_partitions
    from learning.runtimes.flower.partitions import write_partitions
    from learning.runtimes.flower.simulation import simulate_directories

    work = tmp_path_factory.mktemp("mechanisms")
    names = ("ipfl", "duopoly", "cobo", *FIRM_SCHEMES)
    dirs = [work / name for name in names]
    write_ipfl_partitions(IPFL, dirs[0])
    write_partitions(COBO, dirs[2])
    write_duopoly_partitions(DUOPOLY, DUOPOLY_SEED, DUOPOLY_ROUNDS, dirs[1], stream=DUOPOLY_STREAM)
    for scheme, directory in zip(FIRM_SCHEMES, dirs[3:], strict=True):
        write_n_firm_partitions(
            FIRMS, FIRMS_SEED, FIRMS_ROUNDS, directory, scheme=scheme, q_max=FIRMS_Q_MAX
        )
    started = time.perf_counter()
    results = simulate_directories([(str(d), str(d)) for d in dirs], IPFL.clients, cpus=2)
    print(f"Flower simulation of the {len(dirs)}: {time.perf_counter() - started:.1f} s")
    return dict(zip(names, results, strict=True))


@pytest.mark.flower
def test_ipfl_on_flower_conserves_the_servers_ledger_every_round(simulated):
    result = simulated["ipfl"]
    total = IPFL.clients * IPFL.mechanism.tok_init
    assert len(result.history) == IPFL.rounds
    assert any(record["paid"] for record in result.history)
    for record in result.history:
        assert sum(record["tokens"]) + sum(record["pools"]) == pytest.approx(total, abs=1e-9)
        assert min(record["tokens"]) >= 0 and min(record["pools"]) >= 0
    assert result.tokens_end.sum() + result.pools_end.sum() == pytest.approx(total, abs=1e-9)


@pytest.mark.flower
def test_ipfl_on_flower_equals_the_in_process_driver_for_one_seed(simulated):
    """Same bids, payers and ledger every round; the same cluster models (the payers'
    updates are those of the batched engine); contributions equal up to float32 rounding of
    the hold-out gradient (a weighted sum of the payers' gradients)."""
    ours, reference = simulated["ipfl"], run_ipfl(IPFL)
    for a, b in zip(ours.history, reference.history, strict=True):
        assert a["selected"] == b["selected"] and a["bids"] == b["bids"]
        assert a["tokens"] == b["tokens"] and a["pools"] == b["pools"]
        np.testing.assert_allclose(a["psi"], b["psi"], rtol=0, atol=1e-8)
    for name, value in reference.models.items():
        np.testing.assert_allclose(ours.models[name].numpy(), value.numpy(), rtol=0, atol=1e-6)
    np.testing.assert_allclose(
        ours.personalised_accuracy, reference.personalised_accuracy, atol=1e-12
    )
    np.testing.assert_allclose(ours.cluster_accuracy, reference.cluster_accuracy, atol=1e-12)


@pytest.mark.flower
def test_defection_free_on_flower_never_lowers_a_firms_revenue(simulated):
    """Proposition 3 (Werner 2024, §3.4): under Algorithm 5 neither firm's market revenue
    falls from one round to the next, so neither ends below its revenue at the start."""
    run = simulated["duopoly"].runs["defection-free"]
    rows = run.report.rows
    assert run.report.audit.never_decreased, run.report.audit.falls
    assert all(row["U_l"] >= rows[0]["U_l"] and row["U_h"] >= rows[0]["U_h"] for row in rows)
    assert all(row["individually_rational"] for row in rows)
    assert rows[-1]["q_h"] > rows[0]["q_h"]  # the collaboration moved the market


@pytest.mark.flower
def test_defection_free_on_flower_equals_the_in_process_driver_for_one_seed(simulated):
    """The mediator's qualities, caps and final models are those of
    :func:`learning.drivers.defection_free_schemes.run_schemes` on :class:`TorchFirms` for the same seeds
    (the joint gradient is a weighted sum of the firms' gradients: float32 rounding)."""
    ours = simulated["duopoly"].runs["defection-free"]
    firms = TorchFirms.prepare(DUOPOLY, seed=DUOPOLY_SEED, device="cpu")
    reference = run_schemes(
        firms, DUOPOLY_ROUNDS, schemes=("defection-free",), seed=DUOPOLY_STREAM
    )["defection-free"]
    np.testing.assert_array_equal(ours.play.q_l, reference.play.q_l)
    np.testing.assert_array_equal(ours.play.q_h, reference.play.q_h)
    np.testing.assert_allclose(ours.play.cap, reference.play.cap, rtol=1e-12)
    for name, params in reference.firms.params.items():
        for key, value in params.items():
            np.testing.assert_allclose(
                ours.firms.params[name][key].numpy(), value.numpy(), rtol=0, atol=1e-5
            )


@pytest.mark.flower
@pytest.mark.parametrize("scheme", FIRM_SCHEMES)
def test_n_firms_on_flower_equal_the_in_process_driver_for_one_seed(simulated, scheme):
    """The n-firm mediator's qualities, kept weights and final models are those of
    :func:`learning.drivers.defection_free_n.run_n_firms` on :class:`TorchNFirms` for the same
    seeds (a firm's gradient is the row-weighted mean of its nodes' gradients: float32
    rounding); under the defection-free rule no firm's revenue falls (Proposition 3, n firms)."""
    ours = simulated[scheme].run
    firms = TorchNFirms.prepare(FIRMS, seed=FIRMS_SEED, device="cpu")
    reference = run_n_firms(
        firms, FIRMS_ROUNDS, schemes=(scheme,), q_max=FIRMS_Q_MAX, seed=FIRMS_SEED
    )[scheme]
    np.testing.assert_array_equal(ours.qualities, reference.qualities)
    np.testing.assert_array_equal(ours.kept, reference.kept)
    np.testing.assert_allclose(ours.target, reference.target, rtol=1e-12)
    for key, value in reference.firms.params.items():
        np.testing.assert_allclose(ours.firms.params[key].numpy(), value.numpy(), rtol=0, atol=1e-5)
    assert ours.drops.sum() == 0 or scheme != "defection-free"
    assert not np.array_equal(ours.qualities[0], ours.qualities[-1])  # the firms learned


@pytest.mark.flower
def test_cobo_on_flower_equals_the_in_process_algorithm_for_one_seed(simulated):
    """The clients' midpoint gradients give the server the same collaboration weights (to
    float64 rounding of the inner products) and the same client models, losses and test
    accuracies as :class:`learning.algorithms.cobo.CoBo` in :func:`learning.train.train`."""
    ours, reference = simulated["cobo"], train(COBO, device="cpu")
    weights = reference.state["weights"].numpy()
    assert (weights != 1).any()  # pairs were drawn and moved W
    np.testing.assert_allclose(ours.state["weights"].numpy(), weights, rtol=0, atol=1e-8)
    for name, value in reference.models.items():
        np.testing.assert_allclose(ours.models[name].numpy(), value.numpy(), rtol=0, atol=1e-6)
    np.testing.assert_allclose(
        [h.train_loss for h in ours.history], [h.train_loss for h in reference.history], rtol=1e-6
    )
    np.testing.assert_allclose(ours.accuracy, reference.accuracy, atol=1e-12)


@pytest.mark.slow
@pytest.mark.flower
def test_ipfl_deployed_on_separate_processes_conserves_the_ledger(tmp_path):
    """A SuperLink and one SuperNode per client, each its own process reading only its own
    partition: the ledger on the ServerApp conserves tokens every round and ends as the
    in-process driver's."""
    from learning.runtimes.flower.deploy import deploy_ipfl

    run = IPFLRun(dataset="digits", model="linear", clients=4, rounds=3, local_steps=2)
    done = deploy_ipfl(run, tmp_path, port=8670)
    total = run.clients * run.mechanism.tok_init
    assert done["processes"] == 5 and len(done["history"]) == run.rounds
    assert any(record["paid"] for record in done["history"])
    for record in done["history"]:
        assert sum(record["tokens"]) + sum(record["pools"]) == pytest.approx(total, abs=1e-9)
        assert min(record["tokens"]) >= 0
    reference = run_ipfl(run)
    assert done["tokens_end"] == reference.tokens_end.tolist()
    print(f"IP-FL deployment: {done['deployment_seconds']:.1f} s")


@pytest.mark.slow
@pytest.mark.flower
def test_defection_free_deployed_on_separate_processes_never_lowers_a_revenue(tmp_path):
    """The mediator on the ServerApp, each firm a SuperNode in its own process: no firm's
    market revenue falls in any round (Proposition 3) nor below its start."""
    from learning.runtimes.flower.deploy import deploy_firms

    # every SGD step is one message per firm, and a deployed node starts a process per
    # message: two steps an epoch, two rounds, Q = 1 (DefectionFreeConfig) instead of a
    # pooled run
    setup = DuopolySetup(
        dataset="digits",
        model="mlp",
        size=150,
        target_per_class=20,
        lr=0.2,
        batch_size=75,
        init_epochs=(0, 3),
        max_inner=3,
    )
    rounds = 2
    done = deploy_firms(setup, 0, rounds, tmp_path, port=8690, q_max=1.0, stream=1)
    report = done["runs"]["defection-free"]
    rows = report["rounds"]
    assert done["processes"] == 3 and len(rows) == rounds + 1
    assert report["revenue_never_decreased"], report["min_revenue_change"]
    assert all(row["U_l"] >= rows[0]["U_l"] and row["U_h"] >= rows[0]["U_h"] for row in rows)
    assert rows[-1]["q_h"] > rows[0]["q_h"]
    print(f"defection-free deployment: {done['deployment_seconds']:.1f} s")


@pytest.mark.slow
@pytest.mark.flower
def test_n_firms_deployed_on_separate_processes_give_the_in_process_run(tmp_path):
    """The n-firm mediator on the ServerApp, each firm a SuperNode in its own process: the
    qualities of :func:`learning.drivers.defection_free_n.run_n_firms`, and no revenue falls."""
    from learning.runtimes.flower.deploy import deploy_firms

    # a deployed node starts a process per message: one pre-training epoch of large batches
    setup = dataclasses.replace(FIRMS, batch_size=100, init_epochs=1)
    done = deploy_firms(setup, FIRMS_SEED, 1, tmp_path, port=8700, q_max=FIRMS_Q_MAX)
    firms = TorchNFirms.prepare(setup, seed=FIRMS_SEED, device="cpu")
    reference = run_n_firms(
        firms, 1, schemes=("defection-free",), q_max=FIRMS_Q_MAX, seed=FIRMS_SEED
    )["defection-free"]
    assert done["processes"] == 4 and done["firms"] == 3
    qualities = [r["qualities"] for r in done["rounds"]]
    np.testing.assert_array_equal(qualities, reference.qualities)
    assert done["audit"]["revenue_never_decreased"]
    print(f"n-firm deployment: {done['deployment_seconds']:.1f} s")


@pytest.mark.slow
@pytest.mark.flower
def test_cobo_deployed_on_separate_processes_gives_the_in_process_models(tmp_path):
    """The client models, momentum buffers and weights on the ServerApp, each client a
    SuperNode in its own process computing its midpoint and step gradients: the client
    models and training losses equal those of :func:`learning.train.train` for the same
    seed."""
    from learning.runtimes.flower.deploy import deploy

    # a deployed node starts a process per message: 3 clients, 2 rounds of every pair
    # (schedule "all") and one local step, 2 exchanges and an evaluation a round
    config = dataclasses.replace(
        COBO, clients=3, rounds=2, local_steps=1, algorithm_params={"schedule": "all"}
    )
    done = deploy(config, tmp_path, port=8710)
    reference = train(config, device="cpu")
    assert done["processes"] == 4
    np.testing.assert_allclose(
        [h["train_loss"] for h in done["history"]],
        [h.train_loss for h in reference.history],
        rtol=1e-6,
    )
    for name, value in reference.models.items():
        np.testing.assert_allclose(done["models"][name].numpy(), value.numpy(), rtol=0, atol=1e-6)
    print(f"CoBo deployment: {done['deployment_seconds']:.1f} s")
