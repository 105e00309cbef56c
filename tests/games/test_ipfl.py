"""IP-FL's mechanism (Khan et al., arXiv 2304.07514 v4, §4 and App. H): the ledger's
invariants, the scheduler, bids and contributions, and the registered ``ipfl.`` statements."""

import itertools
import math

import numpy as np
import pytest
import sympy as sp
from hypothesis import given
from hypothesis import strategies as st
from scipy import stats

from econ.propositions import load, registered, run
from games.ipfl import (
    IPFLConfig,
    Ledger,
    RefundTracker,
    TokenQualities,
    bootstrap_select,
    code_slots,
    collect,
    f1_features,
    importance_weights,
    literal_reward_total,
    n_perf_default,
    n_rand_schedule,
    net_token_change,
    net_token_change_expr,
    opt_outs,
    personalised_model,
    pma,
    preference_bids,
    rank_rewards,
    refund,
    refund_fraction,
    reward,
    select_clients,
    settle_cluster,
    shapley_first_order,
)
from games.ipfl.gaussian_propositions import exact_errors, working_errors

load(["games.ipfl"])  # registers the statements of every module of games.ipfl


@pytest.mark.parametrize("prop", registered("ipfl."), ids=lambda p: p.id)
def test_registered_statements_agree(prop):
    outcome = run(prop)
    assert outcome.agrees, outcome.to_dict()
    flipped = prop.check(**prop.perturb)
    assert flipped.holds is not prop.holds, (prop.perturb, flipped)


def test_registered_ledger_equations():
    ids = {p.id for p in registered("ipfl.")}
    for eq in ("eq9", "eq10", "eq11", "eq12", "eq13"):
        assert f"ipfl.{eq}" in ids
    for failing in ("eq2", "eq6", "eq12", "eq13"):
        assert f"ipfl.{failing}.corrected" in ids


def test_printed_eq12_destroys_tokens_and_leaves_its_range():
    verdict = registered("ipfl.eq12")[0].check()
    assert not verdict.holds
    assert verdict.counterexample["util"] == pytest.approx(0.5)  # eta, outside [0, gamma = 0.05]
    assert "change by -4.5" in verdict.evidence  # 3 clients x 3 tokens x 0.5 leave circulation


def test_eq6_under_model_3_worked_numbers():
    # m1 = 10 clients of n0 = 20 samples, sigma = 1, tau = 0.3: Eq. 6's condition holds
    # (0.09 < 0.25) but under model (3) the cluster estimate is worse than local training
    printed = working_errors([20] * 10, 10, 1.0, 0.3, 0.0)["cluster"]
    exact = exact_errors([20] * 10, 10, 1.0, 0.3, 0.0)["cluster"]
    assert printed == pytest.approx(0.005 + 2 * 0.09 * 9 / 100)
    assert exact == pytest.approx(0.005 + 0.09 * (9 / 100 + 81 / 100))
    assert printed < 1 / 20 < exact


# ----------------------------------------------------------------------------- ledger: Eq. 9-10


def _round(ledger, tracker, config, rng, n_clusters, accs):
    n = ledger.tokens.size
    for c in range(n_clusters):
        chosen = rng.choice(n, int(rng.integers(1, n + 1)), replace=False)
        start = ledger.total
        ledger, paid = collect(ledger, c, chosen, config.price, stale_payer=config.code_bugs)
        assert abs(ledger.total - start) < 1e-9
        psi = rng.normal(size=n)
        omega = rng.integers(0, 5, size=n)
        ledger, tracker, u, _ = settle_cluster(
            ledger, tracker, c, paid, float(accs[c]), psi, omega, config, registered=np.arange(n)
        )
        assert abs(ledger.total - start) < 1e-9
        assert 0.0 <= u <= 1.0
    return ledger, tracker


@given(
    seed=st.integers(0, 2**32 - 1),
    n=st.integers(1, 15),
    k=st.integers(1, 4),
    rounds=st.integers(1, 12),
    price=st.floats(0.1, 7.0),
    tok_init=st.floats(0.0, 30.0),
    integer=st.booleans(),
    rc=st.booleans(),
)
def test_ledger_conserves_and_never_goes_negative(seed, n, k, rounds, price, tok_init, integer, rc):
    if integer or rc:
        price, tok_init = float(math.ceil(price)), float(math.floor(tok_init))
    config = IPFLConfig(price=price, tok_init=tok_init, integer_tokens=integer, code_compat=rc)
    rng = np.random.default_rng(seed)
    ledger = Ledger.start(n, k, tok_init)
    tracker = RefundTracker.start(k)
    for _ in range(rounds):
        ledger, tracker = _round(ledger, tracker, config, rng, k, rng.uniform(0, 1, k))
        assert abs(ledger.total - n * tok_init) < 1e-9
        assert ledger.tokens.min() >= 0 and ledger.pools.min() >= 0
        if config.integer_tokens:
            assert np.all(ledger.tokens == np.floor(ledger.tokens))
            assert ledger.total == n * tok_init  # exact


