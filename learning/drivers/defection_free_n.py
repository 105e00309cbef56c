r"""n competing firms that really train: complete collaboration and the defection-free rule.

The experiment of Werner (2024), ch. 3, §3.5, for :math:`n` firms instead of two: each firm
holds a label-skewed share of a data set (a Dirichlet split, :func:`learning.partition.dirichlet`),
a common balanced target set is held out from all of them, and a model's quality is its
accuracy on the target (or one minus its normalised loss, :mod:`learning.qualities`). All
firms' models are one stacked parameter set of :class:`learning.engine.BatchedEngine`, so one
engine call steps every firm at once.

Four schemes, round by round. A scheme's sharing matrix :math:`S` (:func:`sharing`) says
whose data each model learns from: firm :math:`i` takes its step on
:math:`\frac{1}{|S_i|} \sum_{j \in S_i} f(x; j)`, each minibatch holding ``batch_size``
examples of every firm of :math:`S_i`:

* ``complete``: :math:`S_i` is every firm, the joint objective (eq. 3.1 for :math:`n`
  firms; the same minibatches for all models);
* ``one-sided-low`` and ``one-sided-high``: the one-sided schemes of Fig. 3.2 for :math:`n`
  firms, named as for two firms by who benefits. In ``one-sided-low`` data flows down the
  quality ladder of the start: a firm learns from its own data and that of every firm above
  it, so the top firm trains alone (Fig. 3.2a); in ``one-sided-high`` it flows up, and the
  bottom firm trains alone (Fig. 3.2b);
* ``defection-free``: every firm trains one epoch on the joint objective from its model
  :math:`x_t`, and the n-firm rule of :mod:`games.defection_free.n_firms` decides how much of
  it is kept. The rule's next qualities :math:`c` from the measured qualities :math:`q_t`
  (:func:`games.defection_free.n_firms.n_firm_step`, towards the bargain :math:`q^*` of
  :func:`econ.quality_bargaining.quality_bargaining` over :math:`[q^0_i, Q]`) are the caps.
  Each firm's candidates, like the low firm's inner steps of Algorithm 5 (steps 9-11), are
  points of its training: its models after :math:`T, T/2, T/4, \dots, 1` of the epoch's
  :math:`T` SGD steps, then the interpolations :math:`x_t + w (x_1 - x_t)` towards its first
  step, :math:`w = 1/2, 1/4, \dots`, all measured on the target in one evaluation. A candidate
  is usable when its measured quality lies in :math:`[q_{t,i}, c_i]`, and a choice is allowed
  when no firm's revenue is below its value at :math:`q_t`. The choices follow the steps of
  the rule itself: the top firm keeps its usable candidate with the most training that is
  allowed and, the others where they are, leaves its revenue at most :math:`\max(R_{top}(q^*),
  R_{top}(q_t))` (revenues never fall, so a top firm that rose alone past its revenue at the
  bargain would keep the firms below their targets for good); then the others move jointly,
  each to its usable candidate of highest quality at most :math:`q_{t,i} + s (c_i - q_{t,i})`,
  with the largest allowed :math:`s` of :math:`1, 63/64, \dots, 1/64` (a firm's rise lowers
  the revenues of its neighbours, so one at a time the first to move can find no room that a
  joint step has); then, from the highest quality down, each moves to its usable candidate
  with the most training that measures at least its joint choice and is allowed. A firm with
  no usable candidate keeps its model. The recorded qualities are the measured qualities of
  the models kept, so no revenue of the market (:func:`econ.market.market_round`) falls at any
  round (Proposition 3, for n firms, on the measured qualities).

:math:`Q` is the best quality the complete run reached (:func:`games.defection_free.estimate_q_max`)
unless given. The top firm's pace is 2 by default, not the :math:`\tilde b \approx 1.03` of
the proof of Proposition 5: the pace bounds the top firm's growth in a round and plays no
part in the guarantee that no revenue falls, and a real step is bounded by its training.

References
----------
Werner (2024), ch. 3, §3.4 (p. 64), Algorithm 5 and Proposition 3; §3.5, the experiment.
"""

from __future__ import annotations

from collections import deque
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field, replace
from typing import Any

import numpy as np
import torch

