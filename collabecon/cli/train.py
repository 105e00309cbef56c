"""``collabecon train``: train clients with a federated algorithm on real data.

Every flag defaults to the field of :class:`learning.train.TrainConfig`, so
``collabecon train --algorithm fedavg`` alone trains LeNet-5 on 10 iid clients of
``mnist5k``. Prints per-client test accuracy and loss; ``--out DIR`` writes the learning
curve (``learning_curve.png``) and its numbers (``learning_curve.csv``). A run whose loss
diverges (:func:`learning.loop.divergence_limit`) stops at that round, is reported as
failed with the round, the loss and the learning rate, and the command exits with 1.
"""

from __future__ import annotations

import argparse
import csv
import dataclasses
import json
from pathlib import Path
from typing import Any

from collabecon.cli._checks import threads_argument
from collabecon.cli._output import fmt, table

#: The ``TrainConfig`` fields that are flags of ``train`` (and ``flower simulate``), with help.
TRAIN_FLAGS = {
    "algorithm": "algorithm name (local, fedavg, oracle, ...)",
    "dataset": "dataset name (mnist5k, digits, mnist, fashion-mnist, cifar10, ...)",
    "partition": "partition name (iid, label-cdf, rotation, private-label, pathological, "
    "mixture, dirichlet)",
    "model": "model name (lenet5, mlp, cnn, linear, resnet9, vgg16, vgg8)",
    "clients": "number of clients",
    "rounds": "communication rounds",
    "local_steps": "local SGD steps per client per round",
    "lr": "learning rate (> 0)",
    "momentum": "SGD momentum in [0, 1)",
    "weight_decay": "SGD weight decay (>= 0)",
    "batch_size": "minibatch size of local SGD",
    "clients_per_round": "clients sampled each round (all by default)",
    "test_fraction": "share of each client's data held out as its test set",
    "target_fraction": "share of the data carved out first as a common balanced target set",
    "eval_every": "evaluate every that many rounds",
    "engine": "batched (all clients at once) or loop (one client after another)",
    "seed": "seed of everything random",
    "dp_noise_multiplier": "DP-SGD local training with this noise multiplier z (none: SGD)",
    "dp_max_grad_norm": "DP-SGD's per-example clipping norm C",
    "dp_delta": "the delta of each client's reported (epsilon, delta) guarantee",
    "dp_sampling": "DP-SGD's minibatches: fixed (batch-size distinct examples, replace-one "
    "adjacency) or poisson (each example with probability batch-size/n, add-remove adjacency, "
    "as Opacus)",
    "dp_accountant": "the privacy accountant of epsilon: rdp, or pld (with --dp-sampling poisson)",
}

#: Library keywords named in messages -> the flags that set them.
KEYWORDS = {"n_clients": "--clients"}

#: The type of a flag whose field defaults to None.
_NONE_TYPES = {"clients_per_round": int, "dp_noise_multiplier": float}


def _key_value(text: str) -> tuple[str, Any]:
    key, sep, raw = text.partition("=")
    if not sep or not key:
        raise argparse.ArgumentTypeError(f"expected KEY=VALUE, got {text!r}")
    try:
        value = json.loads(raw)
    except json.JSONDecodeError:
        value = raw
    return key.replace("-", "_"), value


#: The ``--NAME-arg KEY=VALUE`` flags: TrainConfig's parameter dicts, with what they configure.
PARAMETER_FLAGS = (
    ("partition", "partition"),
    ("algorithm", "algorithm"),
    ("dataset", "dataset loader"),
)


