"""Partitions (learning/partition.py) and the federations built from them (learning/federation.py)."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st

from learning.data import Dataset, load_dataset
from learning.federation import make_federation
from learning.partition import (
    PARTITIONS,
    ground_truth_clusters,
    label_cdf,
    mixture_shares,
    pathological,
)


@pytest.fixture(scope="module")
def mnist5k() -> Dataset:
    return load_dataset("mnist5k")


def _tagged(n_per_class: int = 50, n_classes: int = 10, side: int = 2) -> Dataset:
    """Images whose every pixel holds the example's index, so a client's example is traceable."""
    n = n_per_class * n_classes
    x = np.repeat(np.arange(n, dtype=np.float32), side * side).reshape(n, 1, side, side)
    x = x + np.arange(side * side, dtype=np.float32).reshape(1, 1, side, side) / 10
    y = np.tile(np.arange(n_classes), n_per_class).astype(np.int64)
    return Dataset("tagged", x, y, n_classes)


def _index_of(images: np.ndarray) -> np.ndarray:
    return np.rint(images.min(axis=(1, 2, 3))).astype(np.int64)


def _assert_disjoint_cover(parts, n):
    flat = np.concatenate(parts)
    assert flat.size == n
    np.testing.assert_array_equal(np.sort(flat), np.arange(n))


labels_strategy = st.lists(st.integers(0, 9), min_size=40, max_size=300).map(np.array)


@given(labels=labels_strategy, n_clients=st.integers(1, 40), seed=st.integers(0, 2**32))
def test_iid_is_a_balanced_disjoint_cover(labels, n_clients, seed):
    parts = PARTITIONS["iid"](labels, np.random.default_rng(seed), n_clients=n_clients)
    assert len(parts) == n_clients
    _assert_disjoint_cover(parts, labels.size)
    sizes = [p.size for p in parts]
    assert max(sizes) - min(sizes) <= 1


@given(
    labels=labels_strategy,
    n_clients=st.integers(1, 10),
    alpha=st.floats(0.05, 10),
    seed=st.integers(0, 2**32),
)
def test_dirichlet_is_a_disjoint_cover(labels, n_clients, alpha, seed):
    rng = np.random.default_rng(seed)
    try:
        parts = PARTITIONS["dirichlet"](labels, rng, n_clients=n_clients, alpha=alpha)
    except ValueError as error:  # a draw can leave a client empty: it must say so
        assert "tries" in str(error)
        return
    _assert_disjoint_cover(parts, labels.size)
    assert min(p.size for p in parts) >= 1


def test_dirichlet_skew_grows_as_alpha_falls(mnist5k):
    def mean_classes(alpha):
        parts = PARTITIONS["dirichlet"](
            mnist5k.y, np.random.default_rng(0), n_clients=20, alpha=alpha
        )
        return np.mean([np.unique(mnist5k.y[p]).size for p in parts])

    assert mean_classes(0.05) < mean_classes(100.0) == 10.0


@given(k=st.sampled_from([1, 2, 5]), extra=st.integers(0, 7), seed=st.integers(0, 2**32))
def test_pathological_gives_each_client_its_group_classes(k, extra, seed):
    labels = np.tile(np.arange(10), 30)
    n_clients = 10 // k + extra
    parts = pathological(
        labels, np.random.default_rng(seed), n_clients=n_clients, classes_per_client=k
    )
    _assert_disjoint_cover(parts, labels.size)
    clusters = ground_truth_clusters("pathological", parts, labels, classes_per_client=k)
    for part, group in zip(parts, clusters, strict=True):
        assert set(np.unique(labels[part])) <= set(range(group * k, group * k + k))
    # clients sit in contiguous blocks, as evenly as possible over the groups
    assert np.all(np.diff(clusters) >= 0)
    counts = np.bincount(clusters, minlength=10 // k)
    assert counts.max() - counts.min() <= 1


def test_pathological_takes_uneven_group_sizes():
    labels = np.repeat(np.arange(100), 5)
    sizes = (3, 3, 2, 2, 2, 2, 1, 1, 1, 1)
    parts = pathological(
        labels, np.random.default_rng(0), n_clients=18, classes_per_client=10, sizes=sizes
    )
    clusters = ground_truth_clusters("pathological", parts, labels, classes_per_client=10)
    np.testing.assert_array_equal(np.bincount(clusters), sizes)


@given(
    n_clients=st.integers(4, 30),
    n_clusters=st.integers(1, 4),
    replicate=st.booleans(),
    seed=st.integers(0, 2**32),
)
def test_clustered_views_are_contiguous_blocks(n_clients, n_clusters, replicate, seed):
    labels = np.arange(120) % 10
    parts = PARTITIONS["rotation"](
        labels,
        np.random.default_rng(seed),
        n_clients=n_clients,
        n_clusters=n_clusters,
        replicate=replicate,
    )
    views = [np.unique(p // 120) for p in parts]
    assert all(v.size == 1 for v in views)
    clusters = ground_truth_clusters("rotation", parts, labels, n_clusters=n_clusters)
    np.testing.assert_array_equal(clusters, np.concatenate(views))
    assert np.all(np.diff(clusters) >= 0)
    assert set(clusters) == set(range(n_clusters))
    base = [p % 120 for p in parts]
    if replicate:
        for k in range(n_clusters):
            _assert_disjoint_cover([b for b, c in zip(base, clusters, strict=True) if c == k], 120)
    else:
        _assert_disjoint_cover(base, 120)


def test_clustered_fraction_gives_each_cluster_its_own_share_of_the_data():
    labels = np.arange(120) % 10
    whole = PARTITIONS["private-label"](
        labels, np.random.default_rng(3), n_clients=6, n_clusters=3, replicate=True
    )
    same = PARTITIONS["private-label"](
        labels, np.random.default_rng(3), n_clients=6, n_clusters=3, replicate=True, fraction=1.0
    )
    assert all(np.array_equal(a, b) for a, b in zip(whole, same, strict=True))
    parts = PARTITIONS["private-label"](
        labels, np.random.default_rng(3), n_clients=6, n_clusters=3, replicate=True, fraction=0.25
    )
    for k in range(3):
        mine = np.concatenate(parts[2 * k : 2 * k + 2])
        assert mine.size == 30 and np.unique(mine).size == 30 and set(mine // 120) == {k}
    assert {p.size for p in parts} == {15}
    with pytest.raises(ValueError, match="fraction"):
        PARTITIONS["private-label"](labels, np.random.default_rng(0), n_clients=4, fraction=0.5)
    with pytest.raises(ValueError, match="fraction"):
        PARTITIONS["private-label"](
            labels, np.random.default_rng(0), n_clients=4, replicate=True, fraction=0.0
        )


def test_label_cdf_paper_split_is_exact(mnist5k):
    parts = label_cdf(mnist5k.y, np.random.default_rng(0))
    low, high = parts
    assert low.size == high.size == 1000
    assert np.intersect1d(low, high).size == 0
    assert [(mnist5k.y[p] <= 5).sum() for p in parts] == [800, 200]
    assert [(mnist5k.y[p] > 5).sum() for p in parts] == [200, 800]


def test_label_cdf_code_split_replicates_the_prefix_rule(mnist5k):
    y = mnist5k.y
    n = y.size
    s_le, s_gt = np.flatnonzero(y <= 5), np.flatnonzero(y > 5)
    parts = label_cdf(y, np.random.default_rng(0), split="code")
    for part, share in zip(parts, (0.8, 0.2), strict=True):
        allowed = np.concatenate([s_le[: int(share * n)], s_gt[: int((1 - share) * n)]])
        assert part.size == 1000 == np.unique(part).size
        assert np.isin(part, allowed).all()
    # the prefixes exceed the groups: the realised CDF is ~3000/4000 = 0.75, not 0.8
    realised = (y[parts[0]] <= 5).mean()
    assert 0.70 < realised < 0.80


def test_label_cdf_rejects_inconsistent_input(mnist5k):
    with pytest.raises(ValueError, match="len\\(shares\\)"):
        label_cdf(mnist5k.y, np.random.default_rng(0), n_clients=3)
    with pytest.raises(ValueError, match="split"):
        label_cdf(mnist5k.y, np.random.default_rng(0), split="other")
    with pytest.raises(ValueError, match="label <= 5"):
        label_cdf(mnist5k.y, np.random.default_rng(0), size=3100)
    with pytest.raises(ValueError, match="shares"):
        label_cdf(mnist5k.y, np.random.default_rng(0), shares=(1.2, -0.2))


@pytest.mark.parametrize(
    ("scheme", "first", "last"),
    [("10:90", 0.9, 0.1), ("30:70", 0.3, 0.7), ("40:60", 0.4, 0.6), ("linear", 0.005, 0.995)],
)
def test_mixture_shares_follow_the_schemes(scheme, first, last):
    p = mixture_shares(scheme, 100, np.random.default_rng(0))
    assert p[0] == pytest.approx(first)
    assert p[-1] == pytest.approx(last)
    if scheme != "linear":
        assert set(p[:50]) == {first} and set(p[50:]) == {last}


def test_mixture_draws_each_client_share_from_the_first_view():
    labels = np.arange(1000) % 10
    parts = PARTITIONS["mixture"](
        labels, np.random.default_rng(0), n_clients=10, scheme="10:90", size=50
    )
    first_view = [int((p < 1000).sum()) for p in parts]
    assert first_view == [45] * 5 + [5] * 5
    _assert_disjoint_cover(
        [p % 1000 for p in parts] + [np.setdiff1d(np.arange(1000), np.concatenate(parts) % 1000)],
        1000,
    )
    clusters = ground_truth_clusters("mixture", parts, labels)
    np.testing.assert_array_equal(clusters, [0] * 5 + [1] * 5)
    random_p = mixture_shares("random", 1000, np.random.default_rng(1))
    assert 0 < random_p.min() and random_p.max() < 1 and abs(random_p.mean() - 0.5) < 0.05


def test_natural_partition_follows_the_generators_clients():
    groups = np.repeat(np.arange(4), 3)
    parts = PARTITIONS["natural"](groups, np.random.default_rng(0), n_clients=4)
    assert [p.tolist() for p in parts] == [[0, 1, 2], [3, 4, 5], [6, 7, 8], [9, 10, 11]]
    with pytest.raises(ValueError, match="n_clients must be 4"):
        PARTITIONS["natural"](groups, np.random.default_rng(0), n_clients=3)


@pytest.mark.parametrize(
    ("name", "params"),
    [
        ("iid", {}),
        ("dirichlet", {"alpha": 0.3}),
        ("pathological", {"classes_per_client": 2}),
        ("rotation", {"n_clusters": 4}),
        ("private-label", {"n_clusters": 2, "replicate": True}),
        ("mixture", {"scheme": "random"}),
    ],
)
def test_partitions_are_deterministic_in_the_seed(name, params):
    labels = np.arange(400) % 10
    a = PARTITIONS[name](labels, np.random.default_rng(3), n_clients=8, **params)
    b = PARTITIONS[name](labels, np.random.default_rng(3), n_clients=8, **params)
    c = PARTITIONS[name](labels, np.random.default_rng(4), n_clients=8, **params)
    assert all(np.array_equal(x, y) for x, y in zip(a, b, strict=True))
    assert not all(np.array_equal(x, y) for x, y in zip(a, c, strict=True))


def test_partitions_reject_bad_input():
    labels = np.arange(20) % 10
    rng = np.random.default_rng(0)
    with pytest.raises(ValueError, match="n_clients must be at most"):
        PARTITIONS["iid"](labels, rng, n_clients=21)
    with pytest.raises(ValueError, match="n_clients"):
        PARTITIONS["iid"](labels, rng, n_clients=0)
    with pytest.raises(ValueError, match="classes_per_client must divide"):
        pathological(labels, rng, n_clients=4, classes_per_client=3)
    with pytest.raises(ValueError, match="sizes"):
        pathological(labels, rng, n_clients=5, classes_per_client=2, sizes=(1, 1, 1, 1, 2))
    with pytest.raises(ValueError, match="alpha"):
        PARTITIONS["dirichlet"](labels, rng, n_clients=2, alpha=0.0)
    with pytest.raises(ValueError, match="n_clusters"):
        PARTITIONS["rotation"](labels, rng, n_clients=2, n_clusters=3)
    with pytest.raises(ValueError, match="scheme"):
        PARTITIONS["mixture"](labels, rng, n_clients=2, scheme="20:80")
    with pytest.raises(ValueError, match="labels"):
        PARTITIONS["iid"](np.array([0.5, 1.5]), rng, n_clients=1)


# --------------------------------------------------------------------------- federations


def test_federation_splits_train_and_test_per_client():
    data = _tagged()
    fed = make_federation(data, "iid", 10, seed=0, test_fraction=0.2)
    assert fed.n_clients == 10
    assert fed.input_shape == (1, 2, 2)
    assert fed.n_classes == 10
    assert fed.target is None
    seen = []
    for client in fed.clients:
        assert (client.n_train, client.n_test) == (40, 10)
        assert client.x_train.dtype == np.float32 and client.y_train.dtype == np.int64
        for x, y in ((client.x_train, client.y_train), (client.x_test, client.y_test)):
            idx = _index_of(x)
            np.testing.assert_array_equal(data.y[idx], y)
            seen.append(idx)
    _assert_disjoint_cover(seen, len(data))
    np.testing.assert_array_equal(fed.clusters, np.zeros(10))


def test_rotation_federation_rotates_each_cluster():
    data = _tagged()
    fed = make_federation(data, "rotation", 8, seed=1, n_clusters=4)
    np.testing.assert_array_equal(fed.clusters, np.repeat(np.arange(4), 2))
    for client in fed.clients:
        idx = _index_of(client.x_train)
        expected = np.rot90(data.x[idx], k=client.cluster, axes=(-2, -1))
        np.testing.assert_array_equal(client.x_train, expected)
        np.testing.assert_array_equal(client.y_train, data.y[idx])


def test_private_label_federation_shifts_labels_per_cluster():
    data = _tagged()
    fed = make_federation(data, "private-label", 6, seed=2, n_clusters=3, label_shift=3)
    for client in fed.clients:
        idx = _index_of(client.x_test)
        np.testing.assert_array_equal(client.x_test, data.x[idx])
        np.testing.assert_array_equal(client.y_test, (data.y[idx] + 3 * client.cluster) % 10)


def test_mixture_federation_rotates_the_second_distribution():
    data = _tagged()
    fed = make_federation(data, "mixture", 10, seed=3, test_fraction=0.0, scheme="10:90", size=50)
    for client in fed.clients:
        originals = data.x[_index_of(client.x_train)]
        rotated = (client.x_train != originals).any(axis=(1, 2, 3))
        assert rotated.sum() == (5 if client.cluster == 0 else 45)
        np.testing.assert_array_equal(
            client.x_train[rotated], np.rot90(originals[rotated], axes=(-2, -1))
        )


def test_flipped_test_view_inverts_the_mixture():
    data = _tagged()
    fed = make_federation(
        data, "mixture", 10, seed=4, test_fraction=0.5, scheme="10:90", flip_test_view=True
    )
    for client in fed.clients:
        original = [
            (x == data.x[_index_of(x)]).all(axis=(1, 2, 3)) for x in (client.x_train, client.x_test)
        ]
        # the 45 (or 5) examples drawn from the first distribution are unrotated in training
        # and rotated in testing, the others the other way round
        from_first = original[0].sum() + (~original[1]).sum()
        assert from_first == (45 if client.cluster == 0 else 5)
    with pytest.raises(ValueError, match="mixture"):
        make_federation(data, "iid", 2, flip_test_view=True)


def test_duopoly_federation_carves_a_balanced_target_first():
    data = _tagged(n_per_class=500)
    fed = make_federation(
        data, "label-cdf", 2, seed=0, test_fraction=0.0, target_fraction=0.2, shares=(0.8, 0.2)
    )
    x_target, y_target = fed.target
    np.testing.assert_array_equal(np.bincount(y_target), np.full(10, 100))
    target_idx = _index_of(x_target)
    firms = [_index_of(c.x_train) for c in fed.clients]
    assert [(data.y[f] <= 5).sum() for f in firms] == [800, 200]
    assert np.intersect1d(firms[0], firms[1]).size == 0
    assert all(np.intersect1d(f, target_idx).size == 0 for f in firms)


def test_synthetic_regression_federation_keeps_the_generators_clients():
    fed = make_federation("clustered-regression", "natural", 16, seed=0, test_fraction=0.0)
    np.testing.assert_array_equal(fed.clusters, np.repeat(np.arange(4), 4))
    assert fed.truth.shape == (4, 10)
    for client in fed.clients:
        assert client.x_train.shape == (9, 10)
        np.testing.assert_allclose(
            client.y_train, client.x_train @ fed.truth[client.cluster], rtol=1e-5, atol=1e-2
        )


def test_dataset_params_reach_the_generator():
    fed = make_federation(
        "clustered-regression",
        "natural",
        6,
        seed=0,
        test_fraction=0.0,
        dataset_params={"n_clusters": 3, "clients_per_cluster": 2, "dim": 4},
    )
    np.testing.assert_array_equal(fed.clusters, [0, 0, 1, 1, 2, 2])
    assert fed.input_shape == (4,)
    with pytest.raises(ValueError, match="by name"):
        make_federation(_tagged(), "iid", 2, dataset_params={"dim": 4})


def test_federation_is_deterministic_in_the_seed():
    data = _tagged()
    a = make_federation(data, "dirichlet", 5, seed=9, alpha=0.5)
    b = make_federation(data, "dirichlet", 5, seed=9, alpha=0.5)
    for ca, cb in zip(a.clients, b.clients, strict=True):
        np.testing.assert_array_equal(ca.x_train, cb.x_train)
        np.testing.assert_array_equal(ca.y_test, cb.y_test)


def test_federation_rejects_bad_input_before_loading(tmp_path):
    # an unknown partition fails before the (missing) MNIST files are looked for
    with pytest.raises(ValueError, match="partition"):
        make_federation("mnist", "bogus", 3, data_dir=tmp_path)
    with pytest.raises(ValueError, match="alpha"):
        make_federation("mnist", "iid", 3, data_dir=tmp_path, alpha=0.1)
    with pytest.raises(ValueError, match="test_fraction"):
        make_federation("mnist", "iid", 3, data_dir=tmp_path, test_fraction=1.0)
    with pytest.raises(ValueError, match="n_clients"):
        make_federation("mnist", "iid", 0, data_dir=tmp_path)


def test_federation_rejects_impossible_requests():
    data = _tagged(n_per_class=2)
    with pytest.raises(ValueError, match="n_clients must be at most"):
        make_federation(data, "iid", 21)
    with pytest.raises(ValueError, match="square images"):
        make_federation(load_dataset("gaussian-mixture", seed=0), "rotation", 4)
    with pytest.raises(ValueError, match="class labels"):
        make_federation(load_dataset("clustered-regression", seed=0), "private-label", 4)
    with pytest.raises(ValueError, match="target"):
        make_federation(data, "iid", 2, target_fraction=0.2)


def test_explicit_target_data_is_used_as_the_target():
    data, held_out = _tagged(n_per_class=200), _tagged(n_per_class=20)
    fed = make_federation(
        data, "label-cdf", 2, seed=0, test_fraction=0.0, target_data=held_out, size=500
    )
    np.testing.assert_array_equal(fed.target[1], held_out.y)
    assert sum(c.n_train for c in fed.clients) == 1000
    with pytest.raises(ValueError, match="not both"):
        make_federation(data, "iid", 2, target_fraction=0.1, target_data=held_out)
    with pytest.raises(ValueError, match="shape"):
        make_federation(data, "iid", 2, target_data=_tagged(side=3))
