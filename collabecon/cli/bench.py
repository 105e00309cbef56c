"""``collabecon bench NAME``: performance benchmarks, one positional name per benchmark.

``engine``
    local SGD steps of all clients per second, batched engine vs the per-client loop, and
    the batched engine's floating-point rate as a share of ``torch.mm``'s at the same thread
    count (``--matmul-size``, default 2048) (:mod:`collabecon.bench.engine`).
``all-pairs``
    one round's all-pairs work of Federated-Clustering or CoBo, batched vs the per-pair loop
    (:mod:`collabecon.bench.all_pairs`).
``dp``
    DP-SGD steps of all clients per second, batched vs a per-client Opacus loop
    (:mod:`collabecon.bench.dp`).
``bargaining``
    Nash bargaining of the duopoly, the batched closed form vs a per-point bounded search,
    both scored against a 40-digit reference (:mod:`collabecon.bench.bargaining`).
``market``
    the Bertrand equilibrium of many firms, the vectorised ladder vs the firm-by-firm
    recursion, and how its time grows with the number of firms
    (:mod:`collabecon.bench.market`).
``pricing-repeated``
    the repeated price-discrimination game, one run and 100 runs, vs a per-round, per-buyer
    Python loop (:mod:`collabecon.bench.pricing_repeated`).
``privacy``
    optimal protocols and existence tests of :mod:`econ.privacy` vs the authors' scan
    (:mod:`collabecon.bench.privacy`).
``verify``
    the CPU time of ``collabecon verify`` in a fresh process (:mod:`collabecon.bench.verify`).
``flower``
    one run in Flower's simulation engine (``collabecon flower simulate``) vs the same run in
    process (``collabecon train``): the ratio, the fixed start-up and the cost of a round
    (:mod:`collabecon.bench.flower`); ``skipped`` without the ``flower`` extra.

``collabecon bench --help`` lists them. Every time is the best of several timings
(:mod:`collabecon.bench.timing`); ``bench/RESULTS.md`` records the figures. A benchmark
is one entry of :data:`BENCHMARKS`: a function declaring its flags and one running it.

Every size is checked before any work, one line and exit code 2 when refused: each count
against its data (no more clients than examples), the memory its largest arrays need
(:func:`econ.validation.fits_in_memory`), and the ceiling of its benchmark on the work timed
(:data:`collabecon.bench.timing.MAX_REPEATS` repeats;
:data:`collabecon.bench.clients.MAX_EXAMPLE_GRADIENTS` for ``engine``, ``dp`` and
``all-pairs``; the ``MAX_*`` of :mod:`collabecon.bench.bargaining`,
:mod:`collabecon.bench.market`, :mod:`collabecon.bench.pricing_repeated` and
:mod:`collabecon.bench.privacy`). ``--seed`` is an integer in [0, 2**63); ``engine``,
``all-pairs`` and ``dp`` run both sides on ``--threads`` torch threads (default:
``OMP_NUM_THREADS`` when set, else the physical cores; ``threads`` in the result); ``dp``'s
noise standard deviation ``--noise`` x ``--max-grad-norm``
must be finite in float32, the precision of the weights.
"""

from __future__ import annotations

import argparse
from collections.abc import Callable
from typing import Any

import numpy as np

from collabecon.cli._checks import THREADS_HELP, threads_argument
from collabecon.cli._output import fmt, table
from collabecon.cli._progress import Progress

#: library keywords whose flag has another name
KEYWORDS = {"n_clients": "--clients"}
#: seeds are drawn into numpy and torch generators, whose seeds are 64-bit
SEED_BOUND = 2**63
#: the largest float32: the noise's standard deviation must stay below it
FLOAT32_MAX = float(np.finfo(np.float32).max)


def _seed(args: argparse.Namespace) -> int:
    """``--seed``, refused outside [0, :data:`SEED_BOUND`)."""
    if not 0 <= args.seed < SEED_BOUND:
        raise ValueError(f"--seed must be an integer in [0, 2**63), got {args.seed}")
    return int(args.seed)


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
    threads_argument(parser, THREADS_HELP + "; both sides run on it, and the result shows it")


def _engine_arguments(parser: argparse.ArgumentParser) -> None:
    _shared_arguments(parser, clients=80, batch_size=10)
    parser.add_argument("--dataset", default="mnist5k", help="dataset name (default mnist5k)")
    parser.add_argument("--steps", type=int, default=5, help="local steps timed (default 5)")


def _engine_only_arguments(parser: argparse.ArgumentParser) -> None:
    _engine_arguments(parser)
    _count(parser, "--matmul-size", 2048, "rows of the square torch.mm timed as the reference")


