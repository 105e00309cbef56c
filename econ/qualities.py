r"""The seam between the learning backend and the economics: model qualities.

The learning backend (``learning/qualities.py``) is the one place that turns trained models
into a :class:`ModelQualities`; markets and mechanisms consume it and never see a tensor.
:func:`qualities_from_predictions` turns what any classifier predicted on a common target
set (predicted labels or class probabilities, with the true labels) into qualities with a
confidence interval per party, so models trained anywhere reach the same markets.

The quality of a model on the target set (the duopoly's :math:`D_{target}`, Werner 2024,
ch. 3 §3.5) is either its accuracy, or one minus its normalised loss (:func:`loss_quality`),

.. math::

    q = \max\Bigl(0,\; 1 - \frac{L(w)}{L_0}\Bigr),

where :math:`L_0` is the loss of the best constant prediction on the same set
(:func:`baseline_loss`): :math:`\log C` (cross-entropy of the uniform distribution over
:math:`C` classes) for classification, the variance of the targets (squared error of their
mean) for regression. So :math:`q = 0` is "no better than knowing nothing about the input",
:math:`q = 1` a perfect fit.
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from dataclasses import dataclass
from statistics import NormalDist
from typing import Any

import numpy as np
from numpy.typing import ArrayLike, NDArray

from econ.outputs import frame, plain
from econ.validation import choice, in_interval, unit_interval

METRICS = ("accuracy", "1-loss")
#: How far a row of class probabilities may sum from 1 (probabilities written with six
#: decimals, such as 1/3, sum to within 3e-6 of it).
PROBABILITY_SUM_TOLERANCE = 1e-4


@dataclass(frozen=True, slots=True, kw_only=True)
class ModelQualities:
    """Qualities of the models of several parties on a common target set.

    Parameters
    ----------
    names
        One name per party (firm, client, cluster).
    quality
        Quality in [0, 1] of each party's model: accuracy, or 1 - normalised loss.
    metric
        What ``quality`` measures, e.g. ``"accuracy"`` or ``"1-loss"``.
    n_eval
        How many target examples each number rests on (>= 1).
    low, high
        Optional: the ends of a confidence interval for each quality,
        ``0 <= low <= quality <= high <= 1`` (:func:`qualities_from_predictions`); both or
        neither, with ``confidence``.
    confidence
        The confidence level of ``low`` and ``high``, in (0, 1).

    References
    ----------
    Werner (2024), ch. 3, §3.2 and §3.5: a model's quality is its accuracy on the common
    target set :math:`D_{target}` that consumers care about.

    Examples
    --------
    >>> q = ModelQualities.from_mapping({"low": 0.711, "high": 0.778}, n_eval=1000)
    >>> q["high"], len(q)
    (0.778, 2)
    >>> q.standard_error().round(4).tolist()  # sqrt(q (1 - q) / n_eval)
    [0.0143, 0.0131]
    """

    names: tuple[str, ...]
    quality: NDArray[np.float64]
    metric: str
    n_eval: NDArray[np.int64]
    low: NDArray[np.float64] | None = None
    high: NDArray[np.float64] | None = None
    confidence: float | None = None

    def __post_init__(self) -> None:
        """Check the fields and store them as read-only arrays.

        Names distinct and at least one; qualities in [0, 1]; ``n_eval`` integers >= 1, a scalar
        broadcast to every party; matching lengths; a non-empty ``metric``; an interval, when
        given, around every quality, with its confidence level.
        """
        names = tuple(str(n) for n in self.names)
        if not names:
            raise ValueError("names must name at least one party, got ()")
        if len(set(names)) != len(names):
            raise ValueError(f"names must be distinct, got {names!r}")
        quality = unit_interval("quality", self.quality).reshape(-1)
        n_eval = np.asarray(self.n_eval)
        if n_eval.ndim == 0:
            n_eval = np.full(len(names), n_eval)
        if n_eval.dtype.kind not in "iu" or (n_eval < 1).any():  # integers (not bool) >= 1
            raise ValueError(f"n_eval must hold integers >= 1, got {n_eval!r}")
        if not (len(names) == quality.shape[0] == n_eval.shape[0]):
            raise ValueError(
                "names, quality and n_eval must have matching lengths, got "
                f"{len(names)}, {quality.shape[0]} and {n_eval.shape[0]}"
            )
        if not isinstance(self.metric, str) or not self.metric:
            raise ValueError(f"metric must be a non-empty string, got {self.metric!r}")
        quality.setflags(write=False)
        n_eval = n_eval.astype(np.int64)
        n_eval.setflags(write=False)
        object.__setattr__(self, "names", names)
        object.__setattr__(self, "quality", quality)
        object.__setattr__(self, "n_eval", n_eval)
        self._check_interval()

    def _check_interval(self) -> None:
        if self.low is None and self.high is None and self.confidence is None:
            return
        if self.low is None or self.high is None or self.confidence is None:
            raise ValueError("low, high and confidence come together: give all three or none")
        confidence = float(
            in_interval("confidence", self.confidence, 0.0, 1.0, low_open=True, high_open=True)
        )
        low = unit_interval("low", self.low).reshape(-1)
        high = unit_interval("high", self.high).reshape(-1)
        if not (low.shape == high.shape == self.quality.shape):
            raise ValueError(
                f"low and high must hold one number per party ({len(self.names)}), got "
                f"{low.shape[0]} and {high.shape[0]}"
            )
        outside = np.flatnonzero((low > self.quality) | (self.quality > high))
        if outside.size:
            i = int(outside[0])
            raise ValueError(
                f"the interval [{low[i]:g}, {high[i]:g}] of {self.names[i]!r} must contain its "
                f"quality {self.quality[i]:g}"
            )
        low.setflags(write=False)
        high.setflags(write=False)
        object.__setattr__(self, "low", low)
        object.__setattr__(self, "high", high)
        object.__setattr__(self, "confidence", confidence)

    @classmethod
    def from_mapping(
        cls, qualities: dict[str, float], *, metric: str = "accuracy", n_eval: ArrayLike = 1
    ) -> ModelQualities:
        """Build from ``{name: quality}``; ``n_eval`` is broadcast to every party."""
        names = tuple(qualities)
        n = np.broadcast_to(np.asarray(n_eval, dtype=np.int64), (len(names),)).copy()
        return cls(names=names, quality=np.array(list(qualities.values())), metric=metric, n_eval=n)

    def __len__(self) -> int:
        """The number of parties."""
        return len(self.names)

    def __getitem__(self, name: str) -> float:
        """The quality of the party called ``name``."""
        return float(self.quality[self.names.index(name)])

    def standard_error(self) -> NDArray[np.float64]:
        """Binomial standard error ``sqrt(q (1 - q) / n_eval)`` of each accuracy."""
        return np.sqrt(self.quality * (1.0 - self.quality) / self.n_eval)

    def to_dict(self) -> dict[str, Any]:
        """Plain JSON-ready form; ``low``, ``high`` and ``confidence`` when there is an interval."""
        out: dict[str, Any] = {
            "names": self.names,
            "quality": self.quality,
            "metric": self.metric,
            "n_eval": self.n_eval,
        }
        if self.confidence is not None:
            out.update(low=self.low, high=self.high, confidence=self.confidence)
        return plain(out)

    def to_frame(self) -> Any:
        """A pandas DataFrame indexed by name (needs pandas).

        Columns: quality, its standard error and n_eval; low and high when there is an
        interval.
        """
        columns: dict[str, Any] = {
            "name": list(self.names),
            "quality": self.quality,
            "standard_error": self.standard_error(),
            "n_eval": self.n_eval,
        }
        if self.confidence is not None:
            columns.update(low=self.low, high=self.high)
        return frame(columns, "ModelQualities").set_index("name")


def baseline_loss(y: ArrayLike, n_classes: int) -> float:
    r"""The loss :math:`L_0` of knowing nothing about the input, on a target set.

    :math:`\log C` for a classification into ``n_classes`` :math:`= C > 0` classes (the
    cross-entropy of the uniform prediction, the best constant one on a balanced target
    set); the variance of the targets ``y`` when ``n_classes`` is 0 (regression: the squared
    error of their mean).

    Raises
    ------
    ValueError
        Regression targets that do not vary (:math:`L_0 = 0`).

    References
    ----------
    Werner (2024), ch. 3, §3.5: qualities on the common target set :math:`D_{target}`.

    Examples
    --------
    >>> round(baseline_loss([0, 1, 2], 10), 6), baseline_loss([1.0, 3.0], 0)
    (2.302585, 1.0)
    """
    if n_classes > 0:
        return float(np.log(n_classes))
    variance = float(np.var(np.asarray(y, dtype=np.float64)))
    if variance <= 0.0:
        raise ValueError("1-loss needs target values that vary; the target set's are constant")
    return variance


def loss_quality(loss: ArrayLike, baseline: float) -> NDArray[np.float64]:
    r"""One minus the normalised loss, :math:`q = \min(1, \max(0, 1 - L / L_0))`.

    ``loss`` is a mean loss :math:`L \ge 0` (an infinite one gives 0), ``baseline`` the
    :math:`L_0 > 0` of :func:`baseline_loss` on the same target set.

    References
    ----------
    Werner (2024), ch. 3, §3.5: qualities on the common target set :math:`D_{target}`.

    Examples
    --------
    >>> loss_quality([0.0, 1.0, 5.0], 2.0).tolist()
    [1.0, 0.5, 0.0]
    """
    if not baseline > 0:
        raise ValueError(f"the baseline loss L0 must be > 0, got {baseline!r}")
    return np.asarray(np.clip(1.0 - np.asarray(loss, dtype=np.float64) / baseline, 0.0, 1.0))


def _z(confidence: float) -> float:
    r"""The two-sided normal quantile :math:`\Phi^{-1}((1 + c)/2)` of a confidence level."""
    c = float(in_interval("confidence", confidence, 0.0, 1.0, low_open=True, high_open=True))
    if not 0.5 + c / 2.0 < 1.0:  # c within 2^-53 of 1: (1 + c)/2 rounds to 1, z to infinity
        raise ValueError(f"confidence {c!r} is 1 to float precision: no finite interval")
    return NormalDist().inv_cdf(0.5 + c / 2.0)


def wilson_interval(
    hits: ArrayLike, n: ArrayLike, confidence: float = 0.95
) -> tuple[NDArray[np.float64], NDArray[np.float64]]:
    r"""Wilson score interval of a binomial proportion: ``hits`` successes in ``n`` trials.

    With :math:`\hat p = k/n` and :math:`z = \Phi^{-1}((1 + c)/2)` for the confidence
    level :math:`c`,

    .. math::

        \frac{\hat p + \frac{z^2}{2n}
              \pm z \sqrt{\frac{\hat p (1 - \hat p)}{n} + \frac{z^2}{4 n^2}}}{1 + \frac{z^2}{n}},

    the set of proportions :math:`p` with :math:`|\hat p - p| \le z \sqrt{p (1 - p)/n}`. It
    lies in [0, 1] and contains :math:`\hat p`, and unlike the normal (Wald) interval it is
    no single point when :math:`k = 0` or :math:`k = n`.

    References
    ----------
    Wilson, E. B. (1927), "Probable inference, the law of succession, and statistical
    inference", Journal of the American Statistical Association 22(158), 209-212.

    Examples
    --------
    >>> low, high = wilson_interval(8, 10)
    >>> round(float(low), 4), round(float(high), 4)
    (0.4902, 0.9433)
    """
    z = _z(confidence)
    k = np.asarray(hits, dtype=np.float64)
    m = np.asarray(n, dtype=np.float64)
    if (m < 1).any() or (k < 0).any() or (k > m).any():
        raise ValueError(f"hits must lie in [0, n] with n >= 1, got {hits!r} of {n!r}")
    p = k / m
    centre = (p + z * z / (2 * m)) / (1 + z * z / m)
    half = z / (1 + z * z / m) * np.sqrt(p * (1 - p) / m + z * z / (4 * m * m))
    # the ends contain p-hat exactly; clipping absorbs rounding at k = 0 and k = n
    return np.minimum(np.clip(centre - half, 0, 1), p), np.maximum(np.clip(centre + half, 0, 1), p)


def clopper_pearson_interval(
    hits: ArrayLike, n: ArrayLike, confidence: float = 0.95
) -> tuple[NDArray[np.float64], NDArray[np.float64]]:
    r"""Clopper-Pearson ("exact") interval of a binomial proportion: ``hits`` of ``n`` trials.

    With :math:`k` successes and :math:`\delta = 1 - c` for the confidence level :math:`c`,

    .. math::

        \bigl[\mathrm{Beta}^{-1}(\delta/2;\, k, n - k + 1),\;
               \mathrm{Beta}^{-1}(1 - \delta/2;\, k + 1, n - k)\bigr],

    the lower end 0 at :math:`k = 0` and the upper end 1 at :math:`k = n`. Each end misses
    the true proportion with probability at most :math:`\delta/2` for every :math:`p` and
    :math:`n`, so the interval covers with probability at least :math:`c` (unlike
    :func:`wilson_interval`, whose coverage dips below :math:`c` at some :math:`p`).

    References
    ----------
    Clopper, C. J., and Pearson, E. S. (1934), "The use of confidence or fiducial limits
    illustrated in the case of the binomial", Biometrika 26(4), 404-413.

    Examples
    --------
    >>> low, high = clopper_pearson_interval(8, 10)
    >>> round(float(low), 4), round(float(high), 4)
    (0.4439, 0.9748)
    """
    from scipy.stats import beta

    in_interval("confidence", confidence, 0.0, 1.0, low_open=True, high_open=True)
    k = np.asarray(hits, dtype=np.float64)
    m = np.asarray(n, dtype=np.float64)
    if (m < 1).any() or (k < 0).any() or (k > m).any():
        raise ValueError(f"hits must lie in [0, n] with n >= 1, got {hits!r} of {n!r}")
    tail = (1.0 - confidence) / 2.0
    with np.errstate(invalid="ignore"):
        low = np.where(k > 0, beta.ppf(tail, np.maximum(k, 1), m - k + 1), 0.0)
        high = np.where(k < m, beta.ppf(1.0 - tail, k + 1, np.maximum(m - k, 1)), 1.0)
    return np.asarray(low, dtype=np.float64), np.asarray(high, dtype=np.float64)


def mean_interval(values: ArrayLike, confidence: float = 0.95) -> tuple[float, float, float]:
    r"""The mean of ``values`` and a normal (central limit) interval for it.

    :math:`\bar x \pm z\, s / \sqrt{n}`, with :math:`s` the sample standard deviation
    (:math:`n - 1` in its denominator) and :math:`z = \Phi^{-1}((1 + c)/2)`. One value gives
    no spread: the interval is :math:`(-\infty, \infty)`; an infinite mean is its own
    interval.

    Returns
    -------
    (mean, low, high)

    References
    ----------
    Wasserman, L. (2004), *All of Statistics*, Springer: ch. 5 (the central limit theorem,
    also with the sample variance) and ch. 6 (normal-based confidence intervals).

    Examples
    --------
    >>> [round(v, 4) for v in mean_interval([1.0, 2.0, 3.0, 4.0])]
    [2.5, 1.2348, 3.7652]
    """
    x = np.asarray(values, dtype=np.float64).reshape(-1)
    if x.size == 0:
        raise ValueError("mean_interval needs at least one value")
    z = _z(confidence)
    mean = float(np.mean(x))
    if not math.isfinite(mean):
        return mean, mean, mean
    if x.size == 1:
        return mean, -math.inf, math.inf
    half = z * float(np.std(x, ddof=1)) / math.sqrt(x.size)
    return mean, mean - half, mean + half


def _integers(what: str, values: NDArray[Any], n_classes: int | None) -> NDArray[np.int64]:
    """Class indices: integer-valued, >= 0 and below ``n_classes`` (when known)."""
    if values.dtype.kind not in "iuf":
        raise ValueError(f"{what} must be integer class indices, got dtype {values.dtype}")
    if values.dtype.kind == "f":
        bad = np.flatnonzero(~np.isfinite(values) | (values != np.round(values)))
        if bad.size:
            i = int(bad[0])
            raise ValueError(
                f"{what} must be integer class indices, got {values[i].item()!r} at index {i}"
            )
    out = values.astype(np.int64)
    bad = np.flatnonzero((out < 0) | (out >= (n_classes or np.iinfo(np.int64).max)))
    if bad.size:
        i = int(bad[0])
        within = f"[0, {n_classes})" if n_classes else "[0, C)"
        raise ValueError(f"{what} must lie in {within} (class indices), got {out[i]} at index {i}")
    return out


def _probabilities(what: str, values: NDArray[Any]) -> NDArray[np.float64]:
    """Rows of class probabilities: finite, in [0, 1], each summing to 1."""
    if values.dtype.kind not in "iuf":
        raise ValueError(f"{what} must be numbers, got dtype {values.dtype}")
    p = values.astype(np.float64)
    bad = np.argwhere(~np.isfinite(p))
    if bad.size:
        raise ValueError(
            f"{what} must be finite, got {p[tuple(bad[0])].item()!r} at row {bad[0][0]}"
        )
    bad = np.argwhere((p < 0) | (p > 1))
    if bad.size:
        raise ValueError(
            f"{what} must lie in [0, 1], got {p[tuple(bad[0])].item()!r} at row {bad[0][0]}"
        )
    sums = p.sum(axis=1)
    rows = np.flatnonzero(np.abs(sums - 1.0) > PROBABILITY_SUM_TOLERANCE)
    if rows.size:
        i = int(rows[0])
        raise ValueError(f"{what} must sum to 1 in every row, row {i} sums to {sums[i]:.6g}")
    return p


def qualities_from_predictions(
    predictions: Mapping[str, ArrayLike],
    labels: ArrayLike,
    *,
    metric: str = "accuracy",
    confidence: float = 0.95,
    n_classes: int | None = None,
) -> ModelQualities:
    r"""Qualities with confidence intervals from what classifiers predicted on a target set.

    Parameters
    ----------
    predictions
        ``{party: predictions}``, each on the same examples as ``labels``: a 1-d array of
        predicted class indices, or an ``(n, C)`` array of class probabilities (finite, in
        [0, 1], every row summing to 1 within :data:`PROBABILITY_SUM_TOLERANCE`; the
        prediction is the first most probable class).
    labels
        The true class indices of the ``n >= 1`` target examples.
    metric : {"accuracy", "1-loss"}
        Accuracy :math:`\hat q = k / n` (``k`` correct predictions), or one minus the
        normalised cross-entropy (:func:`loss_quality` with :math:`L_0 = \log C`,
        :func:`baseline_loss`; it needs probabilities and :math:`C \ge 2`). A probability 0
        of the true class is an infinite loss: quality 0, interval [0, 0].
    confidence
        The level :math:`c \in (0, 1)` of each party's interval: for accuracy the Wilson
        score interval (:func:`wilson_interval`); for ``1-loss`` the normal interval of the
        mean per-example loss (:func:`mean_interval`), its ends mapped through
        :func:`loss_quality` (which reverses them: the higher loss gives the lower quality).
    n_classes
        The number of classes :math:`C`; by default one more than the largest class index
        seen (labels, predicted labels), or the probabilities' column count if larger.

    Returns
    -------
    ModelQualities
        One party per key, ``n_eval = n``, with ``low``, ``high`` and ``confidence``.

    Raises
    ------
    ValueError
        In one line: no party; empty, non-integer, negative or NaN labels; predictions with
        another number of rows than labels, of another shape, out of range or NaN;
        probability rows not summing to 1; a class index ``>= n_classes``; ``1-loss`` from
        predicted labels.

    References
    ----------
    Werner (2024), ch. 3, §3.2 and §3.5: a model's quality is its accuracy on the common
    target set :math:`D_{target}`. Wilson (1927) for the interval of an accuracy.

    Examples
    --------
    >>> q = qualities_from_predictions({"a": [0, 1, 1, 2], "b": [0, 1, 2, 2]}, [0, 1, 2, 2])
    >>> q.quality.tolist(), q.n_eval.tolist(), round(float(q.low[1]), 4)
    ([0.75, 1.0], [4, 4], 0.5101)
    """
    choice("metric", metric, METRICS)
    _z(confidence)
    if not predictions:
        raise ValueError("predictions must hold at least one party, got none")
    if n_classes is not None and (
        isinstance(n_classes, bool) or not isinstance(n_classes, int) or n_classes < 1
    ):
        raise ValueError(f"n_classes must be an integer >= 1, got {n_classes!r}")
    y_raw = np.asarray(labels)
    if y_raw.ndim != 1:
        raise ValueError(f"labels must be a 1-d array of class indices, got shape {y_raw.shape}")
    if y_raw.size == 0:
        raise ValueError("the target set is empty: no labels")
    y = _integers("labels", y_raw, n_classes)
    arrays: dict[str, NDArray[Any]] = {}
    for name, values in predictions.items():
        what = f"predictions of {name!r}"
        try:
            arr = np.asarray(values)
        except (TypeError, ValueError) as exc:
            raise ValueError(f"{what} must be an array: {exc}") from None
        if arr.ndim not in (1, 2):
            raise ValueError(
                f"{what} must be 1-d class indices or 2-d class probabilities, got shape "
                f"{arr.shape}"
            )
        if arr.shape[0] != y.size:
            raise ValueError(f"{what} hold {arr.shape[0]} rows for {y.size} labels")
        arrays[str(name)] = arr
    predicted = {
        name: _integers(f"predicted labels of {name!r}", a, n_classes)
        for name, a in arrays.items()
        if a.ndim == 1
    }
    probabilities = {
        name: _probabilities(f"probabilities of {name!r}", a)
        for name, a in arrays.items()
        if a.ndim == 2
    }
    classes = n_classes or max(
        [int(y.max()) + 1]
        + [int(p.max()) + 1 for p in predicted.values()]
        + [p.shape[1] for p in probabilities.values()]
    )
    for name, p in probabilities.items():
        if p.shape[1] != classes:
            raise ValueError(
                f"probabilities of {name!r} have {p.shape[1]} columns for {classes} classes: "
                "one column per class"
            )
    if metric == "1-loss":
        if predicted:
            raise ValueError(
                f"metric '1-loss' needs class probabilities; {next(iter(predicted))!r} gives "
                "predicted labels"
            )
        if classes < 2:
            raise ValueError("metric '1-loss' needs at least two classes (L0 = log C > 0)")
    n = y.size
    quality, low, high = [], [], []
    for name in arrays:
        if metric == "accuracy":
            guess = predicted[name] if name in predicted else probabilities[name].argmax(axis=1)
            hits = int(np.count_nonzero(guess == y))
            lo, hi = wilson_interval(hits, n, confidence)
            quality.append(hits / n)
            low.append(float(lo))
            high.append(float(hi))
        else:
            with np.errstate(divide="ignore"):
                losses = -np.log(probabilities[name][np.arange(n), y])
            mean, loss_low, loss_high = mean_interval(losses, confidence)
            l0 = baseline_loss(y, classes)
            quality.append(float(loss_quality(mean, l0)))
            low.append(float(loss_quality(loss_high, l0)))
            high.append(float(loss_quality(max(loss_low, 0.0), l0)))
    return ModelQualities(
        names=tuple(arrays),
        quality=np.array(quality),
        metric=metric,
        n_eval=np.full(len(arrays), n, dtype=np.int64),
        low=np.array(low),
        high=np.array(high),
        confidence=float(confidence),
    )
