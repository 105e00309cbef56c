"""Claims of the clustering paper (Werner et al. 2023) checked end to end: the variance
lemmas through Momentum-Clustering's momentum and the engine's minibatches, the A^2 / Delta^2
diagnostics of Fig. 2 (K = 4 clusters of 75 clients, n = 9, d = 10) and the
clipping-iteration study of §4.3 / Fig. 4.

Reference values marked "port" come from an independent numpy port of the authors'
published synthetic code (same data, same procedure); the paper prints only the figures."""

import itertools
import math

import numpy as np
import pytest
import torch

from collabecon.reproductions.clustering import clipping_curve, fig2_diagnostics, regression, setup
from learning.algorithms.federated_clustering import momentum_update, separation_diagnostics
from learning.algorithms.threshold_clustering import (
    elbow,
    excess_contraction,
)
from learning.all_pairs import client_batches, flatten
from learning.engine import select
from learning.theory.clustering_variance import ema_variance

# ------------------- variance lemmas (Werner 2024, Lemmas 7 and 14 = Werner et al. 2023, 6 and 13)


@pytest.mark.parametrize(("alpha", "steps"), [(0.1, 5), (0.1, 200), (0.5, 3)])
def test_momentum_variance_of_iid_gradients(alpha, steps):
    generator = torch.Generator().manual_seed(15)
    sequences, dim, sigma2 = 20_000, 5, 2.0  # total variance sigma^2 over the coordinates
    m = torch.zeros(sequences, dim, dtype=torch.float64)
    for _ in range(steps):
        noise = torch.randn(sequences, dim, generator=generator, dtype=torch.float64)
        m = momentum_update(m, noise * math.sqrt(sigma2 / dim), alpha)
    measured = float(m.square().sum(1).mean())
    assert measured == pytest.approx(ema_variance(alpha, sigma2, steps), rel=0.03)
    assert measured <= 1.03 * alpha * sigma2


@pytest.mark.parametrize("batch", [1, 3, 9])
def test_minibatch_gradient_variance(batch):
    """Lemma 7 bounds the variance of a minibatch gradient by sigma^2/|B|; the engine's
    batches are drawn without replacement within a client, which gives exactly the finite
    population value sigma^2/|B| (m - |B|)/(m - 1) <= sigma^2/|B| (m = 9 examples)."""
    truth, start, clusters, train = regression(4, 4)
    algorithm, models = setup("local", truth, start, clusters, train, 0.01)
    engine, draws = algorithm.ctx.engine, 4000
    at = select(models, np.zeros(draws, dtype=np.int64))  # client 0's start, every draw
    x0, y0 = train.x[:9], train.y[:9]  # client 0's examples, one per model
    per_sample, _ = engine.gradients(
        select(models, np.zeros(9, dtype=np.int64)), x0[:, None], y0[:, None]
    )
    per_sample = flatten(per_sample).double()
    sigma2 = float((per_sample - per_sample.mean(0)).square().sum(1).mean())
    x, y = client_batches(train, np.zeros(draws, dtype=np.int64), batch, np.random.default_rng(9))
    grads = flatten(engine.gradients(at, x, y)[0]).double()
    measured = float((grads - per_sample.mean(0)).square().sum(1).mean())
    expected = sigma2 / batch * (9 - batch) / 8
    assert measured == pytest.approx(expected, rel=0.08, abs=1e-6 * sigma2)
    assert measured <= 1.08 * sigma2 / batch


# ------------------------------------------------------------------ Fig. 2


def _check_fig2(epochs):
    a2, d2 = fig2_diagnostics(epochs)
    # port: max A^2 ~ 6.1, mean ~ 0.40; min Delta^2 ~ 2.7e5, mean ~ 2.6e6; all flat
    assert 5.5 < float(a2.max()) < 6.7 and 0.36 < float(a2.mean()) < 0.44
    assert 2.4e5 < float(d2.min()) < 3.0e5 and 2.3e6 < float(d2.mean()) < 2.9e6
    per_epoch_max, per_epoch_min = a2.max(1).values, d2.min(1).values
    assert float(per_epoch_max.max() / per_epoch_max.min()) < 1.01
    assert float(per_epoch_min.max() / per_epoch_min.min()) < 1.01


def test_fig2_assumptions_hold_and_stay_flat_25_epochs():
    _check_fig2(25)


def test_fig2_assumptions_hold_and_stay_flat_100_epochs():
    _check_fig2(100)


