"""One training run from names: dataset, partition, model, algorithm.

:class:`TrainConfig` holds every choice of a run (the flags of ``collabecon train`` and the
fields of a sweep grid); :func:`train` validates it before any work, builds the federation,
the model, the engine and the algorithm, and runs the round loop. The command line and the
sweeps both call it.
"""

from __future__ import annotations

import dataclasses
import os
import time
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np
import torch

from econ.outputs import frame, plain
from econ.privacy.accountants import ACCOUNTANTS
from econ.qualities import ModelQualities
from econ.validation import choice, fits_in_memory, in_interval, positive, positive_int
from learning.algorithms import Algorithm, LocalTraining, State, build_algorithm
from learning.algorithms.base import check_algorithm
from learning.build import ENGINES, Built, build
from learning.data import DATASETS
from learning.dp import SAMPLINGS, DPSGDSettings
from learning.engine import Engine, Evaluation, Params
from learning.federation import Federation
from learning.loop import (
    ON_DIVERGENCE,
    Checkpointing,
    Divergence,
    RoundRecord,
    check_round_indices,
    check_run_length,
    run_rounds,
)
from learning.models import MODELS
from learning.optim import SGDConfig, float32_step
from learning.partition import PARTITIONS
from learning.qualities import model_qualities

__all__ = [
    "DP_ALGORITHMS",
    "Prepared",
    "TrainConfig",
    "TrainResult",
    "dp_accounting",
    "dp_epsilon",
    "prepare",
    "train",
]

#: Algorithms whose only use of a client's training examples is its local training, so that
#: DP-SGD's guarantee covers the whole run.
DP_ALGORITHMS = ("local", "fedavg")


