"""Datasets: embedded sets, file loaders (on small files written here), synthetic generators."""

from __future__ import annotations

import gzip
import pickle

import numpy as np
import pytest

from learning.data import (
    DATASETS,
    Dataset,
    clustered_regression,
    gaussian_mixture,
    load_dataset,
)
from learning.data_files import DATA_ENV, MissingDataError


@pytest.fixture(scope="module")
def mnist5k() -> Dataset:
    return load_dataset("mnist5k")


def test_mnist5k_shapes_and_normalisation(mnist5k):
    assert mnist5k.x.shape == (5000, 1, 28, 28)
    assert mnist5k.x.dtype == np.float32
    assert mnist5k.y.dtype == np.int64
    assert mnist5k.n_classes == 10
    np.testing.assert_array_equal(np.bincount(mnist5k.y), np.full(10, 500))
    # pixels in [0, 1] normalised with MNIST's mean 0.1307 and std 0.3081
    assert mnist5k.x.min() == pytest.approx(-0.1307 / 0.3081, abs=1e-6)
    assert mnist5k.x.max() == pytest.approx((1 - 0.1307) / 0.3081, abs=1e-6)
    assert abs(float(mnist5k.x.mean())) < 0.1


def test_digits_shapes_and_range():
    digits = load_dataset("digits")
    assert digits.x.shape == (1797, 1, 8, 8)
    assert digits.x.dtype == np.float32
    assert digits.x.min() == 0.0
    assert digits.x.max() == 1.0
    assert set(np.unique(digits.y)) == set(range(10))
    assert digits.n_classes == 10


def test_subset_keeps_order_and_metadata():
    data = clustered_regression(seed=0)
    part = data.subset([5, 0, 17])
    np.testing.assert_array_equal(part.x, data.x[[5, 0, 17]])
    np.testing.assert_array_equal(part.y, data.y[[5, 0, 17]])
    np.testing.assert_array_equal(part.group, data.group[[5, 0, 17]])
    assert part.truth is data.truth
    assert len(part) == 3


def test_dataset_rejects_mismatched_lengths():
    with pytest.raises(ValueError, match="same number of examples"):
        Dataset("bad", np.zeros((3, 2), np.float32), np.zeros(4, np.int64), 2)


def test_unknown_dataset_lists_known_ones():
    with pytest.raises(ValueError, match="mnist5k") as info:
        load_dataset("imagenet")
    assert all(name in str(info.value) for name in DATASETS)


def test_embedded_datasets_take_no_parameters():
    with pytest.raises(ValueError, match="no parameters"):
        load_dataset("digits", n=3)


def test_missing_mnist_files_name_the_file(tmp_path):
    with pytest.raises(MissingDataError) as info:
        load_dataset("mnist", data_dir=tmp_path)
    message = str(info.value)
    assert isinstance(info.value, FileNotFoundError)
    assert isinstance(info.value, ValueError)  # the CLI turns it into exit code 2
    assert str(tmp_path / "mnist" / "train-images-idx3-ubyte") in message
    assert "t10k-labels-idx1-ubyte" in message
    assert str(tmp_path / "mnist.npz") in message


def test_missing_data_dir_names_the_environment_variable(monkeypatch):
    monkeypatch.delenv(DATA_ENV, raising=False)
    with pytest.raises(FileNotFoundError, match=DATA_ENV):
        load_dataset("fashion-mnist")


def test_missing_cifar_files_name_the_file(tmp_path):
    with pytest.raises(MissingDataError, match="data_batch_1"):
        load_dataset("cifar10", data_dir=tmp_path)


def _write_idx(path, array, gz):
    header = bytes([0, 0, 0x08, array.ndim]) + b"".join(
        int(s).to_bytes(4, "big") for s in array.shape
    )
    opener = gzip.open if gz else open
    with opener(path, "wb") as handle:
        handle.write(header + array.astype(np.uint8).tobytes())


def test_idx_files_are_read_from_the_environment_directory(tmp_path, monkeypatch):
    rng = np.random.default_rng(0)
    folder = tmp_path / "mnist"
    folder.mkdir()
    images = {"train": rng.integers(0, 256, (6, 28, 28)), "t10k": rng.integers(0, 256, (4, 28, 28))}
    labels = {"train": np.arange(6) % 10, "t10k": np.arange(4) + 3}
    for part in ("train", "t10k"):
        _write_idx(folder / f"{part}-images-idx3-ubyte.gz", images[part], gz=True)
        _write_idx(folder / f"{part}-labels-idx1-ubyte", labels[part], gz=False)
    monkeypatch.setenv(DATA_ENV, str(tmp_path))
    data = load_dataset("mnist")
    assert data.x.shape == (10, 1, 28, 28)
    np.testing.assert_array_equal(data.y, np.concatenate([labels["train"], labels["t10k"]]))
    expected = (images["t10k"][1] / 255.0 - 0.1307) / 0.3081
    np.testing.assert_allclose(data.x[7, 0], expected, rtol=1e-6)
    test_only = load_dataset("mnist", part="test")
    np.testing.assert_array_equal(test_only.y, labels["t10k"])


