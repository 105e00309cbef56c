"""CoBo's theory checks (learning.theory.cobo_propositions, cobo_lemmas_propositions,
cobo_steps_propositions; the corrected bounds of learning.theory.cobo): the numpy iteration
they run, the exact moments they compare, and the counterexamples they report, recomputed
independently."""

from __future__ import annotations

import math
from fractions import Fraction as F

import numpy as np
import pytest

from learning.theory import (
    cobo,
    cobo_lemmas_propositions,
    cobo_points,
    cobo_propositions,
    cobo_steps_propositions,
)
from learning.theory.quadratic import (
    ClusterProblem,
    ClusterRun,
    QuadraticRound,
    cobo_round,
    collaborativeness,
    exact_moments,
    inner_products,
    random_cluster,
)


def _objects(rows):
    out = np.empty(np.shape(rows), dtype=object)
    out[...] = rows
    return out


# --------------------------------------------------------------------------- the iteration


def test_one_round_by_hand_in_exact_rationals():
    # f_1 = (x - 0)^2 / 2, f_2 = 2 (x - 1)^2 / 2; x = (1, 3), w_12 = 1/2
    a = _objects([[[F(1)]], [[F(2)]]])
    c = _objects([[F(0)], [F(1)]])
    x = _objects([[F(1)], [F(3)]])
    w = _objects([[F(1), F(1, 2)], [F(1, 2), F(1)]])
    x_next, w_next = cobo_round(x, w, a, c, eta=F(1, 10), rho=F(1, 2), gamma=F(1, 4))
    # z = 2: grad f_1 = 2, grad f_2 = 2 (2 - 1) = 2, s = 4; w = Proj(1/2 + 4/4) = 1
    assert w_next.tolist() == [[1, 1], [1, 1]]
    # x_1 <- 1 - (1/10)(1 + (1/2)(1 - 3)) = 1;  x_2 <- 3 - (1/10)(4 + (1/2)(3 - 1)) = 5/2
    assert x_next.tolist() == [[F(1)], [F(5, 2)]]
    assert all(isinstance(v, F) for v in x_next.ravel())


def test_one_round_by_hand_with_a_weight_projected_to_zero():
    # f_2 = 2 (x - 10)^2 / 2; x = (0, 1): z = 1/2, s = (1/2)(2 (1/2 - 10)) = -19/2
    a = _objects([[[F(1)]], [[F(2)]]])
    c = _objects([[F(0)], [F(10)]])
    x = _objects([[F(0)], [F(1)]])
    w = _objects([[F(1), F(1, 2)], [F(1, 2), F(1)]])
    s = inner_products(x, a, c)
    assert s[0, 1] == s[1, 0] == F(-19, 2)
    x_next, w_next = cobo_round(x, w, a, c, eta=F(1, 10), rho=F(1, 2), gamma=F(1, 4))
    assert w_next[0, 1] == w_next[1, 0] == 0  # Proj(1/2 - 19/8) = 0
    # no pull left: x_1 <- 0, x_2 <- 1 - (1/10) 2 (1 - 10) = 14/5
    assert x_next.tolist() == [[F(0)], [F(14, 5)]]
    # noise enters the model step only; given inner products replace the exact ones
    noisy, w_given = cobo_round(
        x,
        w,
        a,
        c,
        eta=F(1, 10),
        rho=F(1, 2),
        gamma=F(1, 4),
        noise=_objects([[F(1)], [F(0)]]),
        inner=_objects([[F(0), F(2)], [F(2), F(0)]]),
    )
    assert w_given[0, 1] == 1
    assert noisy[0, 0] == F(0) - F(1, 10) * (F(1) + F(1, 2) * 1 * (0 - 1))


def test_the_iteration_equals_the_toolkit_update_rules():
    torch = pytest.importorskip("torch")
    from learning.algorithms.cobo_steps import laplacian_penalty, update_weights

    rng = np.random.default_rng(0)
    n, d = 5, 3
    a = np.array([m @ m.T + 0.1 * np.eye(d) for m in rng.normal(size=(n, d, d))])
    c = rng.normal(size=(n, d))
    x = rng.normal(size=(n, d))
    w = rng.uniform(size=(n, n))
    w = (w + w.T) / 2
    np.fill_diagonal(w, 1.0)
    eta, rho, gamma = 0.05, 0.7, 0.02
    x_next, w_next = cobo_round(x, w, a, c, eta=eta, rho=rho, gamma=gamma)
    pairs = np.array([(i, j) for i in range(n) for j in range(i + 1, n)])
    s = inner_products(x, a, c)[pairs[:, 0], pairs[:, 1]]
    w_torch = update_weights(torch.as_tensor(w), pairs, torch.as_tensor(s), gamma=gamma)
    force = laplacian_penalty({"x": torch.as_tensor(x)}, w_torch)["x"].numpy()
    g = np.einsum("nde,ne->nd", a, x - c)
    np.testing.assert_allclose(w_next, w_torch.numpy(), atol=1e-15)
    np.testing.assert_allclose(x_next, x - eta * (g + rho * force), atol=1e-13)


