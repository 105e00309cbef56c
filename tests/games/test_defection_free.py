"""Decision rules of the collaboration schemes, the play loop, the audit and the report
(Werner 2024, ch. 3, §3.3-3.4 and Algorithm 5)."""

import math

import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st

from econ import bargaining, duopoly, quality_caps
from econ.market import market_round
from econ.qualities import ModelQualities
from games.defection_free import (
    B_TILDE,
    REVENUE_CONVENTION,
    SCHEMES,
    CompleteCollaboration,
    DefectionFree,
    DefectionFreeConfig,
    OneSided,
    Play,
    PlayReport,
    build_scheme,
    estimate_q_max,
    fixed_label_revenues,
    market_path,
    paced_step_size,
    play,
    raise_to_cap,
    report,
    revenue_audit,
    revenue_slack,
    scheme_claims,
)
from games.quadratic_firms import random_firms, thesis_toy

REPORT_KEYS = {
    "scheme",
    "revenue_convention",
    "rounds",
    "revenue_never_decreased",
    "min_revenue_change",
    "rho_star",
    "nash_star",
    "nash_max",
    "final_individually_rational",
    "final_nash_gap",
}
ROW_KEYS = {
    "t",
    "q_l",
    "q_h",
    "U_l",
    "U_h",
    "consumer_surplus",
    "welfare",
    "rho",
    "swapped",
    "nash_product",
    "individually_rational",
}
T1 = ((-5.0, 5.0), (2.0, 2.0))
T2 = ((-5.0, 5.0), (math.sqrt(37.4), 0.0))
Q = 63 / 64


def _play(q_l, q_h, scheme="one-sided-low"):
    """A :class:`Play` with the given qualities, as a scheme's run would record them."""
    q_l, q_h = np.asarray(q_l, float), np.asarray(q_h, float)
    nan = np.full(q_l.size, np.nan)
    measured = tuple(
        ModelQualities.from_mapping({"low": float(a), "high": float(b)})
        for a, b in zip(q_l, q_h, strict=True)
    )
    return Play(scheme=scheme, q_l=q_l, q_h=q_h, cap=nan, hat_q=nan, measured=measured)


def _assert_rows_add_up(rep: PlayReport) -> None:
    for row in rep.rows:
        assert row["U_l"] >= 0 and row["U_h"] >= 0, row
        parts = row["consumer_surplus"] + row["U_l"] + row["U_h"]
        assert row["welfare"] == pytest.approx(parts, rel=0, abs=1e-12), row
        assert row["swapped"] == (row["q_l"] > row["q_h"])


def _rule(firms, **config):
    start = firms.measure()
    return DefectionFree(
        start["low"], start["high"], DefectionFreeConfig(q_max=firms.q_max, **config)
    )


def test_scheme_moves_and_unambiguous_names():
    assert CompleteCollaboration().high_move(0.2, 0.6).joint
    assert CompleteCollaboration().low_move(0.2, 0.6, 0.7).cap is None
    only_high_shares = OneSided("low")  # Fig. 3.2a: the low firm benefits
    assert only_high_shares.name == "one-sided-low"
    assert not only_high_shares.high_move(0.2, 0.6).joint
    assert only_high_shares.low_move(0.2, 0.6, 0.6).joint
    only_low_shares = build_scheme("one-sided-high", 0.2, 0.6)
    assert only_low_shares.high_move(0.2, 0.6).joint
    assert not only_low_shares.low_move(0.2, 0.6, 0.6).joint
    with pytest.raises(ValueError, match="scheme"):
        build_scheme("fedavg", 0.2, 0.6)
    with pytest.raises(ValueError, match="beneficiary"):
        OneSided("middle")