def test_npz_archive_is_read(tmp_path):
    rng = np.random.default_rng(1)
    np.savez(
        tmp_path / "fashion-mnist.npz",
        x_train=rng.integers(0, 256, (5, 28, 28), dtype=np.uint8),
        y_train=np.arange(5),
        x_test=rng.integers(0, 256, (2, 28, 28), dtype=np.uint8),
        y_test=np.array([8, 9]),
    )
    data = load_dataset("fashion-mnist", data_dir=tmp_path, part="train")
    assert data.x.shape == (5, 1, 28, 28)
    np.testing.assert_array_equal(data.y, np.arange(5))


@pytest.mark.parametrize(
    ("images", "labels", "bad", "message"),
    [
        ((6, 28, 28), np.array([0, 1, 2, 12, 4, 5]), "labels", r"labels in \[0, 12\], mnist has"),
        ((6, 27, 28), np.arange(6), "images", r"image shape \(27, 28\), expected \(28, 28\)"),
        ((6, 28, 28), np.arange(5), "labels", "5 labels for the 6 images"),
        ((6, 28, 28), np.zeros((6, 2)), "labels", "announces 2 dimensions"),
    ],
)
def test_idx_files_with_bad_fields_are_refused_naming_the_file(
    tmp_path, images, labels, bad, message
):
    folder = tmp_path / "mnist"
    folder.mkdir()
    for part in ("train", "t10k"):
        _write_idx(folder / f"{part}-images-idx3-ubyte", np.zeros(images), gz=False)
        _write_idx(folder / f"{part}-labels-idx1-ubyte", labels, gz=False)
    kind = "images-idx3" if bad == "images" else "labels-idx1"
    with pytest.raises(ValueError, match=message) as refused:
        load_dataset("mnist", data_dir=tmp_path, part="train")
    assert str(refused.value).startswith(f"{folder / f'train-{kind}-ubyte'}: ")


@pytest.mark.parametrize(
    ("change", "message"),
    [
        ({"y_train": np.array([0, 1, 2, 3.5, 4])}, "y_train must hold integer labels"),
        ({"y_train": np.array([0, 1, 2, 3, 10])}, r"y_train holds labels in \[0, 10\]"),
        ({"y_test": np.array([-1, 0])}, r"y_test holds labels in \[-1, 0\]"),
        ({"y_train": np.zeros((5, 2))}, "y_train must be one label per image"),
        ({"x_train": np.full((5, 28, 28), np.nan)}, r"x_train must hold pixel values"),
        ({"x_test": np.full((2, 28, 28), 300.0)}, r"x_test must hold pixel values"),
    ],
)
def test_npz_archive_with_bad_fields_is_refused_naming_the_file(tmp_path, change, message):
    arrays = {
        "x_train": np.zeros((5, 28, 28), dtype=np.uint8),
        "y_train": np.arange(5),
        "x_test": np.zeros((2, 28, 28), dtype=np.uint8),
        "y_test": np.array([8, 9]),
    }
    np.savez(tmp_path / "mnist.npz", **{**arrays, **change})
    with pytest.raises(ValueError, match=message) as refused:
        load_dataset("mnist", data_dir=tmp_path)
    assert str(refused.value).startswith(f"{tmp_path / 'mnist.npz'}: ")


def test_cifar_python_batches_are_read(tmp_path):
    rng = np.random.default_rng(2)
    folder = tmp_path / "cifar-100-python"
    folder.mkdir()
    for part, n in (("train", 6), ("test", 3)):
        batch = {
            b"data": rng.integers(0, 256, (n, 3072), dtype=np.uint8),
            b"fine_labels": list(rng.integers(0, 100, n)),
        }
        with open(folder / part, "wb") as handle:
            pickle.dump(batch, handle)
    data = load_dataset("cifar100", data_dir=tmp_path)
    assert data.x.shape == (9, 3, 32, 32)
    assert data.n_classes == 100
    assert -1.0 <= data.x.min() and data.x.max() <= 1.0


