"""Batched engine vs the per-client loop: local SGD steps of all clients per second.

Both engines get the same work: the same initial weights for every client, the same
minibatch indices (same seed), the same number of steps. The batched engine does each step
of all clients in one ``vmap`` call; the loop engine runs client after client with an
``nn.Module`` and ``torch.optim.SGD``. Each is timed ``repeats`` times, alternating, after
one warm-up call; the best time of each counts (the least disturbed by other jobs). The
final weights of the two are compared, to show the work was the same.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import asdict, dataclass
from functools import partial
from typing import Any

import numpy as np
import torch

from collabecon.bench.clients import check_client_sizes, iid_clients, max_weight_difference
from collabecon.bench.timing import best_of_each
from econ.outputs import plain
from learning.build import ENGINES
from learning.device import resolve_device
from learning.optim import SGDConfig

__all__ = ["EngineBenchmark", "measure_engine"]


@dataclass(frozen=True, slots=True)
class EngineBenchmark:
    """Client-steps per second of both engines (``clients * steps / seconds``)."""

    device: str
    clients: int
    model: str
    dataset: str
    batch_size: int
    steps: int
    repeats: int
    threads: int
    batched_steps_per_s: float
    loop_steps_per_s: float
    ratio: float
    max_weight_difference: float

    def to_dict(self) -> dict[str, Any]:
        """The benchmark's fields as JSON-ready data (:func:`econ.outputs.plain`)."""
        return plain(asdict(self))


def measure_engine(
    *,
    clients: int = 80,
    model: str = "lenet5",
    dataset: str = "mnist5k",
    batch_size: int = 10,
    steps: int = 5,
    repeats: int = 3,
    device: str | torch.device | None = None,
    seed: int | np.random.Generator | None = 0,
    progress: Callable[[str], None] = lambda _: None,
) -> EngineBenchmark:
    """Time ``steps`` local SGD steps of ``clients`` iid clients of ``dataset``.

    ``progress`` is called with a short text as the timing starts.

    Raises
    ------
    ValueError
        Bad sizes (:func:`~collabecon.bench.clients.check_client_sizes`: too much work or
        memory), unknown names, more clients than examples, an unusable device.
    """
    clients, batch_size, steps, repeats = check_client_sizes(
        dataset, model, clients, batch_size, steps, repeats
    )
    dev = resolve_device(device)
    rng = np.random.default_rng(seed)
    data_rng, model_rng = rng.spawn(2)
    batch_seed = int(rng.integers(2**63))
    net, task, data, start = iid_clients(dataset, model, clients, dev, data_rng, model_rng)
    everyone = np.arange(clients)
    sgd = SGDConfig(0.01)
    engines = {name: ENGINES[name](net, task, dev) for name in ("batched", "loop")}

    def work(name: str, n_steps: int) -> dict[str, torch.Tensor]:
        out = engines[name].local_sgd(
            start,
            data,
            everyone,
            steps=n_steps,
            batch_size=batch_size,
            sgd=sgd,
            rng=np.random.default_rng(batch_seed),
        )  # returns the losses as numpy, so the device has finished
        return out.params

    progress(f"timing the batched and the loop engine: best of {repeats} x {steps} steps")
    for name in engines:
        work(name, 1)
    timings = best_of_each({name: partial(work, name, steps) for name in engines}, repeats)
    best = {name: t.seconds for name, t in timings.items()}
    final = {name: t.result for name, t in timings.items()}
    difference = max_weight_difference(final["batched"], final["loop"])
    rate = {name: clients * steps / best[name] for name in engines}
    return EngineBenchmark(
        device=str(dev),
        clients=clients,
        model=model,
        dataset=dataset,
        batch_size=batch_size,
        steps=steps,
        repeats=repeats,
        threads=torch.get_num_threads(),
        batched_steps_per_s=rate["batched"],
        loop_steps_per_s=rate["loop"],
        ratio=rate["batched"] / rate["loop"],
        max_weight_difference=difference,
    )
