"""Duopoly closed forms (Werner 2024, ch. 3, Lemmas 21-23, eq. 3.4), checked at exact rationals."""

import dataclasses

import numpy as np
import pytest
import sympy as sp
from hypothesis import given
from hypothesis import strategies as st

from econ import duopoly
from econ.duopoly import q_h, q_l

R = sp.Rational

EXACT = [
    # (q_l, q_h), exact values of Lemma 22's closed forms and the integrated consumer surplus
    (
        (R(3, 10), R(4, 5)),
        {
            "p_l": R(3, 58),
            "p_h": R(8, 29),
            "D_l": R(8, 29),
            "D_h": R(16, 29),
            "theta_l": R(5, 29),
            "theta_h": R(13, 29),
            "U_l": R(12, 841),
            "U_h": R(128, 841),
            "consumer_surplus": R(752, 4205),
        },
    ),
    (
        (R(1, 5), R(3, 5)),
        {
            "p_l": R(2, 55),
            "p_h": R(12, 55),
            "D_l": R(3, 11),
            "D_h": R(6, 11),
            "U_l": R(6, 605),
            "U_h": R(72, 605),
        },
    ),
    ((R(1, 2), R(1)), {"p_l": R(1, 14), "p_h": R(2, 7), "U_l": R(1, 49), "U_h": R(8, 49)}),
    ((R(4, 7), R(1)), {"p_l": R(1, 14), "p_h": R(1, 4), "U_l": R(1, 48), "U_h": R(7, 48)}),
    (
        (R(1, 10), R(9, 10)),
        {"p_l": R(4, 175), "p_h": R(72, 175), "U_l": R(36, 6125), "U_h": R(1296, 6125)},
    ),
    ((R(7, 10), R(4, 5)), {"U_l": R(28, 3125), "U_h": R(128, 3125)}),
]


@pytest.mark.parametrize(("pair", "expected"), EXACT)
def test_exact_equilibrium_values(pair, expected):
    got = duopoly.equilibrium_exact(*pair)
    for name, value in expected.items():
        assert got[name] == value, name
    numeric = duopoly.equilibrium(float(pair[0]), float(pair[1]))
    for name, value in expected.items():
        assert float(getattr(numeric, name)) == pytest.approx(float(value), rel=1e-12)


@pytest.mark.parametrize(
    ("expr", "var", "pair", "value"),
    [
        (duopoly.U_H, q_h, (R(3, 10), R(4, 5)), R(6464, 24389)),
        (duopoly.U_H, q_l, (R(3, 10), R(4, 5)), R(-4864, 24389)),
        (duopoly.U_L, q_h, (R(3, 10), R(4, 5)), R(171, 24389)),
        (duopoly.U_L, q_l, (R(3, 10), R(4, 5)), R(704, 24389)),
        (duopoly.U_L, q_l, (R(1, 2), R(1)), R(4, 343)),
        (duopoly.U_L, q_l, (R(4, 7), R(1)), 0),
        (duopoly.U_L, q_l, (R(7, 10), R(4, 5)), R(-1088, 15625)),
    ],
)
def test_partial_derivatives_exact(expr, var, pair, value):
    assert sp.diff(expr, var).subs({q_l: pair[0], q_h: pair[1]}) == value


def test_monopoly_and_complete_collaboration_limits():
    mono = duopoly.equilibrium(0.0, 1.0)
    assert (float(mono.p_h), float(mono.U_h), float(mono.U_l)) == pytest.approx((0.5, 0.25, 0.0))
    same = duopoly.equilibrium([0.3, 0.7], [0.3, 0.7])  # Lemma 23
    np.testing.assert_array_equal(same.U_l, 0.0)
    np.testing.assert_array_equal(same.U_h, 0.0)
    np.testing.assert_allclose(same.consumer_surplus, [0.15, 0.35])
    empty = duopoly.equilibrium(0.0, 0.0)
    assert all(np.isfinite(v).all() and v == 0 for k, v in empty.to_dict().items())


def test_literal_labels_give_negative_high_revenue():
    _, u_h = duopoly.revenues(0.8, 0.7, literal=True)
    assert u_h < 0  # fixed labels, as plotted in Fig. 3.2a
    with pytest.raises(ValueError, match="q_l must not exceed q_h"):
        duopoly.revenues(0.8, 0.7)


def test_order_sorts_pairs_and_broadcasts():
    eq = duopoly.equilibrium([0.8, 0.3], 0.5, order=True)
    assert eq.q_l.tolist() == [0.5, 0.3] and eq.q_h.tolist() == [0.8, 0.5]