def test_b_tilde_is_the_smallest_crossing():
    """Werner (2024), ch. 3, §3.7, proof of Proposition 5: (4 - 5 rho) log10 b <= B(rho, b) - rho
    for every rho <= 1 and b <= b~, and not for every rho just above b~."""
    rho = np.linspace(0.0, 0.99, 991)

    def gap(b):
        return quality_caps.cap_ratio(rho, b) - rho - (4 - 5 * rho) * np.log10(b)

    assert B_TILDE == pytest.approx(1.0297284244, abs=1e-8)
    for b in (1.0 + 1e-6, 1.01, 1.02, B_TILDE * (1 - 1e-7)):
        assert gap(b).min() >= 0.0
    assert gap(B_TILDE * (1 + 1e-4)).min() < 0.0


def test_rule_reuses_the_nash_solution():
    rule = DefectionFree(13 / 64, 55 / 64, DefectionFreeConfig(q_max=Q))
    assert rule.rho_star == pytest.approx(0.290568582235, abs=1e-9)
    assert rule.q_l_star == pytest.approx(0.286028448138, abs=1e-9)
    with pytest.raises(ValueError, match="q_l0 < q_h0"):
        DefectionFree(0.6, 0.5)


def test_caps_literal_and_recommended():
    literal = DefectionFree(0.2, 0.6, DefectionFreeConfig(cap_mode="literal"))
    move = literal.low_move(0.2, 0.6, 0.66)
    assert move.cap == pytest.approx(0.279393169212, abs=1e-9)
    assert move.hat_q == pytest.approx(move.cap)
    _, uh_before = duopoly.revenues(0.2, 0.6)
    _, uh_after = duopoly.revenues(move.cap, 0.66)
    assert uh_after == pytest.approx(uh_before, abs=1e-12)
    rec = DefectionFree(0.2, 0.6)
    capped = rec.low_move(0.2, 0.6, 0.66).cap
    assert capped == pytest.approx(min(move.cap, rec.rho_star * 0.66, rec.q_l_star))


def test_guards_b_at_most_one_and_tolerance():
    rule = DefectionFree(0.2, 0.6)
    assert rule.low_move(0.2, 0.6, 0.59).cap == 0.2  # q_h fell: the low firm waits
    assert rule.low_move(0.2, 0.6, 0.6).cap == 0.2
    noisy = DefectionFree(0.2, 0.6, DefectionFreeConfig(tolerance=0.01))
    assert noisy.low_move(0.2, 0.6, 0.605).cap == 0.2  # within the tolerance: no rise
    assert noisy.low_move(0.2, 0.6, 0.62).cap > 0.2
    assert rule.high_move(0.2, 0.6).undo_if_worse


def test_gating_variants():
    # rho* = 0.3968 from (0.2, 0.6), Q = 1
    start = dict(q_l0=0.2, q_h0=0.6)
    at = (0.25, 0.6, 0.62)  # q_l/q_h,t-1 = 0.4167 > rho*, q_l/q_h,t = 0.403 > rho*
    for gating in ("line7", "text", "code"):
        rule = DefectionFree(**start, config=DefectionFreeConfig(gating=gating))
        assert rule.low_move(*at).cap == 0.25
    assert DefectionFree(**start).low_move(0.2, 0.6, 0.62).cap > 0.2
    # rho_{t-1} = 0.245/0.6 = 0.408 > rho* blocks "text", but 0.245/0.62 = 0.395 <= rho*
    # passes line 7's mixed ratio
    line7 = DefectionFree(**start, config=DefectionFreeConfig(gating="line7"))
    text = DefectionFree(**start, config=DefectionFreeConfig(gating="text"))
    assert line7.low_move(0.245, 0.6, 0.62).cap > 0.245
    assert text.low_move(0.245, 0.6, 0.62).cap == 0.245


