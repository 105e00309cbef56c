"""A federation on disk: one file per client, so that each node reads only its own.

:func:`write_partitions` draws the federation of a :class:`learning.train.TrainConfig`
exactly as :func:`learning.train.train` does (the first of the three streams spawned
from the seed) and writes

- ``meta.json``: the run's configuration, the number of clients, the example shape, the
  number of classes and the ground-truth cluster of each client (what the server reads);
- ``partition-<k>.npz``: client ``k``'s training and test arrays (what node ``k`` reads).

Arrays are stored with :func:`numpy.savez` and read with ``allow_pickle=False``.
"""

from __future__ import annotations

import json
import os
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np

from learning.federation import make_federation
from learning.train import TrainConfig

__all__ = ["Meta", "Partition", "read_meta", "read_partition", "write_partitions"]

META_FILE = "meta.json"


@dataclass(frozen=True, slots=True)
class Meta:
    """What every party may know of the federation: no examples."""

    config: dict[str, Any]
    n_clients: int
    input_shape: tuple[int, ...]
    n_classes: int
    clusters: np.ndarray


@dataclass(frozen=True, slots=True)
class Partition:
    """One client's data."""

    x_train: np.ndarray
    y_train: np.ndarray
    x_test: np.ndarray
    y_test: np.ndarray


def _partition_path(directory: Path, k: int) -> Path:
    return directory / f"partition-{k}.npz"


def write_partitions(
    config: TrainConfig, directory: str | os.PathLike[str], data_dir: str | None = None
) -> Meta:
    """Draw ``config``'s federation and write it to ``directory`` (module docstring)."""
    directory = Path(directory)
    directory.mkdir(parents=True, exist_ok=True)
    data_rng, _, _ = np.random.default_rng(config.seed).spawn(3)
    federation = make_federation(
        config.dataset,
        config.partition,
        config.clients,
        seed=data_rng,
        test_fraction=config.test_fraction,
        target_fraction=config.target_fraction,
        data_dir=data_dir,
        dataset_params=dict(config.dataset_params) or None,
        **config.partition_params,
    )
    for k, client in enumerate(federation.clients):
        if client.n_train < 1 or client.n_test < 1:
            raise ValueError(
                f"client {k} has {client.n_train} training and {client.n_test} test examples; "
                "every client needs at least one of each (use fewer clients)"
            )
        np.savez(
            _partition_path(directory, k),
            x_train=client.x_train,
            y_train=client.y_train,
            x_test=client.x_test,
            y_test=client.y_test,
        )
    meta = Meta(
        config=config.to_dict(),
        n_clients=len(federation.clients),
        input_shape=tuple(int(s) for s in federation.input_shape),
        n_classes=int(federation.n_classes),
        clusters=np.asarray(federation.clusters, dtype=np.int64),
    )
    (directory / META_FILE).write_text(
        json.dumps(
            {
                "config": meta.config,
                "n_clients": meta.n_clients,
                "input_shape": list(meta.input_shape),
                "n_classes": meta.n_classes,
                "clusters": meta.clusters.tolist(),
            }
        )
    )
    return meta


def read_meta(directory: str | os.PathLike[str]) -> Meta:
    """The ``meta.json`` of a federation written by :func:`write_partitions`."""
    path = Path(directory) / META_FILE
    if not path.exists():
        raise ValueError(f"{path} does not exist: write the partitions first")
    raw = json.loads(path.read_text())
    return Meta(
        config=dict(raw["config"]),
        n_clients=int(raw["n_clients"]),
        input_shape=tuple(int(s) for s in raw["input_shape"]),
        n_classes=int(raw["n_classes"]),
        clusters=np.asarray(raw["clusters"], dtype=np.int64),
    )


def read_partition(directory: str | os.PathLike[str], k: int) -> Partition:
    """Client ``k``'s arrays, and nothing of the other clients."""
    path = _partition_path(Path(directory), int(k))
    if not path.exists():
        raise ValueError(f"partition {k}: {path} does not exist")
    with np.load(path, allow_pickle=False) as data:
        return Partition(data["x_train"], data["y_train"], data["x_test"], data["y_test"])
