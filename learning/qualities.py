r"""Trained models -> :class:`econ.ModelQualities`: the one seam to the economics.

The quality of a model on a common target set (the duopoly's :math:`D_{target}`, Werner 2024,
ch. 3 §3.5) is either its accuracy :math:`q = 1 - \text{error rate}`, or one minus its
normalised loss :math:`q = \max(0, 1 - L(w)/L_0)` (:func:`econ.qualities.loss_quality`, with
the :math:`L_0` of :func:`econ.qualities.baseline_loss`: :math:`\log C` for classification,
the variance of the targets for regression).

:func:`model_qualities` scores the stacked models of an :class:`~learning.engine.Engine`;
:func:`qualities_of` scores models trained anywhere else: a ``torch.nn.Module``, a
scikit-learn estimator (anything with ``predict_proba`` or ``predict``), or their
predictions, with a confidence interval per party
(:func:`econ.qualities.qualities_from_predictions`). This module imports torch only for the
engine's types and for a module that is already a torch one, so scoring a scikit-learn
model never loads torch.
"""

from __future__ import annotations

import sys
from collections.abc import Mapping, Sequence
from typing import TYPE_CHECKING, Any

import numpy as np

from econ.qualities import (
    METRICS,
    ModelQualities,
    baseline_loss,
    loss_quality,
    qualities_from_predictions,
)
from econ.validation import choice, positive_int

if TYPE_CHECKING:
    from learning.engine import Engine, Evaluation, Params

__all__ = ["model_qualities", "qualities_from_evaluation", "qualities_of"]


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
        quality = loss_quality(evaluation.loss, baseline_loss)
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
    baseline = baseline_loss(y, n_classes) if metric == "1-loss" else None
    evaluation = engine.evaluate_on(models, x, y)
    return qualities_from_evaluation(evaluation, names, metric=metric, baseline_loss=baseline)


def _is_torch_module(model: Any) -> bool:
    """Whether ``model`` is a ``torch.nn.Module`` (never true while torch is not imported)."""
    torch = sys.modules.get("torch")
    return torch is not None and isinstance(model, torch.nn.Module)


def _numpy(value: Any, what: str) -> np.ndarray:
    """An array from a numpy array, a list or a (CPU or device) torch tensor."""
    torch = sys.modules.get("torch")
    if torch is not None and isinstance(value, torch.Tensor):
        return value.detach().cpu().numpy()
    try:
        return np.asarray(value)
    except (TypeError, ValueError) as exc:
        raise ValueError(f"{what} must be an array: {exc}") from None


def _torch_probabilities(module: Any, x: Any, batch_size: int) -> np.ndarray:
    """Class probabilities of a torch classifier on ``x``: batches, eval mode, no gradient.

    The outputs are class logits (as the engine's :class:`~learning.engine.Task` reads them);
    their softmax is taken in float64. The module's training mode is restored afterwards.
    """
    import torch

    parameter = next(iter(module.parameters()), None)
    device = parameter.device if parameter is not None else torch.device("cpu")
    dtype = parameter.dtype if parameter is not None else torch.float32
    inputs = torch.as_tensor(x.detach() if isinstance(x, torch.Tensor) else np.asarray(x))
    was_training = module.training
    module.eval()
    out = []
    try:
        with torch.no_grad():
            for start in range(0, inputs.shape[0], batch_size):
                batch = inputs[start : start + batch_size].to(device=device, dtype=dtype)
                logits = module(batch)
                if logits.ndim != 2:
                    raise ValueError(
                        "a torch model must give one row of class logits per example, got "
                        f"outputs of shape {tuple(logits.shape)}"
                    )
                out.append(torch.log_softmax(logits.double(), dim=1).exp().cpu().numpy())
    finally:
        module.train(was_training)
    return np.concatenate(out) if out else np.zeros((0, 0))


def _estimator_output(model: Any, x: Any, metric: str, name: str) -> np.ndarray:
    """What a scikit-learn style estimator predicts: labels for accuracy, probabilities else.

    Accuracy counts the estimator's own ``predict`` (which may differ from the arg-max of
    ``predict_proba``, e.g. Platt-scaled SVMs); ``1-loss`` needs ``predict_proba``, whose
    columns are spread to the class indices of ``classes_`` when the estimator has them.
    """
    if metric == "accuracy" and hasattr(model, "predict"):
        return _numpy(model.predict(x), f"the predictions of {name!r}")
    if not hasattr(model, "predict_proba"):
        raise ValueError(
            f"metric {metric!r} needs class probabilities: {name!r} ({type(model).__name__}) "
            "has no predict_proba"
        )
    proba = _numpy(model.predict_proba(x), f"the probabilities of {name!r}")
    classes = getattr(model, "classes_", None)
    if classes is None or proba.ndim != 2:
        return proba
    classes = np.asarray(classes)
    if classes.dtype.kind not in "iu" or (classes < 0).any():
        raise ValueError(
            f"{name!r} was trained on the classes {classes.tolist()!r}; give class indices "
            "0, 1, ..., C - 1 as labels"
        )
    if classes.size == proba.shape[1] and (classes == np.arange(classes.size)).all():
        return proba
    spread = np.zeros((proba.shape[0], int(classes.max()) + 1))
    spread[:, classes] = proba
    return spread