def test_paced_step_size():
    assert paced_step_size(1.03, 0.5, 0.0, 2.0) == 2.0
    assert paced_step_size(1.03, 0.5, 1.0, 2.0) == pytest.approx(0.015)
    assert paced_step_size(1.03, 0.5, 1e-6, 2.0) == 2.0
    assert isinstance(paced_step_size(1.03, 0.5, 1.0, 2.0), float)
    quality, norm2 = np.array([0.5, 0.5, 0.9]), np.array([0.0, 1.0, 1e-6])
    steps = paced_step_size(1.03, quality, norm2, 2.0)
    assert steps.tolist() == [
        paced_step_size(1.03, q, g, 2.0) for q, g in zip(quality, norm2, strict=True)
    ]


def _line(x0, centre=3.0):
    """q(x) = 1 - (x - centre)^2 / 100 on the line, with its gradient and step."""
    return dict(
        quality=lambda x: 1.0 - (x - centre) ** 2 / 100.0,
        gradient=lambda x, k: (x - centre) / 50.0,
        moved=lambda x, g, alpha: x - alpha * g,
    )


@pytest.mark.parametrize("monotone", [True, False])
def test_raise_to_cap_stops_at_the_cap_without_passing_it(monotone):
    on = _line(0.0)
    start_q, cap = on["quality"](0.0), 0.95
    x = raise_to_cap(
        0.0,
        cap,
        "gd",
        **on,
        step=25.0,
        max_steps=200,
        max_halvings=60,
        monotone=monotone,
        sq_norm=(lambda g: g * g) if monotone else None,
        tol=1e-12,
    )
    assert start_q <= on["quality"](x) <= cap
    assert on["quality"](x) == pytest.approx(cap, abs=1e-9)


def test_raise_to_cap_as_printed_passes_the_cap():
    on = _line(0.0)
    visited = []
    x = raise_to_cap(
        0.0,
        0.95,
        "while",
        **on,
        step=25.0,
        max_steps=200,
        max_halvings=1,
        printed_step=2.5,
        visit=visited.append,
    )
    assert on["quality"](x) > 0.95 and visited[-1] == x
    assert all(on["quality"](v) <= 0.95 for v in visited[:-1])
    with pytest.raises(ValueError, match="inner"):
        raise_to_cap(0.0, 0.95, "oracle", **on, step=1.0, max_steps=1, max_halvings=1)


def test_audit_and_slack():
    fine = revenue_audit([0.2, 0.25, 0.3], [0.6, 0.7, 0.8])
    assert fine.never_decreased and fine.falls == ()
    bad = revenue_audit([0.2, 0.5], [0.6, 0.6])
    assert not bad.never_decreased and bad.falls == (1,)
    assert bad.min_change_high < 0
    assert np.all(revenue_slack([0.2, 0.3], [0.6, 0.7], 0.0) == 0)
    assert revenue_slack(0.2, 0.6, 0.01) > 0
    dip = [0.2, 0.2], [0.6, 0.6 - 1e-4]  # a fall within the measurement slack is not a fall
    assert not revenue_audit(*dip).never_decreased
    assert revenue_audit(*dip, tolerance=0.01).never_decreased


def test_estimate_q_max():
    rounds = [
        ModelQualities.from_mapping({"low": 0.3, "high": 0.5}),
        ModelQualities.from_mapping({"low": 0.7, "high": 0.8}),
    ]
    assert estimate_q_max(rounds, 0.6) == 0.8
    assert estimate_q_max(rounds[:1], 0.6) == 0.6
    with pytest.raises(ValueError):
        estimate_q_max([], 0.6)


@pytest.mark.parametrize("schedule", ["paced", "const"])
def test_toy_t1_converges_to_nash(schedule):
    firms = thesis_toy(*T1)
    run = play(_rule(firms, schedule=schedule), firms, 300)
    assert run.q_l[-1] == pytest.approx(0.286028448, abs=1e-8)
    assert run.q_h[-1] == pytest.approx(Q, abs=1e-12)
    ul, uh = duopoly.revenues(run.q_l[-1], run.q_h[-1])
    assert (ul, uh) == (
        pytest.approx(0.0147470433, abs=1e-9),
        pytest.approx(0.2030094677, abs=1e-9),
    )
    assert revenue_audit(run.q_l, run.q_h).never_decreased
    assert np.all(run.q_l[1:] <= np.nan_to_num(run.cap[1:], nan=1.0) + 1e-15)


