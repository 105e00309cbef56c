"""Federated-Clustering's theory (Werner 2024, ch. 2; Werner et al. 2023): Theorem 2's
construction, Lemma 1's constants, Assumption 5 at the optima, the variance lemmas, and their
registry verdicts."""

import itertools
import math
from fractions import Fraction as F

import numpy as np
import pytest

from econ.propositions import Status, registered
from learning.theory import clustering_lemma1_propositions as cl
from learning.theory import clustering_propositions as ct
from learning.theory import clustering_variance_propositions as cv
from learning.theory.clustering import a5_largest_gap, two_point_construction
from learning.theory.clustering_lemma1 import (
    lemma1_constants,
    lemma1_slacks,
    random_quadratic_clusters,
)
from learning.theory.clustering_variance import ema_variance

#: The modules whose entries these tests recompute (the chapter has others).
MODULES = (ct.__name__, cl.__name__, cv.__name__)


def test_registry_verdicts_agree_with_expectations():
    props = [p for p in registered() if p.check.__module__ in MODULES]
    assert len(props) == 14
    for prop in props:
        verdict = prop.check()
        assert verdict.holds == prop.holds, (prop.id, verdict.evidence)
        if not prop.holds:
            assert verdict.status is Status.REFUTED and verdict.counterexample
            assert any(p.id == f"{prop.id}.corrected" for p in props)


def test_theorem2_worked_numbers():
    c = two_point_construction(1.0, 2.0)
    assert c.p == pytest.approx(0.14645, abs=1e-5)
    assert c.atom == pytest.approx(2.8284, abs=1e-4)
    assert c.atom**2 * c.p * (1 - c.p) == pytest.approx(1.0, abs=1e-12)
    assert (1 - 2 * c.p) * c.atom == pytest.approx(2.0, abs=1e-12)
    assert c.error == pytest.approx(0.04289, abs=1e-5)
    edge = two_point_construction(1.0, math.sqrt(2.0))
    assert edge.error == pytest.approx(0.066987, abs=1e-6)  # not >= 1/(4 Delta^2) = 0.125
    assert edge.error / (1 / 2) == pytest.approx((2 - math.sqrt(3)) / 2, rel=1e-12)


@pytest.mark.parametrize("ratio", [math.sqrt(2), 2.0, 5.0, 30.0, 1e3])
def test_theorem2_bound_for_separated_mixtures(ratio):
    sigma = 0.7
    gap = ratio * sigma
    error = two_point_construction(sigma, gap).error
    assert error >= 0.1339 * sigma**4 / gap**2
    assert error <= 0.25 * sigma**4 / gap**2


def test_lemma1_at_1000_random_points():
    rng = np.random.default_rng(14)
    mu, smoothness = 0.5, 4.0
    problem = random_quadratic_clusters(rng, 3, 4, 5, mu, smoothness)
    eig = np.linalg.eigvalsh(problem.hessians)
    assert eig.min() == pytest.approx(mu) and eig.max() == pytest.approx(smoothness)
    assert lemma1_constants(smoothness, mu) == pytest.approx((16.0, math.sqrt(2 * 65)))
    printed_fails = 0
    for _ in range(1000):
        x = problem.optima[rng.integers(3)] + rng.normal(
            scale=rng.choice([0.01, 1.0, 10.0]), size=5
        )
        slacks = lemma1_slacks(problem, x, smoothness, mu)
        assert slacks["a4"].min() >= -1e-9
        assert slacks["a5_pair"].min() >= -1e-9
        printed_fails += int(slacks["a5_printed"].min() < 0)
    # the printed max-form of A5 fails near the optima (thesis.ch2.lemma1.a5)
    assert printed_fails > 0


def test_lemma14_ema_variance_closed_form():
    assert ema_variance(0.1, 1.0) == pytest.approx(1 / 19)  # 0.0526
    assert ema_variance(0.1, 1.0) <= 0.1
    assert ema_variance(0.3, 2.0, 0) == 0.0
    assert ema_variance(1.0, 2.0, 5) == pytest.approx(2.0)
    values = [ema_variance(0.2, 1.0, t) for t in range(50)]
    assert all(a <= b <= 0.2 for a, b in itertools.pairwise(values))
    with pytest.raises(ValueError, match="alpha"):
        ema_variance(0.0, 1.0)


def test_a5_largest_gap_of_two_quadratics():
    one = np.ones((1, 1))
    # equal curvature: grad f_i - grad f_j is the constant c, so Delta = c for every D
    for d in (0.0, 1.0, 5.0):
        assert a5_largest_gap((one, one), (np.zeros(1), np.full(1, 0.5)), d) == pytest.approx(0.5)
    # curvatures 1 and 10: the difference vanishes at x = 10/9, where |grad f_i| = 10/9,
    # so Delta^2 = min over both orders of the quadratic's minimum
    gap = a5_largest_gap((one, 10 * one), (np.zeros(1), np.ones(1)), 3.0)
    x = np.linspace(-3, 3, 600001)
    fi, fj = x, 10 * (x - 1)
    brute = min(np.min((fi - fj) ** 2 + 9 * fi**2), np.min((fi - fj) ** 2 + 9 * fj**2))
    assert gap**2 == pytest.approx(brute, rel=1e-6)
    assert gap**2 <= 1.0  # <= ||grad f_i(x_j*)||^2 = 1, as A5 at x_j* requires


def test_lemma4_variance_grows_inside_theorem1_regime():

    atoms, probs, centre, radius = (
        (F(-3), F(-5, 2), F(3)),
        (F(1, 10), F(7, 10), F(1, 5)),
        F(3, 4),
        F(7, 2),
    )
    mean = sum(p * z for z, p in zip(atoms, probs, strict=True))
    var_z = sum(p * (z - mean) ** 2 for z, p in zip(atoms, probs, strict=True))
    c2 = (centre - mean) ** 2
    assert c2 <= var_z <= radius**2
    y = [z if abs(z - centre) <= radius else centre for z in atoms]
    assert y == [centre, F(-5, 2), F(3)]
    mean_y = sum(p * v for v, p in zip(y, probs, strict=True))
    var_y = sum(p * (v - mean_y) ** 2 for v, p in zip(y, probs, strict=True))
    assert var_y / var_z == F(2707, 2652) > 1
    verdict = cv._lemma4_printed()
    assert not verdict.holds and verdict.counterexample["inside_regime"]["ratio"] == "2707/2652"


def test_theorem2_p_is_signed_by_sympy():
    verdict = ct._thm2_construction()
    assert verdict.holds and "4*sigma**2 > 0" in verdict.evidence
