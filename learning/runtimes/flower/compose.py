r"""The defection-free mediator around any Flower strategy and ClientApp (Werner 2024, ch. 3).

Two building blocks for a Flower App of one's own, with flwr's Message API:

:func:`quality_mod`
    A ClientApp mod. It measures the quality :math:`q(x) \in [0, 1]` of the node's model on
    the target set (a function the App supplies, e.g. accuracy) and adds it, with the number
    of target examples, to the metrics of every ``train`` and ``evaluate`` reply
    (:data:`QUALITY`, :data:`QUALITY_EXAMPLES`). A quality probe of the mediator (an
    ``evaluate`` message whose config sets :data:`PROBE`) is answered by the mod alone: the
    quality of the model sent, without calling the App's handler.
:class:`DefectionFreeStrategy`
    A :class:`flwr.serverapp.strategy.Strategy` around an inner strategy (FedAvg, FedProx, a
    strategy of one's own) that plays Algorithm 5, "Defection-Free Collaborative Learning"
    (§3.4, p. 64), between two firms, one a node, with the server as the mediator.

A run of :class:`DefectionFreeStrategy`:

1. Disagreement point (before round 1). Each firm trains the initial model on its own data
   (one ``train`` message each, the App's own training); the qualities its replies carry
   name the firms: the lower one is the low firm :math:`l`, the other the high firm
   :math:`h`, with models :math:`x_{l,0}, x_{h,0}` (the thesis assumes both firms have
   saturated training on their own data, §3.4). The rule is
   :class:`games.defection_free.DefectionFree` from :math:`(q_{l,0}, q_{h,0})`.
2. High move (steps 2-4). The inner strategy's ``configure_train`` and ``aggregate_train``
   run one round of its training from :math:`x_{h,t-1}`, on both firms' data: its aggregate
   is the high firm's step on the joint objective (eq. 3.1). The mediator probes its
   quality on the high firm's node; a step that lowers it is undone (assumption 4 of §3.3).
3. Low move (steps 5-11). The cap :math:`\min(\hat q_{l,t}, \rho^* q_{h,t}, q_l^*)` of
   :meth:`~games.defection_free.DefectionFree.low_move`; the low firm moves from
   :math:`x_{l,t-1}` towards the high firm's model, :math:`x_l + \alpha (x_h - x_l)`, with
   the guarded loop of :func:`games.defection_free.raise_to_cap` (``inner="gd"``: the step
   :math:`\alpha` starts at 1 and is halved while the quality, probed on the low firm's
   node, would pass the cap or fall), so :math:`q_{l,t} \in [q_{l,t-1}, \text{cap}]`.
4. Delivery. Each firm's ``evaluate`` messages (the inner strategy's ``configure_evaluate``)
   carry the firm's own model, :math:`x_{l,t}` or :math:`x_{h,t}`; the arrays the Flower
   loop carries from round to round are :math:`x_{h,t}`.

Steps 2-3 are :func:`games.defection_free.play` for one round on the firms the mediator
holds, so the rule, the undo and the cap are those of the in-process drivers; the round's
qualities, revenues (:func:`games.defection_free.market_path`) and cap are added to the
round's training metrics and kept (:meth:`DefectionFreeStrategy.play_record`,
:meth:`DefectionFreeStrategy.market_report`: the audit of Proposition 3).

Where it differs from Algorithm 5: the low firm's update is a step towards the high firm's
new model instead of gradient steps of the joint objective from :math:`x_{l,t-1}` (the
inner strategy trains one model a round; the revenue guarantee of Proposition 3 rests on
the qualities only); the high firm's pace (``schedule="paced"``, Proposition 5) needs its
step size, which an inner strategy does not expose, and is refused; the qualities are
measured by the nodes, so every node's target set must be the same (the market's, §3.2).
As the thesis's note to Algorithm 5 assumes, the firms are trusted: both see the high
firm's model while they train, and each deploys only the model delivered to it.

References
----------
Werner (2024), ch. 3, §3.4 (p. 64), Algorithm 5 and Proposition 3; §3.3, assumption 4.
Beutel et al. (2020), *Flower: A Friendly Federated Learning Research Framework*,
arXiv:2007.14390 (strategies, ClientApp mods).
"""

