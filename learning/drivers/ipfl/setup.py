"""An IP-FL federation on the device.

Data split into train, validation and test, noisy and never-scheduled clients, the source test
distributions, the shared initial model.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import numpy as np
import torch

from learning.algorithms import Context, LocalTraining
from learning.build import build
from learning.drivers.ipfl.config import LABEL_SHIFT, IPFLRun
from learning.engine import Params, ShardedData
from learning.federation import Federation
from learning.optim import AdadeltaConfig, SGDConfig

__all__ = ["Setup", "build_setup", "source_distributions"]


@dataclass(frozen=True, slots=True)
class Setup:
    """A federation on the device.

    It holds the engine, the context (train/test), the validation data, the source test
    distributions and the shared initial model.
    """

    federation: Federation
    ctx: Context
    val: ShardedData
    sources: tuple[tuple[np.ndarray, np.ndarray], ...]
    initial: Params
    majority: np.ndarray  # majority source of each client: view 0/1, or its class group
    noisy: np.ndarray  # clients with partly flipped training labels (App. C, fairness)
    unseen: np.ndarray  # clients never scheduled ("unseen clients", §1 contributions)


def source_distributions(
    fed: Federation, partition: str, k: int, shift: str = "rotation"
) -> tuple[tuple[np.ndarray, np.ndarray], ...]:
    """The test distributions the cluster models are scored on.

    :math:`D_A` and :math:`D_B` of the mixtures (``shift``), or the class groups of the
    pathological split.
    """
    assert fed.target is not None
    x, y = fed.target
    if partition == "pathological":
        return tuple((x[y // k == g], y[y // k == g]) for g in range(fed.n_classes // k))
    if shift == "labels":
        return ((x, y), (x, (y + LABEL_SHIFT) % fed.n_classes))
    rotated = np.ascontiguousarray(np.rot90(x, k=1, axes=(-2, -1)))
    return ((x, y), (rotated, y))


def build_setup(
    run: IPFLRun, *, device: torch.device | str = "cpu", data_dir: str | None = None
) -> Setup:
    """Build the federation of ``run`` (seeded by ``run.seed``) and everything on the device."""
    rng = np.random.default_rng(run.seed)
    data_rng, model_rng, split_rng, role_rng = rng.spawn(4)
    if run.partition == "pathological":
        params: dict[str, Any] = {"classes_per_client": run.classes_per_client}
        name = "pathological"
    else:
        params = {"scheme": run.partition}
        if run.size is not None:
            params["size"] = run.size
        name = "mixture" if run.shift == "rotation" else "mixture-relabel"
    built = build(
        run.dataset, name, run.clients, model=run.model, data_rng=data_rng,
        model_rng=model_rng, engine=run.engine, device=device, data_dir=data_dir,
        federation_params={
            "test_fraction": run.test_fraction,
            "target_fraction": run.target_fraction,
            "flip_test_view": run.flip_test_view,
            "label_shift": LABEL_SHIFT,
            "dataset_params": dict(run.dataset_params) or None,
            **params,
        },
    )  # fmt: skip
    fed = built.federation
    noisy = np.sort(
        role_rng.choice(run.clients, round(run.noisy_share * run.clients), replace=False)
    )
    unseen = np.sort(
        role_rng.choice(run.clients, round(run.unseen_share * run.clients), replace=False)
    )

    def corrupt(j: int, y_train: np.ndarray) -> np.ndarray:
        """Flip a share of a noisy client's labels to another class (App. C)."""
        if j in noisy:
            flip = role_rng.random(y_train.size) < run.noise_rate
            shift = role_rng.integers(1, fed.n_classes, size=int(flip.sum()))
            y_train[flip] = (y_train[flip] + shift) % fed.n_classes
        return y_train

    train, val = built.split_validation(run.val_fraction, split_rng, corrupt=corrupt)
    ctx = built.context(
        LocalTraining(
            run.local_steps,
            run.batch_size,
            AdadeltaConfig(run.lr)
            if run.local_optimizer == "adadelta"
            else SGDConfig(run.lr, run.momentum),
        ),
        train=train,
    )
    return Setup(
        federation=fed,
        ctx=ctx,
        val=val,
        sources=source_distributions(fed, run.partition, run.classes_per_client, run.shift),
        initial=built.initial,
        majority=fed.clusters,
        noisy=noisy,
        unseen=unseen,
    )