# --------------------------------------------------------------------------- exact moments


def _problem(seed=1, c=3, d=2, spread=0.1):
    return random_cluster(np.random.default_rng(seed), c, d, spread, 2.0)


def _deterministic_sums(problem, eta, rho, rounds):
    c = problem.c
    centres = np.tile(problem.mu, (c, 1))
    x = np.tile(problem.x0, (c, 1))
    w = np.ones((c, c))
    cons = midg = own = 0.0
    for _ in range(rounds):
        for i in range(c):
            own += c * float(np.sum((problem.a[i] @ (x[i] - problem.mu)) ** 2))
            for j in range(c):
                g = 0.5 * (problem.a[i] + problem.a[j]) @ ((x[i] + x[j]) / 2 - problem.mu)
                midg += float(g @ g)
        x, w = cobo_round(x, w, problem.a, centres, eta=eta, rho=rho, gamma=1.0)
        assert np.all(w == 1.0)  # Case 1: in-cluster weights stay at 1
        cons += sum(float(np.sum((x[i] - x[j]) ** 2)) for i in range(c) for j in range(c))
    scale = 1 / (c * c * rounds)
    return cons * scale, midg * scale, own * scale


def test_exact_moments_without_noise_follow_the_iteration():
    problem = _problem()
    m = exact_moments(problem, eta=0.04, rho=1.3, sigma=0.0, rounds=25)
    np.testing.assert_allclose(
        (m.consensus, m.midpoint_gradient, m.client_gradient),
        _deterministic_sums(problem, 0.04, 1.3, 25),
        rtol=1e-10,
    )


def test_exact_moments_with_noise_match_monte_carlo():
    problem = _problem(seed=4, c=2, d=2)
    eta, rho, sigma, rounds, runs = 0.1, 1.0, 0.8, 3, 4000
    exact = exact_moments(problem, eta=eta, rho=rho, sigma=sigma, rounds=rounds)
    rng = np.random.default_rng(7)
    c, d = problem.c, problem.d
    centres = np.tile(problem.mu, (c, 1))
    samples = []
    for _ in range(runs):
        x, w = np.tile(problem.x0, (c, 1)), np.ones((c, c))
        cons = 0.0
        for _ in range(rounds):
            noise = rng.normal(scale=sigma / math.sqrt(d), size=(c, d))
            x, w = cobo_round(x, w, problem.a, centres, eta=eta, rho=rho, gamma=1.0, noise=noise)
            cons += 2 * float(np.sum((x[0] - x[1]) ** 2))
        samples.append(cons / (c * c * rounds))
    mean, err = np.mean(samples), np.std(samples) / math.sqrt(runs)
    assert abs(mean - exact.consensus) < 5 * err


def test_scaling_the_losses_keeps_the_trajectory():
    run = ClusterRun("base", _problem(), 0.03, 2.0, 0.5, 20)
    big = run.scaled(1000.0)
    assert big.moments.consensus == pytest.approx(run.moments.consensus, rel=1e-9)
    assert big.moments.midpoint_gradient == pytest.approx(1e6 * run.moments.midpoint_gradient)
    q, qb = run.quantities(), big.quantities()
    assert qb["m2"] == pytest.approx(q["m2"]) and qb["L"] * qb["eta"] == pytest.approx(
        q["L"] * q["eta"]
    )
    # the printed deterministic consensus bound scales as 1/kappa
    assert cobo_propositions.det_consensus(**qb) == pytest.approx(
        cobo_propositions.det_consensus(**q) / 1000
    )


def test_collaborativeness_and_gap():
    # Example 2: scalar curvatures give M = |a_i - a_j| / (a_i + a_j)
    assert collaborativeness(np.eye(2), 1.5 * np.eye(2)) == pytest.approx((0.5 / 2.5) ** 2)
    rng = np.random.default_rng(3)
    ai, aj = (m @ m.T + 0.2 * np.eye(3) for m in rng.normal(size=(2, 3, 3)))
    m2 = collaborativeness(ai, aj)
    u = rng.normal(size=(2000, 3))
    ratio = np.sum((u @ (ai - aj)) ** 2, 1) / np.sum((u @ (ai + aj)) ** 2, 1)
    assert ratio.max() <= m2 * (1 + 1e-12) and ratio.max() > 0.9 * m2
    pair = ClusterProblem(np.array([[[1.0]], [[1.5]]]), np.zeros(1), np.ones(1))
    assert pair.gap == pytest.approx(2 * (0.5 + 0.75))  # c * sum_i f_i(x0)
    assert pair.smoothness == 1.5 and pair.m2 == pytest.approx(1 / 25)


