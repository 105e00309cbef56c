r"""Trained models -> :class:`econ.ModelQualities`: the one seam to the economics.

The quality of a model on a common target set (the duopoly's :math:`D_{target}`, Werner 2024,
ch. 3 §3.5) is either its accuracy :math:`q = 1 - \text{error rate}`, or one minus its
normalised loss,

.. math::

    q = \max\Bigl(0,\; 1 - \frac{L(w)}{L_0}\Bigr),

where :math:`L_0` is the loss of the best constant prediction on the same set: :math:`\log C`
(cross-entropy of the uniform distribution over :math:`C` classes) for classification, the
variance of the targets (squared error of their mean) for regression. So :math:`q = 0` is
"no better than knowing nothing about the input", :math:`q = 1` a perfect fit.
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np

from econ.qualities import METRICS, ModelQualities
from econ.validation import choice
from learning.engine import Engine, Evaluation, Params

__all__ = ["model_qualities", "qualities_from_evaluation"]


def _baseline_loss(y: np.ndarray, n_classes: int) -> float:
    if n_classes > 0:
        return float(np.log(n_classes))
    variance = float(np.var(np.asarray(y, dtype=np.float64)))
    if variance <= 0.0:
        raise ValueError("1-loss needs target values that vary; the target set's are constant")
    return variance


def qualities_from_evaluation(
    evaluation: Evaluation,
    names: Sequence[str],
    *,
    metric: str = "accuracy",
    baseline_loss: float | None = None,
) -> ModelQualities:
    """Qualities from an :class:`learning.engine.Evaluation` on a target set.

    ``baseline_loss`` (:math:`L_0`) is needed for ``metric="1-loss"``.
    """
    choice("metric", metric, METRICS)
    if metric == "accuracy":
        if evaluation.accuracy is None:
            raise ValueError("metric 'accuracy' needs a classification task; use '1-loss'")
        quality = evaluation.accuracy
    else:
        if baseline_loss is None or baseline_loss <= 0:
            raise ValueError(f"metric '1-loss' needs a baseline loss > 0, got {baseline_loss!r}")
        quality = np.clip(1.0 - evaluation.loss / baseline_loss, 0.0, 1.0)
    return ModelQualities(
        names=tuple(names),
        quality=np.asarray(quality, dtype=np.float64),
        metric=metric,
        n_eval=np.asarray(evaluation.n, dtype=np.int64),
    )


def model_qualities(
    engine: Engine,
    models: Params,
    target: tuple[np.ndarray, np.ndarray],
    *,
    n_classes: int,
    names: Sequence[str] | None = None,
    metric: str = "accuracy",
) -> ModelQualities:
    """Evaluate every model of ``models`` (stacked) on the common ``target`` set.

    Parameters
    ----------
    engine : Engine
        The engine that trained the models (same architecture and device).
    models : Params
        Stacked parameters, one row per party.
    target : (x, y)
        The common target set (numpy).
    n_classes : int
        Number of classes (0 for regression), for the baseline loss of ``"1-loss"``.
    names : sequence of str, optional
        One per model; ``client0, client1, ...`` by default.
    metric : {"accuracy", "1-loss"}
        Accuracy, or one minus the normalised loss (module docstring).
    """
    choice("metric", metric, METRICS)
    x, y = target
    if len(x) == 0:
        raise ValueError("the target set is empty")
    k = next(iter(models.values())).shape[0]
    names = tuple(f"client{i}" for i in range(k)) if names is None else tuple(names)
    baseline = _baseline_loss(y, n_classes) if metric == "1-loss" else None
    evaluation = engine.evaluate_on(models, x, y)
    return qualities_from_evaluation(evaluation, names, metric=metric, baseline_loss=baseline)
