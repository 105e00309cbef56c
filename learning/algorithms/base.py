"""The algorithm protocol of the round loop, and its registry.

An algorithm is built once per run from a :class:`Context` (engine, client data on the
device, local-training settings, ground-truth clusters) and its own keyword parameters,
then driven by :func:`learning.loop.run_rounds` through three
methods:

``init(models, rng) -> state``
    ``models`` are the initial parameters, stacked with one row per client (all equal).
``round(state, clients, rng) -> (state, metrics)``
    one communication round with the participating ``clients`` (sorted indices).
``client_models(state) -> Params``
    the model each client would deploy now, stacked with one row per client.

and optionally ``finish(state, rng) -> state`` after the last round. ``state`` is a plain
dict of tensors (or dicts of tensors), so the loop can checkpoint it with
``torch.save(weights_only)`` and move it between devices; each algorithm names its entries in
a ``TypedDict``, the type ``S`` it is generic over (:class:`Algorithm` ``[S]``).

:class:`FederatedAlgorithm` gives ``round`` Flower's shape (configure, fit, aggregate):
``configure`` says where each participating client starts, the engine runs everyone's local
SGD at once, ``aggregate`` folds the trained rows back into the state.

**Client and server halves.** A :class:`SplitAlgorithm` writes its round as the two halves a
federation runs on different machines (the ServerApp and ClientApp of Flower, Beutel et al.
2020):

``dispatch(state, clients, rng) -> Dispatch``
    server: what each participant receives (rows of stacked tensors, one per participant),
    what all receive (``common``), scalar settings (``config``), which participants work
    this round (``receivers``, all by default) and the server's own memo of the round
    (``plan``, never sent); its random draws (FedSoft's selection) come from ``rng``;
``client_update(ctx, sent, clients, rng) -> State``
    clients: each working participant's work on its *own* data in ``ctx``, replies stacked
    one row per participant;
``server_update(state, clients, replies, rng) -> (state, metrics)``
    server: the new state from the replies alone (``state`` carries the round's ``plan``
    entries; ``clients`` are all the round's participants).

In process :meth:`SplitAlgorithm.round` runs every participant's half at once on the
federation's :class:`Context` (the batched engine); :mod:`learning.runtimes.flower` runs the same
``client_update`` on a one-client context per Flower node and the same ``server_update`` on
the stacked replies. The server half reads from its context only the settings and the
training-set sizes :math:`n_k` (the ``num-examples`` a Flower client reports), never an
example. ``client_parameters`` names the constructor arguments the client half reads; a
node builds the algorithm from those alone.

A round may take several exchanges, and optional exchanges surround it (a survey before the
dispatch, a finish exchange after the last round): :mod:`learning.algorithms.exchanges` holds
them with the round's message (:class:`~learning.algorithms.exchanges.Dispatch`) and the seed
of a server draw that follows the clients' work
(:func:`~learning.algorithms.exchanges.plan_seed`).
``tests/learning/test_split_nodes.py`` runs every algorithm node by node, as Flower does.

State entries named in ``client_held`` (one row per client: Ditto's personal models and
buffers) belong to the clients: the round hands each participant its rows in ``sent.each``
and writes the rows of its reply back; ``dispatch`` and ``server_update`` never read them, so
on Flower they stay on the nodes.
"""

from __future__ import annotations

import importlib
import inspect
from abc import ABC, abstractmethod
from collections.abc import Mapping
from dataclasses import dataclass, replace
from typing import Any, ClassVar, Generic, cast

import numpy as np
import torch

from econ.plugins import PluginRegistry
from econ.validation import choice, positive_int
from learning.algorithms.exchanges import (
    Dispatch,
    FinishExchange,
    MultiExchange,
    S,
    State,
    Survey,
)
from learning.dp import DPSGDSettings, dp_local_sgd
from learning.engine import Engine, LocalResult, Params, ShardedData
from learning.optim import Optimizer, SGDConfig

__all__ = [
    "ALGORITHMS",
    "Algorithm",
    "Context",
    "FederatedAlgorithm",
    "LocalTraining",
    "SplitAlgorithm",
    "algorithm_parameters",
    "build_algorithm",
    "check_algorithm",
    "register",
]


@dataclass(frozen=True, slots=True)
class LocalTraining:
    """Local work of one client per round.

    ``steps`` SGD steps on minibatches of ``batch_size`` with the optimiser ``sgd``; with
    ``dp``, DP-SGD steps (:mod:`learning.dp`: per-example clipping and Gaussian noise, fresh
    fixed-size batches).
    """

    steps: int
    batch_size: int
    sgd: Optimizer
    dp: DPSGDSettings | None = None

    def __post_init__(self) -> None:
        """Check that ``steps`` and ``batch_size`` are positive integers.

        Raises
        ------
        ValueError
            If either is not a positive integer.
        """
        positive_int("steps", self.steps)
        positive_int("batch_size", self.batch_size)


