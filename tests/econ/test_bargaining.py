"""Nash bargaining (Werner 2024, ch. 3, section 3.4): the duopoly's closed form and the general solver."""

import argparse
from fractions import Fraction

import numpy as np
import pytest
import sympy as sp
from hypothesis import given
from hypothesis import strategies as st

from collabecon.cli import bargain as bargain_cli
from econ import bargaining, duopoly, nash_bargaining

TABLE = [
    # q_l0, q_h0, Q, rho*, N*, U_l*, U_h*: reference values of the cubic's rational root, the
    # solution of the thesis's program (allow_lower=True: the last row's q_l* < q_l0)
    (0.2, 0.6, 1.0, 0.396832139254, 5.69305841e-4, 0.0184363965, 0.1858357196),
    (0.3, 0.8, 1.0, 0.398367730829, 1.40202428e-4, 0.0184763651, 0.1855207006),
    (0.1, 0.5, 0.9, 0.357945174419, 6.37874026e-4, 0.0155933051, 0.1742535590),
    (0.1, 0.3, 1.0, 0.414734449831, 1.70746700e-3, 0.0188834097, 0.1821253069),
    (0.1, 0.8, 1.0, 0.242845110105, 2.02103198e-4, 0.0130255448, 0.2145490145),
    (0.05, 0.1, 1.0, 0.426244366847, 2.79487326e-3, 0.0191485507, 0.1796955192),
    (0.4, 0.5, 1.0, 0.449474780681, 1.60256103e-3, 0.0196289624, 0.1746835488),
    (0.45, 0.9, 1.0, 0.470885469956, 3.76514656e-5, 0.0200047658, 0.1699331758),
    (0.6, 0.9, 1.0, 0.505759581115, 1.33325077e-4, 0.0204727796, 0.1619170879),
]


@pytest.mark.parametrize("row", TABLE)
def test_nash_table(row):
    ql0, qh0, q, rho, n, ul, uh = row
    sol = bargaining.duopoly_nash_solution(ql0, qh0, q, allow_lower=True)
    assert float(sol.rho_star) == pytest.approx(rho, abs=1e-9)
    assert float(sol.q_l_star) == pytest.approx(rho * q, abs=1e-9)
    assert float(sol.nash_product) == pytest.approx(n, rel=1e-7)
    assert (float(sol.U_l_star), float(sol.U_h_star)) == pytest.approx((ul, uh), abs=1e-9)


def test_vectorised_table_matches_scalar():
    rows = np.array(TABLE)
    sol = bargaining.duopoly_nash_solution(rows[:, 0], rows[:, 1], rows[:, 2], allow_lower=True)
    np.testing.assert_allclose(sol.rho_star, rows[:, 3], atol=1e-9)


def test_exact_start_zero_half():
    # start (0, 1/2), Q = 1: the cubic factors and rho* = 4/13, N* = 5/4096
    a_, h_ = sp.Integer(0), sp.Rational(1, 8)
    cubic = bargaining.CUBIC.as_expr().subs({bargaining.A: a_, bargaining.H: h_})
    r = bargaining.rho
    assert sp.expand(8 * cubic - (13 * r - 4) * (3 * r**2 + 16 * r - 16)) == 0
    n_star = bargaining.NASH_RHO.subs({bargaining.A: a_, bargaining.H: h_, r: sp.Rational(4, 13)})
    assert sp.nsimplify(n_star) == sp.Rational(5, 4096)
    assert duopoly.U_L.subs({duopoly.q_l: sp.Rational(4, 13), duopoly.q_h: 1}) == sp.Rational(1, 64)
    assert duopoly.U_H.subs({duopoly.q_l: sp.Rational(4, 13), duopoly.q_h: 1}) == sp.Rational(
        13, 64
    )
    sol = bargaining.duopoly_nash_solution(0.0, 0.5)
    assert float(sol.rho_star) == pytest.approx(4 / 13, abs=1e-14)
    assert float(sol.nash_product) == pytest.approx(5 / 4096, rel=1e-12)