def add_train_flags(
    parser: argparse.ArgumentParser,
    *,
    help_for: dict[str, str] | None = None,
    parameters: tuple[tuple[str, str], ...] = PARAMETER_FLAGS,
) -> None:
    """Declare the flags of :class:`learning.train.TrainConfig`'s fields.

    Each field is a flag ``--NAME`` (its default shown), and each parameter dict has the
    ``--NAME-arg KEY=VALUE`` flags; ``help_for`` replaces the help of named fields.
    ``collabecon train`` and ``collabecon flower`` share them.
    """
    from learning.train import TrainConfig

    defaults = {f.name: f.default for f in dataclasses.fields(TrainConfig)}
    for name, help_ in TRAIN_FLAGS.items():
        default = defaults[name]
        parser.add_argument(
            "--" + name.replace("_", "-"),
            type=type(default) if default is not None else _NONE_TYPES[name],
            default=default,
            help=f"{(help_for or {}).get(name, help_)} (default: {default})",
        )
    for name, what in parameters:
        parser.add_argument(
            f"--{name}-arg",
            dest=f"{name}_params",
            type=_key_value,
            action="append",
            default=[],
            metavar="KEY=VALUE",
            help=f"a parameter of the {what}; VALUE is JSON (e.g. shares=[0.8,0.2])",
        )


def add_arguments(parser: argparse.ArgumentParser) -> None:
    """Declare the flags of ``collabecon train``.

    The flags of :func:`add_train_flags` (every field of :class:`learning.train.TrainConfig`
    and its ``--NAME-arg`` parameters), then ``--device``, ``--threads``, ``--data-dir``,
    ``--checkpoint``, ``--checkpoint-every``, ``--resume``, ``--out`` and ``--no-progress``.

    Parameters
    ----------
    parser : argparse.ArgumentParser
        The subcommand's parser (``--json`` is declared on it already).
    """
    add_train_flags(parser)
    parser.add_argument("--device", default=None, help="cpu or cuda (default: cuda if available)")
    threads_argument(parser)
    parser.add_argument("--data-dir", default=None, help="directory of file-based datasets")
    parser.add_argument("--checkpoint", default=None, metavar="DIR", help="checkpoint directory")
    parser.add_argument(
        "--checkpoint-every", type=int, default=1, help="rounds between checkpoints"
    )
    parser.add_argument("--resume", action="store_true", help="resume from --checkpoint")
    parser.add_argument("--out", default=None, metavar="DIR", help="write the learning curve here")
    parser.add_argument("--no-progress", action="store_true", help="no progress bar on stderr")


def dp_flags(args: argparse.Namespace) -> None:
    """Refuse DP-SGD's settings without DP-SGD (``--dp-noise-multiplier``).

    ``--dp-max-grad-norm``, ``--dp-delta``, ``--dp-sampling`` and ``--dp-accountant`` set
    away from their defaults have no effect when local training is plain SGD.

    Raises
    ------
    ValueError
        One of them is set without ``--dp-noise-multiplier``; the message names both.
    """
    from learning.train import TrainConfig

    if args.dp_noise_multiplier is not None:
        return
    defaults = {f.name: f.default for f in dataclasses.fields(TrainConfig)}
    for name in ("dp_max_grad_norm", "dp_delta", "dp_sampling", "dp_accountant"):
        if getattr(args, name) != defaults[name]:
            raise ValueError(
                f"--{name.replace('_', '-')} {getattr(args, name)} has no effect without "
                "--dp-noise-multiplier (DP-SGD is off): give both, or neither"
            )


def config_from_args(args: argparse.Namespace) -> Any:
    """The :class:`learning.train.TrainConfig` of parsed flags (checked)."""
    from learning.train import TrainConfig

    return TrainConfig(
        **{name: getattr(args, name) for name in TRAIN_FLAGS},
        partition_params=dict(args.partition_params),
        algorithm_params=dict(args.algorithm_params),
        dataset_params=dict(args.dataset_params),
    )


