r"""``collabecon ipfl``: IP-FL (Khan et al.), incentivised personalised FL with tokens.

``collabecon ipfl --partition 10:90 --clients 20 --clusters 2 --rounds 30`` runs IP-FL on
upright vs rotated ``mnist5k`` digits and prints the token flows, the cluster-model accuracy
on each source distribution, PMA against FedAvg and the opt-out rate. ``--shift labels``
replaces the rotation by a concept shift (:math:`D_B` relabels :math:`y \to (y + 5) \bmod 10`).
``--compare`` runs IP-FL and the registered baselines on the same federation and budget, each
with its learning rate chosen from ``--lr-grid`` on validation data
(:func:`collabecon.reproductions.ipfl_comparison.compare`), and prints a table like the
paper's Tables 5, 10 and 11 with the paper's orderings as claims. ``--out DIR`` writes the per-round CSV and the
JSON record. A run whose training diverges (:func:`learning.loop.divergence_limit`; with
``--compare``, a method that diverges at every learning rate of the grid) stops there, is
reported as failed with the reason, and the command exits with 1.
"""

from __future__ import annotations

import argparse
from typing import Any

from collabecon.cli._checks import threads_argument
from collabecon.cli._lists import float_list
from collabecon.cli._output import fmt, table

_PARTITIONS = ("10:90", "30:70", "40:60", "linear", "random", "pathological")
#: ``--th-bid``'s default
_TH_BID = 0.9


def add_arguments(parser: argparse.ArgumentParser) -> None:
    """Declare the flags of ``collabecon ipfl``.

    The federation (``--partition``, ``--shift``, ``--dataset``, ``--model``, ``--clients``,
    ``--clusters``, ``--synthetic``), the training (``--rounds``, ``--local-steps``,
    ``--lr``), the token economy (``--tok-init``, ``--price``, ``--perf-share``,
    ``--th-bid``, ``--no-incentive``), the variants (``--code-compat``, ``--code-bugs``,
    ``--importance``, ``--personalize``, ``--cold-start``), the comparison (``--compare``,
    ``--lr-grid``) and the run (``--seed``, ``--device``, ``--threads``, ``--data-dir``,
    ``--checkpoint``, ``--resume``, ``--out``).

    Parameters
    ----------
    parser : argparse.ArgumentParser
        The subcommand's parser (``--json`` is declared on it already).
    """
    parser.add_argument("--partition", choices=_PARTITIONS, default="10:90", help="data partition")
    parser.add_argument(
        "--shift",
        choices=("rotation", "labels"),
        default="rotation",
        help="how D_B differs from D_A: rotated images, or labels y -> (y + 5) mod 10",
    )
    parser.add_argument("--dataset", default="mnist5k", help="dataset (mnist5k, digits, cifar10)")
    parser.add_argument("--model", default="mlp", help="model (mlp, linear, lenet5, cnn)")
    parser.add_argument("--clients", type=int, default=20, help="number of clients N")
    parser.add_argument("--clusters", type=int, default=2, help="number of cluster models K")
    parser.add_argument("--rounds", type=int, default=30, help="communication rounds R")
    parser.add_argument("--local-steps", type=int, default=10, help="local SGD steps per round")
    parser.add_argument(
        "--lr", type=float, default=None, help="learning rate (0.05; 1.0 with --code-compat)"
    )
    parser.add_argument("--tok-init", type=float, default=100.0, help="starting tokens")
    parser.add_argument("--price", type=float, default=1.0, help="price per cluster per round")
    parser.add_argument("--perf-share", type=float, default=0.2, help="N_p as a share of N")
    parser.add_argument("--no-incentive", action="store_true", help="random bids (NI ablation)")
    parser.add_argument(
        "--code-compat",
        action="store_true",
        help="reference-code behaviours (Adadelta, 5+2 slots, step refunds to all members)",
    )
    parser.add_argument(
        "--code-bugs",
        action="store_true",
        help="with --code-compat, also the reference code's bugs (the last selected client pays "
        "for everyone, Acc_max reset, reward passes stop at an empty pool)",
    )
    parser.add_argument(
        "--importance",
        choices=("accuracy", "fedsoft"),
        default="accuracy",
        help="importance weights: accuracy (Eq. 7) or FedSoft's argmin-loss shares",
    )
    parser.add_argument(
        "--personalize",
        choices=("param_avg", "output_mixture"),
        default="param_avg",
        help="personalised model: Eq. 8 parameter average, or the output mixture (not IP-FL)",
    )
    parser.add_argument(
        "--cold-start",
        choices=("random", "f1_kmeans"),
        default="random",
        help="initial clusters: random bootstrap, or KMeans on per-class F1 (App. B)",
    )
    parser.add_argument("--th-bid", type=float, default=_TH_BID, help="bid threshold Th (raw)")
    parser.add_argument("--synthetic", action="store_true", help="flip each client's test mix")
    parser.add_argument("--compare", action="store_true", help="IP-FL against the baselines")
    float_list(
        parser,
        "--lr-grid",
        default=None,
        help="with --compare, the learning rates each method chooses from on validation data "
        "(default 0.03 0.1 0.3)",
    )
    parser.add_argument("--seed", type=int, default=0, help="seed of everything random")
    parser.add_argument("--device", default="cpu", help="cpu or cuda")
    threads_argument(parser)
    parser.add_argument("--data-dir", default=None, help="directory of file-based datasets")
    parser.add_argument("--checkpoint", default=None, metavar="DIR", help="checkpoint directory")
    parser.add_argument("--resume", action="store_true", help="resume from --checkpoint")
    parser.add_argument("--out", default=None, metavar="DIR", help="write CSV/JSON here")


