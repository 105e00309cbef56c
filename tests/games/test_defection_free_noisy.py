"""Algorithm 5 on measured accuracies: the bounds, the rule, the simulation and the audits
(Werner 2024, ch. 3, §3.4, Proposition 3 for exact qualities)."""

import numpy as np
import pytest
from scipy.stats import binom

from econ import duopoly
from econ.qualities import ModelQualities, clopper_pearson_interval
from games.defection_free import (
    NoisyRule,
    compare_audits,
    play_noisy,
    revenue_exchange_rate,
    simulate,
)
from games.defection_free.noisy import firm_revenues, hit_counts, per_model_miss


@pytest.mark.parametrize("p", [0.03, 0.3, 0.5, 0.81, 0.97])
def test_clopper_pearson_covers_at_least_its_level(p):
    n, confidence = 60, 0.9
    k = np.arange(n + 1)
    low, high = clopper_pearson_interval(k, n, confidence)
    covered = (low <= p) & (p <= high)
    assert binom.pmf(k, n, p)[covered].sum() >= confidence
    assert np.all(low <= k / n) and np.all(k / n <= high)
    assert low[0] == 0.0 and high[-1] == 1.0


def test_clopper_pearson_refuses_bad_counts():
    with pytest.raises(ValueError, match="hits"):
        clopper_pearson_interval(11, 10)
    with pytest.raises(ValueError, match="confidence"):
        clopper_pearson_interval(1, 10, 1.0)


@pytest.mark.parametrize(("a", "b"), [(0.1, 0.9), (0.3, 0.6), (0.4, 0.7), (0.55, 0.97)])
def test_exchange_rate_is_the_marginal_rate_of_the_high_revenue(a, b):
    h = 1e-7
    u_h = duopoly.revenues(a, b)[1]
    by_high = (duopoly.revenues(a, b + h)[1] - u_h) / h
    by_low = (duopoly.revenues(a + h, b)[1] - u_h) / h
    assert revenue_exchange_rate(a / b) == pytest.approx(by_high / -by_low, rel=1e-5)
    assert revenue_exchange_rate(0.0) == 2.0 and revenue_exchange_rate(1.0) == 1.0


def test_union_bound_over_the_measured_models():
    assert per_model_miss(0.05, 4) == pytest.approx(0.05 / 10)
    rule = NoisyRule(0.4, 0.3, 1000, 0.05, 4)
    assert rule.delta == pytest.approx(0.005) and rule.rho_cap == 0.4
    assert NoisyRule(0.6, 0.5, 1000, 0.05, 4).rho_cap == pytest.approx(4 / 7)


def test_a_kept_low_candidate_satisfies_every_certified_condition():
    n = 5000
    rule = NoisyRule(0.45, 0.42, n, 0.1, 10)
    k_l, k_h, k_hc = 1000, 2500, 3200
    d = float(rule.high_rise(k_h, k_hc))
    assert d == pytest.approx(float(rule.interval(k_hc)[0]) - float(rule.interval(k_h)[1]))
    k_min, k_max = (int(x) for x in rule.low_range(k_l, k_h, k_hc))
    assert d > 0 and k_min <= k_max
    a_lo, a_hi = (float(x) for x in rule.interval(k_l))
    for k in (k_min, k_max):
        new_lo, new_hi = (float(x) for x in rule.interval(k))
        assert new_lo > a_hi  # the rise clears zero
        assert new_hi <= a_lo + d * revenue_exchange_rate(rule.rho_cap) + 1e-12
        assert new_hi <= rule.rho_cap * float(rule.interval(k_hc)[0]) + 1e-12
        assert new_hi <= rule.q_l_star
    assert float(rule.interval(k_max + 1)[1]) > min(
        a_lo + d * revenue_exchange_rate(rule.rho_cap),
        rule.rho_cap * float(rule.interval(k_hc)[0]),
        rule.q_l_star,
    )
    # the high firm's rise is not certified: the low firm waits
    assert rule.high_rise(k_h, k_h + 10) <= 0
    assert rule.low_range(k_l, k_h, k_h + 10)[1] == -1


def test_point_bounds_are_the_rule_of_exact_qualities():
    rule = NoisyRule(0.45, 0.42, 100, 0.1, 10, bound="point")
    assert rule.high_rise(50, 51) == pytest.approx(0.01)
    k_min, k_max = rule.low_range(10, 50, 60)  # a + d M(0.45) = 0.2247 < 0.45 * 0.6
    assert k_min == 11 and k_max == 10 + int(10 * revenue_exchange_rate(0.45)) == 22
    assert rule.low_range(20, 50, 60)[1] == 27  # capped at rho* b' = 0.27


