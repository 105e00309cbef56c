"""The clients the engine and DP-SGD benchmarks time, and how far two trainings end apart.

:func:`iid_clients` builds the clients; :func:`max_weight_difference` measures how far two
ways of training them end apart. :func:`check_client_sizes` refuses, before any client is
built, sizes whose timed work exceeds :data:`MAX_EXAMPLE_GRADIENTS` or whose arrays cannot
fit in memory; :func:`model_sizes` gives the sizes it needs without allocating a weight.
"""

from __future__ import annotations

from typing import NamedTuple

import numpy as np
import torch

from collabecon.bench.timing import repeats_count, within
from econ.validation import fits_in_memory, positive_int
from learning.build import build
from learning.data import load_dataset
from learning.engine import Params, ShardedData, Task
from learning.models import build_model

#: the most example-gradients one side of the engine, DP-SGD or all-pairs benchmark computes
#: over its warm-up and repeats: hours of a CPU core, a thousand times the default sizes
MAX_EXAMPLE_GRADIENTS = 10**9


class Clients(NamedTuple):
    """``K`` iid clients of a data set on a device, and one model's weights for each."""

    net: torch.nn.Module
    task: Task
    data: ShardedData
    start: Params


def iid_clients(
    dataset: str,
    model: str,
    clients: int,
    device: torch.device,
    data_rng: np.random.Generator,
    model_rng: np.random.Generator,
) -> Clients:
    """``clients`` iid clients of ``dataset``, each starting from the same ``model``.

    The model is built by :func:`learning.build.build`.
    """
    built = build(
        dataset, "iid", clients, model=model, data_rng=data_rng, model_rng=model_rng, device=device
    )
    return Clients(built.model, built.engine.task, built.sharded("train"), built.start())


def max_weight_difference(a: Params, b: Params) -> float:
    r""":math:`\max |a - b|` over every entry of every parameter of ``a`` (``b`` has the same names)."""
    return max(float((a[k] - b[k]).abs().max()) for k in a)


class ModelSizes(NamedTuple):
    """Examples of a data set, entries of one example, and parameters of a model on it."""

    examples: int
    entries: int
    parameters: int


def model_sizes(dataset: str, model: str) -> ModelSizes:
    """The sizes of ``model`` on ``dataset``: the model is built on the meta device.

    No weight is allocated, so a large model costs nothing to measure.

    Raises
    ------
    ValueError
        Unknown names.
    learning.data_files.MissingDataError
        A file-based data set not on disk.
    """
    data = load_dataset(dataset)
    shape = tuple(int(s) for s in data.x.shape[1:])
    with torch.device("meta"):
        net = build_model(model, shape, data.n_classes)
    parameters = sum(p.numel() for p in net.parameters())
    return ModelSizes(int(data.x.shape[0]), int(np.prod(shape)), int(parameters))


def check_client_sizes(
    dataset: str, model: str, clients: int, batch_size: int, steps: int, repeats: int
) -> tuple[int, int, int, int]:
    r"""Refuse, before any work, sizes of the engine or DP-SGD benchmark that cannot run.

    The timed work, :math:`K b s (r + 1)` example-gradients per side (``clients``,
    ``batch_size``, ``steps``, the warm-up and ``repeats``), must not exceed
    :data:`MAX_EXAMPLE_GRADIENTS`; the largest arrays must fit in memory: eight copies of the
    clients' stacked weights (:math:`8 K P` floats: the start, each side's result, gradients
    and working copies), the minibatches of one step (:math:`K b` examples) and the drawn
    indices and sampling keys (:math:`K s \max(b, n/K)` 8-byte numbers for :math:`n`
    examples). The estimate is a lower bound: the activations come on top.

    Returns
    -------
    tuple of int
        ``clients``, ``batch_size``, ``steps`` and ``repeats``, checked.

    Raises
    ------
    ValueError
        A size not a positive integer, too much work, or too little memory.
    """
    clients = positive_int("clients", clients)
    batch_size = positive_int("batch_size", batch_size)
    steps = positive_int("steps", steps)
    repeats = repeats_count(repeats)
    what = f"clients={clients}, batch_size={batch_size}, steps={steps}, repeats={repeats}"
    within(
        what,
        clients * batch_size * steps * (repeats + 1),
        MAX_EXAMPLE_GRADIENTS,
        "example-gradients",
    )
    n, entries, parameters = model_sizes(dataset, model)
    nbytes = 4.0 * clients * (8 * parameters + batch_size * entries)
    nbytes += 8.0 * clients * steps * max(batch_size, n / clients)
    fits_in_memory(
        f"clients={clients}, batch_size={batch_size}, steps={steps} ({model}: {parameters} parameters)",
        nbytes,
    )
    return clients, batch_size, steps, repeats
