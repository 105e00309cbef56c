"""EMNIST in its official distribution format (learning.data_files.emnist_arrays, dataset
``emnist``) and the IP-FL reproduction's EMNIST settings on tiny files of that format."""

import gzip
import struct

import numpy as np
import pytest

from learning.data import load_dataset
from learning.data_files import MissingDataError


def _write_idx(path, array, magic_ndim=None):
    ndim = array.ndim if magic_ndim is None else magic_ndim
    header = bytes([0, 0, 8, ndim]) + b"".join(struct.pack(">I", n) for n in array.shape)
    with gzip.open(path, "wb") as handle:
        handle.write(header + np.ascontiguousarray(array, dtype=np.uint8).tobytes())


def write_emnist(folder, split="byclass", classes=range(62), per_class=2, seed=0):
    """Official-format files: each image stored transposed, a class-dependent pattern."""
    rng = np.random.default_rng(seed)
    folder.mkdir(parents=True, exist_ok=True)
    upright = {}
    for part in ("train", "test"):
        labels = np.repeat(np.asarray(list(classes), dtype=np.uint8), per_class)
        images = rng.integers(0, 40, size=(labels.size, 28, 28)).astype(np.uint8)
        images[np.arange(labels.size), labels % 28, :] = 255  # row: upright, a column on disk
        _write_idx(
            folder / f"emnist-{split}-{part}-images-idx3-ubyte.gz", images.transpose(0, 2, 1)
        )
        _write_idx(folder / f"emnist-{split}-{part}-labels-idx1-ubyte.gz", labels)
        upright[part] = (images, labels)
    return upright


def test_reads_the_official_files_and_transposes_the_images(tmp_path):
    upright = write_emnist(tmp_path / "gzip")
    data = load_dataset("emnist", data_dir=tmp_path, part="train")
    images, labels = upright["train"]
    np.testing.assert_allclose(data.x[:, 0] * 0.3081 + 0.1307, images / 255.0, atol=1e-5)
    assert data.n_classes == 62 and data.x.shape == (labels.size, 1, 28, 28)
    np.testing.assert_array_equal(data.y, labels)
    bright = data.x[:, 0].max(axis=2).argmax(axis=1)  # the bright row, upright again
    np.testing.assert_array_equal(bright, labels % 28)
    assert len(load_dataset("emnist", data_dir=tmp_path)) == 2 * labels.size


def test_drop_digits_keeps_the_52_letters_and_letters_start_at_zero(tmp_path):
    write_emnist(tmp_path)
    letters = load_dataset("emnist", data_dir=tmp_path, drop_digits=True)
    assert letters.n_classes == 52 and letters.y.min() == 0 and letters.y.max() == 51
    write_emnist(tmp_path, split="letters", classes=range(1, 27))
    data = load_dataset("emnist", data_dir=tmp_path, split="letters")
    assert data.n_classes == 26 and (data.y.min(), data.y.max()) == (0, 25)
    with pytest.raises(ValueError, match="drop_digits"):
        load_dataset("emnist", data_dir=tmp_path, split="letters", drop_digits=True)


def test_a_missing_file_is_named(tmp_path):
    with pytest.raises(MissingDataError, match="emnist-balanced-train-images-idx3-ubyte"):
        load_dataset("emnist", data_dir=tmp_path, split="balanced")
    with pytest.raises(ValueError, match="split"):
        load_dataset("emnist", data_dir=tmp_path, split="bogus")


@pytest.mark.parametrize(
    ("spoil", "field"),
    [
        ("magic", "magic number"),
        ("shape", "image shape"),
        ("count", "labels for the"),
        ("range", "labels in"),
    ],
)
def test_a_bad_file_names_the_file_and_the_field(tmp_path, spoil, field):
    write_emnist(tmp_path, split="digits", classes=range(10))
    images = tmp_path / "emnist-digits-train-images-idx3-ubyte.gz"
    labels = tmp_path / "emnist-digits-train-labels-idx1-ubyte.gz"
    bad = {
        "magic": (labels, np.zeros((4, 28, 28), np.uint8), 1),
        "shape": (images, np.zeros((20, 28, 27), np.uint8), None),
        "count": (labels, np.zeros(3, np.uint8), None),
        "range": (labels, np.full(20, 10, np.uint8), None),
    }[spoil]
    path, array, ndim = bad
    if spoil == "magic":
        _write_idx(path, array.reshape(-1), magic_ndim=3)
    else:
        _write_idx(path, array, ndim)
    with pytest.raises(ValueError, match=field) as info:
        load_dataset("emnist", data_dir=tmp_path, split="digits", part="train")
    assert path.name in str(info.value)


@pytest.mark.slow
def test_the_ipfl_emnist_settings_run_on_tiny_files(tmp_path):
    import dataclasses

    from collabecon.reproductions import ipfl, ipfl_figures, ipfl_settings, ipfl_settings_claims

    write_emnist(tmp_path / "data", per_class=6)
    base = dataclasses.replace(
        ipfl.EMNIST_RUNS["small"], clients=13, rounds=1, local_steps=1, size=None, eval_every=1
    )
    claims, text, data = ipfl.emnist_part(
        "small", tmp_path / "out", str(tmp_path / "data"), base=base, lr_grid=(0.1,)
    )
    assert set(data["comparison"]) == set(ipfl_settings.EMNIST_COMPARISONS)
    assert {c.id for c in claims} == {s.id for s in ipfl_settings_claims.EMNIST_SPECS}
    assert all("Table" in c.paper or "Fig." in c.paper for c in claims)
    assert (tmp_path / "out" / ipfl_figures.EMNIST_FIGURE).is_file()
    assert "Fig. 7" in text and "not run" in text


def test_without_data_dir_the_emnist_settings_are_reported_not_run(tmp_path):
    from collabecon.reproductions import ipfl

    claims, text, data = ipfl.emnist_part("small", tmp_path, None)
    assert claims == [] and "not run: needs --data-dir" in text
    assert "needs --data-dir" in data["not_run"]
    assert not list(tmp_path.iterdir())