def test_firm_revenues_follow_the_market_when_the_low_firm_overtakes():
    u_l, u_h = firm_revenues([0.3, 0.6], [0.6, 0.3])
    assert u_l[0] == pytest.approx(u_h[1]) and u_h[0] == pytest.approx(u_l[1])


def test_simulation_bounded_versus_point_estimates():
    bounded = NoisyRule.from_start(0.3, 0.5, 1.0, 20000, 0.2, 10)
    point = NoisyRule.from_start(0.3, 0.5, 1.0, 20000, 0.2, 10, bound="point")
    sims = [simulate(r, 0.3, 0.5, runs=300, rng=np.random.default_rng(3)) for r in (bounded, point)]
    assert sims[0].true_frequency <= 0.2 and sims[0].moves_low > 0
    assert sims[1].true_frequency > 0.2  # the point estimates let true revenues fall
    assert sims[0].measured_frequency == sims[1].measured_frequency == 0.0
    assert sims[1].to_dict()["runs"] == 300


def test_simulation_refuses_a_start_without_a_high_firm():
    rule = NoisyRule.from_start(0.3, 0.5, 1.0, 100, 0.2, 3)
    with pytest.raises(ValueError, match="q_l0 < q_h0"):
        simulate(rule, 0.5, 0.3, runs=10, rng=np.random.default_rng(0))


def test_hit_counts_need_accuracies_on_n_examples():
    q = ModelQualities.from_mapping({"low": 0.25, "high": 0.5}, n_eval=8)
    assert hit_counts(q, 8) == (2, 4)
    with pytest.raises(ValueError, match="accuracies on 9"):
        hit_counts(q, 9)


def test_compare_audits_reports_the_falls_the_measurement_hid():
    measured = ([0.2, 0.2, 0.25], [0.5, 0.55, 0.6])
    truth = ([0.2, 0.24, 0.25], [0.5, 0.49, 0.6])  # the high firm truly fell in round 1
    cmp = compare_audits(measured, truth)
    out = cmp.to_dict()
    assert out["falls_measured"] == 0 and out["falls_reference"] == 1
    assert out["falls_unseen"] == [1] and out["rounds"] == 2
    with pytest.raises(ValueError, match="same rounds"):
        compare_audits(measured, ([0.2, 0.2], [0.5, 0.5]))


class _ScriptedFirms:
    """Accuracies as hit counts on n examples; the high firm's steps and the low firm's
    raises follow a script (UndoableFirms)."""

    def __init__(self, n, low, high, high_steps, low_over):
        self.n, self.k = n, {"low": low, "high": high}
        self.high_steps, self.low_over = list(high_steps), list(low_over)
        self.before = dict(self.k)

    def measure(self):
        return ModelQualities(
            names=("low", "high"),
            quality=np.array([self.k["low"], self.k["high"]]) / self.n,
            metric="accuracy",
            n_eval=self.n,
        )

    def step_high(self, move):
        self.before["high"] = self.k["high"]
        self.k["high"] += self.high_steps.pop(0)

    def undo_high(self):
        self.k["high"] = self.before["high"]

    def step_low(self, joint):
        raise AssertionError("the noisy rule never trains the low firm uncapped")

    def raise_low(self, cap, inner):
        self.before["low"] = self.k["low"]
        self.k["low"] = round(cap * self.n) + self.low_over.pop(0)

    def undo_low(self):
        self.k["low"] = self.before["low"]


def test_play_noisy_keeps_only_certified_moves():
    n = 20000
    rule = NoisyRule(0.45, 0.42, n, 0.1, 3)
    # round 1: a large certified rise, the low firm reaches its cap; round 2: a rise inside
    # the noise (undone, the low firm waits); round 3: certified, but the low firm overshoots
    firms = _ScriptedFirms(n, 4000, 10000, [2000, 100, 2000], [0, 50])
    run, observed = play_noisy(rule, firms, observe=firms.measure)
    k_l = np.rint(run.q_l * n).astype(int).tolist()
    k_h = np.rint(run.q_h * n).astype(int).tolist()
    assert k_h == [10000, 12000, 12000, 14000]
    assert k_l[1] > k_l[0] and k_l[2] == k_l[1] and k_l[3] == k_l[2]  # overshoot undone
    assert np.isnan(run.cap[2]) and run.cap[1] == k_l[1] / n
    assert len(observed) == 4 and observed[-1]["high"] == 0.7
    with pytest.raises(ValueError, match="accuracies on"):
        play_noisy(NoisyRule(0.45, 0.42, 100, 0.1, 1), _ScriptedFirms(n, 1, 2, [1], [0]))