from econ.market import market_round
from econ.outputs import plain
from econ.qualities import METRICS, ModelQualities, baseline_loss
from econ.quality_bargaining import quality_bargaining, uniform_revenues
from econ.validation import choice, in_interval, positive, positive_int
from games.defection_free import estimate_q_max
from games.defection_free.n_firms import n_firm_step
from learning.data import Dataset, load_dataset
from learning.device import resolve_device
from learning.engine import BatchedEngine, Params, Task, parameters_of, sample_batches
from learning.loop import check_loss, divergence_limit
from learning.models import build_model
from learning.optim import float32_step
from learning.partition import dirichlet
from learning.qualities import qualities_from_evaluation
from learning.rng import torch_generator

__all__ = [
    "BARGAIN_TOLERANCE",
    "N_SCHEMES",
    "NFirmRun",
    "NFirmSetup",
    "TorchNFirms",
    "initial_models",
    "load_and_split",
    "run_n_firms",
    "sharing",
]

#: The schemes of :func:`run_n_firms`.
N_SCHEMES = ("complete", "defection-free", "one-sided-low", "one-sided-high")
#: Largest distance of a final quality from the bargain :math:`q^*` reported as reaching it.
BARGAIN_TOLERANCE = 0.05


@dataclass(frozen=True, slots=True)
class NFirmSetup:
    r"""n firms' data and training.

    Attributes
    ----------
    firms
        :math:`n \ge 2`.
    dataset, data_dir
        A classification data set of :func:`learning.data.load_dataset`.
    alpha
        The Dirichlet concentration of the label skew (small: few classes per firm).
    size
        At most this many examples per firm (a firm's Dirichlet share, subsampled).
    target_per_class
        The balanced target set, held out before the split: this many examples of each class.
    model, lr, batch_size
        The architecture (:data:`learning.models.MODELS`), the SGD step, and the examples of
        each firm in a minibatch.
    init_epochs
        Epochs every firm trains alone on its own data before the collaboration.
    metric
        ``"accuracy"`` or ``"1-loss"`` on the target.
    pace
        :math:`b > 1`, the top firm's largest growth factor per round in the rule.
    halvings
        The interpolations tried below a firm's first step: :math:`w = 2^{-1}, \dots, 2^{-h}`.

    References
    ----------
    Werner (2024), ch. 3, §3.5 (two firms, LeNet-5, label-skewed MNIST), for n firms.
    """

    firms: int = 3
    dataset: str = "mnist5k"
    data_dir: str | None = None
    alpha: float = 0.5
    size: int = 1000
    target_per_class: int = 200
    model: str = "lenet5"
    lr: float = 0.05
    batch_size: int = 32
    init_epochs: int = 1
    metric: str = "accuracy"
    pace: float = 2.0
    halvings: int = 6

    def __post_init__(self) -> None:
        """Check the counts, ``alpha``, ``lr``, ``pace`` and the metric.

        Raises
        ------
        ValueError
            Fewer than two firms, a count or ``alpha`` or ``lr`` that is not positive, a
            ``pace`` not above 1, or an unknown metric.
        """
        if positive_int("firms", self.firms) < 2:
            raise ValueError(f"firms must be at least 2, got {self.firms}")
        for name in ("size", "target_per_class", "batch_size"):
            positive_int(name, getattr(self, name))
        if self.init_epochs < 0:
            raise ValueError(f"init_epochs must be >= 0, got {self.init_epochs}")
        if self.halvings < 0:
            raise ValueError(f"halvings must be >= 0, got {self.halvings}")
        positive("alpha", self.alpha)
        positive("lr", self.lr)
        float32_step("lr", self.lr)
        in_interval("pace", self.pace, 1.0, low_open=True)
        choice("metric", self.metric, METRICS)


def _split(
    data: Dataset, setup: NFirmSetup, rng: np.random.Generator
) -> tuple[list[np.ndarray], np.ndarray]:
    """The balanced target's indices, then the firms' Dirichlet shares of the rest."""
    target = []
    for c in range(data.n_classes):
        pool = np.flatnonzero(data.y == c)
        if pool.size <= setup.target_per_class:
            raise ValueError(
                f"target_per_class must be below {pool.size} (the examples of class {c}), "
                f"got {setup.target_per_class}"
            )
        target.append(rng.choice(pool, setup.target_per_class, replace=False))
    held = np.concatenate(target)
    rest = np.setdiff1d(np.arange(len(data)), held)
    shares = dirichlet(data.y[rest], rng, n_clients=setup.firms, alpha=setup.alpha, min_size=2)
    firms = [
        rest[rng.choice(s, setup.size, replace=False)] if s.size > setup.size else rest[s]
        for s in shares
    ]
    return firms, held


