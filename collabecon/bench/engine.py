"""Batched engine vs the per-client loop: local SGD steps of all clients per second.

Both engines get the same work: the same initial weights for every client, the same
minibatch indices (same seed), the same number of steps. The batched engine does each step
of all clients in one ``vmap`` call; the loop engine runs client after client with an
``nn.Module`` and ``torch.optim.SGD``. Each is timed ``repeats`` times, alternating, after
one warm-up call; the best time of each counts (the least disturbed by other jobs). The
final weights of the two are compared, to show the work was the same.

The same run also times ``torch.mm`` of two square float32 matrices of ``matmul_size``
(2048 by default) at the same thread count, alternating with the engines, and reports the
batched engine's floating-point rate as a share of it: the floating-point operations of one
local step of all clients (:func:`training_flops`) times the steps, over the engine's
seconds, divided by :math:`2n^3` over the product's seconds.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import asdict, dataclass
from functools import partial
from typing import Any

import numpy as np
import torch

from collabecon.bench.clients import check_client_sizes, iid_clients, max_weight_difference
from collabecon.bench.timing import best_of_each, within
from econ.outputs import plain
from econ.validation import fits_in_memory, positive_int
from learning.build import ENGINES
from learning.device import resolve_device
from learning.optim import SGDConfig

__all__ = ["MAX_MATMUL_SIZE", "EngineBenchmark", "measure_engine", "training_flops"]

#: the largest matrices of the throughput reference: three of them take 3 GiB in float32
MAX_MATMUL_SIZE = 16_384


def training_flops(net: torch.nn.Module, input_shape: tuple[int, ...]) -> int:
    r"""Floating-point operations of one example's gradient step through ``net``'s weighted layers.

    Counted from the layer shapes, two operations (a multiply and an add) per multiply-add
    of a matrix product:

    * ``Conv2d``: :math:`M = C_{out} H_{out} W_{out}\,(C_{in}/g)\,k_h k_w` multiply-adds
      per example (``g`` groups); ``Linear``: :math:`M = d_{out} d_{in}` per output row.
    * Forward :math:`2M`; backward :math:`2M` for the weight gradient and :math:`2M` for the
      input gradient, except the first weighted layer, whose input (the data) needs none.

    Biases, activations, pooling, the loss and the SGD update are not counted (linear in
    the activations or the weights, a few percent of the multiply-adds). LeNet-5 on 1x28x28
    images: convolutions 117,600 and 240,000 multiply-adds, linear layers 48,000, 10,080
    and 840, so :math:`2(2 \cdot 117{,}600 + 3 \cdot 298{,}920) = 2{,}263{,}920` operations a
    step and example (1.81 GFLOP for a step of 80 clients with 10 examples each).

    Parameters
    ----------
    net : torch.nn.Module
        The model; its layers are found in the order of a forward pass of a zero input.
    input_shape : tuple of int
        One example's shape (without the batch axis).

    References
    ----------
    Y. LeCun, L. Bottou, Y. Bengio and P. Haffner, "Gradient-based learning applied to
    document recognition", Proc. IEEE 86(11), 1998 (LeNet-5's layers).
    """
    layers = [m for m in net.modules() if isinstance(m, torch.nn.Conv2d | torch.nn.Linear)]
    fan_in = {
        id(m): (
            m.in_channels // m.groups * int(np.prod(m.kernel_size))
            if isinstance(m, torch.nn.Conv2d)
            else m.in_features
        )
        for m in layers
    }
    macs: list[int] = []  # in the order of the forward pass

    def count(layer: torch.nn.Module, _: Any, out: torch.Tensor) -> None:
        macs.append(out[0].numel() * fan_in[id(layer)])

    hooks = [m.register_forward_hook(count) for m in layers]
    try:
        device = next(net.parameters()).device
        with torch.no_grad():
            net(torch.zeros((1, *input_shape), device=device))
    finally:
        for h in hooks:
            h.remove()
    return 2 * sum(m * (2 if i == 0 else 3) for i, m in enumerate(macs))


@dataclass(frozen=True, slots=True)
class EngineBenchmark:
    """Client-steps per second of both engines (``clients * steps / seconds``).

    ``step_flops`` are the operations of one local step of all clients
    (:func:`training_flops` times the examples), ``batched_gflops`` the batched engine's rate
    of them, ``matmul_gflops`` that of ``torch.mm`` of two ``matmul_size`` square float32
    matrices in the same run, and ``matmul_share`` the ratio of the two rates.
    """

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
    step_flops: int
    batched_gflops: float
    matmul_size: int
    matmul_gflops: float
    matmul_share: float

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
    matmul_size: int = 2048,
    device: str | torch.device | None = None,
    seed: int | np.random.Generator | None = 0,
    progress: Callable[[str], None] = lambda _: None,
) -> EngineBenchmark:
    """Time ``steps`` local SGD steps of ``clients`` iid clients of ``dataset``.

    ``torch.mm`` of two ``matmul_size`` square matrices is timed alternately with the
    engines (module docstring). ``progress`` is called with a short text as the timing starts.

    Raises
    ------
    ValueError
        Bad sizes (:func:`~collabecon.bench.clients.check_client_sizes`: too much work or
        memory; ``matmul_size`` not a positive integer, above :data:`MAX_MATMUL_SIZE` or
        beyond memory), unknown names, more clients than examples, an unusable device.
    """
    clients, batch_size, steps, repeats = check_client_sizes(
        dataset, model, clients, batch_size, steps, repeats
    )
    size = positive_int("matmul_size", matmul_size)
    within(f"matmul_size={size}", size, MAX_MATMUL_SIZE, "rows")
    fits_in_memory(f"matmul_size={size}", 3 * 4.0 * size * size)
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

    gen = torch.Generator(device=dev).manual_seed(batch_seed)
    left, right = (torch.randn(size, size, generator=gen, device=dev) for _ in range(2))
    product = torch.empty(size, size, device=dev)

    def matmul() -> None:
        torch.mm(left, right, out=product)
        if dev.type == "cuda":
            torch.cuda.synchronize(dev)

    progress(
        f"timing the batched and the loop engine: best of {repeats} x {steps} steps; "
        f"torch.mm of {size}x{size}"
    )
    for name in engines:
        work(name, 1)
    matmul()
    works: dict[str, Callable[[], Any]] = {name: partial(work, name, steps) for name in engines}
    timings = best_of_each({**works, "matmul": matmul}, repeats)
    best = {name: t.seconds for name, t in timings.items()}
    final = {name: t.result for name, t in timings.items()}
    difference = max_weight_difference(final["batched"], final["loop"])
    rate = {name: clients * steps / best[name] for name in engines}
    step_flops = training_flops(net, tuple(data.x.shape[1:])) * clients * batch_size
    engine_gflops = step_flops * steps / best["batched"] / 1e9
    matmul_gflops = 2.0 * size**3 / best["matmul"] / 1e9
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
        step_flops=step_flops,
        batched_gflops=engine_gflops,
        matmul_size=size,
        matmul_gflops=matmul_gflops,
        matmul_share=engine_gflops / matmul_gflops,
    )