def test_client_that_cannot_pay_is_not_charged_and_pays_per_cluster():
    ledger = Ledger(np.array([0.5, 3.0, 1.0]), np.zeros(2))
    ledger, paid = collect(ledger, 0, [0, 1, 2], 1.0)
    assert paid.tolist() == [1, 2] and ledger.tokens.tolist() == [0.5, 2.0, 0.0]
    ledger, paid = collect(ledger, 1, [0, 1, 2], 1.0)
    assert paid.tolist() == [1] and ledger.tokens.tolist() == [0.5, 1.0, 0.0]
    assert ledger.pools.tolist() == [2.0, 1.0]


def test_rc_payment_bug_charges_the_last_party_and_conserves():
    ledger, _ = collect(
        Ledger(np.array([1.0, 1.0, 0.0]), np.zeros(1)), 0, [0, 1, 2], 1.0, stale_payer=True
    )
    assert ledger.tokens.tolist() == [1.0, 1.0, -3.0] and ledger.total == 2.0


# ----------------------------------------------------------------------------- refunds: Eq. 11-12


@given(
    acc_max=st.floats(0.01, 1.0),
    acc=st.floats(0.0, 1.0),
    eta=st.floats(0.0, 1.0),
    gamma=st.floats(0.01, 1.0),
)
def test_refund_fraction_is_the_clipped_ramp(acc_max, acc, eta, gamma):
    u = refund_fraction(acc, acc_max, eta, gamma)
    delta = (acc - acc_max) / acc_max
    assert 0.0 <= u <= eta + 1e-15
    if acc <= acc_max:
        assert u == pytest.approx(eta)
    elif delta >= gamma:
        assert u == 0.0
    else:
        assert u == pytest.approx(eta - eta / gamma * delta)


def test_acc_max_is_non_decreasing_and_first_round_skips():
    config = IPFLConfig()
    tracker = RefundTracker.start(1)
    assert tracker.fraction(0, 0.7, config, 10.0, 5) == 0.0
    best = []
    for acc in (0.5, 0.4, 0.6, 0.55, 0.9):
        tracker = tracker.update(0, acc, config)
        best.append(tracker.acc_max[0])
    assert best == sorted(best) == [0.5, 0.5, 0.6, 0.6, 0.9]
    bug = RefundTracker((0.6,)).update(0, 0.5, IPFLConfig(code_compat=True, code_bugs=True))
    assert bug.acc_max == (0.0,)


def test_rc_refund_goes_to_every_tier_member():
    """The authors' reference code: under code_compat the refund is split (integer floor) over every client
    ever associated with the tier, not only this round's payers; a pool larger than the
    number of members refunds exactly one token each."""
    config = IPFLConfig(code_compat=True)
    ledger, paid = collect(Ledger.start(6, 1, 10.0), 0, [0, 1, 2, 3, 4], 2.0)
    tracker = RefundTracker((0.5,))
    members = np.array([0, 1, 2, 3, 4, 5])  # client 5 joined in an earlier round
    psi, omega = np.zeros(6), np.ones(6)
    after, _, u, _ = settle_cluster(
        ledger, tracker, 0, paid, 0.4, psi, omega, config, registered=members
    )
    assert u == pytest.approx(len(members) / 10.0)
    refunded = after.tokens - ledger.tokens
    assert refunded[5] >= 1.0  # a member that did not pay this round is refunded too
    assert after.total == ledger.total == 60.0
    default, _, _, _ = settle_cluster(
        ledger, tracker, 0, paid, 0.4, psi, omega, IPFLConfig(), registered=members
    )
    assert default.tokens[5] == ledger.tokens[5]  # the corrected reading refunds payers only