def _write_curve(out: Path, result: Any) -> list[str]:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    out.mkdir(parents=True, exist_ok=True)
    rows = [dataclasses.asdict(r) for r in result.history]
    csv_path, png_path = out / "learning_curve.csv", out / "learning_curve.png"
    with csv_path.open("w", newline="") as fh:
        writer = csv.DictWriter(
            fh, fieldnames=["round", "train_loss", "test_loss", "test_accuracy"]
        )
        writer.writeheader()
        writer.writerows(rows)
    rounds = [r["round"] for r in rows]
    fig, (ax_loss, ax_acc) = plt.subplots(1, 2, figsize=(9, 3.5))
    ax_loss.plot(rounds, [r["train_loss"] for r in rows], label="train (participants)")
    ax_loss.plot(rounds, [r["test_loss"] for r in rows], label="test (mean over clients)")
    ax_loss.set(xlabel="round", ylabel="loss")
    ax_loss.legend()
    if result.accuracy is not None:
        ax_acc.plot(rounds, [r["test_accuracy"] for r in rows])
        ax_acc.set(xlabel="round", ylabel="mean test accuracy", ylim=(0, 1))
    else:
        ax_acc.set_axis_off()
    c = result.config
    fig.suptitle(f"{c.algorithm} on {c.dataset} ({c.partition}, {c.clients} clients, {c.model})")
    fig.tight_layout()
    fig.savefig(png_path, dpi=120)
    plt.close(fig)
    return [str(png_path), str(csv_path)]


def run(args: argparse.Namespace) -> dict[str, Any]:
    """Train the clients of the flags' configuration (:func:`learning.train.train`).

    A progress bar of rounds is drawn on stderr unless ``--json`` or ``--no-progress``;
    ``--out`` receives ``learning_curve.png`` and ``learning_curve.csv``.

    Parameters
    ----------
    args : argparse.Namespace
        The flags of :func:`add_arguments`.

    Returns
    -------
    dict
        ``status`` (``"done"``, or ``"failed"`` when training diverged), ``algorithm``,
        ``dataset``, ``partition``, ``model``, ``engine``, ``device``, ``clients``,
        ``rounds``, per client ``accuracy`` (None for regression) and ``loss`` on its own
        test set, ``mean_accuracy``, ``mean_loss``, ``seconds``, ``resumed_from``; under
        DP-SGD each client's ``epsilon``, the ``delta`` and the ``accounting``
        (``accountant``, ``sampling``, ``adjacency``:
        :attr:`learning.train.TrainResult.accounting`); with a common target set
        (``--target-fraction > 0``) ``target_loss`` and ``target_accuracy`` per client;
        with ``--out`` the ``files`` written. A diverged run also has ``failed`` (the
        reason: round, loss, learning rate), ``diverged``
        (:meth:`learning.loop.Divergence.to_dict`) and ``loss_why`` (a loss that is no
        number is None); its numbers are those of the round it stopped at.
        :func:`exit_status` gives the exit code: 1 for a diverged run, else 0.

    Raises
    ------
    ValueError
        ``--resume`` without ``--checkpoint``, ``--checkpoint-every`` below 1 or without
        ``--checkpoint``, a bad device or directory, ``--data-dir`` with a dataset that
        reads no files, or a configuration :class:`learning.train.TrainConfig` or
        :func:`learning.train.train` refuses (counts, run length, memory), or DP-SGD's
        settings without ``--dp-noise-multiplier`` (:func:`dp_flags`); the command exits with
        code 2.
    """
    from collabecon.cli._checks import (
        data_dir_for,
        device_flag,
        existing_dir,
        needs_checkpoint,
    )
    from collabecon.cli._paths import writable_dir

    needs_checkpoint(args.resume, args.checkpoint)
    if args.checkpoint_every < 1:
        raise ValueError(f"--checkpoint-every must be an integer >= 1, got {args.checkpoint_every}")
    dp_flags(args)
    if args.checkpoint is None and args.checkpoint_every != 1:
        raise ValueError(
            f"--checkpoint-every {args.checkpoint_every} has no effect without --checkpoint DIR"
        )
    device_flag("--device", args.device)
    existing_dir("--data-dir", args.data_dir)
    data_dir_for(args.dataset, args.data_dir)
    writable_dir("--out", args.out)
    writable_dir("--checkpoint", args.checkpoint)
    from collabecon.cli._progress import Progress
    from learning.train import train

    config = config_from_args(args)
    result = train(
        config,
        device=args.device,
        data_dir=args.data_dir,
        checkpoint_dir=args.checkpoint,
        checkpoint_every=args.checkpoint_every,
        resume=args.resume,
        progress=Progress.of(args, "train").enabled,  # off with --json or --no-progress
        on_divergence="stop",
    )
    out: dict[str, Any] = {
        "status": "done" if result.diverged is None else "failed",
        "algorithm": config.algorithm,
        "dataset": config.dataset,
        "partition": config.partition,
        "model": config.model,
        "engine": config.engine,
        "device": result.device,
        "clients": config.clients,
        "rounds": config.rounds,
        "accuracy": None if result.accuracy is None else result.accuracy.tolist(),
        "loss": _numbers(result.loss),
        "mean_accuracy": result.mean_accuracy,
        "mean_loss": _number(float(result.loss.mean())),
        "seconds": result.seconds,
        "resumed_from": result.resumed_from,
    }
    if result.diverged is not None:
        out["failed"] = result.diverged.reason
        out["diverged"] = result.diverged.to_dict()
        out["loss_why"] = "training diverged: a loss that is no number is None"
    epsilon = result.epsilon
    if epsilon is not None:
        out["epsilon"] = epsilon.tolist()
        out["delta"] = config.dp_delta
        out["accounting"] = result.accounting
    if result.target is not None:
        out["target_loss"] = _numbers(result.target.loss)
        out["target_accuracy"] = (
            None if result.target.accuracy is None else result.target.accuracy.tolist()
        )
    if args.out is not None:
        out["files"] = _write_curve(Path(args.out), result)
    return out