def load_and_split(
    setup: NFirmSetup, seed: int | np.random.Generator | None = None
) -> tuple[Dataset, list[np.ndarray], np.ndarray]:
    """Load the data set and split it as :meth:`TorchNFirms.prepare` does for ``seed``.

    Raises
    ------
    ValueError
        The data set is missing or not a classification set, or the target takes a whole class.
    """
    data = load_dataset(setup.dataset, data_dir=setup.data_dir)
    if data.n_classes < 2:
        raise ValueError(f"the firms need a classification dataset, got {setup.dataset!r}")
    firms, target = _split(data, setup, np.random.default_rng(seed).spawn(3)[0])
    return data, firms, target


def initial_models(
    setup: NFirmSetup,
    shape: tuple[int, ...],
    n_classes: int,
    seed: int | np.random.Generator | None = None,
) -> tuple[torch.nn.Module, Params, np.random.Generator]:
    """The firms' models as :meth:`TorchNFirms.prepare` draws them for ``seed``.

    One of them (the architecture of the engine), all of them stacked (row ``i`` firm
    ``i``), and the minibatch stream of the training that follows.
    """
    _, init_rng, train_rng = np.random.default_rng(seed).spawn(3)
    generator = torch_generator(init_rng)
    models = [
        build_model(setup.model, shape, n_classes, generator=generator) for _ in range(setup.firms)
    ]
    each = [parameters_of(m) for m in models]
    return models[0], {k: torch.stack([p[k] for p in each]) for k in each[0]}, train_rng


def sharing(scheme: str, start: np.ndarray) -> np.ndarray:
    r"""The scheme's sharing matrix: ``S[i, j]`` when firm ``i``'s model learns from firm ``j``'s data.

    ``complete`` (and the proposals of ``defection-free``): every entry. The one-sided schemes
    rank the firms by their starting qualities ``start`` (ties by index, the lower index
    below): ``one-sided-low`` has :math:`S_{ij}` for every :math:`j` ranked at or above
    :math:`i`, ``one-sided-high`` at or below. The diagonal is always set: a firm learns from
    its own data, so the firm that receives nothing trains alone (the two-firm command's
    ``--train-alone``; there it idles by default).

    Raises
    ------
    ValueError
        An unknown scheme, or ``start`` not a vector of at least two qualities.

    References
    ----------
    Werner (2024), ch. 3, §3.2, Fig. 3.2 (the one-sided schemes of two firms).
    """
    choice("scheme", scheme, N_SCHEMES)
    q = np.asarray(start, dtype=np.float64)
    if q.ndim != 1 or q.size < 2:
        raise ValueError(f"start must be a vector of at least two qualities, got shape {q.shape}")
    if scheme in ("complete", "defection-free"):
        return np.ones((q.size, q.size), dtype=bool)
    rank = np.empty(q.size, dtype=np.int64)
    rank[np.argsort(q, kind="stable")] = np.arange(q.size)
    if scheme == "one-sided-low":
        return rank[None, :] >= rank[:, None]
    return rank[None, :] <= rank[:, None]


