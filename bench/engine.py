"""Benchmark: the batched many-client engine against the per-client loop.

Work: local SGD steps of every client of an iid split of ``mnist5k`` (80 clients by
default), starting from the same weights with the same minibatch indices. Ours:
:class:`learning.engine.BatchedEngine` (one ``vmap(grad_and_value(functional_call))`` call
per step for all clients). Baseline: :class:`learning.engine.LoopEngine`, client after
client with an ``nn.Module`` and ``torch.optim.SGD``, the way peers train. Both are timed
best of ``--repeats`` (alternating) after a warm-up; the final weights of the two are
compared to show the work was the same.

Run: ``python bench/engine.py`` (LeNet-5 at minibatch 10 and 32, the MLP at 10), or with
``--model/--batch-size`` for one setting.
"""

from __future__ import annotations

import argparse

from learning.benchmarks.engine import measure_engine

_DEFAULT_SETTINGS = (("lenet5", 10), ("lenet5", 32), ("mlp", 10))


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--clients", type=int, default=80)
    parser.add_argument("--model", default=None)
    parser.add_argument("--batch-size", type=int, default=None)
    parser.add_argument("--steps", type=int, default=5)
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument("--device", default=None)
    args = parser.parse_args()
    settings = (
        _DEFAULT_SETTINGS
        if args.model is None and args.batch_size is None
        else ((args.model or "lenet5", args.batch_size or 10),)
    )
    print(
        f"{'model':<8}{'batch':>6}{'batched steps/s':>17}{'loop steps/s':>14}{'ratio':>8}  device"
    )
    for model, batch_size in settings:
        r = measure_engine(
            clients=args.clients,
            model=model,
            batch_size=batch_size,
            steps=args.steps,
            repeats=args.repeats,
            device=args.device,
        )
        print(
            f"{model:<8}{batch_size:>6}{r.batched_steps_per_s:>17.0f}{r.loop_steps_per_s:>14.0f}"
            f"{r.ratio:>7.2f}x  {r.device} ({r.clients} clients, {r.steps} steps, "
            f"{r.threads} threads, max weight difference {r.max_weight_difference:.1e})",
            flush=True,
        )


if __name__ == "__main__":
    main()
