"""Threshold-Clustering (Werner et al. 2023, Algorithm 3, eq. (4)): the step form, contraction,
outlier immunity, the quantile radius rules, robustness to attackers, accuracy on Gaussian
mixtures and the iteration bound of Theorem 1."""

import itertools
import math

import numpy as np
import pytest
import torch

from learning.algorithms.threshold_clustering import (
    FixedRadius,
    QuantileRadius,
    iterations_bound,
    threshold_clustering,
)

F64 = torch.float64


def _tc(points, init, iters, radius, inclusive=True):
    return threshold_clustering(points, init[None], iters, radius, inclusive=inclusive).centers[0]


def test_step_form_and_limits():
    rng = np.random.default_rng(0)
    z = torch.tensor(rng.normal(size=(30, 5)), dtype=F64)
    v = torch.tensor(rng.normal(size=5), dtype=F64)
    tau = 2.0
    inside = (z - v).norm(dim=1) <= tau
    expected = v + (z[inside] - v).sum(0) / 30
    eq4 = (z * inside[:, None] + v * (~inside)[:, None]).mean(0)
    got = _tc(z, v, 1, FixedRadius(tau))
    assert torch.allclose(got, expected, atol=1e-12) and torch.allclose(got, eq4, atol=1e-12)
    assert torch.allclose(_tc(z, v, 1, FixedRadius(1e9)), z.mean(0), atol=1e-12)
    tiny = float((z - v).norm(dim=1).min()) / 2
    assert torch.equal(_tc(z, v, 1, FixedRadius(tiny)), v)
    # the members of the last iteration are the points inside the ball
    members = threshold_clustering(z, v[None], 1, FixedRadius(tau)).members[0]
    assert torch.equal(members, inside)
    assert not threshold_clustering(z, v[None], 1, FixedRadius(tiny)).members.any()


def test_exact_contraction():
    rng = np.random.default_rng(1)
    near = torch.tensor(rng.normal(scale=0.1, size=(6, 3)), dtype=F64)
    far = torch.tensor(rng.normal(loc=50.0, size=(14, 3)), dtype=F64)
    z = torch.cat([near, far])
    v0 = torch.tensor([0.3, -0.2, 0.1], dtype=F64)
    for iters in (1, 4, 12):
        v = _tc(z, v0, iters, FixedRadius(3.0))
        target = near.mean(0)
        ratio = (v - target).norm() / (v0 - target).norm()
        assert abs(float(ratio) - (1 - 6 / 20) ** iters) < 1e-9


def test_outliers_leave_the_fixed_point():
    rng = np.random.default_rng(2)
    z = torch.tensor(rng.normal(size=(25, 4)), dtype=F64)
    bad = torch.tensor(rng.normal(1e6, 200.0, size=(10, 4)), dtype=F64)
    v0 = z[0]
    clean = _tc(z, v0, 400, FixedRadius(1e3))
    attacked = _tc(torch.cat([z, bad]), v0, 400, FixedRadius(1e3))
    assert float((clean - attacked).norm()) < 1e-6
    assert torch.allclose(clean, z.mean(0), atol=1e-9)
    # quantile rule with q rescaled so that floor(q N) stays 25
    q_clean, q_bad = 25.5 / 100, 25.5 / 110
    far = torch.tensor(rng.normal(loc=30.0, size=(75, 4)), dtype=F64)
    base = torch.cat([z, far])
    a = _tc(base, v0, 300, QuantileRadius(q_clean), inclusive=False)
    b = _tc(torch.cat([base, bad]), v0, 300, QuantileRadius(q_bad), inclusive=False)
    assert float((a - b).norm()) < 1e-6


@pytest.mark.parametrize(
    ("scale", "inclusive", "extra"), [(1.0, False, 0), (0.99, True, 0), (1.0, True, 1)]
)
def test_quantile_variants(scale, inclusive, extra):
    rng = np.random.default_rng(3)
    z = torch.tensor(rng.normal(size=(50, 6)), dtype=F64)
    result = threshold_clustering(
        z, z[:1], 1, QuantileRadius(0.2, scale=scale), inclusive=inclusive
    )
    assert int(result.inside[0, 0]) == math.floor(0.2 * 50) + extra