from __future__ import annotations

from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from logging import INFO

import numpy as np
from flwr.app import (
    Array,
    ArrayRecord,
    ConfigRecord,
    Context,
    Message,
    MetricRecord,
    RecordDict,
)
from flwr.clientapp.typing import ClientAppCallable, Mod
from flwr.common import log
from flwr.serverapp import Grid
from flwr.serverapp.strategy import Strategy

from econ.qualities import ModelQualities
from games.defection_free import (
    DefectionFree,
    DefectionFreeConfig,
    HighMove,
    Play,
    PlayReport,
    market_path,
    play,
    raise_to_cap,
    report,
)
from learning.runtimes.flower.records import scalar
from learning.runtimes.flower.requests import checked_replies, source_node, wait_for_nodes

__all__ = [
    "PROBE",
    "QUALITY",
    "QUALITY_EXAMPLES",
    "DefectionFreeStrategy",
    "QualityFn",
    "checked_quality",
    "only_record",
    "quality_mod",
]

#: The metric :func:`quality_mod` adds: the model's quality on the target set, in [0, 1].
QUALITY = "quality"

#: The metric :func:`quality_mod` adds: how many target examples the quality rests on.
QUALITY_EXAMPLES = "quality-examples"

#: The config key of the mediator's quality probes (an ``evaluate`` message).
PROBE = "collabecon-quality-probe"

#: The App's quality function: ``(arrays, context) -> (quality, target examples)``.
QualityFn = Callable[[ArrayRecord, Context], tuple[float, int]]

_FIRMS = ("low", "high")


def only_record(records: dict[str, object], what: str) -> object | None:
    """The only record of a message's ``records`` of one kind, None when it has none.

    Raises
    ------
    ValueError
        The message holds several.
    """
    if len(records) > 1:
        raise ValueError(f"expected at most one {what}, got {sorted(records)}")
    return next(iter(records.values()), None)


def checked_quality(quality: QualityFn, arrays: ArrayRecord, context: Context) -> tuple[float, int]:
    """``quality(arrays, context)``, checked: a quality in [0, 1] on at least one example."""
    q, n = quality(arrays, context)
    if not 0.0 <= float(q) <= 1.0 or int(n) < 1:
        raise ValueError(
            f"a quality must lie in [0, 1] and rest on at least one example, got {q!r} on {n!r}"
        )
    return float(q), int(n)


def quality_mod(quality: QualityFn) -> Mod:
    """A ClientApp mod that adds the quality of the node's model to its replies.

    ``quality(arrays, context)`` returns the quality in [0, 1] of the model ``arrays`` on the
    node's target set and the number of target examples. A reply that carries a model (a
    ``train`` reply) is measured on it, any other on the model of the request (an
    ``evaluate`` request); :data:`QUALITY` and :data:`QUALITY_EXAMPLES` go into the reply's
    metric record (a new ``"metrics"`` record when it has none). A request without a model,
    and a reply with an error, pass unchanged. A quality probe (an ``evaluate`` request whose
    config sets :data:`PROBE`) is answered here: the quality of the model sent, in a
    ``"metrics"`` record, without calling the App's handler.

    Use as ``ClientApp(mods=[quality_mod(my_quality)])``.

    Raises
    ------
    ValueError
        ``quality`` returned a value outside [0, 1] or fewer than one example, or a message
        holds several array or metric records.

    References
    ----------
    Werner (2024), ch. 3, §3.2: a model's quality is its accuracy on the target set that
    consumers care about.
    """

    def mod(message: Message, context: Context, call_next: ClientAppCallable) -> Message:
        sent = only_record(dict(message.content.array_records), "array record")
        probe = any(PROBE in c for c in message.content.config_records.values())
        if probe and isinstance(sent, ArrayRecord):
            q, n = checked_quality(quality, sent, context)
            metrics = MetricRecord({QUALITY: q, QUALITY_EXAMPLES: n})
            return Message(RecordDict({"metrics": metrics}), reply_to=message)
        reply = call_next(message, context)
        if reply.has_error():
            return reply
        model = only_record(dict(reply.content.array_records), "array record") or sent
        if not isinstance(model, ArrayRecord):
            return reply
        q, n = checked_quality(quality, model, context)
        record = only_record(dict(reply.content.metric_records), "metric record")
        if not isinstance(record, MetricRecord):
            record = MetricRecord({})
            reply.content["metrics"] = record
        record[QUALITY] = q
        record[QUALITY_EXAMPLES] = n
        return reply

    return mod