def run_config(args: argparse.Namespace) -> Any:
    """The :class:`learning.drivers.ipfl.IPFLRun` that the ``ipfl`` flags in ``args`` describe.

    Shared with ``collabecon flower ipfl``, which takes the same flags; the learning rate
    defaults to 1.0 under ``--code-compat`` (the authors' code) and 0.05 otherwise.
    """
    from games.ipfl import IPFLConfig
    from learning.drivers.ipfl import IPFLRun

    mechanism = IPFLConfig(
        tok_init=args.tok_init,
        price=args.price,
        perf_share=args.perf_share,
        th_bid=args.th_bid,
        incentive=not args.no_incentive,
        code_compat=args.code_compat,
        code_bugs=args.code_bugs,
    )
    return IPFLRun(
        dataset=args.dataset,
        partition=args.partition,
        shift=args.shift,
        clients=args.clients,
        clusters=args.clusters,
        rounds=args.rounds,
        model=args.model,
        local_steps=args.local_steps,
        lr=args.lr if args.lr is not None else (1.0 if args.code_compat else 0.05),
        importance=args.importance,
        personalize=args.personalize,
        cold_start=args.cold_start,
        flip_test_view=args.synthetic,
        seed=args.seed,
        mechanism=mechanism,
    )


def run(args: argparse.Namespace) -> dict[str, Any]:
    """Run IP-FL once, or with ``--compare`` against the baselines, on the flags' federation.

    One run is :func:`learning.drivers.ipfl.run_ipfl` (a progress bar of rounds on stderr);
    ``--compare`` is :func:`collabecon.reproductions.ipfl_comparison.compare` (a line per
    method and learning rate). Nothing is drawn on stderr with ``--json``.

    Parameters
    ----------
    args : argparse.Namespace
        The flags of :func:`add_arguments`.

    Returns
    -------
    dict
        One run: ``tokens_start``, ``tokens_end`` (per client), ``cluster_accuracy`` (per
        cluster and source distribution), ``pma_mean``, ``pma_positive_share``,
        ``opt_out_rate``, ``personalised_accuracy_mean``, and ``files`` with ``--out``.
        With ``--compare``: ``partition``, ``shift``, ``budget`` (``rounds``,
        ``local_steps``, ``client_updates_per_round``), ``lr_grid``, ``chance``, ``rows``
        (per method: ``method``, ``lr``, ``validation_accuracy_by_lr``, the personalised
        accuracy's mean, std and per-client values, ``pma_mean``, ``opt_out_rate``,
        ``opt_out_percent``, ``near_chance``, ``note``) and ``claims`` (the paper's
        orderings). The command exits with 0.

    Raises
    ------
    ValueError
        ``--resume`` without ``--checkpoint``, more clusters than clients, a bad device,
        directory or learning rate, ``--lr-grid`` without ``--compare``; the command exits
        with code 2.

    References
    ----------
    Khan et al., "IP-FL: Incentivized and Personalized Federated Learning", §6.1-6.4,
    Tables 3-5.
    """
    from collabecon.cli._checks import data_dir_for, device_flag, needs_checkpoint
    from collabecon.cli._paths import writable_dir

    needs_checkpoint(args.resume, args.checkpoint)
    _contradictions(args)
    data_dir_for(args.dataset, args.data_dir)
    if 1 <= args.clients < args.clusters:
        raise ValueError(
            f"--clusters {args.clusters} exceeds --clients {args.clients}: every cluster "
            "model needs at least one client"
        )
    device_flag("--device", args.device)
    writable_dir("--out", args.out)
    writable_dir("--checkpoint", args.checkpoint)
    if args.lr_grid is not None:
        from learning.optim import float32_step

        for lr in args.lr_grid:
            if lr <= 0:
                raise ValueError(f"--lr-grid must hold positive learning rates, got {lr}")
            float32_step("--lr-grid", lr)
    from collabecon.cli._progress import Progress
    from learning.drivers.ipfl import run_ipfl
    from learning.loop import DivergedError

    config = run_config(args)
    _check_length(config, args.compare, args.lr_grid)
    if args.compare:
        from collabecon.reproductions.ipfl_comparison import LR_GRID, compare, compared_baselines

        grid = tuple(args.lr_grid) if args.lr_grid is not None else LR_GRID
        runs = (1 + len(compared_baselines())) * len(grid)
        try:
            return compare(
                config,
                lr_grid=grid,
                device=args.device,
                data_dir=args.data_dir,
                progress=Progress.of(args, "ipfl", runs, eta=True),
            )
        except DivergedError as exc:
            return exc.record()
    try:
        with Progress.of(args, "ipfl").counting(args.rounds, unit="round") as rounds_done:
            result = run_ipfl(
                config,
                device=args.device,
                data_dir=args.data_dir,
                checkpoint_dir=args.checkpoint,
                resume=args.resume,
                progress=rounds_done,
            )
    except DivergedError as exc:
        return exc.record()
    out = result.summary()
    if args.out is not None:
        out["files"] = [str(p) for p in result.save(args.out)]
    return out


