"""Model qualities, and the market of any path of them: ties, zeros and overtaking
(Werner 2024, ch. 3, §3.2; econ.oligopoly for n firms)."""

import json
from types import SimpleNamespace

import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st

from collabecon.cli import demo
from econ import ModelQualities
from econ.market import market_history, market_round, sampled_market
from econ.oligopoly import deviation_gains
from econ.qualities import (
    baseline_loss,
    loss_quality,
    mean_interval,
    qualities_from_predictions,
    wilson_interval,
)
from games.defection_free import SCHEMES, Play, report, scheme_claims
from games.defection_free.figures import run_figure_data, write_figures


def test_roundtrip_and_lookup():
    mq = ModelQualities.from_mapping({"low": 0.3, "high": 0.8}, n_eval=1000)
    assert mq["high"] == 0.8 and len(mq) == 2
    assert mq.n_eval.tolist() == [1000, 1000]
    assert mq.to_dict()["metric"] == "accuracy"
    np.testing.assert_allclose(mq.standard_error(), np.sqrt([0.3 * 0.7, 0.8 * 0.2]) / np.sqrt(1000))


def test_is_frozen_and_read_only():
    mq = ModelQualities.from_mapping({"a": 0.5})
    with pytest.raises(AttributeError):
        mq.metric = "1-loss"
    with pytest.raises(ValueError):
        mq.quality[0] = 0.1


@pytest.mark.parametrize(
    ("kwargs", "match"),
    [
        (
            {"names": ("a",), "quality": [1.2], "metric": "accuracy", "n_eval": [1]},
            r"quality must lie in \[0, 1\]",
        ),
        (
            {"names": ("a",), "quality": [np.nan], "metric": "accuracy", "n_eval": [1]},
            "quality must be finite",
        ),
        (
            {"names": ("a", "b"), "quality": [0.2], "metric": "accuracy", "n_eval": [1, 1]},
            "matching lengths",
        ),
        (
            {"names": ("a", "a"), "quality": [0.2, 0.3], "metric": "accuracy", "n_eval": [1, 1]},
            "distinct",
        ),
        ({"names": ("a",), "quality": [0.2], "metric": "accuracy", "n_eval": [0]}, "n_eval"),
        ({"names": (), "quality": [], "metric": "accuracy", "n_eval": []}, "at least one"),
    ],
)
def test_bad_input_is_named(kwargs, match):
    with pytest.raises(ValueError, match=match):
        ModelQualities(**kwargs)


# --------------------------------------------------------------------------- any measured path

#: Measured accuracies k / n_eval (n_eval up to 10^9): a few values, so that ties are common,
#: 0 and 1 among them, and any fraction.
_QUALITY = st.sampled_from([0.0, 0.25, 0.5, 0.578, 0.644, 0.689, 0.711, 0.778, 1.0]) | st.integers(
    0, 10**9
).map(lambda k: k / 10**9)


def _play(ql, qh, scheme="defection-free"):
    measured = tuple(
        ModelQualities.from_mapping({"low": a, "high": b}) for a, b in zip(ql, qh, strict=True)
    )
    nan = np.full(len(ql), np.nan)
    return Play(scheme, np.array(ql), np.array(qh), nan, nan, measured)


def _market_checks(m, quality):
    for f in ("price", "share", "revenue"):
        assert np.all(np.asarray(getattr(m, f)) >= 0), f
    assert np.all(np.asarray(m.consumer_surplus) >= 0)
    total = m.revenue.sum(axis=-1)
    np.testing.assert_allclose(m.welfare, np.asarray(m.consumer_surplus) + total, atol=1e-12)
    np.testing.assert_allclose(m.revenue, m.price * m.share, atol=1e-15)
    assert np.all(m.share.sum(axis=-1) <= 1 + 1e-12)


@given(
    path=st.lists(st.tuples(_QUALITY, _QUALITY), min_size=2, max_size=8),
    q_max=st.floats(0.0, 1.0, exclude_min=True),
    tolerance=st.sampled_from([0.0, 0.01]),
)
def test_any_duopoly_path_is_reported(path, q_max, tolerance):
    """Ties, zeros and overtaking: the defection-free report, the claims of every scheme and
    the demo's table are defined, with revenues >= 0 and welfare = CS + revenues."""
    ql, qh = [a for a, _ in path], [b for _, b in path]
    reports = {s: report(_play(ql, qh, s), q_max=q_max, tolerance=tolerance) for s in SCHEMES}
    for rep in reports.values():
        for row in rep.rows:
            assert row["U_l"] >= 0 and row["U_h"] >= 0 and row["consumer_surplus"] >= 0
            assert row["welfare"] == pytest.approx(
                row["consumer_surplus"] + row["U_l"] + row["U_h"], abs=1e-12
            )
            assert row["swapped"] == (row["q_l"] > row["q_h"])
        assert np.isfinite(rep.nash_max) and np.isfinite(rep.final_nash_gap)
        json.dumps(rep.to_dict())
    claims = scheme_claims(reports)
    assert len(claims) == 8 and all(isinstance(c.holds, bool) for c in claims)
    runs = {s: SimpleNamespace(report=r) for s, r in reports.items()}
    assert len(demo._display_rows({"table": demo._market_rows(runs)})) == len(SCHEMES)
    history = market_history(_play(ql, qh).qualities())
    _market_checks(history, history.quality)
    np.testing.assert_allclose(history.revenue[:, 0], [r["U_l"] for r in reports["complete"].rows])
    np.testing.assert_allclose(history.revenue[:, 1], [r["U_h"] for r in reports["complete"].rows])


