"""Figs. 2.4 and 2.5 of Werner 2024 (§2.4, CIFAR-10 and CIFAR-100): the reproduction's
structure on tiny data sets written in the official python-pickle format, and the CIFAR
readers' validation of such files."""

import dataclasses
import json
import pickle

import numpy as np
import pytest

from collabecon.reproductions import REPRODUCTIONS, cifar_clustering
from collabecon.reproductions.cifar_clustering import SCALES, InterleavedClustering
from collabecon.reproductions.cifar_clustering_claims import CLAIMS, early_index
from learning.data import load_dataset
from learning.data_files import MissingDataError


def _batch(rng, labels, label_keys):
    """A batch laid out like the published files: uint8 rows of 3,072 pixels, label lists."""
    labels = rng.permutation(labels)
    batch = {
        b"batch_label": b"tiny batch",
        b"data": rng.integers(0, 256, (labels.size, 3072), dtype=np.uint8),
        b"filenames": [f"img_{i}.png".encode() for i in range(labels.size)],
    }
    for key, values in label_keys(labels).items():
        batch[key] = [int(v) for v in values]
    return batch


def _dump(path, batch):
    path.parent.mkdir(parents=True, exist_ok=True)
    with open(path, "wb") as handle:
        pickle.dump(batch, handle, protocol=2)