def _engine(args: argparse.Namespace, progress: Progress) -> dict[str, Any]:
    from collabecon.bench.engine import measure_engine

    return measure_engine(
        clients=args.clients,
        model=args.model,
        dataset=args.dataset,
        batch_size=args.batch_size,
        steps=args.steps,
        repeats=args.repeats,
        matmul_size=args.matmul_size,
        device=args.device,
        seed=_seed(args),
        progress=progress,
    ).to_dict()


def _all_pairs_arguments(parser: argparse.ArgumentParser) -> None:
    _shared_arguments(parser, clients=20, batch_size=32)
    parser.add_argument(
        "--method", choices=("fc", "cobo"), default="fc", help="whose all-pairs work"
    )
    parser.add_argument(
        "--reference",
        action="store_true",
        help="also time the table's arithmetic as one plain nn.Module (CPU) at minibatches "
        "of 32, 640 and clients^2 x 32",
    )


def _all_pairs(args: argparse.Namespace, progress: Progress) -> dict[str, Any]:
    from collabecon.bench.all_pairs import (
        check_reference_sizes,
        measure_all_pairs,
        single_model_reference,
    )

    seed = _seed(args)
    n = args.clients**2 * 32
    if args.reference:  # refused before the main measurement, not after it
        check_reference_sizes(args.clients, args.model, (32, 640, n), args.repeats)
    out = measure_all_pairs(
        method=args.method,
        clients=args.clients,
        model=args.model,
        batch_size=args.batch_size,
        repeats=args.repeats,
        device=args.device,
        seed=seed,
        progress=progress,
    ).to_dict()
    if args.reference:
        best = single_model_reference(
            clients=args.clients,
            model=args.model,
            batch_sizes=(32, 640, n),
            repeats=args.repeats,
            seed=seed,
            progress=progress,
        )
        out["reference"] = [{"batch_size": b, "seconds": t} for b, t in best.items()]
    return out


def _dp_arguments(parser: argparse.ArgumentParser) -> None:
    _engine_arguments(parser)
    parser.add_argument("--noise", type=float, default=1.0, help="noise multiplier z (default 1.0)")
    parser.add_argument(
        "--max-grad-norm", type=float, default=1.0, help="clipping norm C (default 1.0)"
    )


def _dp(args: argparse.Namespace, progress: Progress) -> dict[str, Any]:
    from collabecon.bench.dp import measure_dp

    for flag, value in (("--noise", args.noise), ("--max-grad-norm", args.max_grad_norm)):
        if not 0 < value < float("inf"):
            raise ValueError(f"{flag} must be a finite number > 0, got {value}")
    if args.noise * args.max_grad_norm > FLOAT32_MAX:
        raise ValueError(
            f"--noise {args.noise} x --max-grad-norm {args.max_grad_norm} = "
            f"{args.noise * args.max_grad_norm:.3g}: the noise's standard deviation overflows "
            f"float32, the weights' precision (at most {FLOAT32_MAX:.3g})"
        )
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
        seed=_seed(args),
        progress=progress,
    ).to_dict()


def _count(parser: argparse.ArgumentParser, flag: str, default: int, help_: str) -> None:
    parser.add_argument(flag, type=int, default=default, help=f"{help_} (default {default})")


#: the first points of the batched side the baseline and the reference take by default
_BARGAINING_SUBSET = 5_000
#: the first points solved one call each by default
_SCALAR_CALLS = 2_000


def _bargaining_arguments(parser: argparse.ArgumentParser) -> None:
    _count(parser, "--points", 100_000, "starting points of the batched closed form")
    for flag, what in (
        ("--baseline-points", "starting points of the per-point search"),
        ("--reference-points", "starting points checked at 40 digits"),
    ):
        parser.add_argument(
            flag,
            type=int,
            default=None,
            help=f"{what}, the first of --points (default {_BARGAINING_SUBSET}, "
            "or --points if fewer)",
        )
    parser.add_argument(
        "--scalar-calls",
        type=int,
        default=None,
        help=f"starts solved one call each, as scalars, the first of --points; 0 skips "
        f"(default {_SCALAR_CALLS}, or --points if fewer)",
    )
    _count(parser, "--repeats", 5, "timed repeats of each side")
    parser.add_argument("--seed", type=int, default=0, help="seed (default 0)")


def _bargaining(args: argparse.Namespace, progress: Progress) -> dict[str, Any]:
    from collabecon.bench.bargaining import measure_bargaining

    def subset(given: int | None) -> int:
        return min(_BARGAINING_SUBSET, args.points) if given is None else given

    return measure_bargaining(
        points=args.points,
        baseline_points=subset(args.baseline_points),
        reference_points=subset(args.reference_points),
        scalar_calls=(
            min(_SCALAR_CALLS, args.points) if args.scalar_calls is None else args.scalar_calls
        ),
        repeats=args.repeats,
        seed=_seed(args),
        progress=progress,
    )


