"""Every ε of DP-SGD training names its accounting, and under Poisson sampling equals Opacus's.

Opacus accounts for Poisson sampling under add-or-remove adjacency (its ``RDPAccountant``, and
the ``PRVAccountant`` of Gopi, Lee, Wutschitz, NeurIPS 2021, by default); with
``--dp-sampling poisson`` ``collabecon train`` runs and accounts for the same mechanism.
"""

import json

import numpy as np
import pytest

from collabecon.cli import main
from collabecon.cli.train import render
from econ.privacy.accountants import accounting, accounting_text, adjacency
from learning.train import TrainConfig, dp_accounting, dp_epsilon, prepare

TINY = {
    "dataset": "digits",
    "model": "mlp",
    "clients": 4,
    "rounds": 2,
    "local_steps": 2,
    "batch_size": 8,
}
ARGV = [x for k, v in TINY.items() for x in ("--" + k.replace("_", "-"), str(v))]


def _opacus_epsilon(kind, noise, rate, steps, delta):
    accountants = pytest.importorskip("opacus.accountants")
    accountant = getattr(accountants, kind)()
    accountant.history = [(noise, rate, steps)]
    if kind == "PRVAccountant":  # its default error bound is 0.01 in epsilon
        return accountant.get_epsilon(delta, eps_error=1e-3)
    return accountant.get_epsilon(delta)


@pytest.mark.parametrize(("sizes", "noise", "steps"), [((359, 360), 1.0, 4), ((400,), 0.8, 100)])
def test_poisson_rdp_epsilon_equals_opacus(sizes, noise, steps):
    config = TrainConfig(
        **{**TINY, "rounds": steps // 2}, dp_noise_multiplier=noise, dp_sampling="poisson"
    )
    ours = dp_epsilon(config, sizes)
    theirs = [_opacus_epsilon("RDPAccountant", noise, 8 / n, steps, 1e-5) for n in sizes]
    np.testing.assert_allclose(ours, theirs, rtol=0.01)
    assert dp_accounting(config, sizes) == {
        "accountant": "rdp",
        "sampling": "poisson",
        "adjacency": "add-remove",
    }


@pytest.mark.slow
@pytest.mark.parametrize("accountant", ["rdp", "pld"])
def test_train_under_poisson_sampling_reports_opacus_epsilon(capsys, accountant):
    """``collabecon train --dp-sampling poisson`` in process: each client's ε is Opacus's for
    the same sampling rate, steps and δ (RDP against RDP, PLD against PRV), within 1%."""
    argv = ["train", "--json", "--no-progress", *ARGV, "--dp-noise-multiplier", "1"]
    argv += ["--dp-sampling", "poisson", "--dp-accountant", accountant]
    assert main(argv) == 0
    out = json.loads(capsys.readouterr().out)
    assert out["accounting"] == {
        "accountant": accountant,
        "sampling": "poisson",
        "adjacency": "add-remove",
    }
    sizes = [c.n_train for c in prepare(TrainConfig(**TINY)).built.federation.clients]
    kind = {"rdp": "RDPAccountant", "pld": "PRVAccountant"}[accountant]
    theirs = [_opacus_epsilon(kind, 1.0, 8 / n, 4, out["delta"]) for n in sizes]
    np.testing.assert_allclose(out["epsilon"], theirs, rtol=0.01)


@pytest.mark.slow
def test_fixed_size_batches_are_named_replace_one_and_above_poisson(capsys):
    argv = ["train", "--json", "--no-progress", *ARGV, "--dp-noise-multiplier", "1"]
    assert main(argv) == 0
    fixed = json.loads(capsys.readouterr().out)
    assert main([*argv, "--dp-sampling", "poisson"]) == 0
    poisson = json.loads(capsys.readouterr().out)
    assert fixed["accounting"]["adjacency"] == "replace-one"
    assert fixed["accounting"]["sampling"] == "fixed"
    # replace-one neighbours differ in two examples' worth: a larger epsilon
    assert all(f > p for f, p in zip(fixed["epsilon"], poisson["epsilon"], strict=True))


def test_accounting_names_accountant_sampling_and_adjacency():
    assert adjacency("fixed", 0.1) == "replace-one"
    assert adjacency("fixed", 1.0) == "add-remove"  # every release sees all the data
    assert adjacency("poisson", 0.1) == "add-remove"
    described = accounting("pld", "poisson", 0.02)
    assert accounting_text(described) == "PLD accountant, Poisson sampling, add-remove adjacency"
    with pytest.raises(ValueError, match="accountant must be one of"):
        accounting("moments", "fixed", 0.1)
    assert dp_accounting(TrainConfig(**TINY), [100]) is None


def test_train_text_names_the_accounting():
    result = {
        "status": "done",
        "algorithm": "fedavg",
        "dataset": "digits",
        "partition": "iid",
        "clients": 2,
        "model": "mlp",
        "device": "cpu",
        "accuracy": [0.5, 0.6],
        "loss": [1.0, 0.9],
        "mean_accuracy": 0.55,
        "mean_loss": 0.95,
        "seconds": 1.0,
        "epsilon": [1.2, 1.3],
        "delta": 1e-5,
        "accounting": accounting("rdp", "fixed", 0.02),
    }
    text = render(result)
    assert "epsilon at delta 1e-05: 1.2, 1.3" in text
    assert "accounting: RDP accountant, fixed-size sampling, replace-one adjacency" in text


def test_pld_accounts_for_poisson_sampling_only():
    with pytest.raises(ValueError, match="dp_accountant pld accounts for Poisson sampling only"):
        TrainConfig(dp_noise_multiplier=1.0, dp_accountant="pld")
    with pytest.raises(ValueError, match="dp_sampling must be one of"):
        TrainConfig(dp_noise_multiplier=1.0, dp_sampling="shuffle")