def write_tiny_cifar(root, per_class10=6, per_class100=4, seed=0):
    """CIFAR-10 (``cifar-10-batches-py``) and CIFAR-100 (``cifar-100-python``), random images.

    ``per_class10`` images of each CIFAR-10 class over the five training batches and the test
    batch, ``per_class100`` of each CIFAR-100 class over ``train`` and ``test``.
    """
    rng = np.random.default_rng(seed)
    for k, name in enumerate([f"data_batch_{i}" for i in range(1, 6)] + ["test_batch"]):
        labels = np.arange(10).repeat(per_class10)[k::6]
        _dump(root / "cifar-10-batches-py" / name, _batch(rng, labels, lambda y: {b"labels": y}))
    hundred = lambda y: {b"fine_labels": y, b"coarse_labels": y // 5}  # noqa: E731
    all_labels = np.arange(100).repeat(per_class100)
    _dump(root / "cifar-100-python" / "train", _batch(rng, all_labels[0::2], hundred))
    _dump(root / "cifar-100-python" / "test", _batch(rng, all_labels[1::2], hundred))
    return root


#: Every field of the small scale, shrunk to run in seconds: the linear model, two clients
#: per cluster, one evaluation every 4 steps.
TINY = dataclasses.replace(
    SCALES["small"],
    model10="linear",
    clients_per_cluster10=2,
    epochs10=0.5,
    groups10=1,
    local_steps10=2,
    percentiles=(20.0, 5.0),
    step_counts=(2, 4),
    model100="linear",
    clients_per_cluster100=1,
    epochs100=0.5,
    groups100=2,
    local_steps100=2,
    evals=2,
)


def test_tiny_cifar_files_are_read_in_their_own_format(tmp_path):
    write_tiny_cifar(tmp_path)
    ten = load_dataset("cifar10", data_dir=tmp_path)
    assert ten.x.shape == (60, 3, 32, 32) and ten.x.dtype == np.float32
    np.testing.assert_array_equal(np.bincount(ten.y), np.full(10, 6))
    hundred = load_dataset("cifar100", data_dir=tmp_path, part="train")
    assert hundred.x.shape == (200, 3, 32, 32) and hundred.n_classes == 100


def test_small_scale_on_tiny_cifar_reports_every_claim_and_writes_the_figures(tmp_path):
    assert REPRODUCTIONS["cifar_clustering"] == cifar_clustering.__name__
    data = write_tiny_cifar(tmp_path / "data")
    out = tmp_path / "out"
    seen = []
    rep = cifar_clustering.reproduce(
        "small", out, 1, data_dir=str(data), sizes=TINY, progress=seen.append
    )
    assert [c.id for c in rep.claims] == [spec.id for spec in CLAIMS]
    assert all("Fig. 2.4" in c.paper for c in rep.claims if c.id.startswith("fig2.4."))
    assert all("Fig. 2.5" in c.paper for c in rep.claims if c.id.startswith("fig2.5."))
    assert {"fig2.4.left.fc>local", "fig2.4.middle.conservative-tau"} <= {c.id for c in rep.claims}
    assert rep.figures == cifar_clustering.FIGURES
    for name in cifar_clustering.FIGURES:
        assert (out / name).stat().st_size > 10_000
    saved = json.loads((out / "cifar_clustering.json").read_text())
    assert [c["id"] for c in saved["claims"]] == [c.id for c in rep.claims]
    c10 = rep.data["cifar10"]
    assert set(c10["methods"]) == {"ditto", "fc", "global", "local", "ifca", "oracle"}
    assert set(c10["percentiles"]) == {"20", "5"} and set(c10["local_steps"]) == {"2", "4"}
    # every curve is evaluated at the same steps, a multiple of every step count
    assert c10["steps"] == [4, 8]
    for group in ("methods", "percentiles", "local_steps"):
        for run in c10[group].values():
            assert len(run["curve"]) == 2 and all(0.0 <= a <= 100.0 for a in run["curve"])
    assert set(rep.data["cifar100"]["methods"]) == {"global", "fc"}
    # the default percentile with the default steps is one FC run, shared by the three panels
    assert sum("FC, percentile 20, 2 steps" in s for s in seen) == 1
    assert "Figs. 2.4 and 2.5" in (out / "cifar_clustering.md").read_text()


def test_reproduction_refuses_to_run_without_data_dir():
    with pytest.raises(ValueError) as info:
        cifar_clustering.reproduce("small", None)
    message = str(info.value)
    assert "\n" not in message
    assert "--data-dir" in message and "cifar-10-batches-py/" in message


def test_interleaved_clustering_takes_local_steps_between_clustering_calls(tmp_path):
    from learning.algorithms import LocalTraining, build_algorithm
    from learning.build import build
    from learning.optim import SGDConfig

    write_tiny_cifar(tmp_path)
    rng = np.random.default_rng(0)
    built = build(
        "cifar10", "private-label", 4, model="linear", data_rng=rng, model_rng=rng,
        data_dir=tmp_path, federation_params={"n_clusters": 2},
    )  # fmt: skip
    ctx = built.context(LocalTraining(3, 4, SGDConfig(0.1)))
    fc = build_algorithm("federated-clustering", ctx, variant="as-run", iters=2)
    state = InterleavedClustering(fc, 3).init(built.start(), rng)
    clients = np.arange(4)
    plain, _ = fc.round(state, clients, np.random.default_rng(1))
    mixed, _ = InterleavedClustering(fc, 3).round(state, clients, np.random.default_rng(1))
    one, _ = InterleavedClustering(fc, 1).round(state, clients, np.random.default_rng(1))
    for key in plain["models"]:
        assert np.array_equal(one["models"][key].cpu(), plain["models"][key].cpu())
    assert any(
        not np.allclose(mixed["models"][k].cpu(), plain["models"][k].cpu()) for k in plain["models"]
    )


def test_early_evaluation_is_a_sixth_of_training():
    assert early_index(12) == 1 and early_index(6) == 0 and early_index(2) == 0


def _write_batch(tmp_path, batch, folder="cifar-10-batches-py", name="test_batch"):
    _dump(tmp_path / folder / name, batch)
    return tmp_path / folder / name


@pytest.mark.parametrize(
    ("batch", "field"),
    [
        ({b"data": np.zeros((2, 3000), np.uint8), b"labels": [0, 1]}, "b'data'"),
        ({b"data": np.zeros((2, 3072), np.int64), b"labels": [0, 1]}, "b'data'"),
        ({b"data": np.zeros((2, 3072), np.uint8), b"labels": [0, 10]}, "b'labels'"),
        ({b"data": np.zeros((2, 3072), np.uint8), b"labels": [-1, 0]}, "b'labels'"),
        ({b"data": np.zeros((2, 3072), np.uint8)}, "b'labels'"),
    ],
    ids=["bad shape", "bad dtype", "label out of range", "negative label", "no labels"],
)
def test_cifar10_validation_names_the_file_and_the_field(tmp_path, batch, field):
    path = _write_batch(tmp_path, batch)
    with pytest.raises(ValueError) as info:
        load_dataset("cifar10", data_dir=tmp_path, part="test")
    assert str(path) in str(info.value) and field in str(info.value)


def test_cifar100_fine_labels_out_of_range_name_the_file_and_the_field(tmp_path):
    batch = {b"data": np.zeros((2, 3072), np.uint8), b"fine_labels": [0, 100]}
    path = _write_batch(tmp_path, batch, "cifar-100-python", "test")
    with pytest.raises(ValueError) as info:
        load_dataset("cifar100", data_dir=tmp_path, part="test")
    assert str(path) in str(info.value) and "b'fine_labels'" in str(info.value)


def test_missing_cifar_file_is_named(tmp_path):
    write_tiny_cifar(tmp_path)
    (tmp_path / "cifar-10-batches-py" / "data_batch_3").unlink()
    with pytest.raises(MissingDataError, match="data_batch_3"):
        load_dataset("cifar10", data_dir=tmp_path)
    (tmp_path / "cifar-100-python" / "test").unlink()
    with pytest.raises(MissingDataError, match="cifar-100-python"):
        load_dataset("cifar100", data_dir=tmp_path)