def _market_arguments(parser: argparse.ArgumentParser) -> None:
    _count(parser, "--firms", 100_000, "firms of the larger market (the smaller has a tenth)")
    _count(parser, "--repeats", 5, "timed repeats of each side")
    parser.add_argument("--seed", type=int, default=0, help="seed (default 0)")


def _market(args: argparse.Namespace, progress: Progress) -> dict[str, Any]:
    from collabecon.bench.market import measure_market

    return measure_market(
        firms=args.firms, repeats=args.repeats, seed=_seed(args), progress=progress
    )


def _pricing_repeated_arguments(parser: argparse.ArgumentParser) -> None:
    _count(parser, "--runs", 100, "independent runs, vectorised")
    _count(parser, "--rounds", 20_000, "rounds of each run, vectorised")
    _count(parser, "--baseline-runs", 8, "runs of the Python loop")
    _count(parser, "--baseline-rounds", 2_000, "rounds of each loop run")
    _count(parser, "--single-rounds", 20_000, "rounds of the single-run rows; 0 skips them")
    _count(parser, "--scale-runs", 1_000, "runs of the extra scaling row; 0 skips it")
    _count(parser, "--repeats", 3, "timed repeats of each side")


def _pricing_repeated(args: argparse.Namespace, progress: Progress) -> dict[str, Any]:
    from collabecon.bench.pricing_repeated import measure_pricing_repeated

    return measure_pricing_repeated(
        runs=args.runs,
        rounds=args.rounds,
        baseline_runs=args.baseline_runs,
        baseline_rounds=args.baseline_rounds,
        single_rounds=args.single_rounds,
        scale_runs=args.scale_runs,
        repeats=args.repeats,
        progress=progress,
    )


def _privacy_arguments(parser: argparse.ArgumentParser) -> None:
    _count(parser, "--clients", 10_000, "heterogeneous clients of the optimal protocols")
    _count(parser, "--existence-clients", 1_000_000, "clients of the existence test")
    _count(parser, "--draws", 100, "draws per grid point of Figure 1's exact optima")


def _privacy(args: argparse.Namespace, progress: Progress) -> dict[str, Any]:
    from collabecon.bench.privacy import measure_privacy

    return measure_privacy(
        clients=args.clients,
        existence_clients=args.existence_clients,
        draws=args.draws,
        progress=progress,
    )


def _verify_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument(
        "--only", default="", metavar="PREFIX", help="only ids starting with PREFIX"
    )
    _count(parser, "--repeats", 1, "runs of collabecon verify")
    parser.add_argument(
        "--against",
        default=None,
        metavar="CHECKOUT",
        help="another checkout of this repository whose collabecon verify runs alternately",
    )


def _verify(args: argparse.Namespace, progress: Progress) -> dict[str, Any]:
    from collabecon.bench.verify import measure_verify

    if args.only:  # refused before any timed run
        from collabecon._verify import PACKAGES
        from econ import propositions

        propositions.load(PACKAGES)
        if not propositions.registered(args.only):
            raise ValueError(f"--only {args.only!r} matches no registered proposition")
    return measure_verify(
        prefix=args.only, repeats=args.repeats, against=args.against, progress=progress
    )


def _flower_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--algorithm", default="fedavg", help="algorithm (default fedavg)")
    parser.add_argument("--dataset", default="mnist5k", help="dataset name (default mnist5k)")
    parser.add_argument("--model", default="lenet5", help="model name (default lenet5)")
    _count(parser, "--clients", 10, "clients, one SuperNode each")
    _count(parser, "--rounds", 10, "rounds")
    _count(parser, "--repeats", 2, "timed repeats of each side")
    parser.add_argument(
        "--cpus",
        type=int,
        default=None,
        help="Ray's CPUs, one ClientApp actor each (default: --threads)",
    )
    parser.add_argument("--seed", type=int, default=0, help="seed (default 0)")
    threads_argument(parser, THREADS_HELP + "; both sides' server runs on it")


def _flower(args: argparse.Namespace, progress: Progress) -> dict[str, Any]:
    from collabecon.bench.flower import measure_flower

    if args.cpus is not None and args.cpus < 1:
        raise ValueError(f"--cpus must be an integer >= 1, got {args.cpus}")
    return measure_flower(
        algorithm=args.algorithm,
        dataset=args.dataset,
        model=args.model,
        clients=args.clients,
        rounds=args.rounds,
        repeats=args.repeats,
        cpus=args.cpus,
        seed=_seed(args),
        progress=progress,
    )