def test_separation_diagnostics_on_a_hand_example():
    grads = torch.tensor([[1.0, 0.0], [3.0, 0.0], [0.0, 10.0], [0.0, 10.0]], dtype=torch.float64)
    a2, d2 = separation_diagnostics(grads, torch.tensor([0, 0, 1, 1]))
    assert torch.allclose(a2, torch.tensor([0.25, 0.25, 0.0, 0.0], dtype=torch.float64))
    assert torch.allclose(d2, torch.tensor([101.0, 109.0, 101.0, 101.0], dtype=torch.float64))


# ------------------------------------------------------------------ clipping study (Fig. 4)

CLIPPING_FLOORS = {0.5: 1.50, 1.0: 2.95, 2.0: 5.94, 4.0: 13.18}  # port, +-5%


_clipping_curve = clipping_curve


@pytest.mark.parametrize("std", list(CLIPPING_FLOORS))
def test_clipping_curves_reach_their_floors(std):
    curve = _clipping_curve(std)
    assert curve.min() == pytest.approx(CLIPPING_FLOORS[std], rel=0.05)
    if std <= 2:
        assert all(a >= b for a, b in itertools.pairwise(curve))
        assert curve.min() == pytest.approx(0.95 * std * math.sqrt(10), rel=0.05)
    else:  # overlapping clusters: higher than 0.95 sigma sqrt(d)
        assert curve.min() > 1.03 * 0.95 * std * math.sqrt(10)
    assert 0.81 <= excess_contraction(curve, 10) <= 0.85


@pytest.mark.xfail(
    strict=True,
    reason="clipping study, sigma = 4: the curve is not monotone; it bottoms out at 13.31 at "
    "l = 30 and rises to 13.41 by l = 49 (overlapping clusters change the inside set), "
    "10 seeds x 10 clusters; the floor itself is within 1% of the port's 13.18",
)
def test_clipping_curve_for_sigma_4_is_monotone():
    assert all(a >= b for a, b in itertools.pairwise(_clipping_curve(4.0)))


def test_elbow_grows_with_sigma():
    elbows = [elbow(_clipping_curve(std)) for std in CLIPPING_FLOORS]
    assert all(a < b for a, b in itertools.pairwise(elbows))
    for got, want in zip(elbows, (6.1, 9.0, 12.0, 20.8), strict=True):  # port
        assert got == pytest.approx(want, rel=0.15)


def test_elbow_and_contraction_of_a_geometric_curve():
    curve = 1.0 + 0.8 ** np.arange(60)
    assert excess_contraction(curve, 10) == pytest.approx(0.8, rel=1e-3)
    assert np.isfinite(elbow(curve))
    with pytest.raises(ValueError, match="curve"):
        elbow(np.ones(3))


# ------------------------------------------------------------------ the reproduction's claims


def _measured(final, seeds=3, growth=1.0, delta2=2.7e5, curves=None):
    """A :func:`clustering.measure`-shaped result with the given final errors per panel and
    method (the same on every seed but for a +-1 % wobble)."""
    wobble = np.linspace(-0.01, 0.01, seeds)

    def stats(v):
        per = [v * (1 + w) for w in wobble]
        return {"per_seed": per, "mean": float(np.mean(per)), "std": float(np.std(per, ddof=1))}

    fig3 = {
        key: {
            "epochs": 800,
            "final": {m: stats(v) for m, v in methods.items()},
            "epoch100": {m: stats(v) for m, v in methods.items()},
        }
        for key, methods in final.items()
    }
    curves = curves or {str(s): [3.0 * s, 2.0 * s, 1.5 * s, 1.4 * s] for s in (0.5, 1.0, 2.0)}
    fig4 = {
        s: {
            "curve": c,
            "floor": min(c),
            "elbow": float(len(c) * float(s)),
            "monotone": all(a >= b for a, b in itertools.pairwise(c)),
            "largest_rise": max(0.0, *(b - a for a, b in itertools.pairwise(c))),
        }
        for s, c in curves.items()
    }
    fig2 = [{"max_a2": 6.1, "a2_growth": growth, "min_delta2": delta2, "finite": True}] * seeds
    return {"seeds": list(range(seeds)), "fig3": fig3, "fig2": fig2, "fig4": fig4}


#: final errors shaped as in the paper's Fig. 3: FC below the non-oracle baselines, GT below FC
#: at (4, 4), FC ~ GT at (4, 16)
_SHAPED = {
    "4x4": {"oracle": 1.0e-5, "fc": 1.5e-5, "local": 0.12, "ifca": 0.0115, "fedavg": 190.0},
    "4x16": {"oracle": 5.6e-6, "fc": 5.7e-6, "local": 0.084, "ifca": 4.5e-4, "fedavg": 133.0},
    "16x4": {"oracle": 0.0092, "fc": 0.018, "local": 0.121, "ifca": 0.207, "fedavg": 194.0},
}