def test_rho_inf_and_pitfall():
    assert bargaining.RHO_INF == pytest.approx(0.42442890089805236, abs=1e-16)
    thesis = bargaining.duopoly_nash_solution(0.49, 0.88, allow_lower=True)
    assert float(thesis.rho_star) == pytest.approx(0.489588070784, abs=1e-9)


def test_degenerate_starts_are_defined():
    for ql0, qh0 in [(0.0, 0.0), (0.5, 1.0), (1.0, 1.0), (0.0, 1.0)]:
        sol = bargaining.duopoly_nash_solution(ql0, qh0)
        assert np.isfinite(sol.rho_star) and sol.nash_product >= -1e-15


@pytest.mark.parametrize(
    ("args", "match"),
    [
        ((0.6, 0.5), "q_l0 must not exceed"),
        ((0.2, 0.9, 0.8), "q_h0 must not exceed"),
        ((0.2, 0.5, 0.0), "q_max"),
    ],
)
def test_bad_input(args, match):
    with pytest.raises(ValueError, match=match):
        bargaining.duopoly_nash_solution(*args)


starts = st.tuples(st.floats(0.0, 1.0), st.floats(0.01, 1.0), st.floats(0.0, 1.0))


@given(starts)
def test_solution_is_feasible_and_beats_the_grid(t):
    qh0 = t[1]
    ql0 = t[0] * qh0
    q = qh0 + t[2] * (1 - qh0)
    sol = bargaining.duopoly_nash_solution(ql0, qh0, q, allow_lower=True)
    ul0, uh0 = duopoly.revenues(ql0, qh0)
    ul, uh = duopoly.revenues(sol.q_l_star, sol.q_h_star)
    assert ul >= ul0 - 1e-12 and uh >= uh0 - 1e-12
    grid_q = np.linspace(0, q, 801)
    gl, gh = duopoly.revenues(grid_q, q)
    rational = (gl >= ul0) & (gh >= uh0)
    assert sol.nash_product >= np.max(np.where(rational, (gl - ul0) * (gh - uh0), -np.inf)) - 1e-15


def test_general_solver_matches_closed_form():
    ql0, qh0 = 0.2, 0.6
    ul0, uh0 = (float(v) for v in duopoly.revenues(ql0, qh0))
    sol = nash_bargaining.nash_bargaining(
        lambda x: float(duopoly.revenues(min(x[0], x[1]), x[1])[0]),
        lambda x: float(duopoly.revenues(min(x[0], x[1]), x[1])[1]),
        bounds=[(0.0, 1.0), (0.0, 1.0)],
        disagreement=(ul0, uh0),
        grid=41,
    )
    closed = bargaining.duopoly_nash_solution(ql0, qh0)
    assert sol.nash_product == pytest.approx(float(closed.nash_product), rel=1e-6)
    assert sol.x[1] == pytest.approx(1.0, abs=1e-6)


def test_general_solver_rejects_irrational_sets():
    with pytest.raises(ValueError, match="individually rational"):
        nash_bargaining.nash_bargaining(lambda x: x[0], lambda x: -x[0], [(0.0, 1.0)], (2.0, 2.0))


def test_general_solver_symmetric_split():
    sol = nash_bargaining.nash_bargaining(
        lambda x: x[0], lambda x: 1 - x[0], [(0.0, 1.0)], (0.0, 0.2)
    )
    assert sol.x[0] == pytest.approx(0.4, abs=1e-6)


def _u(ql: Fraction, qh: Fraction) -> tuple[Fraction, Fraction]:
    """Eq. (3.4) in exact rationals, independent of the module's sympy forms."""
    return ql * qh * (qh - ql) / (4 * qh - ql) ** 2, 4 * qh**2 * (qh - ql) / (4 * qh - ql) ** 2