def test_toy_t2_case1_converges():
    firms = thesis_toy(*T2)
    run = play(_rule(firms), firms, 300)
    assert run.q_l[-1] == pytest.approx(0.428150659, abs=1e-8)
    assert revenue_audit(run.q_l, run.q_h).never_decreased


def test_oracle_mode_sets_the_quality_and_leaves_the_model():
    firms = thesis_toy(*T1)
    x0 = firms.x_low.copy()
    run = play(_rule(firms), firms, 300, inner="oracle")
    assert np.array_equal(firms.x_low, x0)
    assert run.q_l[-1] == pytest.approx(0.286028448, abs=1e-9)
    assert run.measured[-1]["low"] == pytest.approx(13 / 64)


@pytest.mark.parametrize(("start", "expected"), [(T1, 0.378910594796), (T2, 0.822744948668)])
def test_literal_cap_with_a_jump_overshoots(start, expected):
    firms = thesis_toy(*start, const_step=1.0)  # alpha_h = 1/L: q_h jumps to Q
    run = play(_rule(firms, cap_mode="literal"), firms, 20)
    assert run.q_l[-1] == pytest.approx(expected, abs=1e-9)
    assert revenue_audit(run.q_l, run.q_h).never_decreased


def test_pacing_effect_with_one_inner_step():
    firms = thesis_toy(*T1, const_step=1.0, max_inner=1)
    run = play(_rule(firms), firms, 50)
    assert run.q_l[-1] == pytest.approx(0.283829094, abs=1e-8)


def test_literal_while_loop_passes_the_cap():
    firms = thesis_toy(*T1)
    run = play(_rule(firms), firms, 1, inner="while")
    assert run.q_l[1] > run.cap[1]
    assert not revenue_audit(run.q_l, run.q_h).never_decreased


def test_prop4_low_firm_never_moves():
    firms = thesis_toy((math.sqrt(24.6), 0.0), (0.0, math.sqrt(5.4)))  # (0.6, 0.9)
    rule = _rule(firms)
    run = play(rule, firms, 50)
    assert rule.q_l_star < 0.6
    assert np.all(run.q_l == pytest.approx(0.6))


@given(
    seed=st.integers(0, 2**32 - 1),
    schedule=st.sampled_from(["paced", "const"]),
    pace=st.floats(1.001, 1.2),
    const_step=st.floats(0.05, 1.0),
)
def test_property_no_revenue_falls_under_the_reconciled_rule(seed, schedule, pace, const_step):
    firms = random_firms(seed, const_step=const_step)
    start = firms.measure()
    if start["low"] >= start["high"]:
        return
    rule = DefectionFree(
        start["low"],
        start["high"],
        DefectionFreeConfig(q_max=firms.q_max, schedule=schedule, b_tilde=pace),
    )
    run = play(rule, firms, 25)
    assert revenue_audit(run.q_l, run.q_h).never_decreased
    assert np.all(np.diff(run.q_l) >= -1e-15) and np.all(np.diff(run.q_h) >= -1e-15)


def test_random_firms_same_seed_same_problem():
    a, b = random_firms(7), random_firms(7)
    assert np.array_equal(a.centre, b.centre) and np.array_equal(a.x_low, b.x_low)
    assert a.measure()["low"] < a.measure()["high"]