def _parties(models: Any, names: Sequence[str] | None) -> dict[str, Any]:
    """``{name: model or predictions}``: one party, or one per item of a list or dict."""
    if isinstance(models, Mapping):
        if names is not None:
            raise ValueError("names= names the items of a list; a dict names its own parties")
        return {str(k): v for k, v in models.items()}
    items = list(models) if isinstance(models, (list, tuple)) else [models]
    if not items:
        raise ValueError("qualities_of needs at least one model or array of predictions")
    if names is None:
        return {f"model{i}": m for i, m in enumerate(items)}
    names = [str(n) for n in names]
    if len(names) != len(items):
        raise ValueError(f"names= must name every party ({len(items)}), got {len(names)}")
    if len(set(names)) != len(names):
        raise ValueError(f"names= must be distinct, got {names!r}")
    return dict(zip(names, items, strict=True))


def qualities_of(
    model_or_predictions: Any,
    target: Any,
    *,
    metric: str = "accuracy",
    names: Sequence[str] | None = None,
    confidence: float = 0.95,
    n_classes: int | None = None,
    batch_size: int = 1024,
) -> ModelQualities:
    r"""Qualities, with counts and confidence intervals, of classifiers trained anywhere.

    Parameters
    ----------
    model_or_predictions
        One party, or a list or dict of them (one party each; a dict's keys name them). A
        party is a ``torch.nn.Module`` giving class logits (evaluated in batches, in eval mode,
        without gradients; its mode is restored), an object with ``predict`` or
        ``predict_proba`` (a scikit-learn estimator: ``predict`` for accuracy,
        ``predict_proba`` for ``1-loss``), or an array (or tensor) of its predictions: 1-d
        predicted class indices or an ``(n, C)`` array of class probabilities. A lone list is
        a list of parties, so one party's predictions come as an array.
    target
        The common target set: ``(X, y)`` (a tuple), or the labels ``y`` alone when every
        party is an array of predictions. ``y`` holds class indices ``0 .. C - 1``.
    metric : {"accuracy", "1-loss"}
        What the quality measures (:data:`econ.qualities.METRICS`; module docstring).
    names
        One distinct name per item of a list; ``model0, model1, ...`` by default.
    confidence
        The level of each interval: Wilson's for accuracy, the normal one of the mean loss
        for ``1-loss`` (:func:`econ.qualities.qualities_from_predictions`).
    n_classes
        The number of classes :math:`C` (inferred from what is seen by default).
    batch_size
        Examples per forward pass of a torch model.

    Returns
    -------
    ModelQualities
        One party each, with ``n_eval``, ``low``, ``high`` and ``confidence``.

    Raises
    ------
    ValueError
        A refusal of :func:`econ.qualities.qualities_from_predictions` (empty target,
        mismatched lengths, labels out of range, probabilities not summing to 1, NaN), a
        model needing ``X`` where only labels are given, or names that do not fit.

    References
    ----------
    Werner (2024), ch. 3, §3.2 and §3.5: a model's quality is its accuracy on the common
    target set :math:`D_{target}`; Wilson (1927) for the interval of an accuracy.

    Examples
    --------
    >>> q = qualities_of({"a": np.array([0, 1, 1]), "b": np.array([0, 1, 0])}, [0, 1, 1])
    >>> q.names, q.quality.round(4).tolist(), q.n_eval.tolist()
    (('a', 'b'), [1.0, 0.6667], [3, 3])
    """
    choice("metric", metric, METRICS)
    batch_size = positive_int("batch_size", batch_size)
    parties = _parties(model_or_predictions, names)
    if isinstance(target, tuple):
        if len(target) != 2:
            raise ValueError(f"target must be (X, y) or the labels y, got a tuple of {len(target)}")
        x, y = target
    else:
        x, y = None, target
    labels = _numpy(y, "the labels y")
    predictions = {}
    for name, party in parties.items():
        is_module = _is_torch_module(party)
        if not is_module and not hasattr(party, "predict") and not hasattr(party, "predict_proba"):
            predictions[name] = _numpy(party, f"the predictions of {name!r}")
            continue
        if x is None:
            raise ValueError(
                f"{name!r} is a model: give target as (X, y) so that it can predict on X"
            )
        if len(x) != len(labels):
            raise ValueError(f"target holds {len(x)} inputs X for {len(labels)} labels y")
        if len(labels) == 0:
            raise ValueError("the target set is empty: no labels")
        predictions[name] = (
            _torch_probabilities(party, x, batch_size)
            if is_module
            else _estimator_output(party, x, metric, name)
        )
    return qualities_from_predictions(
        predictions, labels, metric=metric, confidence=confidence, n_classes=n_classes
    )