@dataclass(frozen=True, slots=True, kw_only=True)
class TrainConfig:
    """Every choice of one training run; checked on construction.

    The defaults train FedAvg with LeNet-5 on 10 iid clients of ``mnist5k`` (SGD with
    learning rate 0.05 and momentum 0.9, 10 rounds of 10 local steps on minibatches of 32).

    ``dp_noise_multiplier`` turns local training into DP-SGD (:mod:`learning.dp`) with
    clipping norm ``dp_max_grad_norm``, for the algorithms whose only use of a client's
    training data is local training (:data:`DP_ALGORITHMS`), every client in every round;
    :attr:`TrainResult.epsilon` is then each client's (ε, ``dp_delta``) guarantee with
    respect to its own training examples. ``dp_sampling`` draws the minibatches
    (``"fixed"``: ``batch_size`` distinct examples; ``"poisson"``: each example with
    probability ``batch_size`` / :math:`n_k`) and ``dp_accountant`` (``"rdp"``, or ``"pld"``
    with Poisson sampling) accounts for them (:attr:`TrainResult.accounting`).
    """

    algorithm: str = "fedavg"
    dataset: str = "mnist5k"
    partition: str = "iid"
    model: str = "lenet5"
    clients: int = 10
    rounds: int = 10
    local_steps: int = 10
    lr: float = 0.05
    momentum: float = 0.9
    weight_decay: float = 0.0
    batch_size: int = 32
    clients_per_round: int | None = None
    test_fraction: float = 0.2
    target_fraction: float = 0.0
    eval_every: int = 1
    engine: str = "batched"
    seed: int = 0
    partition_params: Mapping[str, Any] = field(default_factory=dict)
    algorithm_params: Mapping[str, Any] = field(default_factory=dict)
    dataset_params: Mapping[str, Any] = field(default_factory=dict)
    dp_noise_multiplier: float | None = None
    dp_max_grad_norm: float = 1.0
    dp_delta: float = 1e-5
    dp_sampling: str = "fixed"
    dp_accountant: str = "rdp"

    def __post_init__(self) -> None:
        """Check every choice and range of the configuration, and that the options go together.

        Raises
        ------
        ValueError
            An unknown algorithm, dataset, partition, model or engine, a parameter the
            algorithm does not take, a count that is not positive, an optimiser setting,
            ``dp_max_grad_norm`` or ``dp_delta`` out of range, fractions that leave no training
            data, a seed that is not an integer >= 0, a run longer than
            :func:`learning.loop.check_run_length` admits or whose minibatch indices do not
            fit in memory, DP-SGD with an algorithm or client sampling that its
            accounting does not cover, an unknown ``dp_sampling`` or ``dp_accountant``, or
            the PLD accountant with fixed-size batches (it accounts for Poisson sampling
            only).
        """
        check_algorithm(self.algorithm, self.algorithm_params)
        choice("dataset", self.dataset, tuple(DATASETS))
        choice("partition", self.partition, tuple(PARTITIONS))
        choice("model", self.model, tuple(MODELS))
        choice("engine", self.engine, tuple(ENGINES))
        for name in ("clients", "rounds", "local_steps", "batch_size", "eval_every"):
            positive_int(name, getattr(self, name))
        if self.eval_every > self.rounds:
            raise ValueError(
                f"eval_every={self.eval_every} exceeds rounds={self.rounds}: the run is evaluated "
                "after its last round whatever eval_every is above it"
            )
        if self.clients_per_round is not None:
            positive_int("clients_per_round", self.clients_per_round)
            if self.clients_per_round > self.clients:
                raise ValueError(
                    f"clients_per_round must be at most clients ({self.clients}), "
                    f"got {self.clients_per_round}"
                )
        SGDConfig(self.lr, self.momentum, self.weight_decay)
        for name in ("lr", "momentum", "weight_decay"):
            float32_step(name, getattr(self, name))
        in_interval("test_fraction", self.test_fraction, 0.0, 1.0, low_open=True, high_open=True)
        in_interval("target_fraction", self.target_fraction, 0.0, 1.0, high_open=True)
        if self.test_fraction + self.target_fraction >= 1.0:
            raise ValueError(
                "test_fraction + target_fraction must be < 1 (some data must stay for "
                f"training), got {self.test_fraction} + {self.target_fraction}"
            )
        if isinstance(self.seed, bool) or not isinstance(self.seed, (int, np.integer)):
            raise ValueError(f"seed must be an integer, got {self.seed!r}")
        if self.seed < 0:
            raise ValueError(f"seed must be an integer >= 0, got {self.seed}")
        positive("dp_max_grad_norm", self.dp_max_grad_norm)
        in_interval("dp_delta", self.dp_delta, 0.0, 1.0, low_open=True, high_open=True)
        choice("dp_sampling", self.dp_sampling, SAMPLINGS)
        choice("dp_accountant", self.dp_accountant, ACCOUNTANTS)
        if self.dp_accountant == "pld" and self.dp_sampling != "poisson":
            raise ValueError(
                f"dp_accountant pld accounts for Poisson sampling only, not dp_sampling "
                f"{self.dp_sampling}: give dp_sampling poisson, or dp_accountant rdp"
            )
        participants = self.clients if self.clients_per_round is None else self.clients_per_round
        check_run_length(
            {
                "rounds": self.rounds,
                "clients": participants,
                "local_steps": self.local_steps,
                "batch_size": self.batch_size,
            }
        )
        check_round_indices(participants, self.local_steps, self.batch_size)
        if self.dp is not None:
            if self.algorithm not in DP_ALGORITHMS:
                raise ValueError(
                    f"DP-SGD training is accounted for algorithms {', '.join(DP_ALGORITHMS)}; "
                    f"{self.algorithm!r} reads the clients' data outside local training"
                )
            if self.clients_per_round is not None:
                raise ValueError("DP-SGD accounting needs every client in every round")

    @property
    def dp(self) -> DPSGDSettings | None:
        """The DP-SGD settings of local training, or None."""
        if self.dp_noise_multiplier is None:
            return None
        return DPSGDSettings(self.dp_max_grad_norm, self.dp_noise_multiplier, self.dp_sampling)

    def to_dict(self) -> dict[str, Any]:
        """JSON-ready copy (the mappings as plain dicts)."""
        return plain({f.name: getattr(self, f.name) for f in dataclasses.fields(self)})

    def fingerprint(self, device: torch.device) -> dict[str, Any]:
        """What a checkpoint must agree on to be resumed.

        Everything but the number of rounds, the evaluation schedule and the privacy
        accountant (which reads the run, never changes it), plus the device; ``dp_sampling``
        only where it is not the default ``"fixed"``, so that checkpoints written before it
        existed still resume.
        """
        keep = self.to_dict()
        for key in ("rounds", "eval_every", "dp_accountant"):
            keep.pop(key)
        if keep["dp_sampling"] == "fixed":
            keep.pop("dp_sampling")
        return {**keep, "device": str(device)}


#: Bytes per input value of a minibatch tensor (float32).
_VALUE_BYTES = 4


