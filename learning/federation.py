"""Federations: a dataset dealt out to clients, each with its own train and test split.

:func:`make_federation` is the one entry point. It optionally carves a class-balanced common
target set out of the data first (the duopoly's :math:`D_{target}`), partitions the rest
with a registered partition (:mod:`learning.partition`), applies each client's view
(rotation, label permutation) and splits every client's examples into train and test.
Everything is numpy; the engine turns it into tensors.
"""

from __future__ import annotations

import inspect
import os
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

import numpy as np

from econ.validation import choice, in_interval, positive_int
from learning.data import Dataset, load_dataset
from learning.partition import PARTITIONS, VIEWS, ground_truth_clusters

__all__ = ["ClientData", "Federation", "make_federation"]


@dataclass(frozen=True, slots=True)
class ClientData:
    """One client's examples, already transformed by its view.

    ``cluster`` is the ground-truth cluster id (0 when the partition has none).
    """

    x_train: np.ndarray
    y_train: np.ndarray
    x_test: np.ndarray
    y_test: np.ndarray
    cluster: int

    @property
    def n_train(self) -> int:
        """The number of training examples."""
        return int(self.x_train.shape[0])

    @property
    def n_test(self) -> int:
        """The number of test examples."""
        return int(self.x_test.shape[0])


@dataclass(frozen=True, slots=True)
class Federation:
    """Clients of one dataset, ready for training.

    Attributes
    ----------
    dataset : str
        Name of the source dataset.
    clients : tuple of ClientData
        One entry per client.
    n_classes : int
        Number of classes (0 for regression).
    input_shape : tuple of int
        Shape of one example, e.g. ``(1, 28, 28)``.
    target : (x, y) or None
        Common held-out target set (class-balanced), untransformed; None when not asked for.
    truth : ndarray or None
        The generator's true parameters per cluster (synthetic data), else None.
    """

    dataset: str
    clients: tuple[ClientData, ...]
    n_classes: int
    input_shape: tuple[int, ...]
    target: tuple[np.ndarray, np.ndarray] | None
    truth: np.ndarray | None = None

    @property
    def n_clients(self) -> int:
        """The number of clients."""
        return len(self.clients)

    @property
    def clusters(self) -> np.ndarray:
        """Ground-truth cluster of each client, as an ``int64`` array."""
        return np.array([c.cluster for c in self.clients], dtype=np.int64)


def _check_partition_params(partition: str, params: dict[str, Any]) -> None:
    signature = inspect.signature(PARTITIONS[partition])
    allowed = sorted(
        name
        for name, p in signature.parameters.items()
        if p.kind is inspect.Parameter.KEYWORD_ONLY and name != "n_clients"
    )
    unknown = sorted(set(params) - set(allowed))
    if unknown:
        raise ValueError(
            f"partition {partition!r} takes {', '.join(allowed) or 'no parameters'}; "
            f"got unknown {', '.join(unknown)}"
        )


def _check_view(view: str | None, data: Dataset) -> None:
    if view == "rotate" and (data.x.ndim != 4 or data.x.shape[2] != data.x.shape[3]):
        raise ValueError(
            f"rotation needs square images (N, C, H, H); dataset {data.name!r} has examples "
            f"of shape {data.x.shape[1:]}"
        )
    if view == "relabel" and not data.is_classification:
        raise ValueError(f"private labels need class labels; {data.name!r} is a regression set")


def _balanced_target(data: Dataset, fraction: float, rng: np.random.Generator) -> np.ndarray:
    """Indices of a target set of ``round(fraction N)`` examples, equal count per class."""
    n_target = round(fraction * len(data))
    if not data.is_classification:
        return np.sort(rng.choice(len(data), size=n_target, replace=False))
    classes = np.unique(data.y)
    per_class = n_target // classes.size
    if per_class == 0:
        raise ValueError(
            f"target_fraction={fraction:g} gives {n_target} target examples, fewer than "
            f"one per class ({classes.size})"
        )
    picks = []
    for c in classes:
        members = np.flatnonzero(data.y == c)
        if members.size <= per_class:
            raise ValueError(
                f"target_fraction={fraction:g} asks {per_class} examples of class {c}, the "
                f"data has {members.size}"
            )
        picks.append(rng.choice(members, size=per_class, replace=False))
    return np.sort(np.concatenate(picks))


