"""Batched DP-SGD vs a per-client Opacus loop: private local steps of all clients per second.

Both sides do the same work: every client starts from the same weights and takes the same
minibatches (:func:`learning.dp.sample_subsets`, one seed), with per-example clipping and
Gaussian noise of the same scale. The batched side runs :func:`learning.dp.dp_local_sgd`'s
step for all clients in one call; the baseline is what a user of Opacus writes: for each
client, its ``GradSampleModule`` and ``DPOptimizer`` (built once, outside the timing, the
weights reset before each timed call), one forward, backward and step per minibatch. Each
side is timed ``repeats`` times, alternating, after a warm-up; the best time counts. A run
without noise compares the final weights of the two, to show the work is the same.
"""

from __future__ import annotations

import copy
import warnings
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
from learning.dp import DPSGDSettings, private_gradients, sample_subsets
from learning.engine import Params
from learning.optim import SGDConfig, sgd_step

__all__ = ["DPBenchmark", "measure_dp"]


@dataclass(frozen=True, slots=True)
class DPBenchmark:
    """Private client-steps per second of both sides (``clients * steps / seconds``)."""

    device: str
    clients: int
    model: str
    batch_size: int
    steps: int
    repeats: int
    threads: int
    noise_multiplier: float
    max_grad_norm: float
    batched_steps_per_s: float
    opacus_steps_per_s: float
    ratio: float
    max_weight_difference_without_noise: float

    def to_dict(self) -> dict[str, Any]:
        """The benchmark's fields as JSON-ready data (:func:`econ.outputs.plain`)."""
        return plain(asdict(self))


def measure_dp(
    *,
    clients: int = 80,
    model: str = "lenet5",
    dataset: str = "mnist5k",
    batch_size: int = 10,
    steps: int = 5,
    repeats: int = 3,
    noise_multiplier: float = 1.0,
    max_grad_norm: float = 1.0,
    device: str | torch.device | None = None,
    seed: int | np.random.Generator | None = 0,
    progress: Callable[[str], None] = lambda _: None,
) -> DPBenchmark:
    """Time ``steps`` DP-SGD steps of ``clients`` iid clients, batched and with Opacus.

    ``progress`` is called with a short text as each phase starts (the two sides without
    noise, to compare their weights; the timing).

    Raises
    ------
    ValueError
        Bad sizes (:func:`~collabecon.bench.clients.check_client_sizes`: too much work or
        memory; a minibatch larger than a client's examples) or names, or Opacus missing
        (``pip install 'collabecon[privacy]'``).
    """
    try:
        import opacus
        from opacus.optimizers import DPOptimizer
    except ImportError as exc:  # pragma: no cover - depends on the environment
        raise ValueError(
            "the DP-SGD benchmark needs opacus: pip install 'collabecon[privacy]'"
        ) from exc
    clients, batch_size, steps, repeats = check_client_sizes(
        dataset, model, clients, batch_size, steps, repeats
    )
    dp = DPSGDSettings(max_grad_norm=max_grad_norm, noise_multiplier=noise_multiplier)
    dev = resolve_device(device)
    rng = np.random.default_rng(seed)
    data_rng, model_rng, batch_rng = rng.spawn(3)
    net, task, data, start = iid_clients(dataset, model, clients, dev, data_rng, model_rng)
    engine = ENGINES["batched"](net, task, dev)
    smallest = int(data.sizes_numpy().min())
    if batch_size > smallest:  # DP-SGD's subsets are drawn without replacement
        raise ValueError(
            f"batch_size={batch_size} exceeds the {smallest} training examples of the smallest "
            f"of the {clients} clients of {dataset}: DP-SGD draws distinct examples per step"
        )
    picks = sample_subsets(data.sizes_numpy(), steps, batch_size, batch_rng)
    rows = torch.from_numpy(picks + data.offsets.cpu().numpy()[:, None, None]).to(dev)
    sgd = SGDConfig(0.05)

    def batched(config: DPSGDSettings) -> dict[str, torch.Tensor]:
        params = start
        generators = [torch.Generator(device=dev).manual_seed(k) for k in range(clients)]
        for t in range(steps):
            grads, _, _ = private_gradients(
                engine, params, data.x[rows[:, t]], data.y[rows[:, t]], config, generators
            )
            with torch.no_grad():
                params, _ = sgd_step(params, grads, None, sgd)
        return params

    modules = [opacus.GradSampleModule(copy.deepcopy(engine.model)) for _ in range(clients)]

    def loop(config: DPSGDSettings) -> dict[str, torch.Tensor]:
        finals = []
        for k, module in enumerate(modules):
            with torch.no_grad():
                for name, p in module.named_parameters():
                    p.copy_(start[name.removeprefix("_module.")][k])
            optimiser = DPOptimizer(
                torch.optim.SGD(module.parameters(), lr=sgd.lr),
                noise_multiplier=config.noise_multiplier,
                max_grad_norm=config.max_grad_norm,
                expected_batch_size=batch_size,
                generator=torch.Generator(device=dev).manual_seed(k),
            )
            for t in range(steps):
                optimiser.zero_grad()
                batch = rows[k, t]
                engine.task.loss(module(data.x[batch]), data.y[batch]).backward()
                optimiser.step()
            finals.append(
                {
                    n.removeprefix("_module."): p.detach().clone()
                    for n, p in module.named_parameters()
                }
            )
        return {name: torch.stack([f[name] for f in finals]) for name in finals[0]}

    sides = {"batched": batched, "opacus": loop}
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # Opacus's notes on secure RNG and backward hooks
        quiet = DPSGDSettings(max_grad_norm=max_grad_norm, noise_multiplier=0.0)
        progress("batched and Opacus without noise: the same weights?")
        same = {name: run(quiet) for name, run in sides.items()}

        def finished(run: Callable[[DPSGDSettings], Params]) -> Params:
            out = run(dp)
            float(next(iter(out.values())).sum())  # the device has finished
            return out

        progress(f"timing batched and Opacus DP-SGD: best of {repeats} x {steps} steps")
        timings = best_of_each(
            {name: partial(finished, run) for name, run in sides.items()}, repeats
        )
        best = {name: t.seconds for name, t in timings.items()}
    difference = max_weight_difference(same["batched"], same["opacus"])
    rate = {name: clients * steps / best[name] for name in sides}
    return DPBenchmark(
        device=str(dev),
        clients=clients,
        model=model,
        batch_size=batch_size,
        steps=steps,
        repeats=repeats,
        threads=torch.get_num_threads(),
        noise_multiplier=noise_multiplier,
        max_grad_norm=max_grad_norm,
        batched_steps_per_s=rate["batched"],
        opacus_steps_per_s=rate["opacus"],
        ratio=rate["batched"] / rate["opacus"],
        max_weight_difference_without_noise=difference,
    )