@dataclass
class TorchNFirms:
    """n firms' models (one stacked parameter set, row ``i`` firm ``i``), data and target.

    Build with :meth:`prepare`.
    """

    setup: NFirmSetup
    engine: BatchedEngine
    x: torch.Tensor
    y: torch.Tensor
    offsets: np.ndarray
    sizes: np.ndarray
    target: tuple[np.ndarray, np.ndarray]
    n_classes: int
    params: Params
    rng: np.random.Generator = field(repr=False)

    @classmethod
    def prepare(
        cls,
        setup: NFirmSetup,
        seed: int | np.random.Generator | None = None,
        device: str | torch.device | None = None,
    ) -> TorchNFirms:
        """Split the data, build one model per firm, train each alone ``init_epochs`` epochs."""
        data, shares, target_idx = load_and_split(setup, seed)
        dev = resolve_device(device)
        model, params, stream = initial_models(setup, tuple(data.x.shape[1:]), data.n_classes, seed)
        sizes = np.array([s.size for s in shares], dtype=np.int64)
        firms = cls(
            setup=setup,
            engine=BatchedEngine(model, Task.for_classes(data.n_classes), dev),
            x=torch.from_numpy(np.concatenate([data.x[s] for s in shares])).to(dev),
            y=torch.from_numpy(np.concatenate([data.y[s] for s in shares])).to(dev),
            offsets=np.concatenate([[0], np.cumsum(sizes)[:-1]]).astype(np.int64),
            sizes=sizes,
            target=(data.x[target_idx], data.y[target_idx]),
            n_classes=data.n_classes,
            params={k: v.to(dev) for k, v in params.items()},
            rng=stream,
        )
        firms.pretrain()
        return firms

    def pretrain(self) -> None:
        """Train every firm alone on its own data for ``init_epochs`` epochs."""
        for _ in range(self.setup.init_epochs):
            self.params = self.epoch(self.params, np.eye(self.setup.firms, dtype=bool))

    def fork(self, seed: int | np.random.Generator | None) -> TorchNFirms:
        """An independent copy (same models and data) with its own minibatch stream."""
        return replace(
            self,
            params={k: v.clone() for k, v in self.params.items()},
            rng=np.random.default_rng(seed),
        )

    def measure(self, params: Params | None = None) -> np.ndarray:
        """Every model of ``params`` (the firms' by default) on the common target set."""
        x, y = self.target
        evaluation = self.engine.evaluate_on(self.params if params is None else params, x, y)
        rows = evaluation.n.size
        return qualities_from_evaluation(
            evaluation,
            tuple(f"m{i}" for i in range(rows)),
            metric=self.setup.metric,
            baseline_loss=baseline_loss(y, self.n_classes),
        ).quality.astype(np.float64)

    def epoch(self, params: Params, share: np.ndarray) -> Params:
        r"""One pass of SGD for every firm at once, :math:`\lceil \max_i n_i / B \rceil` steps.

        Firm ``i`` steps on its mean loss over ``batch_size`` examples of every firm ``j``
        with ``share[i, j]`` (:func:`sharing`; the identity: each firm on its own data).
        """
        return deque(self.walk(params, share), maxlen=1).pop()

    def walk(self, params: Params, share: np.ndarray) -> Iterator[Params]:
        """The models after each SGD step of one :meth:`epoch`, in order."""
        share = np.asarray(share, dtype=bool)
        b = self.setup.batch_size
        picks = sample_batches(self.sizes, self.steps, b, self.rng) + self.offsets[:, None, None]
        for s in range(self.steps):
            grads, loss = self.gradients(params, share, picks[:, s])
            check_loss(
                "a firm's minibatch loss",
                float(loss.max()),
                None,
                self.setup.lr,
                divergence_limit(float(np.log(self.n_classes))),
            )
            with torch.no_grad():
                params = {n: v - self.setup.lr * grads[n] for n, v in params.items()}
            yield params

    @property
    def steps(self) -> int:
        r"""SGD steps in an epoch: :math:`\lceil \max_i n_i / B \rceil`."""
        return -(-int(self.sizes.max()) // self.setup.batch_size)

    def gradients(
        self, params: Params, share: np.ndarray, rows: np.ndarray
    ) -> tuple[Params, torch.Tensor]:
        """Per firm ``i``: model ``i``'s gradient and mean loss on the rows of every firm it shares.

        ``rows[j]``: the global indices of firm ``j``'s minibatch; model ``i`` takes the rows of
        every ``j`` with ``share[i, j]``. One engine call per number of firms shared (one call
        for ``complete`` and for the identity).
        """
        counts = share.sum(axis=1)
        grads = {k: torch.empty_like(v) for k, v in params.items()}
        loss = torch.empty(counts.size, device=self.x.device)
        for c in np.unique(counts):
            who = np.flatnonzero(counts == c)
            index = torch.from_numpy(np.stack([rows[share[i]].reshape(-1) for i in who]))
            index = index.to(self.x.device)
            picked = torch.from_numpy(who).to(self.x.device)
            models = (
                params if who.size == counts.size else {k: v[picked] for k, v in params.items()}
            )
            g, loss[picked] = self.engine.gradients(models, self.x[index], self.y[index])
            for k, v in g.items():
                grads[k][picked] = v
        return grads, loss


@dataclass(frozen=True, slots=True)
class NFirmRun:
    """One scheme played by n firms: qualities, revenues and welfare of every round.

    Attributes
    ----------
    scheme
        ``"complete"`` or ``"defection-free"``.
    qualities, revenues
        ``(rounds + 1, n)``: the start, then every round (the market of
        :func:`econ.market.market_round` on the measured qualities).
    welfare, consumer_surplus
        ``(rounds + 1,)``.
    kept
        ``(rounds, n)``: the fraction of the round's epoch of training each firm kept (1 the
        whole epoch, ``k / T`` its first ``k`` steps, ``w / T`` an interpolation towards its
        first step, 0 its previous model).
    q_max, target
        :math:`Q` and the bargain :math:`q^*` over :math:`[q^0_i, Q]`.
    firms
        The firms after the last round (their final models in ``firms.params``); their
        :meth:`TorchNFirms.measure` gives the last row of ``qualities``.

    References
    ----------
    Werner (2024), ch. 3, §3.4-3.5, Algorithm 5 and Proposition 3, for n firms.
    """

    scheme: str
    qualities: np.ndarray
    revenues: np.ndarray
    welfare: np.ndarray
    consumer_surplus: np.ndarray
    kept: np.ndarray
    q_max: float
    target: np.ndarray
    firms: TorchNFirms = field(repr=False)

    @property
    def drops(self) -> np.ndarray:
        """Per firm, the rounds in which its revenue fell below the round before."""
        return np.sum(self.revenues[1:] < self.revenues[:-1], axis=0)

    @property
    def refusals(self) -> np.ndarray:
        """Per firm, the rounds in which it kept its previous model."""
        return np.sum(self.kept == 0, axis=0)

    @property
    def distance(self) -> float:
        r""":math:`\max_i |q_{T,i} - q^*_i|`, the final qualities' distance from the bargain."""
        return float(np.max(np.abs(self.qualities[-1] - self.target)))

    def to_dict(self) -> dict[str, Any]:
        """JSON-ready: a row per round, the audit and the final qualities against the bargain.

        ``bargain`` holds the bargain's qualities, revenues and welfare (the market of
        :func:`econ.market.market_round` at :math:`q^*`) beside the final ones.
        """
        deal = market_round(self.target)
        rounds = [
            {
                "round": t,
                "qualities": self.qualities[t],
                "revenues": self.revenues[t],
                "consumer_surplus": self.consumer_surplus[t],
                "welfare": self.welfare[t],
                **({"kept": self.kept[t - 1]} if t else {}),
            }
            for t in range(self.qualities.shape[0])
        ]
        return plain(
            {
                "scheme": self.scheme,
                "firms": self.qualities.shape[1],
                "rounds": rounds,
                "audit": {
                    "drops": self.drops,
                    "refusals": self.refusals,
                    "revenue_never_decreased": bool(self.drops.sum() == 0),
                    "worst_drop": float(np.max(self.revenues[:-1] - self.revenues[1:], initial=0)),
                },
                "bargain": {
                    "q_max": self.q_max,
                    "target": self.target,
                    "target_revenues": deal.revenue,
                    "target_welfare": deal.welfare,
                    "final": self.qualities[-1],
                    "final_welfare": self.welfare[-1],
                    "distance": self.distance,
                    "tolerance": BARGAIN_TOLERANCE,
                    "within_tolerance": self.distance <= BARGAIN_TOLERANCE,
                },
            }
        )


def _candidates(firms: TorchNFirms, old: Params, q: np.ndarray) -> tuple[Params, list[float]]:
    r"""Every firm's candidate models for the round, stacked, and their fractions of the epoch.

    The models after :math:`k = T, T/2, \dots, 1` of the :math:`T` steps of one epoch on the
    joint objective, then the interpolations :math:`x_t + w (x_1 - x_t)` towards the first
    step, :math:`w = 2^{-1}, \dots, 2^{-h}`; most training first. Candidate ``c``'s models are
    rows ``c * n .. c * n + n - 1``.
    """
    total = firms.steps
    marks = sorted({max(1, total >> h) for h in range(total.bit_length())}, reverse=True)
    saved: dict[int, Params] = {}
    for k, params in enumerate(firms.walk(old, sharing("complete", q)), start=1):
        if k in marks:
            saved[k] = params
    first = saved[1]
    weights = [2.0**-h for h in range(1, firms.setup.halvings + 1)]
    with torch.no_grad():
        stacked = {
            name: torch.cat(
                [saved[k][name] for k in marks]
                + [old[name] + w * (first[name] - old[name]) for w in weights]
            )
            for name in old
        }
    return stacked, [k / total for k in marks] + [w / total for w in weights]


def _defection_free_round(
    firms: TorchNFirms, q: np.ndarray, target: np.ndarray
) -> tuple[np.ndarray, np.ndarray]:
    """One round of the rule (module docstring); the new qualities and the fractions kept."""
    old = firms.params
    candidates, fractions = _candidates(firms, old, q)
    measured = firms.measure(candidates).reshape(len(fractions), q.size)
    cap = n_firm_step(q, target, pace=firms.setup.pace, revenues=uniform_revenues)
    pick = _choose(measured, q, cap, market_round(target).revenue)
    firm = np.arange(q.size)
    rows = np.where(pick >= 0, pick * q.size + firm, firm)
    kept = np.where(pick >= 0, np.asarray(fractions)[np.maximum(pick, 0)], 0.0)
    index = torch.from_numpy(rows).to(firms.x.device)
    firms.params = {k: torch.where(_mask(kept, v), candidates[k][index], v) for k, v in old.items()}
    return np.where(pick >= 0, measured[np.maximum(pick, 0), firm], q), kept


def _choose(
    measured: np.ndarray, q: np.ndarray, cap: np.ndarray, bargain: np.ndarray
) -> np.ndarray:
    r"""Each firm's candidate (its row of ``measured``, most training first; -1: it stays).

    ``measured[c, i]`` is firm ``i``'s candidate ``c`` on the target, ``cap`` the rule's
    next qualities, ``bargain`` the revenues at :math:`q^*`. A choice is allowed when no
    revenue is below its value at :math:`q_t`; the top firm chooses first, and its own step
    may not lift its revenue above :math:`\max(R_{top}(q^*), R_{top}(q_t))`; then the others
    move jointly (:func:`_joint`), then each from the top down (module docstring).
    """
    floor = market_round(q).revenue
    usable = (measured >= q) & (measured <= cap)
    pick = np.full(q.size, -1)
    order = np.argsort(-q, kind="stable")
    top = int(order[0])
    unbounded = np.full(q.size, np.inf)

    def point(choice: np.ndarray) -> np.ndarray:
        return np.where(choice >= 0, measured[np.maximum(choice, 0), np.arange(q.size)], q)

    def allowed(choice: np.ndarray, ceiling: np.ndarray = unbounded) -> bool:
        r = market_round(point(choice)).revenue
        return bool(np.all(r >= floor) and np.all(r <= ceiling))

    def most_training(i: int, at_least: float, ceiling: np.ndarray = unbounded) -> None:
        for j in np.flatnonzero(usable[:, i] & (measured[:, i] >= at_least)):
            trial = pick.copy()
            trial[i] = j
            if allowed(trial, ceiling):
                pick[i] = j
                return

    ceiling = unbounded.copy()
    ceiling[top] = max(floor[top], bargain[top])
    most_training(top, q[top], ceiling)
    pick[:] = _joint(measured, usable, q, cap, pick, allowed)
    for i in order[1:]:
        most_training(int(i), point(pick)[i])
    return pick


def _joint(
    measured: np.ndarray,
    usable: np.ndarray,
    q: np.ndarray,
    cap: np.ndarray,
    pick: np.ndarray,
    allowed: Callable[[np.ndarray], bool],
    grid: int = 64,
) -> np.ndarray:
    r"""The firms without a pick move together: the largest joint step allowed.

    For :math:`s = 1, 1 - 1/g, \dots, 1/g`, each such firm takes its usable candidate with
    the highest measured quality at most :math:`q_i + s (c_i - q_i)` (most training among
    equals; none: it stays); the first :math:`s` whose point lowers no revenue is kept.
    """
    free = np.flatnonzero(pick < 0)
    for s in np.arange(grid, 0, -1) / grid:
        trial = pick.copy()
        for i in free:
            fits = np.flatnonzero(usable[:, i] & (measured[:, i] <= q[i] + s * (cap[i] - q[i])))
            if fits.size:
                trial[i] = fits[np.argmax(measured[fits, i])]
        if allowed(trial):
            return trial
    return pick


def _mask(kept: np.ndarray, like: torch.Tensor) -> torch.Tensor:
    """``kept > 0`` shaped to broadcast over a stacked parameter."""
    flags = torch.from_numpy(kept > 0).to(like.device)
    return flags.reshape(-1, *([1] * (like.dim() - 1)))


def _play(
    firms: TorchNFirms, rounds: int, scheme: str, target: np.ndarray
) -> tuple[np.ndarray, np.ndarray]:
    """Measured qualities ``(rounds + 1, n)`` and weights kept ``(rounds, n)``.

    The defection-free rule towards ``target``; any other scheme keeps every step of its
    sharing matrix (:func:`sharing` of the starting qualities).
    """
    q = [firms.measure()]
    share = sharing(scheme, q[0])
    kept = []
    for _ in range(rounds):
        if scheme == "defection-free":
            nxt, w = _defection_free_round(firms, q[-1], target)
            q.append(nxt)
            kept.append(w)
        else:
            firms.params = firms.epoch(firms.params, share)
            q.append(firms.measure())
            kept.append(np.ones(q[0].size))
    return np.array(q), np.array(kept)


def _run(
    scheme: str,
    path: tuple[np.ndarray, np.ndarray],
    q_max: float,
    target: np.ndarray,
    firms: TorchNFirms,
) -> NFirmRun:
    qualities, kept = path
    markets = [market_round(row) for row in qualities]
    return NFirmRun(
        scheme=scheme,
        qualities=qualities,
        revenues=np.array([m.revenue for m in markets]),
        welfare=np.array([m.welfare for m in markets]),
        consumer_surplus=np.array([m.consumer_surplus for m in markets]),
        kept=kept,
        q_max=q_max,
        target=target,
        firms=firms,
    )


def run_n_firms(
    firms: TorchNFirms,
    rounds: int,
    *,
    schemes: tuple[str, ...] = N_SCHEMES,
    q_max: float | None = None,
    seed: int | np.random.Generator | None = None,
    progress: Callable[[str], None] = lambda _: None,
) -> dict[str, NFirmRun]:
    r"""Play each of ``schemes`` for ``rounds`` rounds on its own fork of ``firms``.

    Parameters
    ----------
    q_max
        :math:`Q` of the bargain; None estimates it as the best quality of a complete run
        for the same rounds from the same start (that run is also ``"complete"``'s result).
    seed
        The minibatch streams, one child per scheme.
    progress
        Called with a short text as each scheme starts.

    Raises
    ------
    ValueError
        An unknown scheme, ``rounds`` < 1, or ``q_max`` outside (0, 1] or below a starting
        quality.

    References
    ----------
    Werner (2024), ch. 3, §3.4, Algorithm 5 and Proposition 3 (for n firms,
    :mod:`games.defection_free.n_firms`); §3.5, the experiment.
    """
    for name in schemes:
        choice("scheme", name, N_SCHEMES)
    rounds = positive_int("rounds", rounds)
    streams = dict(zip(N_SCHEMES, np.random.default_rng(seed).spawn(len(N_SCHEMES)), strict=True))
    start = firms.measure()
    if q_max is not None:
        in_interval("q_max", q_max, 0.0, 1.0, low_open=True)
        if q_max < start.max():
            raise ValueError(
                f"q_max must be at least the best starting quality {start.max():.6g}, got {q_max}"
            )
    paths: dict[str, tuple[np.ndarray, np.ndarray]] = {}
    ends: dict[str, TorchNFirms] = {}

    def play(scheme: str, target: np.ndarray) -> None:
        progress(f"{scheme} ({rounds} rounds)")
        ends[scheme] = firms.fork(streams[scheme])
        paths[scheme] = _play(ends[scheme], rounds, scheme, target)

    if q_max is None or "complete" in schemes:
        play("complete", np.empty(0))
    if q_max is None:
        pooled = [
            ModelQualities.from_mapping({"best": float(r.max())}) for r in paths["complete"][0]
        ]
        q_max = estimate_q_max(pooled, float(start.max()))
    target = quality_bargaining(start, q_max=q_max, revenues=uniform_revenues).quality
    for scheme in dict.fromkeys(schemes):
        if scheme != "complete":
            play(scheme, target)
    return {s: _run(s, paths[s], float(q_max), target, ends[s]) for s in schemes}
