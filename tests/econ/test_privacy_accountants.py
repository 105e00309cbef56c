"""The optional accountant conversions (dp-accounting)."""

import pytest

from econ.privacy import accountants
from econ.privacy.conversions import analytic_gaussian_epsilon, analytic_gaussian_sigma

pytest.importorskip("dp_accounting")


@pytest.mark.parametrize(("sigma", "delta"), [(2.0, 1e-5), (0.8, 1e-3), (5.0, 1e-8)])
def test_pld_equals_the_analytic_gaussian_for_one_release(sigma, delta):
    pld = accountants.accountant_epsilon(sigma, delta, 1.0)
    assert pld == pytest.approx(analytic_gaussian_epsilon(sigma, delta, 1.0), rel=1e-6)


def test_rdp_is_an_upper_bound_and_composition_costs():
    one = accountants.accountant_epsilon(2.0, 1e-5, 1.0)
    assert accountants.accountant_epsilon(2.0, 1e-5, 1.0, accountant="rdp") > one
    assert accountants.accountant_epsilon(2.0, 1e-5, 1.0, compositions=10) > one


def test_sigma_inverts_epsilon():
    sigma = accountants.accountant_sigma(1.0, 1e-5, 1.0, compositions=10)
    assert accountants.accountant_epsilon(sigma, 1e-5, 1.0, compositions=10) == pytest.approx(
        1.0, abs=1e-6
    )
    assert accountants.accountant_sigma(1.0, 1e-5, 1.0) == pytest.approx(
        analytic_gaussian_sigma(1.0, 1e-5, 1.0), rel=1e-6
    )


@pytest.mark.parametrize(
    ("kwargs", "match"),
    [
        ({"accountant": "moments"}, "accountant must be one of"),
        ({"compositions": 0}, "compositions"),
    ],
)
def test_bad_input(kwargs, match):
    with pytest.raises(ValueError, match=match):
        accountants.accountant_epsilon(1.0, 1e-5, 1.0, **kwargs)


@pytest.mark.parametrize(("noise", "steps", "rate"), [(1.0, 1, 1.0), (1.0, 1000, 0.01)])
def test_pld_grid_measures_dp_accountings_arrays(noise, steps, rate):
    # at a coarse interval (cheap) the estimate covers the arrays dp-accounting builds
    dpa = pytest.importorskip("dp_accounting")
    acc = dpa.pld.PLDAccountant(value_discretization_interval=1e-2)
    step = dpa.dp_event.GaussianDpEvent(noise)
    if rate < 1:
        step = dpa.dp_event.PoissonSampledDpEvent(rate, step)
    acc.compose(dpa.dp_event.SelfComposedDpEvent(step, steps))
    pmfs = [acc._pld._pmf_remove, acc._pld._pmf_add]
    built = max(p.size for p in pmfs)
    estimate = accountants.pld_grid(noise, steps, rate).width / 1e-2
    assert built <= estimate <= 1.2 * built


def test_pld_grid_widens_then_refuses():
    assert accountants.pld_grid(1.0).interval == accountants.PLD_INTERVAL
    wide = accountants.pld_grid(0.05)
    assert accountants.PLD_INTERVAL < wide.interval <= accountants.PLD_INTERVAL_MAX
    assert wide.points <= accountants.PLD_POINTS + 1
    with pytest.raises(accountants.GridTooLarge, match="use accountant='rdp'") as refused:
        accountants.accountant_epsilon(0.001, 0.5, 1.0)
    assert refused.value.points > 1e8
    tiny = accountants.pld_grid(1e-300)
    assert not tiny.feasible and tiny.width == float("inf")


def test_noise_search_is_bounded_and_names_the_floor():
    with pytest.raises(accountants.GridTooLarge) as refused:
        accountants.accountant_sigma(1e6, 1e-5, 1.0)
    assert 0 < refused.value.noise_floor < 1e-3
    # the RDP accountant resolves any noise: its search ends at the root
    sigma = accountants.accountant_sigma(1e6, 1e-5, 1.0, accountant="rdp")
    assert accountants.accountant_epsilon(sigma, 1e-5, 1.0, accountant="rdp") == pytest.approx(
        1e6, rel=1e-6
    )
    with pytest.raises(ValueError, match="no finite epsilon"):
        accountants.accountant_epsilon(1e-200, 1e-5, 1.0, accountant="rdp")


@pytest.mark.slow
def test_a_widened_grid_is_still_an_upper_bound():
    # noise 0.2: 1.2 million points at 1e-4, so an interval 2.3 times wider; the analytic
    # Gaussian epsilon is exact for one release
    assert accountants.pld_grid(0.2).interval > accountants.PLD_INTERVAL
    pld = accountants.accountant_epsilon(0.2, 1e-5, 1.0)
    exact = analytic_gaussian_epsilon(0.2, 1e-5, 1.0)
    assert exact <= pld <= exact * (1 + 1e-6)