@given(
    n=st.integers(1, 12),
    data=st.data(),
)
def test_any_path_of_many_firms_is_a_market(n, data):
    rounds = data.draw(st.integers(1, 4))
    path = [data.draw(st.lists(_QUALITY, min_size=n, max_size=n)) for _ in range(rounds)]
    names = {f"client{i}": 0.0 for i in range(n)}
    history = market_history(
        [ModelQualities.from_mapping(dict(zip(names, q, strict=True))) for q in path]
    )
    _market_checks(history, history.quality)
    last = market_round(path[-1])
    gains = deviation_gains(last.quality, last.price, grid=201)
    assert np.all(gains <= 1e-9)
    sampled = sampled_market(path[-1], 200, seed=0)
    assert np.all(sampled.share >= 0) and sampled.share.sum() <= 1 + 1e-12


def test_the_run_figures_of_a_path_with_ties_zeros_and_overtaking(tmp_path):
    ql, qh = [0.0, 0.5, 0.8, 0.9, 0.9, 0.0], [0.0, 0.8, 0.8, 0.8, 0.9, 1.0]
    reports = {s: report(_play(ql, qh, s), q_max=1.0) for s in SCHEMES}
    written = write_figures({"defection-free": reports["defection-free"]}, tmp_path)
    assert written and all((tmp_path / p).exists() for p in written)
    data = run_figure_data(reports["defection-free"])
    assert np.all(data["U_l"] >= 0) and np.all(data["U_h"] >= 0)


def test_models_that_never_beat_quality_zero_have_no_nash_gain():
    rep = report(_play([0.0, 0.0, 0.0], [0.0, 0.0, 0.0]), q_max=0.9)
    assert rep.nash_max == 0.0 and rep.final_nash_gap == 0.0
    assert all(r["U_l"] == r["U_h"] == r["welfare"] == 0.0 for r in rep.rows)


# --------------------------------------------------------------------------- intervals


def test_wilson_interval_matches_the_closed_form_and_is_no_point_at_the_ends():
    low, high = wilson_interval([0, 8, 10], 10, 0.95)
    z = 1.959963984540054
    p = 0.8
    centre = (p + z * z / 20) / (1 + z * z / 10)
    half = z / (1 + z * z / 10) * np.sqrt(p * (1 - p) / 10 + z * z / 400)
    np.testing.assert_allclose([low[1], high[1]], [centre - half, centre + half], rtol=1e-12)
    assert low[0] == 0.0 < high[0] and low[2] < high[2] == 1.0


def test_mean_interval_and_its_degenerate_cases():
    mean, low, high = mean_interval([1.0, 2.0, 3.0], 0.9)
    half = 1.6448536269514722 * 1.0 / np.sqrt(3)
    np.testing.assert_allclose([mean, low, high], [2.0, 2.0 - half, 2.0 + half])
    assert mean_interval([2.0]) == (2.0, -np.inf, np.inf)
    assert mean_interval([1.0, np.inf]) == (np.inf, np.inf, np.inf)


def test_one_minus_loss_and_its_baseline_have_one_home():
    assert baseline_loss([0, 1], 4) == np.log(4)
    np.testing.assert_array_equal(loss_quality([0.0, np.log(2), np.inf], np.log(4)), [1, 0.5, 0])
    with pytest.raises(ValueError, match="baseline loss L0 must be > 0"):
        loss_quality(1.0, 0.0)


def test_predictions_give_counts_and_intervals_that_round_trip():
    q = qualities_from_predictions({"a": [0, 1, 1, 1], "b": [[0.9, 0.1]] * 4}, [0, 1, 1, 1])
    assert q.quality.tolist() == [1.0, 0.25] and q.n_eval.tolist() == [4, 4]
    assert ModelQualities(**q.to_dict()).to_dict() == q.to_dict()
    assert q.to_frame().columns.tolist()[-2:] == ["low", "high"]


@pytest.mark.parametrize(
    ("extra", "match"),
    [
        ({"low": [0.1]}, "give all three or none"),
        ({"low": [0.6], "high": [0.9], "confidence": 0.95}, "must contain its quality 0.5"),
        ({"low": [0.1], "high": [0.9], "confidence": 1.5}, "confidence must lie"),
        ({"low": [0.1, 0.2], "high": [0.9, 0.9], "confidence": 0.9}, "one number per party"),
    ],
)
def test_a_bad_interval_is_refused(extra, match):
    with pytest.raises(ValueError, match=match):
        ModelQualities(names=("a",), quality=[0.5], metric="accuracy", n_eval=[10], **extra)