def test_thesis_program_may_lower_the_low_quality():
    # Proposition 4's starts: q_l* < q_l0 under the printed program (revenue constraints only)
    sol = bargaining.duopoly_nash_solution(0.6, 0.9, 1.0, allow_lower=True)
    assert float(sol.q_l_star) == pytest.approx(0.505759581115, abs=1e-9)
    # equal qualities earn nothing, so every point is rational and rho* is the limit root
    tied = bargaining.duopoly_nash_solution(0.6, 0.6, 0.6, allow_lower=True)
    r = (sp.sqrt(97) - 9) / 2
    exact = (
        sp.Rational(9, 25)
        * duopoly.u_l_rho.subs(duopoly.rho, r)
        * duopoly.u_h_rho.subs(duopoly.rho, r)
    )
    assert float(tied.rho_star) == pytest.approx(float(r), abs=1e-12)
    assert float(tied.q_l_star) == pytest.approx(0.6 * float(r), abs=1e-12)
    assert float(tied.nash_product) == pytest.approx(float(exact), rel=1e-12)


def test_reachable_program_keeps_the_starting_quality():
    sol = bargaining.duopoly_nash_solution(0.6, 0.9, 1.0, allow_lower=False)
    assert float(sol.q_l_star) == 0.6 and float(sol.q_h_star) == 1.0
    assert bargaining.duopoly_nash_solution(0.6, 0.9, 1.0) == sol  # the default
    assert float(bargaining.feasible_interval(0.6, 0.9, 1.0)[0]) == pytest.approx(0.6)
    (ul, uh), (ul0, uh0) = _u(Fraction(3, 5), Fraction(1)), _u(Fraction(3, 5), Fraction(9, 10))
    assert float(sol.nash_product) == pytest.approx(float((ul - ul0) * (uh - uh0)), rel=1e-12)
    tied = bargaining.duopoly_nash_solution(0.6, 0.6, 0.6, allow_lower=False)
    assert (float(tied.q_l_star), float(tied.q_h_star), float(tied.nash_product)) == (0.6, 0.6, 0.0)
    lo, hi = bargaining.feasible_interval(0.6, 0.9, 1.0, allow_lower=False)
    assert float(lo) == pytest.approx(0.6) and float(hi) >= 0.6


def test_reachable_program_matches_the_general_solver_on_the_reachable_box():
    ql0, qh0 = 0.6, 0.9
    d = tuple(float(v) for v in duopoly.revenues(ql0, qh0))
    general = nash_bargaining.nash_bargaining(
        lambda x: float(duopoly.revenues(min(x[0], x[1]), x[1])[0]),
        lambda x: float(duopoly.revenues(min(x[0], x[1]), x[1])[1]),
        bounds=[(ql0, 1.0), (qh0, 1.0)],
        disagreement=d,
        grid=81,
    )
    closed = bargaining.duopoly_nash_solution(ql0, qh0, allow_lower=False)
    assert general.nash_product == pytest.approx(float(closed.nash_product), rel=1e-6)
    assert general.x == pytest.approx([0.6, 1.0], abs=1e-6)


def test_both_readings_agree_when_the_solution_is_above_the_start():
    for ql0, qh0, q in [(0.2, 0.6, 1.0), (0.0, 0.5, 1.0), (0.1, 0.5, 0.9)]:
        free = bargaining.duopoly_nash_solution(ql0, qh0, q, allow_lower=True)
        floored = bargaining.duopoly_nash_solution(ql0, qh0, q, allow_lower=False)
        assert float(floored.rho_star) == float(free.rho_star)
        assert float(floored.nash_product) == float(free.nash_product)


def test_nash_report_flags_points_where_both_firms_lose():
    # start (3/10, 4/5); at (7/10, 4/5) both revenues fall, yet the product is positive
    report = bargaining.nash_report(0.7, 0.8, 0.3, 0.8)
    (ul, uh), (ul0, uh0) = _u(Fraction(7, 10), Fraction(4, 5)), _u(Fraction(3, 10), Fraction(4, 5))
    assert float(report.product) == pytest.approx(float((ul - ul0) * (uh - uh0)), rel=1e-12)
    assert float(report.product) > 0 and not bool(report.rational) and np.isnan(report.nash_value)
    assert float(report.gain_l) < 0 and float(report.gain_h) < 0
    good = bargaining.nash_report(0.3, 1.0, 0.3, 0.8)
    assert bool(good.rational) and float(good.nash_value) == float(good.product) > 0