def test_settlement_reports_an_empty_pool_and_can_skip_the_rewards():
    """A reference-code bug: the reward passes stop at the first tier whose pool is empty;
    settle_cluster reports the empty pool so the driver can skip the later tiers' rewards."""
    config = IPFLConfig(code_compat=True, code_bugs=True)
    ledger, paid = collect(Ledger.start(4, 1, 10.0), 0, [0, 1, 2, 3], 1.0)
    psi, omega = np.array([0.4, 0.3, 0.2, 0.1]), np.ones(4)
    tracker = RefundTracker((0.5,))
    # no improvement: the RC refunds the whole pool (ratio 1), which leaves it empty
    after, _, u, empty = settle_cluster(ledger, tracker, 0, paid, 0.4, psi, omega, config)
    assert u == 1.0 and empty and after.pools[0] == 0 and after.total == ledger.total
    # an improvement: nothing refunded, the pool stays, and rewards=False leaves it untouched
    kept, _, u, empty = settle_cluster(
        ledger, tracker, 0, paid, 0.9, psi, omega, config, rewards=False
    )
    assert u == 0.0 and not empty and kept.pools[0] == ledger.pools[0] == 4.0
    paid_out, _, _, _ = settle_cluster(ledger, tracker, 0, paid, 0.9, psi, omega, config)
    assert paid_out.pools[0] < 4.0 and paid_out.total == ledger.total


def test_rc_slot_schedule_moves_one_slot_at_round_100():
    config = IPFLConfig(code_compat=True)
    assert code_slots(0, config) == code_slots(99, config) == (5, 2)
    assert code_slots(100, config) == code_slots(500, config) == (6, 1)
    assert code_slots(100, IPFLConfig(code_compat=True, code_rand=0)) == (5, 0)
    with pytest.raises(ValueError, match="code_perf"):
        IPFLConfig(code_perf=0)
    with pytest.raises(ValueError, match="code_rand must be an integer"):
        IPFLConfig(code_rand=1.5)


def test_f1_features_pick_the_most_varied_classes():
    y = np.array([0, 0, 1, 1, 2, 2])
    perfect = y.copy()
    swap = np.array([1, 1, 0, 0, 2, 2])  # classes 0 and 1 confused, class 2 right
    f = f1_features(np.stack([perfect, swap, perfect]), y, n_classes=3, n_top=2)
    assert f.shape == (3, 2)
    assert f.tolist() == [[1.0, 1.0], [0.0, 0.0], [1.0, 1.0]]  # class 2 (F1 always 1) dropped
    full = f1_features(np.array([[0, 1, 1, 1, 2, 0]]), y, n_classes=4, n_top=10)
    # class 0: TP 1, FP 1, FN 1 -> 0.5; class 1: TP 2, FP 1 -> 0.8; class 2: 2/3; class 3: 0
    assert full[0] == pytest.approx([0.5, 0.8, 2 / 3, 0.0])
    with pytest.raises(ValueError, match="columns"):
        f1_features(np.zeros((2, 3)), y, n_classes=3)


def test_refund_goes_to_payers_equally():
    ledger = refund(Ledger(np.zeros(3), np.array([6.0])), 0, [0, 2], 0.5)
    assert ledger.tokens.tolist() == [1.5, 0.0, 1.5] and ledger.pools.tolist() == [3.0]
    floored = refund(Ledger(np.zeros(3), np.array([5.0])), 0, [0, 1, 2], 0.5, integer=True)
    assert floored.tokens.tolist() == [0.0, 0.0, 0.0] and floored.total == 5.0


# ----------------------------------------------------------------------------- rewards: Eq. 13


def test_rank_rewards_pay_the_pool_monotonically_in_psi_then_omega():
    psi = np.array([0.3, -1.0, 0.3, 2.0])
    omega = np.array([1, 5, 4, 0])
    ledger = reward(Ledger(np.zeros(4), np.array([10.0])), 0, [0, 1, 2, 3], psi, omega)
    gains = ledger.tokens
    assert gains.sum() == pytest.approx(10.0) and ledger.pools[0] == 0.0
    assert gains[1] < gains[0] < gains[2] < gains[3]  # psi, then omega breaks the 0.3 tie
    assert gains[3] == pytest.approx(2 * 4 / 5 * 10.0 / 4)  # best: 2n/(n+1) pool/n