# --------------------------------------------------------------------------- counterexamples


def test_stochastic_theorem_counterexample_in_exact_rationals():
    # a = (1, 3/2), x0 - mu = 1, rho = 3/2, eta = 1/6, sigma = 1/10, T = 1
    a1, a2, rho, eta, sigma, c = F(1), F(3, 2), F(3, 2), F(1, 6), F(1, 10), 2
    L, m2, S = a2, ((a2 - a1) / (a2 + a1)) ** 2, c * (a1 + a2) / 2
    assert m2 == F(1, 25) and S == F(5, 2)
    # the printed hypotheses: M^2 in (0, 1/5), rho c >= sqrt(3) L, eta <= 1/(2 sqrt(3) L),
    # eta <= (2/(sigma sqrt(L T))) sqrt(S/c^2)  (squared, all positive)
    assert 0 < m2 < F(1, 5) and (rho * c) ** 2 >= 3 * L**2
    assert eta**2 <= 1 / (12 * L**2) and eta**2 <= 4 / (sigma**2 * L) * S / c**2
    # t = 0: z_ij = x0, grad f~_ij = (a_i + a_j)/2, the bound 3 sqrt(L sigma^2 S/c^2)
    gradient = sum(((ai + aj) / 2) ** 2 for ai in (a1, a2) for aj in (a1, a2)) / c**2
    assert gradient == F(51, 32)
    assert gradient**2 > 9 * L * sigma**2 * S / c**2
    # x_i^1 = x0 - eta g_i (no pull at the common start): E||x_1 - x_2||^2 = eta^2 ((a1-a2)^2 + 2 sigma^2)
    consensus = 2 * eta**2 * ((a1 - a2) ** 2 + 2 * sigma**2) / c**2
    assert consensus == F(27, 7200)
    assert consensus**2 > (6 * m2 / (rho**2 * c**2)) ** 2 * L * sigma**2 * S / c**2
    run = cobo_points.theorem_runs(True)[0]
    assert run.moments.midpoint_gradient == pytest.approx(float(gradient))
    assert run.moments.consensus == pytest.approx(float(consensus))
    verdict = cobo_propositions.check_sto_gradient()
    assert not verdict.holds and verdict.counterexample is not None
    assert verdict.counterexample["point"] == run.label


def test_deterministic_gradient_counterexample_needs_no_step_size_condition():
    run = cobo_points.theorem_runs(False)[0]
    q = run.quantities()
    assert cobo_propositions.det_hypothesis(**q) and q["eta"] == pytest.approx(1 / 60)
    assert run.moments.midpoint_gradient > cobo_propositions.det_gradient(**q)
    # the corrected statement admits this step size and holds there
    assert cobo.corrected_gradient(**q) >= run.moments.midpoint_gradient


def test_lemma_counterexamples_at_the_minimiser_in_exact_rationals():
    # two clients f_i = a_i x^2/2, a = (1, 11/10), both models at the minimiser 0, sigma = 1
    a, rho, eta, sigma, c, d = (F(1), F(11, 10)), F(1), F(1, 4), F(1), 2, 1
    L, m2 = a[1], ((a[1] - a[0]) / (a[1] + a[0])) ** 2
    assert (rho * c) ** 2 >= 3 * L**2 and eta <= 1 / (2 * rho * c) and m2 <= F(1, 25)
    var = {True: eta**2 * sigma**2 / d, False: eta**2 * sigma**2 / (2 * d)}
    # E f~_ij(z^{t+1}) = (a_i + a_j)/4 * Var(z_ij^{t+1}); the models have mean 0
    rise = sum((a[i] + a[j]) / 4 * var[i == j] for i in range(c) for j in range(c))
    # Lemma 3: G = 0 > (2/eta)(0 - rise) + c^2 L eta sigma^2/2
    assert 0 > -2 / eta * rise + c**2 * L * eta * sigma**2 / 2
    # Lemma 4: E D_{t+1} = 2 eta^2 sigma^2 c(c-1) > (6 M^2/(rho c))(0 - rise) + (3 eta M^2/(rho c)) c^2 L eta sigma^2/2
    lhs = 2 * eta**2 * sigma**2 * c * (c - 1)
    assert (
        lhs
        > 6 * m2 / (rho * c) * (-rise) + 3 * eta * m2 / (rho * c) * c**2 * L * eta * sigma**2 / 2
    )
    state = QuadraticRound(
        "t",
        np.array([[[1.0]], [[1.1]]]),
        np.zeros((2, 1)),
        2,
        np.zeros((2, 1)),
        np.ones((2, 2)),
        0.25,
        1.0,
        1.0,
        1.0,
        1.0,
    )
    assert state.sums["drop"] == pytest.approx(-float(rise))
    assert state.sums["D_next"] == pytest.approx(float(lhs))