def test_clustering_claims_hold_on_the_papers_shape_and_fail_off_it():
    from collabecon.reproductions.clustering import claims

    held = {c.id: c for c in claims(_measured(_SHAPED))}
    assert all(c.holds for c in held.values()), [i for i, c in held.items() if not c.holds]
    assert len(held) == 9 + 4 + 2 + 3 + 1
    assert {"fig3.4x4.gt<fc", "fig3.16x4.gt<fc"} <= set(held)
    assert {f"fig3.{k}.fc<{b}" for k in _SHAPED for b in ("local", "ifca", "fedavg")} <= set(held)
    worse = {k: dict(v) for k, v in _SHAPED.items()}
    worse["16x4"]["fc"] = 0.3  # above Local and IFCA-M
    worse["16x4"]["oracle"] = 0.5  # GT behind FC at small n_i
    worse["4x16"]["fc"] = 2 * worse["4x16"]["oracle"]  # the gap grows with n_i
    rising = {"0.5": [1.5, 1.0, 1.1], "1.0": [3.0, 2.0, 1.9]}
    off = {c.id: c for c in claims(_measured(worse, growth=1.5, delta2=0.0, curves=rising))}
    assert not off["fig3.16x4.fc<local"].holds and not off["fig3.16x4.fc<ifca"].holds
    assert off["fig3.16x4.fc<fedavg"].holds
    assert not off["fig3.16x4.gt<fc"].holds and off["fig3.4x4.gt<fc"].holds
    assert not off["fig3.gap-vanishes-with-n_i"].holds and not off["fig3.4x16.fc~gt"].holds
    assert not off["fig2.a2-bounded"].holds and not off["fig2.delta2-positive"].holds
    assert not off["fig4.sigma0.5.decreasing"].holds and off["fig4.sigma1.0.decreasing"].holds
    assert off["fig3.16x4.fc<local"].measured["FC"] == pytest.approx(0.3)


def test_a_margin_inside_the_seed_spread_is_noted():
    from collabecon.reproductions.clustering import _spread_note

    final = {
        "a": {"per_seed": [1.0, 2.0, 3.0], "mean": 2.0},
        "b": {"per_seed": [3.0, 2.1, 1.2], "mean": 2.1},
        "far": {"per_seed": [11.0, 12.0, 13.0], "mean": 12.0},
    }
    measured = {"seeds": [0, 1, 2], "fig3": {"4x4": {"final": final}}}
    assert "within the seed-to-seed spread" in _spread_note(measured, "4x4", "a", "b")
    assert _spread_note(measured, "4x4", "a", "far") == ""


def test_reproduce_refuses_bad_arguments(tmp_path):
    from collabecon.reproductions.clustering import reproduce

    with pytest.raises(ValueError, match="scale"):
        reproduce("huge", tmp_path)
    with pytest.raises(ValueError, match="seeds"):
        reproduce("small", tmp_path, seeds=0)


#: claims of the synthetic experiments that do not hold at small scale: id -> measured
SMALL_SCALE_MISSES: dict[str, str] = {
    "fig4.sigma4.0.decreasing": "sigma = 4: the curve bottoms out at 13.31 at l = 30 and "
    "rises to 13.41 by l = 49 (overlapping clusters change the inside set), 10 repetitions x "
    "10 clusters",
}


def _clustering_claim_ids():
    from collabecon.reproductions.clustering import claims

    return [
        c.id
        for c in claims(
            _measured(_SHAPED, curves={str(s): [2.0, 1.0] for s in (0.5, 1.0, 2.0, 4.0)})
        )
    ]


@pytest.fixture(scope="module")
def small_clustering(tmp_path_factory):
    from collabecon.reproductions.clustering import reproduce

    return {c.id: c for c in reproduce("small", tmp_path_factory.mktemp("clustering")).claims}


@pytest.mark.slow
@pytest.mark.parametrize(
    "claim_id",
    [
        pytest.param(
            i,
            marks=pytest.mark.xfail(strict=True, reason=SMALL_SCALE_MISSES[i])
            if i in SMALL_SCALE_MISSES
            else (),
        )
        for i in _clustering_claim_ids()
    ],
)
def test_synthetic_claim_at_small_scale(small_clustering, claim_id):
    claim = small_clustering[claim_id]
    assert claim.holds, (claim.measured, claim.note)