def dp_epsilon(config: TrainConfig, sizes: Sequence[int]) -> np.ndarray | None:
    """Each client's ε at ``config.dp_delta`` under the DP-SGD of ``config`` (None without it).

    The ε of a client follows from its training-set size in ``sizes``.

    Client :math:`k` takes ``rounds * local_steps`` (plus fine-tuning) noisy steps, each on
    a minibatch of its :math:`n_k` examples at sampling rate :math:`q_k = b / n_k`, drawn as
    ``config.dp_sampling`` says: the subsampled Gaussian mechanism, accounted by
    ``config.dp_accountant`` (Mironov 2017; :mod:`econ.privacy.accountants`) under the
    adjacency of :func:`dp_accounting`. What the server does with the clients' updates is
    post-processing.
    """
    dp = config.dp
    if dp is None:
        return None
    from econ.privacy.accountants import accountant_epsilon

    steps = config.rounds * config.local_steps
    steps += int(config.algorithm_params.get("finetune_steps", 0))
    distinct, where = np.unique(np.asarray(sizes, dtype=np.int64), return_inverse=True)
    fixed = config.dp_sampling == "fixed"
    each = [
        accountant_epsilon(
            dp.noise_multiplier,
            config.dp_delta,
            1.0,
            compositions=steps,
            accountant=config.dp_accountant,
            sampling_rate=config.batch_size / int(n),
            sampling=config.dp_sampling,
            dataset_size=int(n) if fixed else None,
        )
        for n in distinct
    ]
    return np.asarray(each, dtype=float)[where]


def dp_accounting(config: TrainConfig, sizes: Sequence[int]) -> dict[str, str] | None:
    r"""What :func:`dp_epsilon` accounts for: accountant, sampling, adjacency (None without DP).

    The adjacency is that of the smallest sampling rate (:math:`b / \max_k n_k`); it is
    ``"add-remove"`` under Poisson sampling and ``"replace-one"`` for fixed-size batches
    below a client's data (:func:`econ.privacy.accountants.adjacency`).
    """
    if config.dp is None:
        return None
    from econ.privacy.accountants import accounting

    rate = config.batch_size / max(int(n) for n in sizes)
    return accounting(config.dp_accountant, config.dp_sampling, rate)


@dataclass(frozen=True, slots=True)
class TrainResult:
    """Outcome of :func:`train`.

    ``accuracy`` and ``loss`` are per client, on the client's own test set (accuracy is
    None for regression); ``target`` evaluates every client's model on the federation's
    common target set when it has one. ``diverged`` says where training diverged when
    :func:`train` stopped it early (``on_divergence="stop"``): the models and numbers are
    then those of the round it stopped at. ``models`` are the final client models (stacked,
    on the device), ``state`` the algorithm's final state (IFCA's cluster models and
    assignments, CoBo's collaboration weights, ...: the algorithm's own dict), and
    ``federation`` the data they were trained on. :meth:`qualities` turns the run into the
    parties of a market in one call.
    """

    config: TrainConfig
    federation: Federation
    device: str
    accuracy: np.ndarray | None
    loss: np.ndarray
    target: Evaluation | None
    history: tuple[RoundRecord, ...]
    models: Params
    state: State
    engine: Engine
    seconds: float
    resumed_from: int
    diverged: Divergence | None = None

    @property
    def mean_accuracy(self) -> float | None:
        """The mean of the clients' final test accuracies (None for regression)."""
        return None if self.accuracy is None else float(self.accuracy.mean())

    @property
    def epsilon(self) -> np.ndarray | None:
        """Each client's ε at ``config.dp_delta`` under DP-SGD (None without it).

        :func:`dp_epsilon` of its training-set size.
        """
        return dp_epsilon(self.config, [c.n_train for c in self.federation.clients])

    @property
    def accounting(self) -> dict[str, str] | None:
        """The accountant, sampling and adjacency behind :attr:`epsilon` (None without DP-SGD).

        :func:`dp_accounting` of the training-set sizes.
        """
        return dp_accounting(self.config, [c.n_train for c in self.federation.clients])

    def to_dict(self) -> dict[str, Any]:
        """JSON-ready summary of the run.

        The configuration, per-client test accuracy and loss (and on the target set), ε under
        DP-SGD and its ``accounting`` (:attr:`accounting`), the history by round, the
        seconds, the device, and where training diverged (None when it did not). The models,
        the algorithm's state and the data stay out.
        """
        target = self.target
        return plain(
            {
                "config": self.config.to_dict(),
                "device": self.device,
                "accuracy": self.accuracy,
                "loss": self.loss,
                "mean_accuracy": self.mean_accuracy,
                "target_accuracy": None if target is None else target.accuracy,
                "target_loss": None if target is None else target.loss,
                "epsilon": self.epsilon,
                "accounting": self.accounting,
                "history": [dataclasses.asdict(r) for r in self.history],
                "seconds": self.seconds,
                "resumed_from": self.resumed_from,
                "diverged": None if self.diverged is None else self.diverged.to_dict(),
            }
        )

    def to_frame(self) -> Any:
        """The history as a pandas DataFrame indexed by round (needs pandas).

        The columns are the mean training loss of the participants and the mean test loss and
        accuracy.
        """
        rows = [dataclasses.asdict(r) for r in self.history]
        columns = ("round", "train_loss", "test_loss", "test_accuracy")
        return frame(rows or {c: [] for c in columns}, "TrainResult").set_index("round")

    def qualities(
        self,
        target: tuple[np.ndarray, np.ndarray] | None = None,
        *,
        metric: str = "accuracy",
    ) -> ModelQualities:
        """Every client's final model as a party of a market: its quality on ``target``.

        Parameters
        ----------
        target : (x, y), optional
            The common target set the consumers care about; by default the federation's
            (train with ``target_fraction > 0``).
        metric : {"accuracy", "1-loss"}
            See :mod:`learning.qualities`.

        Examples
        --------
        ``econ.market.market_round(result.qualities())`` is the market the run creates.
        """
        if target is None:
            if self.federation.target is None:
                raise ValueError(
                    "this run's federation has no common target set: pass target=(x, y), "
                    "or train with target_fraction > 0"
                )
            target = self.federation.target
        return model_qualities(
            self.engine,
            self.models,
            target,
            n_classes=self.federation.n_classes,
            names=[f"client{k}" for k in range(self.config.clients)],
            metric=metric,
        )