def _contradictions(args: argparse.Namespace) -> None:
    """Refuse flags that have no effect under the others given (one line naming both)."""
    if args.lr_grid is not None and not args.compare:
        raise ValueError("--lr-grid needs --compare")
    if args.compare and args.code_compat:
        raise ValueError(
            "--compare trains every method with SGD, --code-compat trains IP-FL with the "
            "reference code's Adadelta: give one of them"
        )
    if args.compare:
        unused = [
            ("--lr", args.lr is not None, "each method's rate is chosen from --lr-grid"),
            ("--out", args.out is not None, "a comparison writes no files"),
            ("--checkpoint", args.checkpoint is not None, "a comparison keeps no checkpoint"),
        ]
        for flag, given, why in unused:
            if given:
                raise ValueError(f"{flag} has no effect with --compare: {why}")
    if args.th_bid != _TH_BID:
        for flag, given, why in (
            ("--no-incentive", args.no_incentive, "bids are random"),
            ("--code-compat", args.code_compat, "each client bids for its best cluster only"),
        ):
            if given:
                raise ValueError(f"--th-bid has no effect with {flag}: {why}")


def _check_length(config: Any, compare: bool, lr_grid: list[float] | None) -> None:
    """Refuse a run that cannot finish or whose minibatch indices do not fit in memory.

    Every round at most ``--clients`` clients take ``--local-steps`` steps on minibatches of
    ``batch_size``; ``--compare`` trains IP-FL and every baseline at every learning rate of
    the grid (:func:`learning.loop.check_run_length`).
    """
    from learning.loop import check_round_indices, check_run_length

    runs = 1
    if compare:
        from collabecon.reproductions.ipfl_comparison import LR_GRID, compared_baselines

        runs = (1 + len(compared_baselines())) * len(LR_GRID if lr_grid is None else lr_grid)
    check_run_length(
        {
            "rounds": config.rounds,
            "clients": config.clients,
            "local_steps": config.local_steps,
            "batch_size": config.batch_size,
        },
        runs,
    )
    check_round_indices(config.clients, config.local_steps, config.batch_size)