def test_example2_zeta_counterexample():
    # a_i = a_j = 1/2, centres 0 and 1: at the midpoint the squared gradients sum to 1/8
    x = F(1, 2)
    total = (F(1, 2) * x) ** 2 + (F(1, 2) * (x - 1)) ** 2
    assert total == F(1, 8) < F(1, 4)  # the printed zeta^2
    assert not cobo_steps_propositions.check_example2_zeta().holds


def test_case2_pair_satisfies_the_hypotheses_and_keeps_a_positive_weight():
    x = np.linspace(-30, 30, 2001)
    theta = cobo_steps_propositions._theta(x)
    gi, gk = np.cos(theta), -np.sin(theta)  # zeta = 1
    assert np.all(gi >= 0) and np.all(gk <= 0)  # monotone: f_i increasing, f_k decreasing
    assert np.all((gi + gk) ** 2 <= 1 + 1e-12) and np.allclose(gi**2 + gk**2, 1)
    # bounded below: 0 <= f_i'(x) <= (pi/2) e^{2x} and 0 <= -f_k'(x) <= (pi/2) e^{-2x}
    assert np.all(gi <= np.pi / 2 * np.exp(2 * x) + 1e-15)
    assert np.all(-gk <= np.pi / 2 * np.exp(-2 * x) + 1e-15)
    # eq. (w) from w = 1 with gamma = 1 at z = 0 keeps w = 1/2
    s = float(np.cos(np.pi / 4) * -np.sin(np.pi / 4))
    assert min(max(1 + s, 0), 1) == pytest.approx(0.5)


@pytest.mark.parametrize(
    "check",
    [
        cobo_propositions.check_sto_consensus_corrected,
        cobo_lemmas_propositions.check_lemma4_corrected,
    ],
)
def test_corrected_checks_count_their_points(check):
    verdict = check()
    assert verdict.holds and verdict.n_points >= 30


def test_weight_variance_counterexample_by_hand():
    # at the minimiser both midpoint gradients are 0; with b = 1 and noise +-sigma the step
    # moves w = 1/2 by gamma * (+-sigma)(+-sigma) = +-gamma sigma^2 = +-1/2 (sigma = 1/10, gamma = 50)
    sigma, gamma = F(1, 10), F(50)
    outcomes = [
        min(max(F(1, 2) + gamma * u * v, F(0)), F(1))
        for u in (sigma, -sigma)
        for v in (sigma, -sigma)
    ]
    mean = sum(outcomes) / 4
    variance = sum((x - mean) ** 2 for x in outcomes) / 4
    assert variance == F(1, 4) > 4 * sigma**2  # the printed 4 sigma^2/b = 1/25
    # the law of a mean of b signs has variance 1/b
    for b in (1, 4, 7):
        law = cobo_lemmas_propositions._mean_of_signs(b)
        assert sum(p for _, p in law) == 1 and sum(x * x * p for x, p in law) == F(1, b)
    verdict = cobo_lemmas_propositions.check_weight_variance()
    assert not verdict.holds and verdict.counterexample is not None
    assert verdict.counterexample["variance"] == "1/4"


def test_example2_zeta_is_refuted_only_where_it_exceeds_the_minimum():
    # a looser lower bound (half the minimum) holds; equality is required only when tight
    def half(ai, aj):
        return cobo_steps_propositions._zeta2_corrected(ai, aj) / 2

    assert cobo_steps_propositions.check_example2_zeta(half).holds
    assert not cobo_steps_propositions.check_example2_zeta(half, tight=True).holds
    verdict = cobo_steps_propositions.check_example2_zeta()
    left = F(verdict.counterexample["left side"])
    assert F(verdict.counterexample["printed_zeta2"]) > left


def test_lemma3_fails_only_through_the_diagonal_pairs():
    verdict = cobo_lemmas_propositions.check_lemma3()
    assert not verdict.holds and "i != j" in verdict.evidence
    assert cobo_lemmas_propositions.check_lemma3(diagonal=False).holds
    assert not cobo_lemmas_propositions.check_lemma3(diagonal=False, noise=lambda **q: 0.0).holds


def test_theorem_points_count_distinct_trajectories():
    runs = cobo_points.theorem_runs(False)
    hand = next(r for r in runs if r.label == "hand-picked: a = (1, 3/2)")
    assert hand.scaled(1000.0).trajectory() == hand.trajectory()
    longer = ClusterRun(hand.label, hand.problem, hand.eta, hand.rho, hand.sigma, 400)
    assert longer.trajectory() == hand.trajectory()
    verdict = cobo_propositions.check_det_consensus_corrected()
    inside = [r for r in runs if cobo.corrected_hypothesis(**r.quantities())]
    assert verdict.n_points == len({r.trajectory() for r in inside}) < len(inside)