@dataclass(frozen=True, slots=True)
class Context:
    """What an algorithm works with.

    Attributes
    ----------
    engine : Engine
        Runs local SGD and evaluation for stacked client models.
    train, test : ShardedData
        Every client's training and test data on the engine's device.
    local : LocalTraining
        Steps, batch size and optimiser of local training.
    clusters : ndarray of int64
        Ground-truth cluster of each client (used by ``oracle`` only).
    """

    engine: Engine
    train: ShardedData
    test: ShardedData
    local: LocalTraining
    clusters: np.ndarray

    @property
    def n_clients(self) -> int:
        """Number of clients in the federation (rows of the training data)."""
        return self.train.n_clients

    @property
    def device(self) -> torch.device:
        """The engine's device, where the data and the stacked models live."""
        return self.engine.device

    def train_sizes(self, clients: np.ndarray) -> torch.Tensor:
        """Training-set sizes of ``clients``: the FedAvg weights :math:`n_k`."""
        idx = torch.as_tensor(np.asarray(clients), dtype=torch.long, device=self.device)
        return self.train.sizes[idx]

    def cluster_count(self, n_clusters: int | None) -> int:
        """``n_clusters`` checked positive, by default the number of ground-truth clusters."""
        if n_clusters is not None:
            return positive_int("n_clusters", n_clusters)
        return int(np.unique(self.clusters).size)

    def fit(
        self,
        start: Params,
        clients: np.ndarray,
        rng: np.random.Generator,
        *,
        steps: int | None = None,
        **options: Any,
    ) -> LocalResult:
        """Local SGD of ``clients`` from ``start`` (one row each) on their training data.

        ``steps`` defaults to ``local.steps``, ``options`` go to
        :meth:`learning.engine.Engine.local_sgd` (``momentum``, ``prox_center``,
        ``prox_mu``); under DP-SGD only ``momentum`` applies.
        """
        common: dict[str, Any] = {
            "steps": self.local.steps if steps is None else steps,
            "batch_size": self.local.batch_size,
            "sgd": self.local.sgd,
            "rng": rng,
        }
        if self.local.dp is not None:
            extra = sorted(set(options) - {"momentum"})
            if extra:
                raise ValueError(f"DP-SGD local training takes no {', '.join(extra)}")
            if not isinstance(self.local.sgd, SGDConfig):
                raise ValueError("DP-SGD local training runs SGD, not Adadelta")
            return dp_local_sgd(
                self.engine,
                start,
                self.train,
                clients,
                dp=self.local.dp,
                momentum=options.get("momentum"),
                **common,
            )
        return self.engine.local_sgd(start, self.train, clients, **common, **options)


class Algorithm(ABC, Generic[S]):
    """A federated (or local) training algorithm with state of type ``S``.

    See the module docstring for the protocol.
    """

    #: Registry name.
    name: ClassVar[str]

    def __init__(self, ctx: Context) -> None:
        self.ctx = ctx

    @abstractmethod
    def init(self, models: Params, rng: np.random.Generator) -> S:
        """Initial state from one row of ``models`` per client."""

    @abstractmethod
    def round(
        self, state: S, clients: np.ndarray, rng: np.random.Generator
    ) -> tuple[S, dict[str, float]]:
        """One round with the participating ``clients``; returns new state and metrics."""

    @abstractmethod
    def client_models(self, state: S) -> Params:
        """The model of every client, stacked (one row per client)."""

    def finish(self, state: S, rng: np.random.Generator) -> S:
        """Work after the last round (e.g. local fine-tuning); nothing by default."""
        return state


