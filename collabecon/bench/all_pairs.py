"""One round's all-pairs work, batched vs the per-pair loop, same numbers.

``fc``: Federated-Clustering's table of every model's gradient on every client's minibatch
(:func:`learning.all_pairs.pairwise_gradients` vs :func:`~learning.all_pairs.pairwise_gradients_loop`).
``cobo``: CoBo's gradient inner products at the midpoints of all pairs
(:func:`learning.algorithms.cobo_steps.pairwise_work`, batched through
:func:`learning.all_pairs.midpoint_gradient_products`, vs its per-pair loop).
Clients hold iid shares of ``mnist5k``; every client's model is the same initial model plus
its own small perturbation, so all models differ. Each path is timed ``repeats`` times,
alternating, after one warm-up; the best time of each counts. The largest difference
between the two outputs is reported.

:func:`single_model_reference` times the same arithmetic without the pairs: one
``nn.Module`` forward and backward over as many examples as the table holds, at several
batch sizes, which tells how fast plain PyTorch runs this model on this machine at best.

Both refuse, before any work, sizes whose timed work exceeds
:data:`~collabecon.bench.clients.MAX_EXAMPLE_GRADIENTS` or whose largest arrays cannot fit in
memory (:func:`check_all_pairs_sizes`, :func:`check_reference_sizes`).
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import asdict, dataclass
from functools import partial
from typing import Any

import numpy as np
import torch

from collabecon.bench.clients import MAX_EXAMPLE_GRADIENTS, model_sizes
from collabecon.bench.timing import best_of, best_of_each, repeats_count, within
from econ.outputs import plain
from econ.validation import choice, fits_in_memory, positive_int
from learning.all_pairs import (
    client_batches,
    flatten,
    pairwise_gradients,
    pairwise_gradients_loop,
)
from learning.build import build
from learning.device import resolve_device
from learning.models import build_model
from learning.rng import torch_generator

__all__ = [
    "AllPairsBenchmark",
    "check_all_pairs_sizes",
    "check_reference_sizes",
    "measure_all_pairs",
    "single_model_reference",
]

#: the shape of one example of ``mnist5k``, the data of the reference
_IMAGE = (1, 28, 28)


@dataclass(frozen=True, slots=True)
class AllPairsBenchmark:
    """Seconds of one round's all-pairs work on each path, their ratio and difference."""

    method: str
    device: str
    clients: int
    model: str
    batch_size: int
    repeats: int
    threads: int
    batched_s: float
    loop_s: float
    ratio: float
    max_difference: float

    def to_dict(self) -> dict[str, Any]:
        """The benchmark's fields as JSON-ready data (:func:`econ.outputs.plain`)."""
        return plain(asdict(self))


def measure_all_pairs(
    *,
    method: str = "fc",
    clients: int = 20,
    model: str = "lenet5",
    batch_size: int = 32,
    repeats: int = 3,
    device: str | torch.device | None = None,
    seed: int | np.random.Generator | None = 0,
    progress: Callable[[str], None] = lambda _: None,
) -> AllPairsBenchmark:
    """Time one round of ``method``'s all-pairs work for ``clients`` clients.

    ``progress`` is called with a short text as the timing starts.

    Raises
    ------
    ValueError
        Unknown names, bad sizes (:func:`check_all_pairs_sizes`), an unusable device.
    """
    clients, batch_size, repeats = check_all_pairs_sizes(
        method, clients, model, batch_size, repeats
    )
    dev = resolve_device(device)
    rng = np.random.default_rng(seed)
    data_rng, model_rng, batch_rng = rng.spawn(3)
    built = build(
        "mnist5k", "iid", clients, model=model, data_rng=data_rng, model_rng=model_rng, device=dev
    )
    engine, train = built.engine, built.sharded("train")
    noise = torch_generator(model_rng)
    params = {
        k: v + 0.01 * torch.randn(v.shape, generator=noise).to(dev)
        for k, v in built.start().items()
    }
    x, y = client_batches(train, np.arange(clients), batch_size, batch_rng)

    if method == "fc":

        def work(batched: bool) -> torch.Tensor:
            run = pairwise_gradients if batched else pairwise_gradients_loop
            return flatten(run(engine, params, x, y)[0], lead=2)

    else:
        from learning.algorithms.cobo_steps import pairwise_work

        pairs = np.array([(i, j) for i in range(clients) for j in range(i + 1, clients)])

        def work(batched: bool) -> torch.Tensor:
            return pairwise_work(
                params, (x, y), pairs, batched=batched, model=engine.model, task=engine.task
            )

    sync = (lambda: torch.cuda.synchronize(dev)) if dev.type == "cuda" else None
    sides = {True: partial(work, True), False: partial(work, False)}
    progress(f"timing {method}'s all-pairs work, batched and looped: best of {repeats}")
    for side in sides.values():  # warm-up
        side()
    timings = best_of_each({"batched": sides[True], "loop": sides[False]}, repeats, sync=sync)
    best = {True: timings["batched"].seconds, False: timings["loop"].seconds}
    outputs = {True: timings["batched"].result, False: timings["loop"].result}
    difference = float((outputs[True] - outputs[False]).abs().max())
    return AllPairsBenchmark(
        method=method,
        device=str(dev),
        clients=clients,
        model=model,
        batch_size=batch_size,
        repeats=repeats,
        threads=torch.get_num_threads(),
        batched_s=best[True],
        loop_s=best[False],
        ratio=best[False] / best[True],
        max_difference=difference,
    )