def _check_minibatches(config: TrainConfig, federation: Federation) -> None:
    """Refuse minibatches the data cannot give, or that do not fit in memory.

    A client with fewer training examples than ``batch_size`` repeats some in each
    minibatch (:func:`learning.engine.sample_batches`); a minibatch above every client's
    training set makes every step a full-batch step at a multiple of its cost, and is
    refused. Under DP-SGD each minibatch is drawn without replacement from a client's
    training set, or each example at rate ``batch_size / n_k`` (Poisson; its accounting,
    :func:`dp_epsilon`, needs that rate at most 1), so it must fit in every client's. The PLD accountant's grid
    must be one it can hold (:class:`econ.privacy.accountants.GridTooLarge`). The inputs of
    one local step of every participant must fit in memory.
    """
    sizes = [c.n_train for c in federation.clients]
    if config.batch_size > max(sizes):
        raise ValueError(
            f"batch_size={config.batch_size} exceeds every client's training set (the "
            f"largest holds {max(sizes)} examples): each minibatch would repeat its examples"
        )
    if config.dp is not None and config.batch_size > min(sizes):
        k = int(np.argmin(sizes))
        how = {
            "fixed": "draws each minibatch without replacement from a client's data",
            "poisson": "samples a client's examples at rate batch_size / n, at most 1",
        }[config.dp_sampling]
        raise ValueError(
            f"batch_size={config.batch_size} exceeds the {sizes[k]} training examples of "
            f"client {k}: DP-SGD {how}"
        )
    if config.dp is not None and config.dp_accountant == "pld":
        dp_epsilon(config, sizes)  # a grid the PLD accountant cannot hold is refused now
    participants = config.clients if config.clients_per_round is None else config.clients_per_round
    values = int(np.prod(federation.clients[0].x_train.shape[1:]))
    fits_in_memory(
        f"clients={participants} x batch_size={config.batch_size} x {values} input values "
        "(the inputs of one local step)",
        _VALUE_BYTES * participants * config.batch_size * values,
    )


@dataclass(frozen=True, slots=True)
class Prepared:
    """A run of :func:`train` ready for its first round.

    ``built`` holds the federation, the engine and the initial model, ``algorithm`` the
    algorithm built on them, ``initial`` the initial parameters of every client and
    ``loop_rng`` the round loop's stream (the third of the three streams spawned from
    ``config.seed``).
    """

    built: Built
    algorithm: Algorithm[Any]
    initial: Params
    loop_rng: np.random.Generator