class SplitAlgorithm(Algorithm[S]):
    """An algorithm whose round is split into a server half and a client half.

    ``round`` runs ``dispatch`` (server) -> ``client_update`` (every participant on its own
    data) -> ``server_update`` (server); see the module docstring.
    """

    #: Constructor arguments that the client half reads (the rest are the server's).
    client_parameters: ClassVar[tuple[str, ...]] = ()
    #: The client-held entry that is each client's deployed model (None: ``client_models``
    #: reads the server's state).
    client_model: ClassVar[str | None] = None

    @property
    def client_held(self) -> tuple[str, ...]:
        """State entries (one row per client) that live on the clients; none by default."""
        return ()

    def client_arguments(self) -> dict[str, Any]:
        """The constructor arguments a node builds the algorithm with."""
        return {p: getattr(self, p) for p in self.client_parameters}

    @abstractmethod
    def dispatch(self, state: S, clients: np.ndarray, rng: np.random.Generator) -> Dispatch:
        """What the server sends the participating ``clients`` (sorted indices)."""

    @abstractmethod
    def client_update(
        self, ctx: Context, sent: Dispatch, clients: np.ndarray, rng: np.random.Generator
    ) -> State:
        """The participants' work, with replies stacked one row per participant.

        ``clients`` index ``ctx``'s data, row ``i`` of ``sent.each`` is for ``clients[i]``.

        Its only random draws are minibatch keys (:func:`learning.engine.sample_batches`
        on ``ctx.train``), so that a node reproduces its row of the batched draw
        (:class:`learning.runtimes.flower.streams.RowStream`).
        """

    @abstractmethod
    def server_update(
        self, state: S, clients: np.ndarray, replies: State, rng: np.random.Generator
    ) -> tuple[S, dict[str, float]]:
        """The new state and the round's metrics from the participants' ``replies``."""

    def round(
        self, state: S, clients: np.ndarray, rng: np.random.Generator
    ) -> tuple[S, dict[str, float]]:
        """Run the round's exchanges in process, every participant's half at once.

        An optional survey (:class:`~learning.algorithms.exchanges.Survey`) comes first; then
        ``dispatch``, the working participants' ``client_update`` on the federation's context
        (each with its client-held rows), and, for a
        :class:`~learning.algorithms.exchanges.MultiExchange`, further dispatches until the
        server sends none; finally ``server_update`` on the last replies. The client-held
        rows of the replies are written back into the state.
        """
        clients = np.asarray(clients, dtype=np.int64)
        if isinstance(self, Survey):
            asked = self.survey(state, clients)
            if asked is not None:
                answers = self.client_survey(self.ctx, asked, clients)
                state = self.server_survey(state, clients, answers)
        sent: Dispatch | None = self.dispatch(state, clients, rng)
        held = {k: state[k] for k in self.client_held}
        while sent is not None:
            working = sent.working(clients)
            if held:
                idx = torch.as_tensor(working, dtype=torch.long, device=self.ctx.device)
                mine = {k: _rows(v, idx) for k, v in held.items()}
                sent = replace(sent, each={**sent.each, **mine})
            replies = self.client_update(self.ctx, sent, working, rng)
            kept = {k: replies.pop(k) for k in held}
            if held:
                held = {k: _write_rows(v, idx, kept[k]) for k, v in held.items()}
            current = cast(S, {**state, **sent.plan})
            sent = (
                self.next_dispatch(current, clients, replies)
                if isinstance(self, MultiExchange)
                else None
            )
        new, metrics = self.server_update(current, clients, replies, rng)
        return cast(S, {**new, **held}) if held else new, metrics

    def finish(self, state: S, rng: np.random.Generator) -> S:
        """Run the finish exchange (:class:`FinishExchange`) with every client at once.

        Each client gets its client-held rows; without a finish exchange the state is returned
        as it is.
        """
        if not isinstance(self, FinishExchange):
            return state
        sent = self.final_dispatch(state)
        if sent is None:
            return state
        held = self.client_held
        sent = replace(sent, each={**sent.each, **{k: state[k] for k in held}})
        everyone = np.arange(self.ctx.n_clients)
        replies = self.client_finish(self.ctx, sent, everyone, rng)
        kept = {k: replies.pop(k) for k in held}
        return cast(S, {**self.server_finish(state, replies), **kept})


def _rows(value: Any, idx: torch.Tensor) -> Any:
    if isinstance(value, dict):
        return {k: v.index_select(0, idx) for k, v in value.items()}
    return value.index_select(0, idx)


def _write_rows(value: Any, idx: torch.Tensor, rows: Any) -> Any:
    if isinstance(value, dict):
        return {k: _write_rows(v, idx, rows[k]) for k, v in value.items()}
    out = value.clone()
    out[idx] = rows
    return out


