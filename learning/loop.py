"""The round loop: one loop drives every registered algorithm.

:func:`run_rounds` initialises the algorithm, runs its rounds (all clients, or a random
subset per round), evaluates every client's model on its own test data, checkpoints
every ``k`` rounds with an atomic write (temporary file + :func:`os.replace`), and resumes
from the last checkpoint to exactly the numbers of an uninterrupted run: ``init``, every
round and ``finish`` draw from their own stream (:mod:`learning.rng`), rooted in one integer
that the checkpoint keeps. A checkpoint holds tensors, numbers, strings, lists and dicts only
and is read back with ``weights_only=True`` (:func:`read_checkpoint`): loading it never runs
code from the file.
"""

from __future__ import annotations

import json
import math
import os
import pickle
import re
import sys
import zipfile
from collections.abc import Callable, Mapping
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any

import numpy as np
import torch
from tqdm import tqdm

from econ.validation import positive_int
from learning.algorithms.base import Algorithm
from learning.algorithms.exchanges import State
from learning.engine import Evaluation, Params
from learning.rng import draw_entropy, finish_rng, init_rng, round_rng

__all__ = [
    "CHECKPOINT_FILE",
    "Checkpointing",
    "DivergedError",
    "LoopResult",
    "RoundRecord",
    "check_finite_loss",
    "read_checkpoint",
    "run_rounds",
]

CHECKPOINT_FILE = "checkpoint.pt"
_FORMAT = 1


@dataclass(frozen=True, slots=True)
class RoundRecord:
    """Metrics after one round.

    Mean training loss of the participants, and the mean test loss and accuracy (None for
    regression) of every client's model on its own test set.
    """

    round: int
    train_loss: float
    test_loss: float
    test_accuracy: float | None


@dataclass(frozen=True, slots=True)
class Checkpointing:
    """Where and how often to checkpoint, and whether to resume from ``directory``."""

    directory: Path
    every: int = 1
    resume: bool = False

    def __post_init__(self) -> None:
        """Check that ``every`` is a positive integer and hold ``directory`` as a ``Path``.

        Raises
        ------
        ValueError
            ``every`` is not a positive integer.
        """
        positive_int("checkpoint every", self.every)
        object.__setattr__(self, "directory", Path(self.directory))

    @property
    def path(self) -> Path:
        """The checkpoint file: :data:`CHECKPOINT_FILE` in ``directory``."""
        return self.directory / CHECKPOINT_FILE


@dataclass(frozen=True, slots=True)
class LoopResult:
    """Final state, per-round history, and the final evaluation of every client's model.

    Each client's model is evaluated on its own test set.
    """

    state: State
    models: Params
    history: tuple[RoundRecord, ...]
    evaluation: Evaluation
    resumed_from: int


def _mean(values: np.ndarray | None) -> float | None:
    return None if values is None else float(np.mean(values))


def _to_device(value: Any, device: torch.device) -> Any:
    if isinstance(value, torch.Tensor):
        return value.to(device)
    if isinstance(value, dict):
        return {k: _to_device(v, device) for k, v in value.items()}
    raise TypeError(f"algorithm state must hold tensors or dicts of them, got {type(value)}")


def write_checkpoint(path: Path, payload: dict[str, Any]) -> None:
    """Write ``payload`` to ``path`` atomically (a temporary file, then :func:`os.replace`)."""
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = path.with_name(f".{path.name}.{os.getpid()}.tmp")
    torch.save(payload, tmp)
    os.replace(tmp, path)


def _refusal(exc: BaseException) -> str:
    """One line saying why ``torch.load`` refused a file (its messages span many lines)."""
    text = str(exc)
    if isinstance(exc, pickle.UnpicklingError) and "Weights only load failed" in text:
        named = re.search(r"GLOBAL ([\w.]+)", text)
        return "it holds objects other than tensors, numbers, strings, lists and dicts" + (
            f" (it refers to {named.group(1)})" if named else ""
        )
    lines = [line.strip() for line in text.splitlines() if line.strip()]
    return f"{type(exc).__name__}: {lines[0] if lines else 'unreadable'}"


def read_checkpoint(path: str | os.PathLike[str]) -> dict[str, Any]:
    """The dict saved at ``path`` by :func:`torch.save`, loaded with ``weights_only=True``.

    Only tensors, numbers, strings, lists, tuples and dicts are rebuilt; a file that
    names any other global (code a crafted checkpoint would run while loading) is refused
    before anything is called. Every checkpoint of this package holds only those types.

    Raises
    ------
    ValueError
        One line naming ``path``: the file is corrupt or truncated, holds other objects, or
        is not a dict.
    """
    try:
        payload = torch.load(path, map_location="cpu", weights_only=True)
    except (
        pickle.UnpicklingError,
        RuntimeError,
        EOFError,
        OSError,
        ValueError,
        TypeError,
        AttributeError,
        IndexError,
        KeyError,
        zipfile.BadZipFile,
    ) as exc:
        raise ValueError(f"{path} is not a readable checkpoint: {_refusal(exc)}") from None
    if not isinstance(payload, dict):
        raise ValueError(f"{path} is not a checkpoint: it holds a {type(payload).__name__}")
    return payload


def _load(checkpoint: Checkpointing, fingerprint: str, device: torch.device) -> dict[str, Any]:
    payload = read_checkpoint(checkpoint.path)
    if payload.get("format") != _FORMAT:
        raise ValueError(f"{checkpoint.path} is not a checkpoint of this version")
    if payload.get("fingerprint") != fingerprint:
        raise ValueError(
            f"{checkpoint.path} belongs to another configuration: saved "
            f"{payload.get('fingerprint')}, now {fingerprint}"
        )
    try:
        payload["state"] = _to_device(payload["state"], device)
        payload["entropy"], payload["round"] = int(payload["entropy"]), int(payload["round"])
        payload["history"] = [RoundRecord(**r) for r in payload["history"]]
    except (KeyError, TypeError, ValueError) as exc:
        raise ValueError(
            f"{checkpoint.path} is not a complete checkpoint: {type(exc).__name__}: {exc}"
        ) from None
    return payload


