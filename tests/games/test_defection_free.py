"""Decision rules of the collaboration schemes, the play loop and the audit (spec ch3 §5, 8, 9, 12)."""

import math

import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st

from econ import caps, duopoly
from econ.propositions import registered
from econ.propositions import run as check
from econ.qualities import ModelQualities
from games.convex_duopoly import random_firms, thesis_toy
from games.defection_free import (
    B_TILDE,
    SCHEMES,
    CompleteCollaboration,
    DefectionFree,
    DefectionFreeConfig,
    OneSided,
    build_scheme,
    estimate_q_max,
    paced_step_size,
    play,
    report,
    revenue_audit,
    revenue_slack,
    scheme_claims,
)

T1 = ((-5.0, 5.0), (2.0, 2.0))
T2 = ((-5.0, 5.0), (math.sqrt(37.4), 0.0))
Q = 63 / 64


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
    assert {build_scheme(s, 0.2, 0.6).name for s in SCHEMES} == set(SCHEMES)
    with pytest.raises(ValueError, match="scheme"):
        build_scheme("fedavg", 0.2, 0.6)
    with pytest.raises(ValueError, match="beneficiary"):
        OneSided("middle")


def test_b_tilde_constant_matches_econ_caps():
    assert B_TILDE == pytest.approx(caps.b_tilde()[0], abs=1e-8)


def test_rule_reuses_the_nash_solution_spec_c23():
    rule = DefectionFree(13 / 64, 55 / 64, DefectionFreeConfig(q_max=Q))
    assert rule.rho_star == pytest.approx(0.290568582235, abs=1e-9)
    assert rule.q_l_star == pytest.approx(0.286028448138, abs=1e-9)
    with pytest.raises(ValueError, match="q_l0 < q_h0"):
        DefectionFree(0.6, 0.5)


def test_caps_literal_and_recommended_spec_c19():
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
    # rho* = 0.3968 from (0.2, 0.6), Q = 1 (spec C14)
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
def test_toy_t1_converges_to_nash_spec_c23(schedule):
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


def test_toy_t2_case1_converges_spec_c24():
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
def test_literal_cap_with_a_jump_overshoots_spec_c23_c24(start, expected):
    firms = thesis_toy(*start, const_step=1.0)  # alpha_h = 1/L: q_h jumps to Q
    run = play(_rule(firms, cap_mode="literal"), firms, 20)
    assert run.q_l[-1] == pytest.approx(expected, abs=1e-9)
    assert revenue_audit(run.q_l, run.q_h).never_decreased


def test_pacing_effect_with_one_inner_step_spec_c23():
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


def test_report_has_the_issue_json_and_claims_on_the_toy():
    reports = {}
    for name in SCHEMES:
        firms = thesis_toy(*T1)
        start = firms.measure()
        scheme = build_scheme(name, start["low"], start["high"], DefectionFreeConfig(q_max=Q))
        reports[name] = report(play(scheme, firms, 200), q_max=Q)
    out = reports["defection-free"].to_dict()
    assert set(out) == {
        "scheme",
        "rounds",
        "revenue_never_decreased",
        "min_revenue_change",
        "rho_star",
        "nash_max",
        "final_nash_gap",
    }
    assert set(out["rounds"][0]) == {"t", "q_l", "q_h", "U_l", "U_h", "rho", "nash_product"}
    assert set(out["min_revenue_change"]) == {"low", "high"}
    assert out["final_nash_gap"] == pytest.approx(0.0, abs=1e-12)
    assert out["nash_max"] == pytest.approx(6.71719492e-5, rel=1e-6)
    complete = reports["complete"].rows[-1]
    assert complete["U_l"] == pytest.approx(0, abs=1e-9)
    assert complete["U_h"] == pytest.approx(0, abs=1e-9)
    claims = {c.claim: c.holds for c in scheme_claims(reports)}
    assert all(v for k, v in claims.items() if k.startswith("defection-free"))
    assert claims["only the high firm shares: the high firm loses revenue"]
    assert claims["complete: the qualities converge and the high firm's revenue falls"]


def test_registered_propositions_agree():
    ids = [
        "thesis.ch3.prop3.gd",
        "thesis.ch3.prop4.gd",
        "thesis.ch3.prop5.gd",
        "thesis.ch3.alg5.while",
        "thesis.ch3.alg5.while.corrected",
    ]
    found = {p.id: p for p in registered("thesis.ch3")}
    for i in ids:
        outcome = check(found[i])
        assert outcome.agrees, outcome.to_dict()
    assert not found["thesis.ch3.alg5.while"].holds