def _partition_labels(partition: str, data: Dataset, pool: np.ndarray) -> np.ndarray:
    if partition == "natural":
        if data.group is None:
            raise ValueError(
                f"partition 'natural' follows the data's own clients; {data.name!r} has none"
            )
        return data.group[pool]
    if data.is_classification:
        return data.y[pool]
    if data.cluster is not None:
        return data.cluster[pool]
    return np.zeros(pool.size, dtype=np.int64)


def _materialise(
    data: Dataset,
    pool: np.ndarray,
    virtual: np.ndarray,
    view: str | None,
    label_shift: int,
) -> tuple[np.ndarray, np.ndarray]:
    base = pool[virtual % pool.size]
    copies = virtual // pool.size
    x, y = data.x[base], data.y[base]
    for c in np.unique(copies[copies > 0]):
        mask = copies == c
        if view == "rotate":
            x[mask] = np.rot90(x[mask], k=int(c), axes=(-2, -1))
        elif view == "relabel":
            y[mask] = (y[mask] + int(c) * label_shift) % data.n_classes
    return np.ascontiguousarray(x), y


def _split_sizes(n: int, test_fraction: float, client: int) -> int:
    if n == 0:
        raise ValueError(f"client {client} received no examples; use fewer clients")
    if test_fraction == 0.0 or n == 1:
        return 0
    return min(max(1, round(test_fraction * n)), n - 1)