def single_model_reference(
    *,
    clients: int = 20,
    model: str = "lenet5",
    batch_sizes: tuple[int, ...] = (32, 640, 12800),
    repeats: int = 3,
    seed: int = 0,
    progress: Callable[[str], None] = lambda _: None,
) -> dict[int, float]:
    """Best seconds of one ``nn.Module`` forward and backward over ``clients**2 * 32`` examples.

    The FC table's arithmetic, with one model instead of ``clients``, in minibatches of each
    of ``batch_sizes``; random images of ``mnist5k``'s shape, on the CPU. ``progress`` is
    called with a short text as each batch size starts.

    Raises
    ------
    ValueError
        Bad sizes (:func:`check_reference_sizes`).
    """
    repeats = check_reference_sizes(clients, model, batch_sizes, repeats)
    gen = torch.Generator().manual_seed(seed)
    net = build_model(model, _IMAGE, 10, generator=gen)
    n = clients * clients * 32
    x = torch.randn(n, *_IMAGE, generator=gen)
    y = torch.randint(0, 10, (n,), generator=gen)
    loss = torch.nn.CrossEntropyLoss()

    def run(size: int) -> None:
        for first in range(0, n, size):
            net.zero_grad()
            loss(net(x[first : first + size]), y[first : first + size]).backward()

    best = {}
    for size in batch_sizes:
        progress(f"reference: one model, minibatches of {size}")
        run(size)
        best[size] = best_of(partial(run, size), repeats).seconds
    return best


def check_all_pairs_sizes(
    method: str, clients: int, model: str, batch_size: int, repeats: int
) -> tuple[int, int, int]:
    r"""Refuse, before any work, sizes of :func:`measure_all_pairs` that cannot run.

    The timed work, :math:`K^2 b (r + 1)` example-gradients per side (``clients``,
    ``batch_size``, the warm-up and ``repeats``), must not exceed
    :data:`~collabecon.bench.clients.MAX_EXAMPLE_GRADIENTS`; the largest arrays must fit in
    memory: for ``fc`` the two gradient tables the timer keeps (:math:`2 K^2 P` floats for a
    model of :math:`P` parameters), for ``cobo`` the midpoint models and their two gradients
    (:math:`3 K (K - 1) / 2 \cdot P` floats), and the minibatches (:math:`K b` examples).

    Returns
    -------
    tuple of int
        ``clients``, ``batch_size`` and ``repeats``, checked.
    """
    choice("method", method, ("fc", "cobo"))
    clients = positive_int("clients", clients)
    batch_size = positive_int("batch_size", batch_size)
    repeats = repeats_count(repeats)
    what = f"clients={clients}, batch_size={batch_size}, repeats={repeats}"
    work = clients**2 * batch_size * (repeats + 1)
    within(what, work, MAX_EXAMPLE_GRADIENTS, "example-gradients")
    _, entries, parameters = model_sizes("mnist5k", model)
    models = 2 * clients**2 if method == "fc" else 3 * clients * (clients - 1) / 2
    fits_in_memory(
        f"clients={clients}, batch_size={batch_size} ({method}, {model}: {parameters} parameters)",
        4.0 * (models * parameters + clients * batch_size * entries),
    )
    return clients, batch_size, repeats


def check_reference_sizes(
    clients: int, model: str, batch_sizes: tuple[int, ...], repeats: int
) -> int:
    r"""Refuse, before any work, sizes of :func:`single_model_reference` that cannot run.

    The reference holds :math:`n = 32 K^2` random images (``clients``) and computes
    :math:`n (r + 1)` example-gradients per batch size: they must fit in memory and not
    exceed :data:`~collabecon.bench.clients.MAX_EXAMPLE_GRADIENTS`. Returns ``repeats``.
    """
    clients = positive_int("clients", clients)
    for size in batch_sizes:
        positive_int("batch size", size)
    repeats = repeats_count(repeats)
    examples = 32 * clients**2
    within(
        f"clients={clients} (the reference, {examples} examples), repeats={repeats}",
        examples * len(batch_sizes) * (repeats + 1),
        MAX_EXAMPLE_GRADIENTS,
        "example-gradients",
    )
    entries = _IMAGE[0] * _IMAGE[1] * _IMAGE[2]
    fits_in_memory(
        f"clients={clients} (the reference, {examples} examples of {model})",
        examples * (4.0 * entries + 8.0),
    )
    return repeats