#: name -> (help, declare flags, run with its progress).
BENCHMARKS: dict[
    str,
    tuple[
        str,
        Callable[[argparse.ArgumentParser], None],
        Callable[[argparse.Namespace, Progress], dict],
    ],
] = {
    "engine": (
        "batched engine vs per-client loop: local SGD steps/s",
        _engine_only_arguments,
        _engine,
    ),
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
    "bargaining": (
        "Nash bargaining of the duopoly: batched closed form vs per-point bounded search",
        _bargaining_arguments,
        _bargaining,
    ),
    "market": (
        "Bertrand equilibrium of many firms: vectorised ladder vs firm-by-firm recursion",
        _market_arguments,
        _market,
    ),
    "pricing-repeated": (
        "repeated PD game: one run and many runs vs a per-round, per-buyer Python loop",
        _pricing_repeated_arguments,
        _pricing_repeated,
    ),
    "privacy": (
        "optimal protocols and existence tests of econ.privacy vs the authors' scan",
        _privacy_arguments,
        _privacy,
    ),
    "verify": (
        "CPU time of collabecon verify in a fresh process",
        _verify_arguments,
        _verify,
    ),
    "flower": (
        "one run in Flower's simulation engine vs in process: start-up, per round, ratio",
        _flower_arguments,
        _flower,
    ),
}


def add_arguments(parser: argparse.ArgumentParser) -> None:
    """Declare one sub-parser per entry of :data:`BENCHMARKS`, each with its own flags.

    Each benchmark accepts ``--json`` after its name too.

    Parameters
    ----------
    parser : argparse.ArgumentParser
        The subcommand's parser (``--json`` is declared on it already).
    """
    sub = parser.add_subparsers(dest="benchmark", required=True, metavar="NAME")
    for name, (help_, declare, _) in BENCHMARKS.items():
        one = sub.add_parser(name, help=help_, description=help_)
        one.add_argument(
            "--json", action="store_true", default=argparse.SUPPRESS, help="print one JSON object"
        )
        declare(one)


def run(args: argparse.Namespace) -> dict[str, Any]:
    """Run the chosen benchmark; each phase is a line on stderr, none with ``--json``.

    Parameters
    ----------
    args : argparse.Namespace
        The flags of :func:`add_arguments`.

    Returns
    -------
    dict
        ``benchmark`` (its name) and the benchmark's record: for ``engine``, ``all-pairs``
        and ``dp`` the fields of its dataclass (the sizes, the seconds or steps per second of
        both sides, their ratio and how far their results differ; ``all-pairs`` with
        ``--reference`` also ``reference``, one ``{batch_size, seconds}`` per minibatch size);
        for ``bargaining``, ``market``, ``pricing-repeated``, ``privacy``, ``verify`` and
        ``flower`` the record of its ``measure_*`` function (:mod:`collabecon.bench`;
        ``flower`` without the extra: ``skipped``, why). The command exits with 0.

    Raises
    ------
    ValueError
        A bad size (not a positive integer, more than the data holds, more work than its
        benchmark's ceiling, more memory than the machine has), a ``--seed`` outside
        [0, 2**63), a name or device, a noise or clipping norm that is not a finite positive
        number or whose product overflows float32, ``--baseline-points`` or
        ``--reference-points`` above ``--points``, or Opacus missing for ``dp``; the command
        exits with code 2.
    """
    _, _, measure = BENCHMARKS[args.benchmark]
    return {
        "benchmark": args.benchmark,
        **measure(args, Progress.of(args, f"bench {args.benchmark}")),
    }


def render(result: dict[str, Any]) -> str:
    """The human table of a benchmark's result.

    The scalars are one table of quantities; a list of records is a table of its own under
    its name; a record's entries are rows ``name.entry``.
    """
    scalars: list[tuple[str, Any]] = []
    tables: list[str] = []

    def cell(value: Any) -> Any:
        if isinstance(value, dict):
            return " ".join(f"{k}={fmt(v)}" for k, v in value.items())
        return value

    for key, value in result.items():
        if isinstance(value, list) and value and all(isinstance(v, dict) for v in value):
            header = list(value[0])
            rows = [[cell(v.get(h)) for h in header] for v in value]
            tables.append(f"{key}:\n{table(rows, header)}")
        elif isinstance(value, dict):
            scalars.extend((f"{key}.{k}", cell(v)) for k, v in value.items())
        else:
            scalars.append((key, value))
    return "\n\n".join([table(scalars, ("quantity", "value")), *tables])
