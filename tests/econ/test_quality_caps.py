"""The cap factor B of Algorithm 5 and the caps of the proof of Proposition 3 (Werner 2024, ch. 3)."""

import numpy as np
import pytest
import sympy as sp

from econ import duopoly, quality_caps
from econ import quality_caps_guarantee_propositions as guarantee

B_TABLE = [
    (0.3, 1.0, 0.3),
    (0.3, 1.01, 0.311072659260),
    (0.3, 1.05, 0.351907545241),
    (0.3, 1.1, 0.396346007969),
    (0.3, 1.5, 0.607731103710),
    (0.3, 2.0, 0.725945903649),
    (0.0, 1.5, 0.485281374239),
    (0.0, 2.0, 0.649110640674),
    (0.1, 1.2, 0.339166613076),
    (0.4, 1.03, 0.425793109748),
    (0.5, 1.1, 0.561215671258),
    (0.6, 1.2, 0.682681626565),
    (0.8, 1.2, 0.837184181262),
    (0.25, 1.25, 0.467616810894),
]


@pytest.mark.parametrize(("a", "b", "value"), B_TABLE)
def test_b_values(a, b, value):
    assert float(quality_caps.cap_ratio(a, b)) == pytest.approx(value, abs=1e-11)
    assert float(quality_caps.cap_ratio(a, b, form="paper")) == pytest.approx(
        float(quality_caps.cap_ratio(a, b)), abs=1e-10
    )


def test_stable_form_survives_large_b():
    big = np.array([1e6, 1e10, 1e14])
    stable = quality_caps.cap_ratio(0.3, big)
    assert np.all(np.diff(stable) > 0) and np.all(stable < 1)
    assert (
        abs(float(quality_caps.cap_ratio(0.3, 1e14, form="paper")) - float(stable[-1])) > 1e-6
    )  # the paper's form cancels


@pytest.mark.parametrize(
    ("state", "q_hat", "u_h_prev"),
    [
        ((0.2, 0.6, 0.66), 0.279393169212, 72 / 605),
        ((0.3, 0.8, 0.85), 0.364849320601, 128 / 841),
        ((0.1, 0.5, 0.6), 0.241493518834, 0.110803324),
    ],
)
def test_cap_high_keeps_high_revenue(state, q_hat, u_h_prev):
    got = float(quality_caps.cap_high(*state))
    assert got == pytest.approx(q_hat, abs=1e-11)
    u_l_before, u_h_before = duopoly.revenues(state[0], state[1])
    u_l_after, u_h_after = duopoly.revenues(got, state[2])
    assert float(u_h_before) == pytest.approx(u_h_prev, abs=1e-9)
    assert float(u_h_after) == pytest.approx(float(u_h_before), abs=1e-12)
    assert u_l_after > u_l_before


def test_cap_low_corrected_root():
    # rho = 0.25, h = 0.6, c = 0.66: U_l at the root equals U_l(0.15, 0.6) = 0.008
    x = float(quality_caps.cap_low(0.15, 0.6, 0.66))
    assert x == pytest.approx(0.568510000615, abs=1e-11)
    assert float(duopoly.revenues(x, 0.66)[0]) == pytest.approx(0.008, abs=1e-12)


def test_cap_high_never_exceeds_cap_low():
    rng = np.random.default_rng(1)
    h = rng.uniform(0.05, 0.9, 5000)
    ql = rng.uniform(0, 0.999, 5000) * h
    c = np.minimum(h * rng.uniform(1, 1.2, 5000), 1.0)
    assert np.all(quality_caps.cap_high(ql, h, c) <= quality_caps.cap_low(ql, h, c) + 1e-12)


def test_min_high_quality_root():
    assert float(quality_caps.min_high_quality(0.279393169212418, 72 / 605)) == pytest.approx(
        0.66, abs=1e-9
    )


def test_semigroup_slope_and_limits():
    a = np.linspace(0, 0.99, 50)
    np.testing.assert_allclose(
        quality_caps.cap_ratio(quality_caps.cap_ratio(a, 1.3), 1.7),
        quality_caps.cap_ratio(a, 1.3 * 1.7),
        atol=1e-14,
    )
    np.testing.assert_allclose(quality_caps.cap_ratio(a, 1.0), a, atol=1e-15)
    eps = 1e-7
    slope = (quality_caps.cap_ratio(0.3, 1 + eps) - quality_caps.cap_ratio(0.3, 1.0)) / eps
    assert float(slope) == pytest.approx(1.126087, abs=1e-5)
    assert float(quality_caps.cap_ratio(0.3, 1e12)) == pytest.approx(1.0, abs=1e-9)