def _number(value: float) -> float | None:
    """``value``, or None where it is NaN (the loss of a diverged model)."""
    return None if value != value else value


def _numbers(values: Any) -> list[float | None]:
    return [_number(float(v)) for v in values]


def exit_status(result: dict[str, Any]) -> int:
    """1 when training diverged (``status`` is ``"failed"``), else 0."""
    return 1 if result["status"] == "failed" else 0


def render(result: dict[str, Any]) -> str:
    """The human report of :func:`run`'s result.

    A row per client (test accuracy and loss, and on the target set when there is one), a
    line with the run and its means and seconds, each client's ε under DP-SGD with its
    accounting, and the files written.
    """
    accuracy = result["accuracy"] or [None] * len(result["loss"])
    columns = [range(len(result["loss"])), accuracy, result["loss"]]
    header = ["client", "test accuracy", "test loss"]
    if "target_loss" in result:
        columns += [
            result["target_accuracy"] or [None] * len(result["loss"]),
            result["target_loss"],
        ]
        header += ["target accuracy", "target loss"]
    lines = [table(list(zip(*columns, strict=True)), header)]
    lines.append(
        f"\n{result['algorithm']} on {result['dataset']} ({result['partition']}, "
        f"{result['clients']} clients, {result['model']}, {result['device']}): "
        f"mean accuracy {fmt(result['mean_accuracy'], 4)}, mean loss "
        f"{fmt(result['mean_loss'], 4)}, {result['seconds']:.1f} s"
    )
    if "epsilon" in result:
        from econ.privacy.accountants import accounting_text

        eps = ", ".join(fmt(e, 3) for e in result["epsilon"])
        lines.append(f"DP-SGD: each client's epsilon at delta {result['delta']:g}: {eps}")
        lines.append(f"accounting: {accounting_text(result['accounting'])}")
    lines += [f"wrote {f}" for f in result.get("files", [])]
    if result["status"] == "failed":
        lines.append(f"FAILED: {result['failed']}")
    return "\n".join(lines)