def test_clustered_regression_follows_the_generative_model():
    data = clustered_regression(seed=0, n_clusters=3, clients_per_cluster=2)
    assert data.x.shape == (3 * 2 * 9, 10)
    assert data.n_classes == 0
    assert set(np.unique(data.truth)) <= {0.0, 100.0}
    # noise-free: y = A theta*_k exactly (up to float32 rounding)
    pred = np.einsum("nd,nd->n", data.x.astype(np.float64), data.truth[data.cluster])
    np.testing.assert_allclose(data.y, pred, rtol=1e-5, atol=1e-2)
    # features of cluster k are centred at k
    for k in range(3):
        assert abs(data.x[data.cluster == k].mean() - k) < 0.4
    np.testing.assert_array_equal(np.bincount(data.group), np.full(6, 9))


def test_synthetic_generators_are_deterministic_in_the_seed():
    for name in ("clustered-regression", "gaussian-mixture"):
        a, b = load_dataset(name, seed=7), load_dataset(name, seed=7)
        c = load_dataset(name, seed=8)
        np.testing.assert_array_equal(a.x, b.x)
        np.testing.assert_array_equal(a.y, b.y)
        assert not np.array_equal(a.x, c.x)


def test_gaussian_mixture_labels_are_components():
    data = gaussian_mixture(seed=0, n_components=3, samples_per_component=400, dim=5, std=0.5)
    assert data.x.shape == (1200, 5)
    assert data.n_classes == 3
    np.testing.assert_array_equal(data.y, data.cluster)
    assert np.all(np.abs(data.truth) <= 10.0)
    for k in range(3):
        np.testing.assert_allclose(data.x[data.y == k].mean(axis=0), data.truth[k], atol=0.1)


def test_generators_reject_bad_parameters():
    with pytest.raises(ValueError, match="n_clusters"):
        clustered_regression(n_clusters=0)
    with pytest.raises(ValueError, match="noise"):
        clustered_regression(noise=-1.0)
    with pytest.raises(ValueError, match="std"):
        gaussian_mixture(std=-0.1)


@pytest.mark.parametrize(
    ("n_clusters", "clients_per_cluster", "initial_error"),
    [(4, 4, 0.365), (4, 16, 0.305), (16, 4, 0.313)],
)
def test_clustered_regression_reproduces_the_authors_random_stream(
    n_clusters, clients_per_cluster, initial_error
):
    # Werner (2024) ch. 2 Fig. 3: the oracle start, drawn after the data from the same
    # default_rng(0), is at mean distance 0.365 / 0.305 / 0.313 from the optima.
    rng = np.random.default_rng(0)
    data = clustered_regression(
        seed=rng, n_clusters=n_clusters, clients_per_cluster=clients_per_cluster
    )
    start = data.truth + rng.normal(0.0, 0.1, size=data.truth.shape)
    error = np.linalg.norm(start - data.truth, axis=1).mean()
    assert error == pytest.approx(initial_error, abs=5e-4)


# --------------------------------------------------------------------------- files as found


def _cifar10_batch(rng: np.random.Generator, n: int) -> dict[bytes, object]:
    """A batch laid out like the published CIFAR-10 python files."""
    return {
        b"batch_label": b"testing batch 1 of 1",
        b"labels": [int(v) for v in rng.integers(0, 10, n)],
        b"data": rng.integers(0, 256, (n, 3072), dtype=np.uint8),
        b"filenames": [f"img_{i}.png".encode() for i in range(n)],
    }


def _pickled(batch: object, protocol: int, numpy1_names: bool) -> bytes:
    raw = pickle.dumps(batch, protocol=protocol)
    if numpy1_names:  # the module the published files (numpy 1.x, Python 2) name
        raw = raw.replace(b"numpy._core.multiarray\n", b"numpy.core.multiarray\n")
    return raw


@pytest.mark.parametrize(
    ("protocol", "numpy1_names"),
    [(2, True), (2, False), (3, True), (4, False), (5, False)],
)
def test_cifar_batch_in_the_published_layout_is_read(tmp_path, protocol, numpy1_names):
    rng = np.random.default_rng(3)
    batch = _cifar10_batch(rng, 4)
    folder = tmp_path / "cifar-10-batches-py"
    folder.mkdir()
    raw = _pickled(batch, protocol, numpy1_names)
    if numpy1_names:
        assert b"numpy.core.multiarray\n_reconstruct" in raw
    (folder / "test_batch").write_bytes(raw)
    data = load_dataset("cifar10", data_dir=tmp_path, part="test")
    np.testing.assert_array_equal(data.y, batch[b"labels"])
    pixels = batch[b"data"].reshape(-1, 3, 32, 32) / 255.0
    mean = np.array([0.4914, 0.4822, 0.4465]).reshape(1, 3, 1, 1)
    std = np.array([0.2023, 0.1994, 0.2010]).reshape(1, 3, 1, 1)
    np.testing.assert_allclose(data.x, (pixels - mean) / std, rtol=1e-6)