def _quality_of(reply: Message) -> tuple[float, int]:
    """The quality a reply carries (:func:`quality_mod`) and its number of target examples.

    Raises
    ------
    ValueError
        The reply carries no quality: its ClientApp lacks :func:`quality_mod`.
    """
    metrics = only_record(dict(reply.content.metric_records), "metric record")
    if not isinstance(metrics, MetricRecord) or QUALITY not in metrics:
        raise ValueError(
            f"node {source_node(reply)} replied without a {QUALITY!r} metric: its ClientApp "
            "needs quality_mod (learning.runtimes.flower.compose)"
        )
    return float(scalar(metrics[QUALITY])), int(scalar(metrics[QUALITY_EXAMPLES]))


def _toward(x: ArrayRecord, target: ArrayRecord, alpha: float) -> ArrayRecord:
    r""":math:`x + \alpha (\text{target} - x)` on the floating arrays; the others are ``x``'s.

    Raises
    ------
    ValueError
        The two models differ in their arrays' names or shapes.
    """
    if list(x) != list(target):
        raise ValueError(f"the models' arrays differ: {list(x)} and {list(target)}")
    out: dict[str, Array] = {}
    for name in x:
        a, b = x[name].numpy(), target[name].numpy()
        if a.shape != b.shape:
            raise ValueError(f"array {name!r} has shapes {a.shape} and {b.shape}")
        moved = a + alpha * (b - a) if np.issubdtype(a.dtype, np.floating) else a
        out[name] = Array(np.ascontiguousarray(moved, dtype=a.dtype))
    return ArrayRecord(out)


@dataclass
class _MediatedFirms:
    """The two firms' models and qualities on the mediator (:class:`games.defection_free.Firms`).

    ``probe(model, firm)`` measures a model on the firm's node; ``candidate`` is the inner
    strategy's aggregate of the round, the high firm's step. ``known`` keeps each probed
    model with its quality (by identity, the model held so that its id stays its own), so
    a model is probed once.
    """

    models: dict[str, ArrayRecord]
    known: dict[int, tuple[ArrayRecord, float]]
    n_eval: dict[str, int]
    probe: Callable[[ArrayRecord, str], tuple[float, int]]
    max_steps: int
    max_halvings: int
    candidate: ArrayRecord | None = None
    previous: ArrayRecord | None = field(default=None, repr=False)

    def quality(self, model: ArrayRecord, firm: str) -> float:
        """The quality of ``model`` on ``firm``'s node, probed once."""
        if id(model) not in self.known:
            q, self.n_eval[firm] = self.probe(model, firm)
            self.known[id(model)] = (model, q)
        return self.known[id(model)][1]

    def forget(self) -> None:
        """Drop the qualities of the models neither firm holds."""
        held = {id(m) for m in self.models.values()}
        self.known = {k: v for k, v in self.known.items() if k in held}

    def measure(self) -> ModelQualities:
        """Both firms' current qualities, names ``("low", "high")``."""
        return ModelQualities(
            names=_FIRMS,
            quality=np.array([self.quality(self.models[f], f) for f in _FIRMS]),
            metric=QUALITY,
            n_eval=np.array([self.n_eval[f] for f in _FIRMS], dtype=np.int64),
        )

    def step_high(self, move: HighMove) -> None:
        """The high firm takes the inner strategy's aggregate (none: it keeps its model)."""
        self.previous = self.models["high"]
        if self.candidate is not None:
            self.models["high"] = self.candidate

    def undo_high(self) -> None:
        """The high firm's model before the last :meth:`step_high`."""
        assert self.previous is not None
        self.models["high"] = self.previous

    def step_low(self, joint: bool) -> None:
        """A free round: the low firm takes the high firm's model when ``joint``."""
        if joint:
            self.models["low"] = self.models["high"]

    def raise_low(self, cap: float, inner: str) -> None:
        r"""Steps :math:`x_l + \alpha (x_h - x_l)` that raise the low firm's quality to ``cap``.

        :func:`games.defection_free.raise_to_cap` with the step :math:`\alpha` from 1, halved
        while the quality would pass ``cap`` or fall.
        """
        target = self.models["high"]
        self.models["low"] = raise_to_cap(
            self.models["low"],
            cap,
            inner,
            quality=lambda x: self.quality(x, "low"),
            gradient=lambda x, k: target,
            moved=_toward,
            step=1.0,
            max_steps=self.max_steps,
            max_halvings=self.max_halvings,
        )