@pytest.mark.parametrize(
    ("q_low", "q_high", "match"),
    [
        (1.2, 1.0, r"q_l must lie in \[0, 1\]"),
        (0.2, np.nan, "q_h must be finite"),
        (-0.1, 0.5, "q_l must lie"),
        (0.6, 0.5, "must not exceed"),
    ],
)
def test_bad_input_is_named(q_low, q_high, match):
    with pytest.raises(ValueError, match=match):
        duopoly.equilibrium(q_low, q_high)


def test_cournot_complete_collaboration_keeps_revenue():
    eq = duopoly.cournot_equilibrium(0.6, 0.6)
    assert eq.U_l == pytest.approx(0.6 / 9) and eq.U_h == pytest.approx(0.6 / 9)


def test_cournot_equilibrium_is_a_frozen_record_of_scalars_or_arrays():
    eq = duopoly.cournot_equilibrium(0.3, 0.8)
    assert isinstance(eq, duopoly.CournotEquilibrium)
    assert all(type(v) is float for v in eq.to_dict().values())
    assert list(eq.to_dict()) == ["x_l", "x_h", "p_l", "p_h", "U_l", "U_h"]
    with pytest.raises(dataclasses.FrozenInstanceError):
        eq.U_l = 0.0  # type: ignore[misc]
    arrays = duopoly.cournot_equilibrium([0.3, 0.5], 0.8)
    assert arrays.U_h.shape == (2,) and arrays.U_h[0] == eq.U_h
    assert arrays.to_dict()["U_h"] == [eq.U_h, float(arrays.U_h[1])]


def test_monte_carlo_demands_match_lemma21():
    rng = np.random.default_rng(0)
    types = rng.uniform(size=1_000_000)
    ql, qh = 0.3, 0.8
    eq = duopoly.equilibrium(ql, qh)
    utility = np.stack([np.zeros_like(types), types * ql - eq.p_l, types * qh - eq.p_h])
    choice = np.argmax(utility, axis=0)
    assert np.mean(choice == 1) == pytest.approx(float(eq.D_l), abs=2e-3)
    assert np.mean(choice == 2) == pytest.approx(float(eq.D_h), abs=2e-3)


pairs = st.tuples(st.floats(0.0, 1.0), st.floats(0.01, 1.0)).map(lambda t: (min(t) * 0.999, max(t)))


@given(pairs)
def test_prices_are_mutual_best_responses(pair):
    ql, qh = pair
    if qh - ql < 1e-3 or ql < 1e-3:
        return
    eq = duopoly.equilibrium(ql, qh)
    grid = np.linspace(0, 1.2 * qh, 20_001)
    d_l, _ = duopoly.demands(grid, eq.p_h, ql, qh)
    _, d_h = duopoly.demands(eq.p_l, grid, ql, qh)
    step = grid[1] - grid[0]
    assert float(eq.p_l * eq.D_l) >= np.max(grid * d_l) - 1e-12
    assert float(eq.p_h * eq.D_h) >= np.max(grid * d_h) - 1e-12
    assert abs(grid[np.argmax(grid * d_h)] - eq.p_h) <= step


@given(pairs)
def test_revenues_are_non_negative_and_bounded(pair):
    eq = duopoly.equilibrium(*pair)
    assert 0 <= eq.U_l <= eq.q_h / 48 + 1e-15
    assert 0 <= eq.U_h <= eq.q_h / 4 + 1e-15
    assert eq.welfare == pytest.approx(eq.consumer_surplus + eq.U_l + eq.U_h)


@pytest.mark.parametrize("scale", [1e-160, 1e-200, 1e-300])
def test_tiny_qualities_are_the_scaled_closed_forms(scale: float) -> None:
    """(q_l, q_h) = (3, 7) s: p_l = 12/25 s, U_l = 84/625 s, U_h = 784/625 s, D_l = 7/25,
    D_h = 14/25 (eq. 3.4 by homogeneity), where the raw products underflow to 0/0."""
    eq = duopoly.equilibrium(3 * scale, 7 * scale)
    assert eq.p_l == pytest.approx(12 / 25 * scale, rel=1e-12)
    assert eq.U_l == pytest.approx(84 / 625 * scale, rel=1e-12)
    assert eq.U_h == pytest.approx(784 / 625 * scale, rel=1e-12)
    assert (eq.D_l, eq.D_h) == pytest.approx((7 / 25, 14 / 25), rel=1e-14)
    assert eq.welfare == pytest.approx(eq.consumer_surplus + eq.U_l + eq.U_h, rel=1e-14)


def test_subnormal_tie_is_lemma_23() -> None:
    eq = duopoly.equilibrium(5e-324, 5e-324)
    assert (eq.p_l, eq.p_h, eq.U_l, eq.U_h) == (0.0, 0.0, 0.0, 0.0)
    assert (eq.D_l, eq.D_h) == pytest.approx((1 / 3, 2 / 3))