class FederatedAlgorithm(SplitAlgorithm[S]):
    """``round`` as configure -> every client's local SGD at once -> aggregate.

    The client half is local SGD from the configured start with the :meth:`fit_options`
    (stacked options go to each participant, scalar ones to all); its reply is the trained
    ``params``, the ``momentum`` buffers (with momentum SGD) and the mean training ``loss``.
    """

    @abstractmethod
    def configure(self, state: S, clients: np.ndarray) -> Params:
        """Start point of each participating client (one row per entry of ``clients``)."""

    @abstractmethod
    def aggregate(self, state: S, clients: np.ndarray, trained: LocalResult) -> S:
        """Fold the clients' trained models back into the state."""

    def fit_options(self, state: S, clients: np.ndarray) -> dict[str, Any]:
        """Extra options of local SGD (``prox_center``, ``prox_mu``); none by default."""
        return {}

    def dispatch(self, state: S, clients: np.ndarray, rng: np.random.Generator) -> Dispatch:
        """Send each participant its start point (:meth:`configure`) and the fit options.

        Stacked options of :meth:`fit_options` (dicts of tensors, one row per participant) go
        into ``each``, scalar ones into ``config``.
        """
        each: State = {"start": self.configure(state, clients)}
        config: dict[str, Any] = {}
        for key, value in self.fit_options(state, clients).items():
            if isinstance(value, dict):
                each[key] = value
            else:
                config[key] = value
        return Dispatch(each=each, common={}, config=config)

    def client_update(
        self, ctx: Context, sent: Dispatch, clients: np.ndarray, rng: np.random.Generator
    ) -> State:
        """Local SGD of each participant from its start with the sent options.

        Returns
        -------
        State
            The trained ``params``, the mean training ``loss`` of each participant and, with
            momentum SGD, the ``momentum`` buffers.
        """
        options = {k: v for k, v in sent.each.items() if k != "start"}
        trained = ctx.fit(sent.each["start"], clients, rng, **options, **sent.config)
        replies: State = {"params": trained.params, "loss": torch.from_numpy(trained.loss)}
        if trained.momentum is not None:
            replies["momentum"] = trained.momentum
        return replies

    def server_update(
        self, state: S, clients: np.ndarray, replies: State, rng: np.random.Generator
    ) -> tuple[S, dict[str, float]]:
        """Fold the trained models into the state with :meth:`aggregate`.

        The round's metric ``train_loss`` is the mean of the participants' training losses.
        """
        loss = replies["loss"].cpu().numpy()
        trained = LocalResult(replies["params"], replies.get("momentum"), loss)
        return self.aggregate(state, clients, trained), {"train_loss": float(loss.mean())}


def _plugin_algorithm(name: str, loaded: object) -> type[Algorithm[Any]]:
    """The algorithm class of the entry point ``name`` of ``collabecon.algorithms``.

    Raises
    ------
    TypeError
        If ``loaded`` is not a concrete subclass of :class:`Algorithm`.
    ValueError
        If its ``name`` is not the entry point's.
    """
    if not (isinstance(loaded, type) and issubclass(loaded, Algorithm)):
        raise TypeError(f"{loaded!r} is not a subclass of learning.algorithms.Algorithm")
    if inspect.isabstract(loaded):
        missing = ", ".join(sorted(loaded.__abstractmethods__))
        raise TypeError(f"{loaded.__qualname__} does not define {missing}")
    own = getattr(loaded, "name", None)
    if own != name:
        raise ValueError(f"{loaded.__qualname__}.name is {own!r}, not the entry point's name")
    return loaded


def _import_builtins() -> object:
    """Import :mod:`learning.algorithms`, whose modules register the built-in algorithms."""
    return importlib.import_module("learning.algorithms")


#: Registry: algorithm name -> class. The built-ins are added by :func:`register`; the
#: classes that installed distributions declare in the entry-point group
#: ``collabecon.algorithms`` join them when the registry is first consulted
#: (:class:`econ.plugins.PluginRegistry`).
ALGORITHMS: PluginRegistry[type[Algorithm[Any]]] = PluginRegistry(
    "collabecon.algorithms", "algorithm", _plugin_algorithm, before_plugins=_import_builtins
)


def register(cls: type[Algorithm[Any]]) -> type[Algorithm[Any]]:
    """Class decorator: add the built-in ``cls`` to :data:`ALGORITHMS` under ``cls.name``.

    A plugin's algorithm is registered by its entry point instead (``docs/plugins.md``).
    """
    ALGORITHMS.add(cls.name, cls)
    return cls


def algorithm_parameters(name: str) -> tuple[str, ...]:
    """Keyword parameters the algorithm ``name`` takes besides the context."""
    signature = inspect.signature(ALGORITHMS[name].__init__)
    return tuple(p for p in signature.parameters if p not in ("self", "ctx"))


def check_algorithm(name: str, params: Mapping[str, Any]) -> None:
    """Raise ``ValueError`` for an unknown algorithm or unknown parameters of it."""
    choice("algorithm", name, tuple(ALGORITHMS))
    allowed = algorithm_parameters(name)
    unknown = sorted(set(params) - set(allowed))
    if unknown:
        raise ValueError(
            f"algorithm {name!r} takes {', '.join(allowed) or 'no parameters'}; "
            f"got unknown {', '.join(unknown)}"
        )


def build_algorithm(name: str, ctx: Context, **params: Any) -> Algorithm[Any]:
    """The algorithm registered as ``name``, built on ``ctx`` with its ``params``."""
    check_algorithm(name, params)
    return ALGORITHMS[name](ctx, **params)