@pytest.mark.parametrize(
    ("rho", "value"),
    [
        (0.0, 1.0922219576),
        (0.1, 1.0675281697),
        (0.2, 1.0457987448),
        (0.3, 1.0314759626),
        (0.35, 1.0298258127),
        (0.4, 1.0346339978),
        (0.5, 1.0823111401),
        (0.6, 1.2736298461),
        (0.7, 2.3702707568),
    ],
)
def test_b_rho_table(rho, value):
    assert quality_caps.b_rho(rho) == pytest.approx(value, abs=1e-9)


def test_b_rho_limits_and_b_tilde():
    assert quality_caps.b_rho(0.8) == float("inf")
    assert quality_caps.b_rho(0.0, base=np.e) == 1.0  # with the natural log, b_rho(0) = 1
    tilde, at = quality_caps.b_tilde()
    assert tilde == pytest.approx(1.0297284244, abs=1e-8) and at == pytest.approx(
        0.340994, abs=1e-4
    )


def test_next_low_quality_rules():
    # the toy from (13/64, 55/64): the literal cap with a jump of q_h to Q overshoots q_l*
    q_max, ql0, qh0 = 63 / 64, 13 / 64, 55 / 64
    jump = quality_caps.next_low_quality(
        ql0, qh0, q_max, rho_star=0.290568582235, q_l_star=0.286028448138, cap_mode="literal"
    )
    assert float(jump) == pytest.approx(0.378910594796, abs=1e-11)
    capped = quality_caps.next_low_quality(
        ql0, qh0, q_max, rho_star=0.290568582235, q_l_star=0.286028448138
    )
    assert float(capped) == pytest.approx(0.286028448138, abs=1e-11)
    # the high firm fell back (b < 1): the low firm stays put
    assert float(quality_caps.next_low_quality(0.2, 0.6, 0.58, rho_star=0.4, q_l_star=0.4)) == 0.2


@pytest.mark.parametrize(
    ("a", "b", "match"),
    [(1.0, 1.5, "a must lie"), (0.3, 0.9, "b must lie"), (0.3, np.inf, "finite")],
)
def test_b_rejects_bad_input(a, b, match):
    with pytest.raises(ValueError, match=match):
        quality_caps.cap_ratio(a, b)


def _at(expr, rho, h, c):
    return float(expr.subs({guarantee._rho: rho, guarantee._h: h, guarantee._c: c}))


def test_printed_roots_of_the_proof_of_proposition_3():
    rho, h, c = 0.25, 0.6, 0.66
    # q^h as printed is the cap of Algorithm 5's step 8
    assert _at(guarantee.CAP_HIGH_PRINTED, rho, h, c) == pytest.approx(
        float(quality_caps.cap_high(rho * h, h, c)), abs=1e-12
    )
    # q^l as printed lacks the factor q_{h,t}: 0.8614 is no root; times c it is cap_low
    printed = _at(guarantee.CAP_LOW_PRINTED, rho, h, c)
    assert printed == pytest.approx(0.861378788810, abs=1e-9)
    assert printed * c == pytest.approx(float(quality_caps.cap_low(rho * h, h, c)), abs=1e-12)
    quad = guarantee.QUAD_315.subs({guarantee._ql: rho * h, guarantee._h: h, guarantee._c: c})
    assert abs(float(quad.subs(guarantee._x, printed))) > 0.1
    assert abs(float(quad.subs(guarantee._x, printed * c))) < 1e-12


def test_quadratic_314_vanishes_at_the_exact_cap():
    # rho = 1/3, b = 24/19: s = 8/11 and B = 10/19, so the cap 144/361 is rational
    point = {
        guarantee._ql: sp.Rational(1, 5),
        guarantee._h: sp.Rational(3, 5),
        guarantee._c: sp.Rational(72, 95),
    }
    assert guarantee.QUAD_314.subs(point).subs(guarantee._x, sp.Rational(144, 361)) == 0
    assert float(quality_caps.cap_high(0.2, 0.6, 72 / 95)) == pytest.approx(144 / 361, abs=1e-14)


def test_caps_are_homogeneous_down_to_tiny_qualities() -> None:
    """cap_low is degree-1 homogeneous: at (4/7, 1, 1) s it is s times the value at s = 1,
    where the raw products underflow; it is never below cap_high."""
    base = quality_caps.cap_low(4 / 7, 1.0, 1.0)
    for s in (1e-100, 1e-200, 1e-300):
        low = quality_caps.cap_low(4 / 7 * s, s, s)
        assert low == pytest.approx(base * s, rel=1e-12)
        assert low >= quality_caps.cap_high(4 / 7 * s, s, s) * (1 - 1e-12)


def test_unbounded_growth_caps_at_the_new_quality() -> None:
    """q_h grows from 5e-324 to 4/7: b overflows, B(a, b) -> 1, and the cap is q_h,t."""
    out = quality_caps.next_low_quality(5e-324, 5e-324, 4 / 7, rho_star=1.0, q_l_star=1.0)
    assert out == pytest.approx(4 / 7, rel=1e-12)
