"""IP-FL's preferences: importance weights, personalised models and the clients' bids.

Khan et al., "IP-FL: Incentivized and Personalized Federated Learning" (arXiv 2304.07514 v4), §4.1,
Eq. 7-8 (importance weights, personalised models), Alg. 2 (the bids) and App. B, Eq. 14 (the F1
features).
"""

from __future__ import annotations

import numpy as np
from numpy.typing import ArrayLike

from econ.validation import in_interval, positive_int
from games.ipfl.config import BoolArray, FloatArray, IPFLConfig


def importance_weights(accuracy: ArrayLike) -> FloatArray:
    r"""Eq. 7-8 normalised: :math:`w_{ik} = \upsilon_{ik} / \sum_{k'} \upsilon_{ik'}`.

    Uniform where a client's accuracies are all 0. ``accuracy`` is (N, K) in [0, 1].

    References
    ----------
    Khan et al., IP-FL: Incentivized and Personalized Federated Learning, §4.1, Eq. 7-8.

    Examples
    --------
    >>> importance_weights([[0.2, 0.6], [0.0, 0.0]]).round(6).tolist()
    [[0.25, 0.75], [0.5, 0.5]]
    """
    acc = np.atleast_2d(in_interval("accuracy", accuracy, 0.0, 1.0))
    total = acc.sum(axis=1, keepdims=True)
    uniform = np.full_like(acc, 1.0 / acc.shape[1])
    return np.where(total > 0, acc / np.where(total > 0, total, 1.0), uniform)


def personalised_model(weights: ArrayLike, cluster_models: ArrayLike) -> FloatArray:
    r"""Eq. 8: :math:`P_i = \sum_k w_{ik} M_k`, a convex combination of the cluster models.

    Rows of ``weights`` sum to 1; ``cluster_models`` is (K, d).
    :func:`learning.drivers.ipfl.personalise` computes the same on stacked tensors, and a test holds
    the two together.

    References
    ----------
    Khan et al., IP-FL: Incentivized and Personalized Federated Learning, §4.1, Eq. 8.

    Examples
    --------
    >>> personalised_model([[0.25, 0.75]], [[0.0, 4.0], [4.0, 0.0]]).tolist()
    [[3.0, 1.0]]
    """
    w = np.atleast_2d(np.asarray(weights, dtype=np.float64))
    return w @ np.asarray(cluster_models, dtype=np.float64)


def preference_bids(
    accuracy: ArrayLike,
    tokens: ArrayLike,
    config: IPFLConfig,
    rng: np.random.Generator,
) -> BoolArray:
    r"""Alg. 2 preference lists as an (N, K) boolean matrix.

    Incentivised: :math:`P_B(i) = \{k : \upsilon_{ik} > Th\} \cup \{\arg\max_k
    \upsilon_{ik}\}` (on normalised weights with ``th_mode="normalized"``); a client keeps
    only the highest-weight bids it can pay for (:math:`|P_B| \cdot \tau_p \le tok_i`).
    ``code_compat``: the argmax only. NI: one uniformly random cluster.

    References
    ----------
    Khan et al., IP-FL: Incentivized and Personalized Federated Learning, Alg. 2; §4.1, Eq. 7; App.
    D.1 (NI ablation).
    """
    acc = np.atleast_2d(in_interval("accuracy", accuracy, 0.0, 1.0))
    tokens = np.asarray(tokens, dtype=np.float64).reshape(-1)
    n, k = acc.shape
    bids = np.zeros((n, k), dtype=bool)
    if not config.incentive:
        bids[np.arange(n), rng.integers(0, k, size=n)] = True
    else:
        w = importance_weights(acc)
        score = acc if config.th_mode == "raw" else w
        best = np.argmax(acc, axis=1)
        if not config.code_compat:
            bids |= score > config.th_bid
        bids[np.arange(n), best] = True
        affordable = np.floor(tokens / config.price + 1e-12).astype(np.int64)
        for i in range(n):
            chosen = np.flatnonzero(bids[i])
            if chosen.size > affordable[i]:
                keep = chosen[np.argsort(-w[i, chosen], kind="stable")[: max(affordable[i], 0)]]
                bids[i] = False
                bids[i, keep] = True
        return bids
    bids[tokens < config.price] = False
    return bids


def f1_features(
    predictions: ArrayLike, labels: ArrayLike, n_classes: int, n_top: int = 10
) -> FloatArray:
    r"""Cold-start features of App. B (Eq. 14): per-class F1 scores on a common server test set.

    As in RC ``select_clients_on_basis_of_f1_Scores``, client :math:`i`'s model scores class
    :math:`c` by

    .. math::  F1_{ic} = \frac{2\, TP_{ic}}{2\, TP_{ic} + FP_{ic} + FN_{ic}}

    (0 where a class is neither predicted nor present). The features are these scores on the
    ``n_top`` classes whose F1 varies most across clients (RC ``df.var(axis=0).nlargest(10)``;
    ties by class index). ``predictions`` is (N, m), one row of predicted labels per client;
    ``labels`` (m,). Returns (N, min(n_top, n_classes)); clustering these rows gives the initial
    clusters.

    References
    ----------
    Khan et al., IP-FL: Incentivized and Personalized Federated Learning, App. B, Eq. 14.
    """
    pred = np.atleast_2d(np.asarray(predictions, dtype=np.int64))
    y = np.asarray(labels, dtype=np.int64).reshape(-1)
    n_classes = positive_int("n_classes", n_classes)
    n_top = positive_int("n_top", n_top)
    if pred.shape[1] != y.size:
        raise ValueError(
            f"predictions must have {y.size} columns (one per label), got {pred.shape}"
        )
    classes = np.arange(n_classes)
    hit_c = (pred[:, :, None] == classes) & (y[None, :, None] == classes)
    tp = hit_c.sum(axis=1)
    predicted = (pred[:, :, None] == classes).sum(axis=1)
    present = (y[:, None] == classes).sum(axis=0)[None, :]
    denom = predicted + present  # 2TP + FP + FN
    f1 = np.where(denom > 0, 2.0 * tp / np.maximum(denom, 1), 0.0)
    order = np.argsort(-f1.var(axis=0), kind="stable")[: min(n_top, n_classes)]
    return f1[:, np.sort(order)]