def exit_status(result: dict[str, Any]) -> int:
    """1 when training diverged (``status`` is ``"failed"``), else 0."""
    return 1 if result.get("status") == "failed" else 0


def render(result: dict[str, Any]) -> str:
    """The human report of :func:`run`'s result.

    A comparison is a table of methods (personalised accuracy, PMA, opt-outs, learning rate;
    ``*`` marks a method near chance, explained below it), its budget and grid, and the
    claims table. One run is a table of each cluster model's accuracy per source
    distribution, then the token flows, personalised accuracy, PMA and opt-out rate, and the
    files written.
    """
    if result.get("status") == "failed":
        return f"FAILED: {result['failed']}"
    if "rows" in result:
        from econ.claims import Claim, claims_text

        methods = [
            (
                r["method"] + (" *" if r["near_chance"] else ""),
                f"{100 * r['personalised_accuracy_mean']:.1f} ± {100 * r['personalised_accuracy_std']:.1f}",
                fmt(r["pma_mean"], 3),
                fmt(r["opt_out_percent"], 3),
                fmt(r["lr"], 3),
            )
            for r in result["rows"]
        ]
        header = ["method", "pers. acc. (%)", "avg PMA (pp)", "opt-outs (%)", "lr"]
        budget = result["budget"]
        lines = [
            f"partition {result['partition']}, shift {result['shift']}; budget {budget['rounds']}"
            f" rounds x {budget['local_steps']} local steps x "
            f"{budget['client_updates_per_round']} client updates; learning rate of each "
            "method chosen on validation data from "
            + ", ".join(fmt(x, 3) for x in result["lr_grid"]),
            table(methods, header),
        ]
        lines += [f"* {r['method']}: {r['note']}" for r in result["rows"] if r["near_chance"]]
        claims = [Claim(**c) for c in result["claims"]]
        lines += ["", "claims (Khan et al.):", claims_text(claims)]
        return "\n".join(lines)
    acc = result["cluster_accuracy"]
    rows = [(f"c{k}", *(fmt(100 * a, 4) for a in accs)) for k, accs in enumerate(acc)]
    lines = [table(rows, ["cluster", *(f"θ{d} (%)" for d in range(len(acc[0])))])]
    start, end = result["tokens_start"], result["tokens_end"]
    lines.append(
        f"\ntokens: start {fmt(sum(start))} total, end min {fmt(min(end), 4)} / "
        f"max {fmt(max(end), 4)}; personalised accuracy "
        f"{fmt(100 * result['personalised_accuracy_mean'], 4)} %, mean PMA "
        f"{fmt(result['pma_mean'], 3)} pp, PMA > 0 for {fmt(100 * result['pma_positive_share'], 3)} %"
        f" of clients, opt-out rate {fmt(result['opt_out_rate'], 3)}"
    )
    lines += [f"wrote {f}" for f in result.get("files", [])]
    return "\n".join(lines)