def make_federation(
    dataset: Dataset | str,
    partition: str,
    n_clients: int,
    *,
    seed: int | np.random.Generator | None = None,
    test_fraction: float = 0.2,
    target_fraction: float = 0.0,
    data_dir: str | os.PathLike[str] | None = None,
    label_shift: int = 1,
    target_data: Dataset | None = None,
    dataset_params: Mapping[str, Any] | None = None,
    flip_test_view: bool = False,
    **partition_params: Any,
) -> Federation:
    """Deal ``dataset`` out to ``n_clients`` clients with the partition named ``partition``.

    Parameters
    ----------
    dataset : Dataset or str
        A loaded dataset, or a name of :data:`learning.data.DATASETS` (loaded with
        ``data_dir``; synthetic generators get a child stream of ``seed``).
    partition : str
        A name of :data:`learning.partition.PARTITIONS`.
    n_clients : int
        Number of clients.
    seed : int, Generator or None
        All randomness (generator, target set, partition, train/test split) derives from it.
    test_fraction : float in [0, 1)
        Share of each client's examples held out as its test set (at least one when
        positive, and at least one example stays for training).
    target_fraction : float in [0, 1)
        Share of the data carved out first as a common, class-balanced target set
        (``Federation.target``: ``round(target_fraction N) // C`` examples of each class);
        0 for none.
    label_shift : int
        Private labels map class ``y`` of view ``c`` to ``(y + c * label_shift) mod C``
        (1 in the clustering experiments; 11 in CoBo's cross-silo CIFAR-100 split).
    target_data : Dataset, optional
        An explicit common target set instead of one carved out by ``target_fraction``
        (the duopoly's :math:`D_{target}` is the MNIST test set: pass
        ``load_dataset("mnist", part="test")`` with ``part="train"`` as ``dataset``).
    dataset_params : mapping, optional
        Parameters for :func:`learning.data.load_dataset` when ``dataset`` is a name
        (``part``, or a generator's ``n_clusters`` ...).
    flip_test_view : bool
        ``mixture`` only: each test example is seen through the other view, so a client
        trained on the mixture :math:`p_i` is tested on :math:`1 - p_i` (IP-FL's synthetic
        datasets, Khan et al. §6.1 and App. D.2.3-D.2.4).
    **partition_params
        Parameters of the partition (``shares``, ``alpha``, ``n_clusters``, ...).

    Raises
    ------
    ValueError
        Unknown partition or dataset, unknown partition parameters, fractions outside
        [0, 1), both ``target_fraction`` and ``target_data``, more clients than examples,
        a view the data cannot take (rotating non-square inputs, relabelling regression
        targets), a client left without examples.
    """
    choice("partition", partition, tuple(PARTITIONS))
    n_clients = positive_int("n_clients", n_clients)
    test_fraction = float(in_interval("test_fraction", test_fraction, 0.0, 1.0, high_open=True))
    target_fraction = float(
        in_interval("target_fraction", target_fraction, 0.0, 1.0, high_open=True)
    )
    label_shift = positive_int("label_shift", label_shift)
    if flip_test_view and partition != "mixture":
        raise ValueError(f"flip_test_view applies to the 'mixture' partition, not {partition!r}")
    if dataset_params and not isinstance(dataset, str):
        raise ValueError("dataset_params apply only when the dataset is given by name")
    if target_data is not None and target_fraction > 0:
        raise ValueError("give either target_fraction > 0 or target_data, not both")
    _check_partition_params(partition, partition_params)
    rng = np.random.default_rng(seed)
    data_rng, target_rng, partition_rng, split_rng = rng.spawn(4)
    data = (
        load_dataset(dataset, data_dir=data_dir, seed=data_rng, **(dataset_params or {}))
        if isinstance(dataset, str)
        else dataset
    )
    if n_clients > len(data):
        raise ValueError(
            f"n_clients must be at most the number of examples of {data.name!r} "
            f"({len(data)}), got {n_clients}"
        )
    view = VIEWS.get(partition)
    _check_view(view, data)
    if target_data is not None and target_data.x.shape[1:] != data.x.shape[1:]:
        raise ValueError(
            f"target_data examples have shape {target_data.x.shape[1:]}, the dataset's "
            f"{data.x.shape[1:]}"
        )

    target_idx = (
        _balanced_target(data, target_fraction, target_rng)
        if target_fraction > 0
        else np.empty(0, dtype=np.int64)
    )
    pool = np.setdiff1d(np.arange(len(data)), target_idx)  # stays in dataset order
    labels = _partition_labels(partition, data, pool)
    parts = PARTITIONS[partition](labels, partition_rng, n_clients=n_clients, **partition_params)
    clusters = ground_truth_clusters(
        partition,
        parts,
        labels,
        example_cluster=None if data.cluster is None else data.cluster[pool],
        **partition_params,
    )

    clients = []
    for j, (part, cluster) in enumerate(zip(parts, clusters, strict=True)):
        order = split_rng.permutation(np.asarray(part))
        n_test = _split_sizes(order.size, test_fraction, j)
        n_train = order.size - n_test
        if flip_test_view:
            copy, position = np.divmod(order[n_train:], pool.size)
            order[n_train:] = (1 - copy) * pool.size + position
        x, y = _materialise(data, pool, order, view, label_shift)
        clients.append(ClientData(x[:n_train], y[:n_train], x[n_train:], y[n_train:], int(cluster)))
    if target_data is not None:
        target: tuple[np.ndarray, np.ndarray] | None = (target_data.x, target_data.y)
    elif target_idx.size:
        target = (data.x[target_idx], data.y[target_idx])
    else:
        target = None
    return Federation(
        dataset=data.name,
        clients=tuple(clients),
        n_classes=data.n_classes,
        input_shape=tuple(int(s) for s in data.x.shape[1:]),
        target=target,
        truth=data.truth,
    )