def test_revenues_follow_current_quality():
    # the firm that started low overtakes: it earns the high firm's revenue, and none is negative
    a, b = bargaining.firm_revenues(0.9, 0.5)
    low, high = _u(Fraction(1, 2), Fraction(9, 10))
    assert (float(a), float(b)) == pytest.approx((float(high), float(low)), rel=1e-12)
    report = bargaining.nash_report(0.9, 0.5, 0.3, 0.8)
    (ul0, uh0) = _u(Fraction(3, 10), Fraction(4, 5))
    assert float(report.gain_l) == pytest.approx(float(high - ul0), rel=1e-12)
    assert float(report.gain_h) == pytest.approx(float(low - uh0), rel=1e-12)


@pytest.mark.parametrize(("flag", "q_l_star"), [(True, 0.505759581115), (False, 0.6)])
def test_cli_feasible_set_flag(flag, q_l_star):
    parser = argparse.ArgumentParser()
    bargain_cli.add_arguments(parser)
    argv = ["--ql0", "0.6", "--qh0", "0.9", "--qmax", "1", "--allow-lower" if flag else ""]
    out = bargain_cli.run(parser.parse_args([a for a in argv if a]))
    assert out["allow_lower"] is flag and out["q_l_star"] == pytest.approx(q_l_star, abs=1e-9)
    assert parser.parse_args(["--ql0", "0.6", "--qh0", "0.9"]).allow_lower is False
    assert parser.parse_args(["--ql0", "0.6", "--qh0", "0.9", "--allow-lower"]).allow_lower is True


@given(starts)
def test_reachable_solution_is_feasible_and_beats_the_grid(t):
    qh0 = t[1]
    ql0 = t[0] * qh0
    q = qh0 + t[2] * (1 - qh0)
    sol = bargaining.duopoly_nash_solution(ql0, qh0, q, allow_lower=False)
    assert float(sol.q_l_star) >= ql0 and float(sol.q_h_star) == q
    ul0, uh0 = duopoly.revenues(ql0, qh0)
    grid_q = np.linspace(ql0, q, 801)
    gl, gh = duopoly.revenues(grid_q, q)
    rational = (gl >= ul0) & (gh >= uh0)
    assert sol.nash_product >= np.max(np.where(rational, (gl - ul0) * (gh - uh0), -np.inf)) - 1e-15


def test_knife_edge_start_collapses_the_interval_to_its_start() -> None:
    """q_l0/Q = 4/7 with q_h0 = Q: 1 - 48 A = 0, so rho_a = rho_b = 4/7 and the solution is the
    start, U_l* = Q u_l(4/7) = Q/48, U_h* = Q u_h(4/7) = 7Q/48, N* = 0 (scalar and array)."""
    q = 0.8
    for args in ((0.45714285714285713, q, q), ([0.45714285714285713], [q], [q])):
        sol = bargaining.duopoly_nash_solution(*args)
        assert np.ravel(sol.rho_star)[0] == pytest.approx(4 / 7, abs=1e-8)
        assert np.ravel(sol.U_l_star)[0] == pytest.approx(q / 48, rel=1e-12)
        assert np.ravel(sol.U_h_star)[0] == pytest.approx(7 * q / 48, rel=1e-7)
        assert np.ravel(sol.nash_product)[0] == pytest.approx(0.0, abs=1e-18)


@pytest.mark.parametrize("q", [1e-154, 1e-170, 1e-300, 5e-324])
def test_tiny_qualities_keep_the_closed_form(q: float) -> None:
    """Homogeneity: with q_l0 = q_h0 = Q the disagreement revenues are 0 and rho* is the root
    of rho^2 + 9 rho - 4 whatever the scale of Q (the thesis's program: the low firm may end
    below its start); with q_l0 = 0 the low firm's start earns 0."""
    sol = bargaining.duopoly_nash_solution(q, q, q, allow_lower=True)
    assert sol.rho_star == pytest.approx(bargaining.RHO_INF, rel=1e-12)
    assert sol.q_h_star == q and np.isfinite(sol.q_l_star) and np.isfinite(sol.U_h_star)
    start = bargaining.duopoly_nash_solution(0.0, q, q)
    assert start.U_h_star == pytest.approx(q / 4, rel=1e-12) or q < 1e-300
    assert np.isfinite(start.rho_star) and start.U_l_star >= 0