#: the largest float32: a step size above it overflows in the engine's float32 update
class DivergedError(ValueError):
    """Training diverged: a loss became infinite or NaN."""


def check_finite_loss(which: str, loss: float, round_: int, lr: float) -> None:
    """Stop a run whose loss is no longer a finite number.

    Parameters
    ----------
    which : str
        Which loss (``"training"``, ``"test"``), for the message.
    loss : float
        Its value after round ``round_``.
    round_ : int
        The round just completed (1-based).
    lr : float
        The learning rate of local training, named in the message: the usual cause.

    Raises
    ------
    DivergedError
        ``loss`` is infinite or NaN.
    """
    if not math.isfinite(loss):
        raise DivergedError(
            f"training diverged at round {round_}: the mean {which} loss is {loss} with "
            f"learning rate {lr:g} (--lr); try a smaller learning rate"
        )


def run_rounds(
    algorithm: Algorithm,
    models: Params,
    rounds: int,
    seed: int | np.random.Generator | None = None,
    *,
    clients_per_round: int | None = None,
    eval_every: int = 1,
    checkpoint: Checkpointing | None = None,
    fingerprint: Mapping[str, Any] | None = None,
    progress: bool = False,
    observe: Callable[[int, Any], None] | None = None,
) -> LoopResult:
    """Run ``rounds`` rounds of ``algorithm`` from the stacked initial ``models``.

    Parameters
    ----------
    algorithm : Algorithm
        Built on a :class:`learning.algorithms.Context`.
    models : Params
        Initial parameters, one row per client.
    rounds : int
        Total number of rounds (a resumed run continues up to it).
    seed : int, Generator or None
        Root of the run's streams (ignored when resuming: the checkpoint has the root).
    clients_per_round : int, optional
        Clients sampled (without replacement) each round; all when None.
    eval_every : int
        Evaluate every that many rounds (and after the last round).
    checkpoint : Checkpointing, optional
        Write a checkpoint every ``checkpoint.every`` rounds; with ``resume`` start from it
        when it exists.
    fingerprint : mapping, optional
        JSON-ready description of the run (configuration); a checkpoint of another
        fingerprint is refused.
    progress : bool
        Show a tqdm progress bar on stderr.
    observe : callable, optional
        Called as ``observe(done, state)`` at every evaluation, with the number of rounds done
        and the algorithm's state after them (before ``finish``); it must not change the state.
    """
    rounds = positive_int("rounds", rounds)
    eval_every = positive_int("eval_every", eval_every)
    ctx = algorithm.ctx
    n_clients = ctx.n_clients
    if clients_per_round is not None:
        clients_per_round = positive_int("clients_per_round", clients_per_round)
        if clients_per_round > n_clients:
            raise ValueError(
                f"clients_per_round must be at most the number of clients ({n_clients}), "
                f"got {clients_per_round}"
            )
    stamp = json.dumps(dict(fingerprint or {}), sort_keys=True, default=str)

    history: list[RoundRecord] = []
    start = 0
    if checkpoint is not None and checkpoint.resume and checkpoint.path.exists():
        payload = _load(checkpoint, stamp, ctx.device)
        entropy, state, start = payload["entropy"], payload["state"], payload["round"]
        history = payload["history"]
        if start > rounds:
            raise ValueError(
                f"the checkpoint is at round {start}, past the requested rounds={rounds}"
            )
    else:
        entropy = draw_entropy(np.random.default_rng(seed))
        state = algorithm.init(models, init_rng(entropy))

    everyone = np.arange(n_clients)
    bar = tqdm(
        range(start, rounds),
        desc=algorithm.name,
        file=sys.stderr,
        disable=not progress,
        initial=start,
        total=rounds,
    )
    for r in bar:
        rng = round_rng(entropy, r)
        clients = (
            everyone
            if clients_per_round is None
            else np.sort(rng.choice(n_clients, size=clients_per_round, replace=False))
        )
        state, metrics = algorithm.round(state, clients, rng)
        done = r + 1
        check_finite_loss("training", float(metrics["train_loss"]), done, ctx.local.sgd.lr)
        if done % eval_every == 0 or done == rounds:
            ev = ctx.engine.evaluate(algorithm.client_models(state), ctx.test)
            record = RoundRecord(
                done, metrics["train_loss"], float(ev.loss.mean()), _mean(ev.accuracy)
            )
            check_finite_loss("test", record.test_loss, done, ctx.local.sgd.lr)
            history.append(record)
            if observe is not None:
                observe(done, state)
            bar.set_postfix(loss=f"{record.test_loss:.3f}", acc=f"{record.test_accuracy or 0:.3f}")
        if checkpoint is not None and (done % checkpoint.every == 0 or done == rounds):
            write_checkpoint(
                checkpoint.path,
                {
                    "format": _FORMAT,
                    "fingerprint": stamp,
                    "entropy": entropy,
                    "round": done,
                    "state": _to_device(state, torch.device("cpu")),
                    "history": [asdict(h) for h in history],
                },
            )
    bar.close()

    state = algorithm.finish(state, finish_rng(entropy))
    final_models = algorithm.client_models(state)
    return LoopResult(
        state=state,
        models=final_models,
        history=tuple(history),
        evaluation=ctx.engine.evaluate(final_models, ctx.test),
        resumed_from=start,
    )
