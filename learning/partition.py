"""Client partitions: ``(labels, rng, *, n_clients, **params) -> list of index arrays``.

A partition decides which examples each client holds. It sees only the labels (numpy, no
torch) and returns one integer array per client.

**Transformed copies.** Some heterogeneity is not a choice of examples but a change of the
examples themselves: rotated images, permuted labels, a mixture of an original and a rotated
distribution. Partitions express it by indexing a *virtual* dataset of stacked copies of the
``N`` examples: index ``i`` means example ``i % N`` seen through view ``i // N``. View 0 is
the data as it is; view ``c`` is the ``c``-th transform named in :data:`VIEWS` (rotation by
``c * 90`` degrees, or the label map ``y -> (y + c) mod C``), which
:func:`learning.federation.make_federation` applies. Plain partitions only use view 0, i.e.
indices below ``N``.

Registered names (:data:`PARTITIONS`): ``iid``, ``label-cdf``, ``pathological``,
``dirichlet``, ``rotation``, ``private-label``, ``mixture``, ``mixture-relabel``, ``natural``.
:func:`ground_truth_clusters` gives each client's true cluster for a partition's output.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any

import numpy as np

from econ.validation import choice, in_interval, positive, positive_int, unit_interval

__all__ = [
    "MIXTURE_SCHEMES",
    "PARTITIONS",
    "VIEWS",
    "clustered",
    "dirichlet",
    "ground_truth_clusters",
    "iid",
    "label_cdf",
    "mixture",
    "mixture_shares",
    "natural",
    "pathological",
]


_CLASSES_PER_CLIENT = 2  # default of the pathological split


def _block_sizes(total: int, n_blocks: int) -> np.ndarray:
    """Sizes of ``n_blocks`` contiguous blocks covering ``total`` items as evenly as possible."""
    base, extra = divmod(total, n_blocks)
    return base + (np.arange(n_blocks) < extra).astype(np.int64)


def _split(idx: np.ndarray, sizes: np.ndarray) -> list[np.ndarray]:
    return np.split(idx, np.cumsum(sizes)[:-1])


def _check_enough(n_examples: int, n_clients: int) -> None:
    if n_clients > n_examples:
        raise ValueError(
            f"n_clients must be at most the number of examples ({n_examples}), got {n_clients}"
        )


def _labels(labels: Any) -> np.ndarray:
    arr = np.asarray(labels)
    if arr.ndim != 1 or arr.size == 0 or not np.issubdtype(arr.dtype, np.integer):
        raise ValueError(
            f"labels must be a non-empty 1-d integer array, got shape {arr.shape} of {arr.dtype}"
        )
    if arr.min() < 0:
        raise ValueError(f"labels must be non-negative, got {int(arr.min())}")
    return arr


def iid(labels: Any, rng: np.random.Generator, *, n_clients: int) -> list[np.ndarray]:
    """Shuffle the examples and deal them out in ``n_clients`` near-equal disjoint parts."""
    labels = _labels(labels)
    n_clients = positive_int("n_clients", n_clients)
    _check_enough(labels.size, n_clients)
    return _split(rng.permutation(labels.size), _block_sizes(labels.size, n_clients))


def label_cdf(
    labels: Any,
    rng: np.random.Generator,
    *,
    n_clients: int = 2,
    shares: Sequence[float] = (0.8, 0.2),
    size: int = 1000,
    threshold: int = 5,
    split: str = "paper",
) -> list[np.ndarray]:
    r"""The duopoly's label-skewed firms: client ``c`` has :math:`\hat F_c(t) = s_c`.

    Each firm holds ``size`` examples of which a share ``shares[c]`` has a label
    :math:`\le t` (``threshold``), so the pooled data of firms with shares 0.8 and 0.2 is
    balanced around :math:`t` while neither firm's is (Werner 2024, ch. 3 §3.5: MNIST,
    :math:`|D_l| = |D_h| = 1000`, :math:`\hat F(5) = 0.8` and 0.2).

    ``split="paper"``
        exactly ``round(s_c * size)`` examples drawn uniformly from :math:`\{y \le t\}` and
        the rest from :math:`\{y > t\}`, disjoint across firms (800/200 and 200/800).
    ``split="code"``
        the authors' rule: the first ``int(s_c N)`` examples of :math:`\{y \le t\}` and the
        first ``int((1 - s_c) N)`` of :math:`\{y > t\}` in dataset order, concatenated,
        shuffled, the first ``size`` kept. The slices can exceed the groups, so the realised
        shares differ from ``shares`` (0.750 and 0.333 on full MNIST), and firms may overlap.
    """
    labels = _labels(labels)
    share_arr = unit_interval("shares", shares).reshape(-1)
    size = positive_int("size", size)
    choice("split", split, ("paper", "code"))
    n_clients = positive_int("n_clients", n_clients)
    if n_clients != share_arr.size:
        raise ValueError(
            f"label-cdf gives one client per share: n_clients must equal len(shares) = "
            f"{share_arr.size}, got {n_clients}"
        )
    low = np.flatnonzero(labels <= threshold)
    high = np.flatnonzero(labels > threshold)
    if split == "code":
        parts = []
        for share in share_arr:
            pool = np.concatenate(
                [low[: int(share * labels.size)], high[: int((1.0 - share) * labels.size)]]
            )
            if pool.size < size:
                raise ValueError(
                    f"size must be at most {pool.size} for share {share:g} under "
                    f"split='code', got {size}"
                )
            parts.append(rng.permutation(pool)[:size])
        return parts
    n_low = np.rint(share_arr * size).astype(np.int64)
    n_high = size - n_low
    for group, need, name in ((low, n_low, f"<= {threshold}"), (high, n_high, f"> {threshold}")):
        if need.sum() > group.size:
            raise ValueError(
                f"size={size} is too large: split='paper' then needs {int(need.sum())} "
                f"examples with label {name}, the data has {group.size}"
            )
    low_parts = _split(rng.permutation(low)[: n_low.sum()], n_low)
    high_parts = _split(rng.permutation(high)[: n_high.sum()], n_high)
    return [
        rng.permutation(np.concatenate([a, b])) for a, b in zip(low_parts, high_parts, strict=True)
    ]


def pathological(
    labels: Any,
    rng: np.random.Generator,
    *,
    n_clients: int,
    classes_per_client: int = _CLASSES_PER_CLIENT,
    sizes: Sequence[int] | None = None,
) -> list[np.ndarray]:
    """Class-group split: each client sees only ``classes_per_client`` classes.

    The ``C`` classes form ``G = C / k`` groups of ``k`` consecutive labels; the clients are
    assigned to the groups in contiguous blocks (``sizes`` clients per group, as even as
    possible by default), and each group's shuffled examples are dealt out equally among its
    clients. The group is the client's ground-truth cluster. IP-FL (Khan et al.) App. D.3-D.4
    (13 groups of 4 EMNIST letters; 5 groups of 2 CIFAR-10 classes); CoBo's cross-device
    split (10 groups of 10 CIFAR-100 classes, ``sizes=(10, 10, 9, 9, 8, 8, 7, 7, 6, 6)``);
    Werner (2024) ch. 2 CIFAR-100.
    """
    labels = _labels(labels)
    n_clients = positive_int("n_clients", n_clients)
    k = positive_int("classes_per_client", classes_per_client)
    n_classes = int(labels.max()) + 1
    if n_classes % k:
        raise ValueError(
            f"classes_per_client must divide the number of classes ({n_classes}), got {k}"
        )
    n_groups = n_classes // k
    group_sizes = _group_sizes(n_clients, n_groups, sizes)
    group_of_label = labels // k
    parts: list[np.ndarray] = []
    for g, count in enumerate(group_sizes):
        members = rng.permutation(np.flatnonzero(group_of_label == g))
        if members.size < count:
            raise ValueError(
                f"class group {g} has {members.size} examples for {count} clients; use "
                f"fewer clients"
            )
        parts.extend(_split(members, _block_sizes(members.size, int(count))))
    return parts


def _group_sizes(n_clients: int, n_groups: int, sizes: Sequence[int] | None) -> np.ndarray:
    if sizes is None:
        if n_clients < n_groups:
            raise ValueError(
                f"n_clients must be at least the number of groups ({n_groups}), got {n_clients}"
            )
        return _block_sizes(n_clients, n_groups)
    arr = np.asarray(sizes)
    if (
        arr.shape != (n_groups,)
        or not np.issubdtype(arr.dtype, np.integer)
        or arr.min() < 1
        or arr.sum() != n_clients
    ):
        raise ValueError(
            f"sizes must be {n_groups} integers >= 1 summing to n_clients = {n_clients}, "
            f"got {list(sizes)}"
        )
    return arr.astype(np.int64)


def dirichlet(
    labels: Any,
    rng: np.random.Generator,
    *,
    n_clients: int,
    alpha: float = 0.5,
    min_size: int = 1,
    max_tries: int = 100,
) -> list[np.ndarray]:
    r"""Label skew by a Dirichlet prior (Hsu et al. 2019).

    Each class is split by :math:`q_c \sim \mathrm{Dir}(\alpha \mathbf 1_n)`.

    Small :math:`\alpha` gives few classes per client, large :math:`\alpha` approaches iid.
    The draw is repeated (at most ``max_tries`` times) until every client holds at least
    ``min_size`` examples.
    """
    labels = _labels(labels)
    n_clients = positive_int("n_clients", n_clients)
    alpha = float(positive("alpha", alpha))
    min_size = positive_int("min_size", min_size)
    max_tries = positive_int("max_tries", max_tries)
    if n_clients * min_size > labels.size:
        raise ValueError(
            f"n_clients * min_size must be at most the number of examples ({labels.size}), "
            f"got {n_clients} * {min_size}"
        )
    classes = [np.flatnonzero(labels == c) for c in np.unique(labels)]
    for _ in range(max_tries):
        chunks: list[list[np.ndarray]] = [[] for _ in range(n_clients)]
        for members in classes:
            q = rng.dirichlet(np.full(n_clients, alpha))
            cuts = np.floor(np.cumsum(q)[:-1] * members.size).astype(np.int64)
            for client, piece in enumerate(np.split(rng.permutation(members), cuts)):
                chunks[client].append(piece)
        parts = [np.concatenate(c) for c in chunks]
        if min(p.size for p in parts) >= min_size:
            return [rng.permutation(p) for p in parts]
    raise ValueError(
        f"no Dirichlet draw with alpha={alpha:g} gave every one of {n_clients} clients "
        f"{min_size} examples in {max_tries} tries; raise alpha or lower n_clients"
    )


def clustered(
    labels: Any,
    rng: np.random.Generator,
    *,
    n_clients: int,
    n_clusters: int = 4,
    replicate: bool = False,
    fraction: float = 1.0,
) -> list[np.ndarray]:
    """Clients in ``n_clusters`` contiguous blocks; cluster ``k`` sees view ``k`` of the data.

    The clients get iid shares of the examples (disjoint across all clients; with
    ``replicate=True`` each cluster gets the whole dataset, or a random ``fraction`` of it
    drawn for each cluster, split among its own clients: CoBo's data-fraction ablation,
    Hashemi et al. 2024, Figure 3),
    and client ``r`` of cluster ``k`` indexes view ``k``: with :data:`VIEWS` this is the
    rotation task (images rotated by ``k * 90`` degrees) or the private-label task
    (``y -> (y + k) mod C``) of Werner (2024) ch. 2 §2.4 (300 clients, 4 clusters, client
    ``r`` in cluster ``r // 75``) and CoBo's cross-silo label permutation (``replicate``).
    """
    labels = _labels(labels)
    n_clients = positive_int("n_clients", n_clients)
    n_clusters = positive_int("n_clusters", n_clusters)
    if n_clusters > n_clients:
        raise ValueError(f"n_clusters must be at most n_clients = {n_clients}, got {n_clusters}")
    in_interval("fraction", fraction, 0.0, 1.0, low_open=True)
    if fraction < 1.0 and not replicate:
        raise ValueError("fraction applies to replicate=True only")
    cluster_sizes = _block_sizes(n_clients, n_clusters)
    n = labels.size
    if replicate:
        kept = round(fraction * n)
        if cluster_sizes.max() > kept:
            raise ValueError(
                f"a cluster of {cluster_sizes.max()} clients cannot split {kept} examples"
            )
        parts: list[np.ndarray] = []
        for k, count in enumerate(cluster_sizes):
            pieces = _split(rng.permutation(n)[:kept], _block_sizes(kept, int(count)))
            parts.extend(k * n + p for p in pieces)
        return parts
    _check_enough(n, n_clients)
    views = np.repeat(np.arange(n_clusters), cluster_sizes)
    pieces = _split(rng.permutation(n), _block_sizes(n, n_clients))
    return [view * n + p for view, p in zip(views, pieces, strict=True)]


#: Two-distribution mixtures of IP-FL (Khan et al., §6.1 and Table 11, following FedSoft):
#: the share of data from the first distribution for the first and second half of the clients.
MIXTURE_SCHEMES: dict[str, tuple[float, float]] = {
    "10:90": (0.9, 0.1),
    "30:70": (0.3, 0.7),
    "40:60": (0.4, 0.6),
}


def mixture_shares(scheme: str, n_clients: int, rng: np.random.Generator) -> np.ndarray:
    r"""Share :math:`p_i` of each client's data drawn from the first distribution.

    ``"10:90"``, ``"30:70"``, ``"40:60"``: the first half of the clients gets the first
    number of :data:`MIXTURE_SCHEMES`, the rest the second. ``"linear"``:
    :math:`p_i = (i + 1/2)/n` (IP-FL: client :math:`k` of 100 has :math:`(0.5 + k)\%` from
    :math:`D_A`). ``"random"``: :math:`p_i \sim \mathcal U(0, 1)` i.i.d.
    """
    choice("scheme", scheme, (*MIXTURE_SCHEMES, "linear", "random"))
    n_clients = positive_int("n_clients", n_clients)
    if scheme == "linear":
        return (np.arange(n_clients) + 0.5) / n_clients
    if scheme == "random":
        return rng.uniform(0.0, 1.0, size=n_clients)
    first, second = MIXTURE_SCHEMES[scheme]
    return np.where(np.arange(n_clients) < n_clients // 2, first, second)


def mixture(
    labels: Any,
    rng: np.random.Generator,
    *,
    n_clients: int,
    scheme: str = "10:90",
    size: int | None = None,
) -> list[np.ndarray]:
    r"""Two-distribution mixtures: each client holds examples of :math:`D_A` and of :math:`D_B`.

    Client :math:`i` holds :math:`\lfloor p_i n_i \rfloor` examples of :math:`D_A` (view 0) and
    the rest of :math:`D_B` (view 1, the transformed copy; IP-FL's CIFAR-10 :math:`D_B` is the
    rotated set).

    Every client draws ``size`` distinct examples (default ``N // n_clients``), disjoint
    across clients, and the first :math:`\lfloor p_i\, \mathrm{size} \rfloor` of them are
    kept as they are, the rest seen through view 1. :math:`p_i` comes from
    :func:`mixture_shares`. (FedSoft samples with replacement across clients; a partition
    here stays disjoint.) The ground-truth cluster is the majority view.
    """
    labels = _labels(labels)
    n_clients = positive_int("n_clients", n_clients)
    n = labels.size
    _check_enough(n, n_clients)
    size = n // n_clients if size is None else positive_int("size", size)
    if size * n_clients > n:
        raise ValueError(
            f"size * n_clients must be at most the number of examples ({n}), "
            f"got {size} * {n_clients}"
        )
    shares = mixture_shares(scheme, n_clients, rng)
    pieces = _split(rng.permutation(n)[: size * n_clients], np.full(n_clients, size))
    n_a = np.floor(shares * size).astype(np.int64)
    return [np.concatenate([p[:a], n + p[a:]]) for p, a in zip(pieces, n_a, strict=True)]


def natural(labels: Any, rng: np.random.Generator, *, n_clients: int) -> list[np.ndarray]:
    """The data's own clients: ``labels`` are client ids.

    Client ``j`` gets every example with id ``j`` (for generators that produce federated data,
    e.g. ``clustered-regression``).

    ``rng`` is unused: the split is fixed by the data.
    """
    groups = _labels(labels)
    n_clients = positive_int("n_clients", n_clients)
    n_groups = int(groups.max()) + 1
    if n_clients != n_groups:
        raise ValueError(
            f"the data holds {n_groups} clients; n_clients must be {n_groups}, got {n_clients}"
        )
    return [np.flatnonzero(groups == j) for j in range(n_clients)]


#: Registry: name -> partition function ``(labels, rng, *, n_clients, **params)``.
PARTITIONS: dict[str, Callable[..., list[np.ndarray]]] = {
    "iid": iid,
    "label-cdf": label_cdf,
    "pathological": pathological,
    "dirichlet": dirichlet,
    "rotation": clustered,
    "private-label": clustered,
    "mixture": mixture,
    "mixture-relabel": mixture,
    "natural": natural,
}

#: How the federation turns view ``c`` of an example into data, per partition: ``"rotate"``
#: (images rotated counter-clockwise by ``c * 90`` degrees) or ``"relabel"``
#: (``y -> (y + c * shift) mod C``). Partitions not listed use view 0 only. ``mixture-relabel``
#: is :func:`mixture` with a concept shift as :math:`D_B` (the same images, labels moved by
#: ``shift``): one model cannot serve both distributions.
VIEWS: dict[str, str] = {
    "rotation": "rotate",
    "private-label": "relabel",
    "mixture": "rotate",
    "mixture-relabel": "relabel",
}


def _majority(keys: np.ndarray) -> int:
    return int(np.bincount(keys).argmax()) if keys.size else 0


def ground_truth_clusters(
    partition: str,
    parts: Sequence[np.ndarray],
    labels: Any,
    *,
    example_cluster: np.ndarray | None = None,
    **params: Any,
) -> np.ndarray:
    """The true cluster of each client under ``partition`` (0 where there is none).

    ``rotation``, ``private-label``, ``mixture``, ``mixture-relabel``: the client's (majority)
    view.
    ``pathological``: its class group. ``natural``: the majority of ``example_cluster``
    (the generator's cluster of each example) when given. ``iid``, ``dirichlet``,
    ``label-cdf``: 0 for every client.
    """
    choice("partition", partition, tuple(PARTITIONS))
    labels = _labels(labels)
    n = labels.size
    if partition in VIEWS:
        keys = [np.asarray(p) // n for p in parts]
    elif partition == "pathological":
        k = int(params.get("classes_per_client", _CLASSES_PER_CLIENT))
        keys = [labels[np.asarray(p) % n] // k for p in parts]
    elif partition == "natural" and example_cluster is not None:
        keys = [np.asarray(example_cluster)[np.asarray(p) % n] for p in parts]
    else:
        return np.zeros(len(parts), dtype=np.int64)
    return np.array([_majority(k) for k in keys], dtype=np.int64)