_FIELDS = (
    "rho_star",
    "q_l_star",
    "q_h_star",
    "nash_product",
    "U_l_star",
    "U_h_star",
    "rho_low",
    "rho_high",
)


def _random_starts(n: int, seed: int) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Random starts 0 <= q_l0 <= q_h0 <= Q <= 1, with every edge (q_l0 = 0, q_l0 = q_h0,
    q_h0 = Q, Q = 1) among them."""
    rng = np.random.default_rng(seed)
    qh0 = rng.uniform(0.0, 1.0, n)
    ql0 = qh0 * rng.uniform(0.0, 1.0, n)
    q = qh0 + (1.0 - qh0) * rng.uniform(0.0, 1.0, n)
    q[::7] = 1.0
    ql0[::11] = 0.0
    ql0[::13] = qh0[::13]
    qh0[::17] = q[::17]
    ql0[::17] = np.minimum(ql0[::17], qh0[::17])
    return ql0, qh0, q


@pytest.mark.parametrize("allow_lower", [False, True])
def test_scalar_call_matches_the_array_call(allow_lower: bool) -> None:
    """A start given as scalars (the Python-float path) gives the numbers of the same start as
    a 1-element array (the general path) to round-off, 1e-15 absolute (all values lie in
    [0, 1]; ``math`` and numpy's elementary functions may differ in the last bit), and floats."""
    ql0, qh0, q = _random_starts(2000, seed=3)
    batch = bargaining.duopoly_nash_solution(ql0, qh0, q, allow_lower=allow_lower)
    for i in range(ql0.size):
        args = (float(ql0[i]), float(qh0[i]), float(q[i]))
        one = bargaining.duopoly_nash_solution(*args, allow_lower=allow_lower)
        array = bargaining.duopoly_nash_solution(
            *(np.array([v]) for v in args), allow_lower=allow_lower
        )
        for name in _FIELDS:
            value = getattr(one, name)
            assert type(value) is float, name
            assert value == pytest.approx(float(getattr(array, name)[0]), abs=1e-15), (args, name)
            assert value == pytest.approx(float(getattr(batch, name)[i]), abs=1e-15), (args, name)


def test_scalar_call_takes_numpy_scalars_and_integers() -> None:
    given = bargaining.duopoly_nash_solution(np.float64(0.2), np.float32(0.6), 1)
    plain_floats = bargaining.duopoly_nash_solution(0.2, float(np.float32(0.6)), 1.0)
    assert given == plain_floats
    assert bargaining.duopoly_nash_solution(0, 1, 1) == bargaining.duopoly_nash_solution(
        0.0, 1.0, 1.0
    )


@pytest.mark.parametrize(
    ("args", "match"),
    [
        ((float("nan"), 0.5), r"^q_l0 must be finite, got nan$"),
        ((0.2, float("inf")), r"^q_h0 must be finite, got inf$"),
        ((-0.1, 0.5), r"^q_l0 must lie in \[0, 1\], got -0.1$"),
        ((0.2, 1.5), r"^q_h0 must lie in \[0, 1\], got 1.5$"),
        ((0.2, 0.5, 0.0), r"^q_max must lie in \(0, 1\], got 0.0$"),
        ((0.2, 0.5, 2), r"^q_max must lie in \(0, 1\], got 2.0$"),
        ((0.6, 0.5), "^q_l0 must not exceed q_h0$"),
        ((0.2, 0.9, 0.8), r"^q_h0 must not exceed q_max \(Q is the best reachable quality\)$"),
    ],
)
def test_scalar_call_keeps_every_check(args: tuple, match: str) -> None:
    """Scalars are checked as arrays are, with the same one-line messages."""
    with pytest.raises(ValueError, match=match):
        bargaining.duopoly_nash_solution(*args)
    with pytest.raises(ValueError, match=match.split(", got")[0]):
        bargaining.duopoly_nash_solution(*(np.array([v]) for v in args))
