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
import warnings
import zipfile
from collections.abc import Callable, Mapping
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any

import numpy as np
import torch
from tqdm import tqdm

from econ._log import get_logger
from econ.validation import choice, fits_in_memory, positive_int
from learning.algorithms.base import Algorithm
from learning.algorithms.exchanges import State
from learning.engine import Evaluation, Params
from learning.rng import draw_entropy, finish_rng, init_rng, round_rng

__all__ = [
    "CHECKPOINT_FILE",
    "DIVERGENCE_FACTOR",
    "MAX_EXAMPLE_GRADIENTS",
    "ON_DIVERGENCE",
    "Checkpointing",
    "DivergedError",
    "Divergence",
    "LoopResult",
    "RoundRecord",
    "check_loss",
    "check_round_indices",
    "check_run_length",
    "clients_divergence",
    "divergence",
    "divergence_limit",
    "read_checkpoint",
    "run_rounds",
]

CHECKPOINT_FILE = "checkpoint.pt"
_FORMAT = 1

_log = get_logger(__name__)


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

    Each client's model is evaluated on its own test set. ``diverged`` says where the run
    diverged when :func:`run_rounds` stopped it early (``on_divergence="stop"``); the state,
    models and evaluation are then those of the round it stopped at.
    """

    state: State
    models: Params
    history: tuple[RoundRecord, ...]
    evaluation: Evaluation
    resumed_from: int
    diverged: Divergence | None = None


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
        with warnings.catch_warnings():
            # torch warns of a foreign pickle protocol before it refuses or loads the file;
            # the refusal below says all there is to say
            warnings.filterwarnings(
                "ignore", message="Detected pickle protocol", category=UserWarning
            )
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


#: A run counts as diverged once a loss exceeds this multiple of its initial loss
#: (:func:`divergence_limit`), or is not a finite number.
#:
#: Ordinary training lowers its loss; even a model that overfits or oscillates stays within
#: a few dozen times the loss it started from (the cross-entropy of an untrained classifier of
#: :math:`C` classes is about :math:`\ln C`, and a classifier whose test cross-entropy is
#: :math:`10^4 \ln C` gives the true class a probability near :math:`e^{-23000}` at
#: :math:`C = 10`). A loss :math:`10^4` times the initial one is an update that overflowed
#: the scale of the model (a learning rate far too large), and the run only burns time
#: afterwards.
DIVERGENCE_FACTOR = 1e4


def divergence_limit(initial_loss: float) -> float:
    r"""The loss above which a run counts as diverged.

    .. math:: L_{\max} = F \max(L_0, 1)

    with :math:`F` = :data:`DIVERGENCE_FACTOR` and :math:`L_0` the initial loss: the mean
    test loss of the untrained models, or, where no evaluation is at hand, :math:`\ln C`
    for a classifier of :math:`C` classes (the cross-entropy of the uniform guess an
    untrained classifier makes). The floor of 1 keeps a task whose untrained model is
    already nearly exact (:math:`L_0 \approx 0`) from counting noise as divergence. A
    non-finite :math:`L_0` gives no limit (only a non-finite loss diverges).

    Parameters
    ----------
    initial_loss : float
        :math:`L_0`.

    Returns
    -------
    float
        :math:`L_{\max}`, or infinity.
    """
    if not math.isfinite(initial_loss):
        return math.inf
    return DIVERGENCE_FACTOR * max(float(initial_loss), 1.0)


@dataclass(frozen=True, slots=True)
class Divergence:
    """Where a run diverged: the loss that left :func:`divergence_limit`, and when.

    ``round`` is the round just completed (1-based; None where the caller counts no
    rounds), ``what`` names the loss (``"the test loss of client 3"``), ``loss`` its value,
    ``limit`` the run's :func:`divergence_limit` and ``lr`` the learning rate of local
    training, the usual cause.
    """

    round: int | None
    what: str
    loss: float
    limit: float
    lr: float

    @property
    def reason(self) -> str:
        """One line: the round, the loss and its limit, and the learning rate (``--lr``)."""
        return self.describe()

    def describe(self, flag: str = "--lr") -> str:
        """:attr:`reason`, naming ``flag`` as the source of the learning rate."""
        when = "" if self.round is None else f" at round {self.round}"
        if math.isfinite(self.loss):
            factor = f"{DIVERGENCE_FACTOR:g}"
            size = (
                f"{self.loss:.6g}, above {self.limit:.3g} ({factor} x the initial loss, "
                f"at least {factor})"
            )
        else:
            size = str(self.loss)
        return (
            f"training diverged{when}: {self.what} is {size} with learning rate "
            f"{self.lr:g} ({flag}); try a smaller learning rate"
        )

    def to_dict(self) -> dict[str, Any]:
        """JSON-ready record of the divergence.

        ``round``, ``what``, ``loss`` (None when it is not a number: the ``reason`` says
        what it is), ``limit`` (None when there is none), ``lr`` and the ``reason``.
        """
        return {
            "round": self.round,
            "what": self.what,
            "loss": None if math.isnan(self.loss) else self.loss,
            "limit": self.limit if math.isfinite(self.limit) else None,
            "lr": self.lr,
            "reason": self.reason,
        }


def divergence(
    what: str, loss: float, round_: int | None, lr: float, limit: float = math.inf
) -> Divergence | None:
    """The :class:`Divergence` of ``loss``, or None while it is finite and at most ``limit``.

    Parameters
    ----------
    what : str
        Which loss (``"the mean training loss of the round's 4 clients"``), for the message.
    loss : float
        Its value after round ``round_``.
    round_ : int or None
        The round just completed (1-based).
    lr : float
        The learning rate of local training.
    limit : float
        The run's :func:`divergence_limit` (infinity: only a non-finite loss diverges).
    """
    loss = float(loss)
    if math.isfinite(loss) and loss <= limit:
        return None
    return Divergence(round_, what, loss, limit, float(lr))


class DivergedError(ValueError):
    """Training diverged: a loss became infinite, NaN, or left :func:`divergence_limit`.

    ``divergence`` is the :class:`Divergence` found (None for a plain message).
    """

    def __init__(self, found: Divergence | str) -> None:
        self.divergence = found if isinstance(found, Divergence) else None
        super().__init__(found.reason if isinstance(found, Divergence) else found)

    def __reduce__(self) -> tuple[Any, ...]:
        """Pickle with the divergence (the error crosses process pools)."""
        return (DivergedError, (self.divergence or str(self),))

    def record(self, flag: str = "--lr") -> dict[str, Any]:
        """The failure record of the run that raised it.

        ``status`` ``"failed"``, ``failed`` (the reason, naming ``flag`` as the source of
        the learning rate) and ``diverged`` (:meth:`Divergence.to_dict`, None for a plain
        message).
        """
        found = self.divergence
        return {
            "status": "failed",
            "failed": str(self) if found is None else found.describe(flag),
            "diverged": None if found is None else found.to_dict(),
        }


def check_loss(
    what: str, loss: float, round_: int | None, lr: float, limit: float = math.inf
) -> None:
    """Stop a run whose loss diverged (:func:`divergence`).

    Raises
    ------
    DivergedError
        ``loss`` is infinite, NaN or above ``limit``.
    """
    found = divergence(what, loss, round_, lr, limit)
    if found is not None:
        raise DivergedError(found)


def clients_divergence(
    kind: str,
    losses: np.ndarray,
    round_: int | None,
    lr: float,
    limit: float,
    clients: np.ndarray | None = None,
) -> Divergence | None:
    """The divergence of the client with the largest ``kind`` loss (a NaN the largest), or None.

    ``losses`` holds one loss per client of ``clients`` (by default, client ``k`` at
    position ``k``); the message names the client and the kind (``"the test loss of client
    3"``).
    """
    values = np.asarray(losses, dtype=np.float64)
    k = int(np.argmax(np.where(np.isnan(values), np.inf, values)))
    who = k if clients is None else int(np.asarray(clients)[k])
    return divergence(f"the {kind} loss of client {who}", float(values[k]), round_, lr, limit)


#: The most example gradients (rounds x participating clients x local steps x batch size,
#: summed over its runs) one command may ask for. Ten million example gradients a second is
#: the pace of a GPU on the small models of this package (a CPU manages a few hundred
#: thousand): :math:`10^{12}` takes more than a day there and weeks on a CPU, a thousand
#: times the budgets of the papers reproduced here. A longer run cannot finish on the
#: machines this package targets; a count of that size is a typing error.
MAX_EXAMPLE_GRADIENTS = 10**12


def check_run_length(counts: Mapping[str, int], runs: int = 1) -> int:
    r"""Refuse a run longer than :data:`MAX_EXAMPLE_GRADIENTS`, before any work.

    .. math:: W = \text{runs} \prod_i n_i \le 10^{12}

    Parameters
    ----------
    counts : mapping of str to int
        The factors of one run's example gradients by name (``rounds``, ``clients``,
        ``local_steps``, ``batch_size``; or the flags of a command), named in the message.
    runs : int
        How many such runs the command trains.

    Returns
    -------
    int
        :math:`W`.

    Raises
    ------
    ValueError
        :math:`W` exceeds :data:`MAX_EXAMPLE_GRADIENTS`; the message names every count.
    """
    work = int(runs)
    for value in counts.values():
        work *= int(value)
    if work > MAX_EXAMPLE_GRADIENTS:
        named = " x ".join(f"{name}={int(value)}" for name, value in counts.items())
        times = "" if runs == 1 else f" x {runs} runs"
        raise ValueError(
            f"{named}{times} asks for {work:.3g} example gradients, more than the "
            f"{MAX_EXAMPLE_GRADIENTS:.0e} a run can finish (over a day on a GPU, weeks on a "
            "CPU): lower the counts"
        )
    return work


#: Bytes per minibatch index of a round: :func:`learning.engine.sample_batches` holds the
#: positions and the picks, and the engine the rows it trains on: three int64 arrays of
#: clients x steps x batch size.
_INDEX_BYTES = 24


def check_round_indices(clients: int, local_steps: int, batch_size: int) -> None:
    """Refuse a round whose minibatch indices do not fit in memory, before any work.

    :func:`learning.engine.sample_batches` draws every participant's minibatches of a round
    at once: :math:`24 K s b` bytes (three int64 arrays) for :math:`K` clients, :math:`s`
    local steps and batch size :math:`b` (:func:`econ.validation.fits_in_memory`).

    Raises
    ------
    ValueError
        They need more memory than the machine has; the message names the three counts.
    """
    fits_in_memory(
        f"clients={clients} x local_steps={local_steps} x batch_size={batch_size} "
        "(the minibatch indices of a round)",
        _INDEX_BYTES * int(clients) * int(local_steps) * int(batch_size),
    )


#: what :func:`run_rounds` does when the run diverges
ON_DIVERGENCE = ("raise", "stop")


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
    on_divergence: str = "raise",
) -> LoopResult:
    """Run ``rounds`` rounds of ``algorithm`` from the stacked initial ``models``.

    After every round the mean training loss of the round's clients, and at every
    evaluation each client's test loss, are held to :func:`divergence_limit` of the initial
    models' mean test loss: a loss above it, or not finite, ends the run at that round.

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
        when it exists. The round a run diverged at is not written.
    fingerprint : mapping, optional
        JSON-ready description of the run (configuration); a checkpoint of another
        fingerprint is refused.
    progress : bool
        Show a tqdm progress bar on stderr. Each evaluation is also a ``DEBUG`` record of the
        ``collabecon.learning.loop`` logger (:mod:`econ._log`), whatever ``progress``.
    observe : callable, optional
        Called as ``observe(done, state)`` at every evaluation, with the number of rounds done
        and the algorithm's state after them (before ``finish``); it must not change the state.
    on_divergence : {"raise", "stop"}
        When the run diverges: raise :class:`DivergedError`, or stop and return the result
        of the round it stopped at, with :attr:`LoopResult.diverged` saying why (``finish``
        is not applied to a diverged state).

    Raises
    ------
    DivergedError
        The run diverged and ``on_divergence`` is ``"raise"``.
    """
    rounds = positive_int("rounds", rounds)
    eval_every = positive_int("eval_every", eval_every)
    choice("on_divergence", on_divergence, ON_DIVERGENCE)
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
        _log.debug("%s: resuming at round %d from %s", algorithm.name, start, checkpoint.path)
    else:
        entropy = draw_entropy(np.random.default_rng(seed))
        state = algorithm.init(models, init_rng(entropy))
    lr = ctx.local.sgd.lr
    limit = divergence_limit(float(np.mean(ctx.engine.evaluate(models, ctx.test).loss)))

    everyone = np.arange(n_clients)
    diverged: Divergence | None = None
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
        what = f"the mean training loss of the round's {clients.size} clients"
        diverged = divergence(what, float(metrics["train_loss"]), done, lr, limit)
        if diverged is None and (done % eval_every == 0 or done == rounds):
            ev = ctx.engine.evaluate(algorithm.client_models(state), ctx.test)
            record = RoundRecord(
                done, metrics["train_loss"], float(ev.loss.mean()), _mean(ev.accuracy)
            )
            history.append(record)
            _log.debug(
                "%s round %d: train loss %.4g, test loss %.4g, test accuracy %s",
                algorithm.name,
                done,
                record.train_loss,
                record.test_loss,
                "none" if record.test_accuracy is None else f"{record.test_accuracy:.4f}",
            )
            diverged = clients_divergence("test", ev.loss, done, lr, limit)
            if diverged is None:
                if observe is not None:
                    observe(done, state)
                bar.set_postfix(
                    loss=f"{record.test_loss:.3f}", acc=f"{record.test_accuracy or 0:.3f}"
                )
        if diverged is not None:
            bar.close()
            if on_divergence == "raise":
                raise DivergedError(diverged)
            break
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
    if diverged is None:
        state = algorithm.finish(state, finish_rng(entropy))
    final_models = algorithm.client_models(state)
    evaluation = ctx.engine.evaluate(final_models, ctx.test)
    if diverged is None:
        diverged = clients_divergence("final test", evaluation.loss, rounds, lr, limit)
    if diverged is not None and on_divergence == "raise":
        raise DivergedError(diverged)
    return LoopResult(
        state=state,
        models=final_models,
        history=tuple(history),
        evaluation=evaluation,
        resumed_from=start,
        diverged=diverged,
    )