def prepare(
    config: TrainConfig,
    *,
    device: str | torch.device | None = None,
    data_dir: str | os.PathLike[str] | None = None,
) -> Prepared:
    """Everything :func:`train` does before its first round: data, federation, model, algorithm.

    A sweep calls it for every run of its grid before the first one trains, so that a run
    it would refuse is refused before any work.

    Raises
    ------
    ValueError
        Unknown names, a bad partition or algorithm parameter, more clients than examples,
        a client left without training or test data, an unusable device, unreadable data.
    learning.data_files.MissingDataError
        A file-based dataset's files are not on disk.
    """
    rng = np.random.default_rng(config.seed)
    data_rng, model_rng, loop_rng = rng.spawn(3)
    built = build(
        config.dataset, config.partition, config.clients, model=config.model,
        data_rng=data_rng, model_rng=model_rng, engine=config.engine, device=device,
        data_dir=data_dir, require_data=True,
        federation_params={
            "test_fraction": config.test_fraction,
            "target_fraction": config.target_fraction,
            "dataset_params": dict(config.dataset_params) or None,
            **config.partition_params,
        },
    )  # fmt: skip
    _check_minibatches(config, built.federation)
    ctx = built.context(
        LocalTraining(
            config.local_steps,
            config.batch_size,
            SGDConfig(config.lr, config.momentum, config.weight_decay),
            dp=config.dp,
        )
    )
    algorithm = build_algorithm(config.algorithm, ctx, **config.algorithm_params)
    return Prepared(built, algorithm, built.start(), loop_rng)


def train(
    config: TrainConfig,
    *,
    device: str | torch.device | None = None,
    data_dir: str | os.PathLike[str] | None = None,
    checkpoint_dir: str | os.PathLike[str] | None = None,
    checkpoint_every: int = 1,
    resume: bool = False,
    progress: bool = False,
    on_divergence: str = "raise",
) -> TrainResult:
    """Train the run described by ``config`` and evaluate every client's final model.

    Everything random derives from ``config.seed``: the federation, the initial model, and
    the loop's streams. The same seed on the same device gives the same numbers, and a run
    resumed from ``checkpoint_dir`` ends where the uninterrupted run ends.

    A run whose loss diverges (:func:`learning.loop.divergence_limit`) stops at that round:
    ``on_divergence="raise"`` raises :class:`learning.loop.DivergedError`, ``"stop"``
    returns the result of that round with :attr:`TrainResult.diverged` saying where.

    Raises
    ------
    ValueError
        Before training: unknown names, a bad value in ``config``, more clients than
        examples, a client left without training or test data, a minibatch larger than
        every client's training set (under DP-SGD, than any), minibatches that do not fit in
        memory, an unusable device, or a checkpoint of another configuration.
    DivergedError
        Training diverged and ``on_divergence`` is ``"raise"`` (a ``ValueError`` too).
    """
    choice("on_divergence", on_divergence, ON_DIVERGENCE)
    if resume and checkpoint_dir is None:
        raise ValueError("resume needs a checkpoint directory")
    if isinstance(checkpoint_every, bool) or checkpoint_every < 1:
        raise ValueError(f"checkpoint_every must be an integer >= 1, got {checkpoint_every}")
    prepared = prepare(config, device=device, data_dir=data_dir)
    built = prepared.built
    federation, engine, dev = built.federation, built.engine, built.device
    checkpoint = (
        None
        if checkpoint_dir is None
        else Checkpointing(Path(checkpoint_dir), every=checkpoint_every, resume=resume)
    )
    started = time.perf_counter()
    outcome = run_rounds(
        prepared.algorithm,
        prepared.initial,
        config.rounds,
        prepared.loop_rng,
        clients_per_round=config.clients_per_round,
        eval_every=config.eval_every,
        checkpoint=checkpoint,
        fingerprint=config.fingerprint(dev),
        progress=progress,
        on_divergence=on_divergence,
    )
    target = (
        None
        if federation.target is None
        else engine.evaluate_on(outcome.models, *federation.target)
    )
    return TrainResult(
        config=config,
        federation=federation,
        device=str(dev),
        accuracy=outcome.evaluation.accuracy,
        loss=outcome.evaluation.loss,
        target=target,
        history=outcome.history,
        models=outcome.models,
        state=outcome.state,
        engine=engine,
        seconds=time.perf_counter() - started,
        resumed_from=outcome.resumed_from,
        diverged=outcome.diverged,
    )