def _edge_attack_shift(n_bad, n_good=25, tau=1.0, iters=3000):
    rng = np.random.default_rng(4)
    good = torch.tensor(rng.normal(scale=0.05, size=(n_good, 2)), dtype=F64)
    others = torch.tensor(rng.normal(loc=20.0, size=(3 * n_good, 2)), dtype=F64)
    u = torch.tensor([1.0, 0.0], dtype=F64)
    v = good.mean(0)
    n = n_good + 3 * n_good + n_bad
    for _ in range(iters):
        bad = (v + 0.999 * tau * u).expand(n_bad, 2)
        v = _tc(torch.cat([good, others, bad]), v, 1, FixedRadius(tau))
    assert n == n_good * 4 + n_bad
    return float((v - good.mean(0)) @ u)


@pytest.mark.parametrize(("n_bad", "shift"), [(0, 0.0), (2, 0.0799), (5, 0.1998), (10, 0.3996)])
def test_edge_attackers_shift_linearly(n_bad, shift):
    got = _edge_attack_shift(n_bad)
    assert abs(got - n_bad / 25 * 0.999) < 1e-9
    assert abs(got - shift) < 1e-4


def _mixture_error(gap, iters, trials, rng, n_bad=0, attack=None):
    k, n, d = 4, 25, 10
    means = np.eye(d)[:k] * gap / np.sqrt(2)
    errors = []
    for _ in range(trials):
        z = means.repeat(n, 0) + rng.normal(scale=1 / np.sqrt(d), size=(k * n, d))
        c = int(rng.integers(k))
        start = z[c * n + int(rng.integers(n))]
        if n_bad:
            bad = {
                "large": rng.normal(1e6, 200.0, size=(n_bad, d)),
                "sign": np.tile(-means[c], (n_bad, 1)),
                "zeros": np.zeros((n_bad, d)),
            }[attack]
            z = np.concatenate([z, bad])
        q = (n + 0.5) / z.shape[0]
        v = _tc(torch.tensor(z), torch.tensor(start), iters, QuantileRadius(q), inclusive=False)
        errors.append(float(((v.numpy() - means[c]) ** 2).sum()))
    return float(np.mean(errors))


def test_mixture_accuracy_and_iterations():
    rng = np.random.default_rng(5)
    for gap in (10.0, 5.0, 3.0):
        assert _mixture_error(gap, 10, 60, rng) < 1.25 * 0.04 * 1.3  # 1.25 x sigma^2/n, MC slack
    curve = [_mixture_error(10.0, m, 60, np.random.default_rng(6)) for m in (1, 3, 5, 10, 20)]
    assert all(a > b for a, b in itertools.pairwise(curve[:4]))
    assert curve[3] < 1.1 * curve[4] + 1e-3
    assert 0.4 < curve[0] < 0.8 and curve[3] < 0.06


@pytest.mark.parametrize("attack", ["large", "sign", "zeros"])
def test_attacks_raise_error_little(attack):
    clean = _mixture_error(10.0, 10, 60, np.random.default_rng(7))
    for n_bad in (10, 25):
        hit = _mixture_error(10.0, 10, 60, np.random.default_rng(7), n_bad, attack)
        assert hit < 1.5 * clean


def test_iteration_bound_worked_examples():
    assert iterations_bound(0.1, 1.0, 0.25) == 18  # 17.2 rounded up
    assert iterations_bound(0.1, 1.0, 0.1) == 45  # 44.9
    assert iterations_bound(2.0, 1.0, 0.25) == 1


def test_batched_receivers_match_one_by_one():
    rng = np.random.default_rng(8)
    z = torch.tensor(rng.normal(size=(3, 12, 4)), dtype=F64)
    init = z[:, :2]
    rule = QuantileRadius(0.3)
    together = threshold_clustering(z, init, 5, rule).centers
    for r in range(3):
        alone = threshold_clustering(z[r], init[r], 5, rule).centers
        assert torch.allclose(together[r], alone, atol=1e-12)


def test_bad_inputs_are_clear_errors():
    with pytest.raises(ValueError, match="q"):
        QuantileRadius(1.5)
    with pytest.raises(ValueError, match="tau"):
        FixedRadius(0.0)
    with pytest.raises(ValueError, match="must agree"):
        threshold_clustering(torch.zeros(5, 3), torch.zeros(1, 2), 1, FixedRadius(1.0))