@given(n=st.integers(1, 30), u=st.floats(0.0, 1.0), price=st.floats(0.1, 5.0))
def test_net_token_change_matches_the_ledger(n, u, price):
    ledger = Ledger(np.full(n, 10.0), np.zeros(1))
    ledger, paid = collect(ledger, 0, np.arange(n), price)
    ledger = refund(ledger, 0, paid, u)
    psi = np.arange(n, dtype=float)  # client i has rank i + 1
    ledger = reward(ledger, 0, paid, psi, np.zeros(n))
    net = ledger.tokens - 10.0
    alpha = np.arange(1, n + 1)
    assert np.allclose(net, net_token_change(alpha, n, u, price), atol=1e-9)
    assert abs(net.sum()) < 1e-9
    assert np.all((net >= -1e-12) == (alpha >= (n + 1) / 2) | np.isclose(net, 0.0))


def test_net_token_change_numeric_twin_equals_the_expression():
    a, n, u, p = sp.symbols("alpha n u p", positive=True)
    expr = net_token_change_expr()
    for point in [(1, 5, 0.2, 1.0), (3, 3, 0.0, 2.0), (7, 9, 0.5, 0.3)]:
        exact = float(expr.subs(dict(zip((a, n, u, p), point, strict=True))))
        assert net_token_change(point[0], *point[1:]) == pytest.approx(exact, abs=1e-12)


def test_printed_denominator_creates_tokens():
    assert literal_reward_total(10, 3, 20.0) > 20.0
    assert literal_reward_total(0, 4, 20.0) == pytest.approx(20.0)
    assert rank_rewards(13, 20.0).sum() == pytest.approx(20.0)


# ----------------------------------------------------------------------------- exploration (§4.3)


