"""``collabecon bench NAME``: performance benchmarks, one positional name per benchmark.

``engine``
    local SGD steps of all clients per second, batched engine vs the per-client loop
    (:mod:`learning.benchmarks.engine`).
``all-pairs``
    one round's all-pairs work of Federated-Clustering or CoBo, batched vs the per-pair loop
    (:mod:`learning.benchmarks.all_pairs`).
``dp``
    DP-SGD steps of all clients per second, batched vs a per-client Opacus loop
    (:mod:`learning.benchmarks.dp`).

A benchmark is one entry of :data:`BENCHMARKS`: a function declaring its flags and one
running it.
"""

from __future__ import annotations

import argparse
from collections.abc import Callable
from typing import Any


def _shared_arguments(parser: argparse.ArgumentParser, *, clients: int, batch_size: int) -> None:
    """Flags every benchmark takes; the defaults that differ are arguments."""
    parser.add_argument(
        "--clients", type=int, default=clients, help=f"number of clients (default {clients})"
    )
    parser.add_argument("--model", default="lenet5", help="model name (default lenet5)")
    parser.add_argument(
        "--batch-size", type=int, default=batch_size, help=f"minibatch size (default {batch_size})"
    )
    parser.add_argument("--repeats", type=int, default=3, help="timed repeats (default 3)")
    parser.add_argument("--device", default=None, help="cpu or cuda (default: cuda if available)")
    parser.add_argument("--seed", type=int, default=0, help="seed (default 0)")


def _engine_arguments(parser: argparse.ArgumentParser) -> None:
    _shared_arguments(parser, clients=80, batch_size=10)
    parser.add_argument("--dataset", default="mnist5k", help="dataset name (default mnist5k)")
    parser.add_argument("--steps", type=int, default=5, help="local steps timed (default 5)")


def _engine(args: argparse.Namespace) -> dict[str, Any]:
    from learning.benchmarks.engine import measure_engine

    return measure_engine(
        clients=args.clients,
        model=args.model,
        dataset=args.dataset,
        batch_size=args.batch_size,
        steps=args.steps,
        repeats=args.repeats,
        device=args.device,
        seed=args.seed,
    ).to_dict()


def _all_pairs_arguments(parser: argparse.ArgumentParser) -> None:
    _shared_arguments(parser, clients=20, batch_size=32)
    parser.add_argument(
        "--method", choices=("fc", "cobo"), default="fc", help="whose all-pairs work"
    )


def _all_pairs(args: argparse.Namespace) -> dict[str, Any]:
    from learning.benchmarks.all_pairs import measure_all_pairs

    return measure_all_pairs(
        method=args.method,
        clients=args.clients,
        model=args.model,
        batch_size=args.batch_size,
        repeats=args.repeats,
        device=args.device,
        seed=args.seed,
    ).to_dict()


def _dp_arguments(parser: argparse.ArgumentParser) -> None:
    _engine_arguments(parser)
    parser.add_argument("--noise", type=float, default=1.0, help="noise multiplier z (default 1.0)")
    parser.add_argument(
        "--max-grad-norm", type=float, default=1.0, help="clipping norm C (default 1.0)"
    )


def _dp(args: argparse.Namespace) -> dict[str, Any]:
    from learning.benchmarks.dp import measure_dp

    for flag, value in (("--noise", args.noise), ("--max-grad-norm", args.max_grad_norm)):
        if not 0 < value < float("inf"):
            raise ValueError(f"{flag} must be a finite number > 0, got {value}")
    return measure_dp(
        clients=args.clients,
        model=args.model,
        dataset=args.dataset,
        batch_size=args.batch_size,
        steps=args.steps,
        repeats=args.repeats,
        noise_multiplier=args.noise,
        max_grad_norm=args.max_grad_norm,
        device=args.device,
        seed=args.seed,
    ).to_dict()


#: name -> (help, declare flags, run).
BENCHMARKS: dict[
    str,
    tuple[str, Callable[[argparse.ArgumentParser], None], Callable[[argparse.Namespace], dict]],
] = {
    "engine": ("batched engine vs per-client loop: local SGD steps/s", _engine_arguments, _engine),
    "all-pairs": (
        "one round's all-pairs work (fc gradient table, cobo midpoints): batched vs loop",
        _all_pairs_arguments,
        _all_pairs,
    ),
    "dp": (
        "DP-SGD: batched clients vs a per-client Opacus loop: private steps/s",
        _dp_arguments,
        _dp,
    ),
}


def add_arguments(parser: argparse.ArgumentParser) -> None:
    sub = parser.add_subparsers(dest="benchmark", required=True, metavar="NAME")
    for name, (help_, declare, _) in BENCHMARKS.items():
        one = sub.add_parser(name, help=help_, description=help_)
        one.add_argument(
            "--json", action="store_true", default=argparse.SUPPRESS, help="print one JSON object"
        )
        declare(one)


def run(args: argparse.Namespace) -> dict[str, Any]:
    _, _, measure = BENCHMARKS[args.benchmark]
    return {"benchmark": args.benchmark, **measure(args)}