def test_report_json_and_claims_on_the_toy():
    reports = {}
    for name in SCHEMES:
        firms = thesis_toy(*T1)
        start = firms.measure()
        scheme = build_scheme(name, start["low"], start["high"], DefectionFreeConfig(q_max=Q))
        reports[name] = report(play(scheme, firms, 200), q_max=Q)
    out = reports["defection-free"].to_dict()
    assert set(out) == REPORT_KEYS
    assert out["revenue_convention"] == REVENUE_CONVENTION
    assert set(out["rounds"][0]) == ROW_KEYS
    assert set(out["min_revenue_change"]) == {"low", "high"}
    assert out["final_nash_gap"] == pytest.approx(0.0, abs=1e-12)
    assert out["final_individually_rational"]
    assert out["nash_max"] == pytest.approx(6.71719492e-5, rel=1e-6)
    assert out["nash_star"] == pytest.approx(out["nash_max"], rel=1e-12)  # q_h reached Q
    for rep in reports.values():
        _assert_rows_add_up(rep)
    complete = reports["complete"].rows[-1]
    assert complete["U_l"] == pytest.approx(0, abs=1e-9)
    assert complete["U_h"] == pytest.approx(0, abs=1e-9)
    # complete collaboration ends with both firms below their starting revenues: the
    # positive product of two losses is flagged, and the gap counts no progress
    assert complete["nash_product"] > 0 and not complete["individually_rational"]
    assert reports["complete"].final_nash_gap == pytest.approx(reports["complete"].nash_max)
    overtaken = reports["one-sided-low"].rows[-1]
    assert overtaken["swapped"] and overtaken["U_h"] > 0  # (3.4) with fixed labels: < 0
    claims = {c.claim: c.holds for c in scheme_claims(reports)}
    assert all(v for k, v in claims.items() if k.startswith("defection-free"))
    assert claims["only the high firm shares: the high firm loses revenue"]
    assert claims["complete: the qualities converge and the high firm's revenue falls"]


def test_market_path_is_the_market_of_each_round():
    q_l, q_h = [0.2, 0.5, 0.7, 0.6], [0.6, 0.5, 0.6, 0.6]
    path = market_path(q_l, q_h)
    for t, (a, b) in enumerate(zip(q_l, q_h, strict=True)):
        m = market_round(np.array([a, b]))
        assert (path.U_l[t], path.U_h[t]) == (m.revenue[0], m.revenue[1])
        assert path.welfare[t] == m.welfare
    assert path.swapped.tolist() == [False, False, True, False]
    # after the low firm overtakes, it sells as the high firm of Lemma 22
    eq = duopoly.equilibrium(0.6, 0.7)
    assert path.U_l[2] == pytest.approx(float(eq.U_h), abs=1e-15)
    assert path.U_h[2] == pytest.approx(float(eq.U_l), abs=1e-15)
    fixed_l, fixed_h = fixed_label_revenues(q_l, q_h)
    assert fixed_h[2] < 0  # the thesis's fixed labels (Fig. 3.2a)
    assert fixed_l[:2] == pytest.approx(path.U_l[:2], abs=1e-15)
    assert fixed_h[:2] == pytest.approx(path.U_h[:2], abs=1e-15)


def test_report_when_the_low_firm_overtakes():
    # only the high firm shares: the low firm passes it (Fig. 3.2a), then both converge
    q_l = [0.3, 0.45, 0.62, 0.7, 0.8, 0.8]
    q_h = [0.6, 0.6, 0.6, 0.62, 0.62, 0.8]
    rep = report(_play(q_l, q_h), q_max=0.9)
    _assert_rows_add_up(rep)
    assert [r["swapped"] for r in rep.rows] == [False, False, True, True, True, False]
    # fixed labels would give the high firm a negative revenue in every swapped round
    _, fixed_h = fixed_label_revenues(q_l, q_h)
    assert np.all(fixed_h[2:5] < 0)
    # the audit and the Nash product use the same revenues as the rows
    u_l = np.array([r["U_l"] for r in rep.rows])
    u_h = np.array([r["U_h"] for r in rep.rows])
    assert np.array_equal(rep.audit.change_low, np.diff(u_l))
    assert np.array_equal(rep.audit.change_high, np.diff(u_h))
    assert not rep.audit.never_decreased and rep.audit.min_change_high < 0
    nash = [r["nash_product"] for r in rep.rows]
    assert nash == pytest.approx((u_l - u_l[0]) * (u_h - u_h[0]), abs=0)
    # the high firm ends below its start: not individually rational, no progress counted
    assert not rep.final_individually_rational
    assert rep.final_nash_gap >= rep.nash_max > 0
    assert rep.nash_star == pytest.approx(
        float(bargaining.duopoly_nash_solution(0.3, 0.6, 0.9).nash_product), abs=1e-15
    )