class DefectionFreeStrategy(Strategy):
    r"""Algorithm 5's mediator around an inner Flower strategy, between two firms.

    The module docstring describes a run: the disagreement point before round 1, then each
    round the inner strategy's training from the high firm's model (the high move, undone
    when its quality falls), the low firm's capped move, and each firm's own model in its
    ``evaluate`` messages. Both nodes' ClientApps carry :func:`quality_mod`.

    Parameters
    ----------
    strategy : Strategy
        The inner strategy: its ``configure_train``/``aggregate_train`` train the high
        firm's model each round, its ``configure_evaluate``/``aggregate_evaluate`` run the
        evaluation (each firm on its own model).
    config : DefectionFreeConfig, optional
        Algorithm 5's options (:class:`games.defection_free.DefectionFreeConfig`; the
        default: the recommended cap, no gating, :math:`Q = 1`, undo a high step that lowers
        the quality). ``schedule="paced"`` is refused.
    max_steps, max_halvings : int
        Of the low firm's guarded loop (:func:`games.defection_free.raise_to_cap`): a round
        probes at most ``max_steps * max_halvings`` of its models, and the high firm's
        aggregate once.
    timeout : float
        Seconds to wait for the nodes, their own training and each quality probe.

    Attributes
    ----------
    nodes : dict
        The node id of the ``"low"`` and the ``"high"`` firm (empty before round 1).
    models : dict
        Each firm's current model.

    Raises
    ------
    ValueError
        ``config.schedule`` is ``"paced"``.

    References
    ----------
    Werner (2024), ch. 3, §3.4 (p. 64), Algorithm 5 and Proposition 3.

    Examples
    --------
    In a ServerApp's main, around flwr's FedAvg::

        strategy = DefectionFreeStrategy(FedAvg(fraction_evaluate=1.0))
        result = strategy.start(grid, ArrayRecord(model.state_dict()), num_rounds=5)
        print(strategy.market_report().audit.never_decreased)
    """

    def __init__(
        self,
        strategy: Strategy,
        *,
        config: DefectionFreeConfig | None = None,
        max_steps: int = 3,
        max_halvings: int = 8,
        timeout: float = 600.0,
    ) -> None:
        self.strategy = strategy
        self.config = config or DefectionFreeConfig()
        if self.config.schedule == "paced":
            raise ValueError(
                "schedule='paced' needs the high firm's step size, which the inner strategy "
                "sets: use schedule='const'"
            )
        self.max_steps, self.max_halvings, self.timeout = max_steps, max_halvings, timeout
        self.nodes: dict[str, int] = {}
        self.models: dict[str, ArrayRecord] = {}
        self._scheme: DefectionFree | None = None
        self._firms: _MediatedFirms | None = None
        self._grid: Grid | None = None
        self._rounds: list[Play] = []

    # ------------------------------------------------------------------ the records' keys

    def _keys(self) -> tuple[str, str]:
        """The inner strategy's array and config record keys (flwr's ``"arrays"``, ``"config"``)."""
        return (
            str(getattr(self.strategy, "arrayrecord_key", "arrays")),
            str(getattr(self.strategy, "configrecord_key", "config")),
        )

    def _probe(self, model: ArrayRecord, firm: str) -> tuple[float, int]:
        """The quality of ``model`` measured on ``firm``'s node (a :data:`PROBE` request)."""
        assert self._grid is not None
        request = Message(
            RecordDict({"arrays": model, "config": ConfigRecord({PROBE: True})}),
            dst_node_id=self.nodes[firm],
            message_type="evaluate",
        )
        got = checked_replies(
            self._grid.send_and_receive([request], timeout=self.timeout), 1, "a quality probe"
        )
        return _quality_of(got[0])

    def _start(self, arrays: ArrayRecord, config: ConfigRecord, grid: Grid) -> None:
        """The disagreement point: each firm trains ``arrays`` on its own data.

        The lower quality names the low firm; the rule starts from the two qualities.
        """
        nodes = wait_for_nodes(grid, 2, self.timeout)
        if len(nodes) != 2:
            raise ValueError(f"the defection-free rule mediates two firms, got {len(nodes)} nodes")
        array_key, config_key = self._keys()
        own = ConfigRecord({**config, "server-round": 0})
        requests = [
            Message(
                RecordDict({array_key: arrays, config_key: own}),
                dst_node_id=node,
                message_type="train",
            )
            for node in nodes
        ]
        got = checked_replies(
            grid.send_and_receive(requests, timeout=self.timeout), 2, "the firms' own training"
        )
        start = []
        for reply in got:
            model = only_record(dict(reply.content.array_records), "array record")
            if not isinstance(model, ArrayRecord):
                raise ValueError(f"node {source_node(reply)} replied to train without a model")
            start.append((*_quality_of(reply), source_node(reply), model))
        (q_l, n_l, low, x_l), (q_h, n_h, high, x_h) = sorted(start, key=lambda s: s[0])
        self._scheme = DefectionFree(q_l, q_h, self.config)
        self.nodes = {"low": low, "high": high}
        self.models = {"low": x_l, "high": x_h}
        self._firms = _MediatedFirms(
            models=self.models,
            known={id(x_l): (x_l, q_l), id(x_h): (x_h, q_h)},
            n_eval={"low": n_l, "high": n_h},
            probe=self._probe,
            max_steps=self.max_steps,
            max_halvings=self.max_halvings,
        )
        log(
            INFO,
            "defection-free: low firm node %d (q=%.4f), high firm node %d (q=%.4f)",
            low,
            q_l,
            high,
            q_h,
        )

    # ------------------------------------------------------------------ Strategy

    def configure_train(
        self, server_round: int, arrays: ArrayRecord, config: ConfigRecord, grid: Grid
    ) -> Iterable[Message]:
        """The inner strategy's training messages, from the high firm's model.

        Before round 1, the firms' own training (the disagreement point) from ``arrays``.

        Parameters
        ----------
        server_round : int
            The round, from 1.
        arrays : ArrayRecord
            The initial model in round 1; afterwards the high firm's model, as returned by
            :meth:`aggregate_train`.
        config : ConfigRecord
            Passed to the inner strategy (and to the firms' own training).
        grid : Grid
            The two firms' nodes; the quality probes of the round go through it.

        Raises
        ------
        ValueError
            Not exactly two nodes, a reply without a model or a quality, or equal qualities
            at the disagreement point.
        RuntimeError
            A node failed or did not answer in time.
        """
        self._grid = grid
        if self._scheme is None:
            self._start(arrays, config, grid)
        return self.strategy.configure_train(server_round, self.models["high"], config, grid)

    def aggregate_train(
        self, server_round: int, replies: Iterable[Message]
    ) -> tuple[ArrayRecord | None, MetricRecord | None]:
        """The inner strategy's aggregate as the high firm's step, then the rule's round.

        :func:`games.defection_free.play` for one round: the high firm takes the aggregate
        (kept only if its quality did not fall), the low firm moves up to its cap.

        Returns
        -------
        arrays : ArrayRecord
            The high firm's model.
        metrics : MetricRecord
            The inner strategy's metrics with the round's ``q-low``, ``q-high``, ``cap-low``,
            ``revenue-low`` and ``revenue-high`` (the market's, Lemma 22).

        Raises
        ------
        RuntimeError
            Called before :meth:`configure_train`, or a probe failed.
        """
        if self._scheme is None or self._firms is None:
            raise RuntimeError("aggregate_train before configure_train")
        candidate, metrics = self.strategy.aggregate_train(server_round, replies)
        self._firms.candidate = candidate
        one = play(self._scheme, self._firms, 1, inner="gd")
        self._firms.candidate = None
        self._firms.forget()
        self._rounds.append(one)
        q_l, q_h = float(one.q_l[-1]), float(one.q_h[-1])
        market = market_path([q_l], [q_h])
        out = MetricRecord(
            {
                **(metrics or {}),
                "q-low": q_l,
                "q-high": q_h,
                "cap-low": float(one.cap[-1]),
                "revenue-low": float(market.U_l[0]),
                "revenue-high": float(market.U_h[0]),
            }
        )
        return self.models["high"], out

    def configure_evaluate(
        self, server_round: int, arrays: ArrayRecord, config: ConfigRecord, grid: Grid
    ) -> Iterable[Message]:
        """The inner strategy's evaluation messages, each firm's carrying its own model."""
        firm = {node: name for name, node in self.nodes.items()}
        out = []
        for message in self.strategy.configure_evaluate(server_round, arrays, config, grid):
            name = firm.get(int(message.metadata.dst_node_id))
            key = next(iter(message.content.array_records), None)
            if name is not None and key is not None:
                content = RecordDict(dict(message.content.items()))
                content[key] = self.models[name]
                message = Message(
                    content,
                    dst_node_id=message.metadata.dst_node_id,
                    message_type=message.metadata.message_type,
                )
            out.append(message)
        return out

    def aggregate_evaluate(
        self, server_round: int, replies: Iterable[Message]
    ) -> MetricRecord | None:
        """The inner strategy's aggregate of the evaluation replies."""
        return self.strategy.aggregate_evaluate(server_round, replies)

    def summary(self) -> None:
        """Log the wrapper and the inner strategy's summary."""
        log(INFO, "\tDefection-free mediator (Werner 2024, Algorithm 5) around:")
        self.strategy.summary()

    # ------------------------------------------------------------------ the run

    def play_record(self) -> Play:
        r"""The qualities, caps and :math:`\hat q` of every round so far, round 0 the start.

        Raises
        ------
        ValueError
            Before the first round.
        """
        if not self._rounds:
            raise ValueError("no round has been played")
        first = self._rounds[0]
        rounds = self._rounds
        return Play(
            scheme=first.scheme,
            q_l=np.concatenate([first.q_l[:1], *(r.q_l[1:] for r in rounds)]),
            q_h=np.concatenate([first.q_h[:1], *(r.q_h[1:] for r in rounds)]),
            cap=np.concatenate([first.cap[:1], *(r.cap[1:] for r in rounds)]),
            hat_q=np.concatenate([first.hat_q[:1], *(r.hat_q[1:] for r in rounds)]),
            measured=(first.measured[0], *(r.measured[-1] for r in rounds)),
        )

    def market_report(self) -> PlayReport:
        """:func:`games.defection_free.report` of :meth:`play_record`: market, audit, Nash gap.

        With the configuration's :math:`Q` and ``tolerance``.
        """
        return report(self.play_record(), q_max=self.config.q_max, tolerance=self.config.tolerance)