def _one_line_naming(info: pytest.ExceptionInfo[ValueError], path: object) -> bool:
    message = str(info.value)
    return "\n" not in message and str(path) in message


_GOOD = {b"data": np.zeros((2, 3072), dtype=np.uint8), b"labels": [0, 1]}
_BAD_BATCHES = {
    "garbage": b"\x00\x01 not a pickle",
    "empty": b"",
    "truncated": pickle.dumps(_GOOD)[:-40],
    "a list": pickle.dumps([1, 2, 3]),
    "no data": pickle.dumps({b"labels": [0, 1]}),
    "float pixels": pickle.dumps({**_GOOD, b"data": np.zeros((2, 3072))}),
    "wrong row length": pickle.dumps({**_GOOD, b"data": np.zeros((2, 100), np.uint8)}),
    "labels too few": pickle.dumps({**_GOOD, b"labels": [0]}),
    "label out of range": pickle.dumps({**_GOOD, b"labels": [0, 10]}),
    "no labels": pickle.dumps({b"data": _GOOD[b"data"]}),
    "another codec": pickle.dumps({b"data": _GOOD[b"data"]}, protocol=2).replace(
        b"latin1", b"base64"
    ),
}


@pytest.mark.parametrize("content", _BAD_BATCHES.values(), ids=_BAD_BATCHES)
def test_corrupt_cifar_batch_is_one_line_naming_the_file(tmp_path, content):
    folder = tmp_path / "cifar-10-batches-py"
    folder.mkdir()
    (folder / "test_batch").write_bytes(content)
    with pytest.raises(ValueError) as info:
        load_dataset("cifar10", data_dir=tmp_path, part="test")
    assert _one_line_naming(info, folder / "test_batch")


def _npz_bytes(tmp_path, **arrays: np.ndarray) -> bytes:
    path = tmp_path / "made.npz"
    np.savez(path, **arrays)
    return path.read_bytes()


@pytest.mark.parametrize(
    "make",
    [
        lambda t: b"this is not a zip archive",
        lambda t: b"",
        lambda t: _npz_bytes(t, x_train=np.zeros((2, 28, 28)), y_train=np.zeros(2))[:-60],
        lambda t: _npz_bytes(t, x_train=np.zeros((2, 28, 28))),
        lambda t: _npz_bytes(t, x_train=np.zeros((2, 28, 28), object), y_train=np.zeros(2)),
        lambda t: _npz_bytes(t, x_train=np.zeros((2, 7, 7)), y_train=np.zeros(2)),
        lambda t: _npz_bytes(t, x_train=np.zeros((2, 28, 28)), y_train=np.zeros(3)),
    ],
    ids=["text", "empty", "truncated", "no labels", "objects", "7x7", "3 labels"],
)
def test_corrupt_npz_archive_is_one_line_naming_the_file(tmp_path, make):
    content = make(tmp_path)
    path = tmp_path / "mnist.npz"
    path.write_bytes(content)
    with pytest.raises(ValueError) as info:
        load_dataset("mnist", data_dir=tmp_path, part="train")
    assert _one_line_naming(info, path)


def test_npy_array_under_an_npz_name_is_refused(tmp_path):
    path = tmp_path / "mnist.npz"
    with open(path, "wb") as handle:
        np.save(handle, np.zeros(3))
    with pytest.raises(ValueError) as info:
        load_dataset("mnist", data_dir=tmp_path, part="train")
    assert _one_line_naming(info, path)


@pytest.mark.parametrize(
    ("name", "content"),
    [
        ("train-images-idx3-ubyte.gz", b"\x1f\x8b\x08 broken gzip stream"),
        ("train-images-idx3-ubyte", b"\x00\x00"),
        ("train-images-idx3-ubyte", b"\x00\x00\x08\x03\x00\x00"),
        ("train-images-idx3-ubyte", b"\x00\x00\x08\x03" + (2).to_bytes(4, "big") * 3 + b"\x00"),
    ],
    ids=["bad gzip", "two bytes", "short header", "short data"],
)
def test_corrupt_idx_file_is_one_line_naming_the_file(tmp_path, name, content):
    folder = tmp_path / "mnist"
    folder.mkdir()
    (folder / name).write_bytes(content)
    _write_idx(folder / "train-labels-idx1-ubyte", np.zeros(2), gz=False)
    with pytest.raises(ValueError) as info:
        load_dataset("mnist", data_dir=tmp_path, part="train")
    assert _one_line_naming(info, folder / name)