#: A measured quality: an accuracy on at most a million target examples (ties included).
_ACCURACY = st.integers(0, 10**6).map(lambda k: k / 10**6)


@given(
    q_l=st.lists(_ACCURACY, min_size=2, max_size=8),
    q_h=st.lists(_ACCURACY, min_size=2, max_size=8),
)
def test_property_rows_add_up_on_any_path(q_l, q_h):
    n = min(len(q_l), len(q_h))
    q_l, q_h = q_l[:n], q_h[:n]
    if q_h[0] <= q_l[0] or q_h[0] == 0:
        q_l[0], q_h[0] = 0.25, 0.5  # a start where the low firm is the low firm
    rep = report(_play(q_l, q_h), q_max=1.0)
    _assert_rows_add_up(rep)
    for row in rep.rows:
        both_lose = (
            row["U_l"] < rep.rows[0]["U_l"] - 1e-12 and row["U_h"] < rep.rows[0]["U_h"] - 1e-12
        )
        if both_lose:
            assert row["nash_product"] > 0 and not row["individually_rational"]
    if not rep.final_individually_rational:
        assert rep.final_nash_gap >= rep.nash_max


def test_both_lose_nash_product_is_flagged_not_progress():
    # both firms' revenues fall (the qualities converge): N > 0, but it is not a gain
    rep = report(_play([0.3, 0.5, 0.6], [0.6, 0.6, 0.6], scheme="complete"), q_max=0.6)
    last = rep.rows[-1]
    assert last["U_l"] < rep.rows[0]["U_l"] and last["U_h"] < rep.rows[0]["U_h"]
    assert last["nash_product"] > 0
    assert not last["individually_rational"] and not rep.final_individually_rational
    assert rep.final_nash_gap == pytest.approx(rep.nash_max, abs=0)
    assert rep.to_dict()["final_individually_rational"] is False
    claims = {c.claim: c for c in scheme_claims({"defection-free": rep})}
    nash = next(c for k, c in claims.items() if "Nash product" in k)
    assert not nash.holds and "outside the individually rational set" in nash.evidence


def test_fig3_3_reference_is_the_nash_product_at_the_solution():
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    from games.defection_free.figures import run_figure, run_figure_data

    firms = thesis_toy(*T1)
    start = firms.measure()
    rule = DefectionFree(start["low"], start["high"], DefectionFreeConfig(q_max=0.99))
    rep = report(play(rule, firms, 30), q_max=0.99)  # q_h stops short of Q = 0.99
    star = float(bargaining.duopoly_nash_solution(start["low"], start["high"], 0.99).nash_product)
    assert rep.nash_star == pytest.approx(star, abs=1e-15) and rep.nash_star > rep.nash_max
    fig = run_figure(plt, rep, "Fig. 3.3", full=True)
    levels = [line.get_ydata()[0] for line in fig.axes[3].lines if line.get_linestyle() == "--"]
    bottom, top = fig.axes[3].get_ylim()
    plt.close(fig)
    assert levels == [pytest.approx(star, abs=1e-15)] and bottom < star < top
    columns = run_figure_data(report(_play([0.3, 0.7], [0.6, 0.6]), q_max=0.9))
    assert columns["U_h_as_plotted_in_the_thesis"][1] < 0 <= columns["U_h"][1]
