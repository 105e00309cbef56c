"""Privacy accounting with subsampling against independent accountants, on a grid."""

import itertools

import pytest

from econ.privacy.accountants import accountant_epsilon, accountant_sigma

dpa = pytest.importorskip("dp_accounting")

# (noise multiplier, sampling rate, steps, delta) where epsilon is below 40: beyond, both
# RDP figures are loose and Opacus drops the orders it cannot compute
GRID = [
    point
    for point in itertools.product((0.8, 2.0), (0.001, 0.01, 0.1), (10, 1000), (1e-5, 1e-3))
    if not (point[0] < 1 and point[1] == 0.1 and point[2] == 1000)
]


def _direct(noise, rate, steps, delta, accountant):
    step = dpa.dp_event.PoissonSampledDpEvent(rate, dpa.dp_event.GaussianDpEvent(noise))
    acc = dpa.pld.PLDAccountant() if accountant == "pld" else dpa.rdp.RdpAccountant()
    acc.compose(dpa.dp_event.SelfComposedDpEvent(step, steps))
    return acc.get_epsilon(delta)


@pytest.mark.parametrize(("noise", "rate", "steps", "delta"), GRID)
def test_poisson_rdp_agrees_with_opacus(noise, rate, steps, delta):
    accountants = pytest.importorskip("opacus.accountants")
    theirs = accountants.RDPAccountant()
    theirs.history = [(noise, rate, steps)]
    ours = accountant_epsilon(
        noise, delta, 1.0, compositions=steps, sampling_rate=rate, accountant="rdp"
    )
    assert ours == pytest.approx(theirs.get_epsilon(delta), rel=0.01)


@pytest.mark.parametrize(("noise", "rate", "steps", "delta"), GRID[::4])
def test_poisson_pld_agrees_with_dp_accounting_and_opacus_prv(noise, rate, steps, delta):
    ours = accountant_epsilon(noise, delta, 1.0, compositions=steps, sampling_rate=rate)
    assert ours == pytest.approx(_direct(noise, rate, steps, delta, "pld"), rel=0.01)
    accountants = pytest.importorskip("opacus.accountants")
    prv = accountants.PRVAccountant()
    prv.history = [(noise, rate, steps)]
    # PRV and PLD discretise differently; Opacus's PRV estimate carries an absolute error
    # of up to eps_error = 0.01 (its default) on top of a few percent
    assert ours == pytest.approx(prv.get_epsilon(delta), rel=0.06, abs=0.015)
    assert ours <= accountant_epsilon(
        noise, delta, 1.0, compositions=steps, sampling_rate=rate, accountant="rdp"
    )


def test_subsampling_is_the_difference_that_matters():
    # noise 1, 160 steps: without amplification epsilon is two orders of magnitude larger
    full = accountant_epsilon(1.0, 1e-5, 1.0, compositions=160, accountant="rdp")
    sampled = accountant_epsilon(
        1.0, 1e-5, 1.0, compositions=160, sampling_rate=256 / 60000, accountant="rdp"
    )
    assert full / sampled > 100


def test_fixed_size_sampling_is_accounted_with_rdp_replace_one():
    eps = accountant_epsilon(
        1.0,
        1e-5,
        1.0,
        compositions=160,
        sampling_rate=256 / 60000,
        sampling="fixed",
        dataset_size=60000,
        accountant="rdp",
    )
    acc = dpa.rdp.RdpAccountant(
        neighboring_relation=dpa.privacy_accountant.NeighboringRelation.REPLACE_ONE
    )
    step = dpa.dp_event.SampledWithoutReplacementDpEvent(
        60000, 256, dpa.dp_event.GaussianDpEvent(1.0)
    )
    acc.compose(dpa.dp_event.SelfComposedDpEvent(step, 160))
    assert eps == pytest.approx(acc.get_epsilon(1e-5), rel=1e-9)
    with pytest.raises(ValueError, match="PLD accountant has no fixed-size"):
        accountant_epsilon(1.0, 1e-5, 1.0, sampling_rate=0.1, sampling="fixed", dataset_size=100)
    with pytest.raises(ValueError, match="whole batch size"):
        accountant_epsilon(
            1.0,
            1e-5,
            1.0,
            sampling_rate=0.013,
            sampling="fixed",
            dataset_size=100,
            accountant="rdp",
        )
    with pytest.raises(ValueError, match="needs dataset_size"):
        accountant_epsilon(1.0, 1e-5, 1.0, sampling_rate=0.1, sampling="fixed", accountant="rdp")


@pytest.mark.parametrize(("rate", "accountant"), [(1.0, "pld"), (0.01, "rdp")])
def test_noise_for_a_target_epsilon_inverts(rate, accountant):
    kw = dict(compositions=100, sampling_rate=rate, accountant=accountant)
    sigma = accountant_sigma(2.0, 1e-5, 1.0, **kw)
    back = accountant_epsilon(sigma, 1e-5, 1.0, **kw)
    assert back == pytest.approx(2.0, rel=1e-6)


def test_a_sparse_loss_distribution_composes_in_time_bounded_by_log_steps():
    # at a sampling rate of 1e-9 the discretised loss of one step has one or two points, which
    # dp-accounting composes one step at a time: a million steps agree with it exactly, and
    # 10^12 steps (which it never finishes) give a finite figure
    rate = 1e-9
    ours = accountant_epsilon(1.0, 1e-5, 1.0, compositions=10**6, sampling_rate=rate)
    assert ours == pytest.approx(_direct(1.0, rate, 10**6, 1e-5, "pld"), rel=1e-9)
    huge = accountant_epsilon(1.0, 1e-5, 1.0, compositions=10**12, sampling_rate=rate)
    assert 0 < huge < float("inf")
