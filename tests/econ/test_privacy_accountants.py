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
