"""The PyTorch learning backend: engine, algorithms, drivers, runtimes and their theory.

The engine, the algorithms, the drivers that feed trained models to the economics, the runtimes
that distribute them, and the theory of the algorithms.

Importing ``learning`` itself does not import torch: ``collabecon verify`` loads the
torch-free ``learning.theory`` without it. Torch is imported by the modules that train.
Nothing here imports the application (:mod:`collabecon`); the engine core imports neither the
drivers nor the runtimes (``tests/test_layering.py``).

Public modules (each names its own public API in ``__all__``):

- the engine core:

  - ``train``: :class:`~learning.train.TrainConfig`, ``train`` and its result: one training
    run of any registered algorithm;
  - ``data``: datasets (embedded MNIST digits, scikit-learn digits, files, synthetic);
  - ``partition``: how a dataset is split among clients (iid, Dirichlet, clustered, ...);
  - ``federation``: clients with their data shards and evaluation sets;
  - ``models``: the models (linear, MLP, CNN, LeNet-5, ResNet-9);
  - ``engine``: the batched many-client engine and the per-client loop it is held to;
  - ``loop``: the round loop, checkpoints and divergence checks;
  - ``dp``: batched DP-SGD (per-example clipping and noise);
  - ``byzantine``: attacks on submitted updates and robust aggregators;
  - ``qualities``: trained models -> :class:`econ.qualities.ModelQualities` (the seam);
  - ``threads``: torch's CPU threads: the physical cores this process may use, the setting,
    a worker process's share;

- ``algorithms``: the federated algorithms on one round loop, registered by name;
- ``drivers``: trained models into the economics: ``defection_free`` (Algorithm 5 between
  two firms), ``privacy_curve`` (the measured (epsilon, accuracy) curve of DP-SGD), ``ipfl``
  (IP-FL's token economy on trained clients);
- ``runtimes``: ``flower`` (algorithms and mechanisms as Flower federations) and ``sweep``
  (grids of runs in a process pool or on Ray);
- ``theory``: statements about the algorithms, checked without torch.

Submodules load on first use: ``learning.train`` works after ``import learning`` (and
imports torch then).
"""

from __future__ import annotations

import importlib
from typing import Any

#: The public modules, loaded on first attribute access.
MODULES = (
    "algorithms",
    "byzantine",
    "data",
    "dp",
    "drivers",
    "engine",
    "federation",
    "loop",
    "models",
    "partition",
    "qualities",
    "runtimes",
    "theory",
    "train",
)

__all__ = list(MODULES)


def __getattr__(name: str) -> Any:
    if name in MODULES:
        return importlib.import_module(f"{__name__}.{name}")
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