@given(n=st.integers(1, 300), k=st.integers(1, 13))
def test_exploration_budget_shrinks_to_its_floor(n, k):
    totals = [n_rand_schedule(n, k, u)[0] for u in range(n, -1, -1)]
    assert totals[0] == math.ceil(0.2 * n)
    assert all(a >= b for a, b in itertools.pairwise(totals))
    assert min(totals) == math.ceil(0.05 * n)
    for u in (0, n // 2, n):
        total, per = n_rand_schedule(n, k, u)
        assert per == math.ceil(total / k)
    assert n_perf_default(100, 5) == 4 and n_perf_default(100, 2) == 10


# ----------------------------------------------------------------------------- bids (Alg. 2)


def test_bids_hold_the_argmax_and_the_clusters_above_the_threshold():
    acc = np.array([[0.95, 0.92, 0.1], [0.3, 0.6, 0.5], [0.0, 0.0, 0.0]])
    bids = preference_bids(acc, np.full(3, 10.0), IPFLConfig(), np.random.default_rng(0))
    assert bids.tolist() == [[True, True, False], [False, True, False], [True, False, False]]
    poor = preference_bids(acc, np.array([1.0, 0.5, 3.0]), IPFLConfig(), np.random.default_rng(0))
    assert poor[0].tolist() == [True, False, False] and not poor[1].any()
    rc = preference_bids(
        acc, np.full(3, 10.0), IPFLConfig(code_compat=True), np.random.default_rng(0)
    )
    assert rc.sum(axis=1).tolist() == [1, 1, 1]


def test_non_incentivised_bids_are_one_uniform_cluster():
    k, n = 4, 10_000
    bids = preference_bids(
        np.full((n, k), 0.99),
        np.full(n, 5.0),
        IPFLConfig(incentive=False),
        np.random.default_rng(1),
    )
    assert np.all(bids.sum(axis=1) == 1)
    assert stats.chisquare(bids.sum(axis=0)).pvalue > 1e-3


# ----------------------------------------------------------------------------- Eq. 8


@given(seed=st.integers(0, 10_000), k=st.integers(1, 5))
def test_personalised_model_is_a_convex_combination(seed, k):
    rng = np.random.default_rng(seed)
    acc = rng.uniform(0, 1, (6, k))
    w = importance_weights(acc)
    models = rng.normal(size=(k, 20))
    assert np.allclose(w.sum(axis=1), 1.0)
    p = personalised_model(w, models)
    assert np.all(p >= models.min(axis=0) - 1e-12) and np.all(p <= models.max(axis=0) + 1e-12)
    one_hot = np.eye(k)[rng.integers(0, k)]
    assert np.array_equal(personalised_model(one_hot, models)[0], models[np.argmax(one_hot)])
    assert np.allclose(importance_weights(np.zeros((1, k))), 1.0 / k)


# ----------------------------------------------------------------------------- psi (App. H)


def test_psi_ranks_do_not_depend_on_loss_scale_and_sum_to_zero():
    rng = np.random.default_rng(4)
    updates = rng.normal(size=(7, 30))
    lam = rng.dirichlet(np.ones(7))
    model = lam @ updates
    g = rng.normal(size=30)
    psi = shapley_first_order(g, updates, model, lam)
    scaled = shapley_first_order(3.7 * g, updates, model, lam)
    assert np.array_equal(np.argsort(psi), np.argsort(scaled))
    assert abs(psi.sum()) < 1e-10 * np.abs(psi).sum()
    raw = shapley_first_order(g, updates, model, lam, normalized=False)
    assert raw.sum() == pytest.approx(-g @ model)


# ----------------------------------------------------------------------------- Eq. 2


def test_opt_outs_are_the_clients_without_positive_pma():
    values = pma([0.8, 0.7, 0.9], [0.7, 0.7, 0.95])
    assert values == pytest.approx([10.0, 0.0, -5.0])
    assert opt_outs(values).tolist() == [False, True, True]
    assert 0.0 <= opt_outs(values).mean() <= 1.0


# ----------------------------------------------------------------------------- scheduler (Alg. 1)


@given(seed=st.integers(0, 10_000), n=st.integers(2, 40), k=st.integers(1, 4))
def test_scheduler_takes_top_bidders_then_explorers(seed, n, k):
    rng = np.random.default_rng(seed)
    config = IPFLConfig()
    bids = preference_bids(rng.uniform(0, 1, (n, k)), np.full(n, 50.0), config, rng)
    psi, omega = rng.normal(size=(k, n)), rng.integers(0, 4, size=(k, n))
    n_perf = n_perf_default(n, k)
    _, n_rand = n_rand_schedule(n, k, n)
    sel = select_clients(bids, psi, omega, np.full(n, 50.0), config, n_perf, n_rand, rng)
    for c, chosen in enumerate(sel):
        assert chosen.size <= n_perf + n_rand and len(set(chosen.tolist())) == chosen.size
        bidders = np.flatnonzero(bids[:, c])
        top = sorted(bidders.tolist(), key=lambda i: (-psi[c, i], -omega[c, i], i))[:n_perf]
        assert chosen[: len(top)].tolist() == top


def test_scheduler_skips_clients_that_cannot_pay_for_another_cluster():
    bids = np.ones((3, 2), dtype=bool)
    sel = select_clients(
        bids,
        np.zeros((2, 3)),
        np.zeros((2, 3)),
        np.array([1.0, 2.0, 0.0]),
        IPFLConfig(),
        3,
        0,
        np.random.default_rng(0),
    )
    assert sel[0].tolist() == [0, 1] and sel[1].tolist() == [1]


def test_bootstrap_is_disjoint_while_possible_and_seeded():
    a = bootstrap_select(10, 2, 4, np.random.default_rng(5))
    b = bootstrap_select(10, 2, 4, np.random.default_rng(5))
    assert [x.tolist() for x in a] == [x.tolist() for x in b]
    assert not set(a[0]) & set(a[1]) and all(x.size == 4 for x in a)


# ----------------------------------------------------------------------------- economics seam


def test_token_qualities_answer_individual_rationality():
    q = TokenQualities(
        names=("a", "b"),
        net_tokens=[-4.0, 4.0],
        pma=[2.0, -1.0],
        personalised_accuracy=[0.9, 0.8],
        n_eval=[50, 40],
    )
    assert not q.individually_rational(0.0)
    assert q.individually_rational(0.5) and not q.individually_rational(0.6)
    fine = TokenQualities(
        names=("a", "b"),
        net_tokens=[-4.0, 4.0],
        pma=[2.0, 1.0],
        personalised_accuracy=[0.9, 0.8],
        n_eval=[50, 40],
    )
    assert fine.max_token_price() == pytest.approx(0.5)
    assert fine.model_qualities()["b"] == pytest.approx(0.8)
    with pytest.raises(ValueError, match="one entry per name"):
        TokenQualities(
            names=("a",), net_tokens=[1.0, 2.0], pma=[0.0], personalised_accuracy=[1.0], n_eval=[1]
        )


def test_config_validation():
    with pytest.raises(ValueError, match="price"):
        IPFLConfig(price=0.0)
    with pytest.raises(ValueError, match="code_bugs"):
        IPFLConfig(code_bugs=True)
    assert IPFLConfig(code_compat=True).integer_tokens
