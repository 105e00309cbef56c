r"""Two competing firms that really train: the driver of the collaboration schemes.

The thesis's experiment (Werner 2024, ch. 3, §3.5, p. 69): two firms with LeNet-5 on
label-skewed MNIST (the low firm's labels have :math:`\hat F(5) = 0.8`, the high firm's
0.2; :func:`learning.partition.label_cdf`), a common balanced target set held out from both,
the high firm pre-trained on its own data. A model's quality is its accuracy on the target
(or one minus its normalised loss), turned into :class:`econ.qualities.ModelQualities` by
:mod:`learning.qualities`.

:class:`TorchFirms` implements :class:`games.defection_free.Firms`, so the pure decision
rules of :mod:`games.defection_free` drive real training, round by round:

* a *joint* step is SGD on the averaged loss :math:`(f(x; l) + f(x; h))/2` (eq. 3.1): each
  minibatch holds ``batch_size`` examples of each firm, and a round is one pass
  (:math:`\lceil n / B \rceil` steps, as the authors' code);
* a step *alone* is one epoch of SGD on the firm's own data;
* the low firm's capped raise (``inner="gd"``) takes joint gradient steps,
  halving a step while it would pass the cap, and ends at the best model it met, so the
  measured quality rises towards the cap and never passes it;
* ``inner="oracle"`` leaves the low model untrained and sets its quality to the cap, the
  quality-level simulation of the authors' code behind the thesis's Figure 3.3.

:func:`learning.drivers.defection_free_schemes.run_schemes` plays the schemes on them.
"""

from __future__ import annotations

import copy
import math
from dataclasses import dataclass, field, replace

import numpy as np
import torch

from econ.qualities import METRICS, ModelQualities, baseline_loss
from econ.validation import choice, non_negative, positive, positive_int
from games.defection_free import (
    HighMove,
    paced_step_size,
    raise_to_cap,
)
from learning.data import Dataset, load_dataset
from learning.device import resolve_device
from learning.engine import BatchedEngine, Evaluation, Params, Task, parameters_of, sample_batches
from learning.loop import check_loss, divergence_limit
from learning.models import build_model
from learning.optim import float32_step
from learning.partition import label_cdf
from learning.qualities import qualities_from_evaluation
from learning.rng import torch_generator

__all__ = ["DuopolySetup", "TorchFirms", "check_split", "split_data"]

_NAMES = ("low", "high")
#: How many parameter sets' evaluations on the common target set a :class:`TorchFirms` keeps.
_EVALUATIONS_KEPT = 16


@dataclass(frozen=True, slots=True)
class DuopolySetup:
    """The experiment of §3.5 (defaults: the thesis's, on the embedded ``mnist5k``).

    Attributes
    ----------
    dataset, data_dir
        A dataset of :func:`learning.data.load_dataset` (``mnist`` needs ``data_dir``).
    split
        ``"paper"`` (exactly 80/20 and 20/80 below/above label 5) or ``"code"`` (the
        authors' prefix rule), see :func:`learning.partition.label_cdf`.
    size
        Examples per firm (1000 in the thesis).
    target_per_class
        The balanced target set: this many held-out examples of each class.
    model, lr, batch_size
        LeNet-5, plain SGD at 0.01, minibatches of 256 (per firm in a joint step).
    init_epochs
        Epochs each firm trains alone before collaboration: ``(low, high)``.
    metric
        ``"accuracy"`` or ``"1-loss"`` on the target.
    max_inner, max_halvings
        The low firm's capped raise: at most ``max_inner`` gradient steps per round, each
        halved at most ``max_halvings`` times.
    heldout
        Keep a held-out set (:attr:`TorchFirms.heldout`), drawn like the target: of the
        examples that neither firm nor the target holds, the same number of each class, as
        many as the scarcest class has left. The models' qualities on it are measured apart
        from the target, on the target's (balanced) distribution.
    """

    dataset: str = "mnist5k"
    data_dir: str | None = None
    split: str = "paper"
    size: int = 1000
    target_per_class: int = 200
    model: str = "lenet5"
    lr: float = 0.01
    batch_size: int = 256
    init_epochs: tuple[int, int] = (0, 10)
    metric: str = "accuracy"
    max_inner: int = 40
    max_halvings: int = 6
    heldout: bool = False

    def __post_init__(self) -> None:
        """Check the choices, the positive counts and ``lr``, and the two ``init_epochs``.

        Raises
        ------
        ValueError
            An unknown ``split`` or ``metric``, a count or ``lr`` that is not positive (or an
            ``lr`` beyond float32), or ``init_epochs`` not a pair of non-negative numbers.
        """
        choice("split", self.split, ("paper", "code"))
        choice("metric", self.metric, METRICS)
        for name in ("size", "target_per_class", "batch_size", "max_inner", "max_halvings"):
            positive_int(name, getattr(self, name))
        positive("lr", self.lr)
        float32_step("lr", self.lr)
        if len(self.init_epochs) != 2:
            raise ValueError(f"init_epochs must be (low, high), got {self.init_epochs!r}")
        non_negative("init_epochs", self.init_epochs)


def split_data(
    data: Dataset, setup: DuopolySetup, rng: np.random.Generator
) -> tuple[list[np.ndarray], np.ndarray]:
    """The two firms' indices (label-CDF shares 0.8 and 0.2) and a balanced held-out target."""
    firms = label_cdf(data.y, rng, shares=(0.8, 0.2), size=setup.size, split=setup.split)
    rest = np.setdiff1d(np.arange(len(data)), np.concatenate(firms))
    target = []
    for c in range(data.n_classes):
        pool = rest[data.y[rest] == c]
        if pool.size < setup.target_per_class:
            raise ValueError(
                f"target_per_class must be at most {pool.size} (held-out examples of class "
                f"{c}), got {setup.target_per_class}"
            )
        target.append(rng.choice(pool, setup.target_per_class, replace=False))
    return firms, np.concatenate(target)


def _streams(seed: int | np.random.Generator | None) -> list[np.random.Generator]:
    """The three streams of :meth:`TorchFirms.prepare`: the split, the models, the training."""
    return np.random.default_rng(seed).spawn(3)


def _load_and_split(
    setup: DuopolySetup, rng: np.random.Generator
) -> tuple[Dataset, list[np.ndarray], np.ndarray]:
    data = load_dataset(setup.dataset, data_dir=setup.data_dir)
    if data.n_classes < 2:
        raise ValueError(f"the duopoly needs a classification dataset, got {setup.dataset!r}")
    firm_idx, target_idx = split_data(data, setup, rng)
    return data, firm_idx, target_idx


def check_split(setup: DuopolySetup, seed: int | np.random.Generator | None = None) -> None:
    """Refuse, before any training, a setup whose data cannot give the firms and the target.

    Loads the data set and splits it exactly as :meth:`TorchFirms.prepare` does for ``seed``
    (the same stream), so a size or a target larger than the data, or a file that does not
    parse, is an error before the pre-training starts.

    Raises
    ------
    ValueError
        The data set is missing, unreadable or not a classification set, or ``size`` or
        ``target_per_class`` exceeds what its classes hold.
    """
    _load_and_split(setup, _streams(seed)[0])


def _balanced_rest(data: Dataset, taken: list[np.ndarray], rng: np.random.Generator) -> np.ndarray:
    """Of the examples outside ``taken``, the same number of each class (the scarcest's count)."""
    rest = np.setdiff1d(np.arange(len(data)), np.concatenate(taken))
    pools = [rest[data.y[rest] == c] for c in range(data.n_classes)]
    each = min(pool.size for pool in pools)
    if each == 0:
        raise ValueError(
            "heldout needs examples of every class that neither firm nor the target holds"
        )
    return np.concatenate([rng.choice(pool, each, replace=False) for pool in pools])


def _sq_norm(grads: Params) -> float:
    return float(sum(g.double().square().sum() for g in grads.values()))


def _moved(params: Params, grads: Params, step: float) -> Params:
    r"""One SGD step :math:`x - \alpha g`."""
    with torch.no_grad():
        return {k: v - step * grads[k] for k, v in params.items()}


@dataclass
class TorchFirms:
    """Two firms' models and data; implements :class:`games.defection_free.Firms`.

    Build with :meth:`prepare`. ``params`` holds one single-row stacked parameter dict per
    firm (``"low"``, ``"high"``), trained with :class:`learning.engine.BatchedEngine`.

    Training replaces a firm's parameter dict, so a model's evaluation on the common target
    set is computed once and kept for the last :data:`_EVALUATIONS_KEPT` parameter dicts
    (keyed by the dict and the version counters of its tensors, so a change in place is
    evaluated afresh): the end-of-round measurement reuses the evaluations of the round's
    moves, with the same numbers.
    """

    setup: DuopolySetup
    engine: BatchedEngine
    data: dict[str, tuple[torch.Tensor, torch.Tensor]]
    target: tuple[np.ndarray, np.ndarray]
    n_classes: int
    params: dict[str, Params]
    rng: np.random.Generator
    heldout: tuple[np.ndarray, np.ndarray] | None = None
    _previous_high: Params | None = field(default=None, repr=False)
    _previous_low: Params | None = field(default=None, repr=False)
    _evaluations: dict[int, tuple[Params, tuple[int, ...], Evaluation]] = field(
        default_factory=dict, repr=False
    )

    @classmethod
    def prepare(
        cls,
        setup: DuopolySetup,
        seed: int | np.random.Generator | None = None,
        device: str | torch.device | None = None,
    ) -> TorchFirms:
        """Load and split the data, build both models, pre-train them alone (``init_epochs``)."""
        split_rng, init_rng, train_rng = _streams(seed)
        dev = resolve_device(device)
        data, firm_idx, target_idx = _load_and_split(setup, split_rng)
        shape = tuple(data.x.shape[1:])
        generator = torch_generator(init_rng)
        models = [
            build_model(setup.model, shape, data.n_classes, generator=generator) for _ in _NAMES
        ]
        engine = BatchedEngine(models[0], Task.for_classes(data.n_classes), dev)
        firms = cls(
            setup=setup,
            engine=engine,
            data={
                name: (
                    torch.from_numpy(data.x[idx]).to(dev),
                    torch.from_numpy(data.y[idx]).to(dev),
                )
                for name, idx in zip(_NAMES, firm_idx, strict=True)
            },
            target=(data.x[target_idx], data.y[target_idx]),
            n_classes=data.n_classes,
            params={
                name: {k: v.unsqueeze(0).to(dev) for k, v in parameters_of(m).items()}
                for name, m in zip(_NAMES, models, strict=True)
            },
            rng=train_rng,
        )
        if setup.heldout:
            held = _balanced_rest(data, [*firm_idx, target_idx], split_rng)
            firms.heldout = (data.x[held], data.y[held])
        for name, epochs in zip(_NAMES, setup.init_epochs, strict=True):
            for _ in range(int(epochs)):
                firms._epoch(name, joint=False, pace=None)
        return firms

    def fork(self, seed: int | np.random.Generator | None = None) -> TorchFirms:
        """An independent copy of the firms (same models and data), with its own stream."""
        return replace(
            self,
            params={n: {k: v.clone() for k, v in p.items()} for n, p in self.params.items()},
            rng=np.random.default_rng(seed) if seed is not None else copy.deepcopy(self.rng),
            _previous_high=None,
            _previous_low=None,
            _evaluations={},
        )

    # -- qualities
    def _target_evaluation(self, params: Params) -> Evaluation:
        """``params`` evaluated on the common target set, once per parameter dict."""
        versions = tuple(t._version for t in params.values())
        kept = self._evaluations.pop(id(params), None)
        if kept is not None and kept[0] is params and kept[1] == versions:
            evaluation = kept[2]
        else:
            x, y = self.target
            evaluation = self.engine.evaluate_on(params, x, y)
        self._evaluations[id(params)] = (params, versions, evaluation)
        while len(self._evaluations) > _EVALUATIONS_KEPT:
            del self._evaluations[next(iter(self._evaluations))]
        return evaluation

    def _qualities(self, params: Params, names: tuple[str, ...]) -> ModelQualities:
        return qualities_from_evaluation(
            self._target_evaluation(params),
            names,
            metric=self.setup.metric,
            baseline_loss=baseline_loss(self.target[1], self.n_classes),
        )

    def qualities_on(
        self, target: tuple[np.ndarray, np.ndarray] | None = None, *, metric: str | None = None
    ) -> ModelQualities:
        """Both firms' current models evaluated on ``target`` with ``metric``.

        ``target`` defaults to the common target set and ``metric`` to the setup's; the
        evaluation is the one :mod:`learning.qualities` defines.
        """
        metric = self.setup.metric if metric is None else choice("metric", metric, METRICS)
        x, y = self.target if target is None else target
        if len(x) == 0 or len(x) != len(y):
            raise ValueError(
                f"target must be (x, y) of equal non-zero lengths, got {len(x)} and {len(y)}"
            )

        def evaluate(params: Params) -> Evaluation:
            if target is None:
                return self._target_evaluation(params)
            return self.engine.evaluate_on(params, np.asarray(x), np.asarray(y))

        each = [
            qualities_from_evaluation(
                evaluate(self.params[n]),
                (n,),
                metric=metric,
                baseline_loss=baseline_loss(y, self.n_classes),
            )
            for n in _NAMES
        ]
        return ModelQualities(
            names=_NAMES,
            quality=np.concatenate([m.quality for m in each]),
            metric=metric,
            n_eval=np.concatenate([m.n_eval for m in each]),
        )

    def _quality(self, params: Params) -> float:
        return float(self._qualities(params, ("low",)).quality[0])

    def measure(self) -> ModelQualities:
        """Both firms' qualities on the common target set, each model evaluated alone.

        As in :meth:`raise_low`, so that the numbers compared across calls come from the same
        computation.
        """
        return self.qualities_on()

    # -- training
    def _batch(
        self, name: str, joint: bool, rows: dict[str, np.ndarray]
    ) -> tuple[torch.Tensor, torch.Tensor]:
        parts = _NAMES if joint else (name,)
        xs = [self.data[p][0][torch.from_numpy(rows[p])] for p in parts]
        ys = [self.data[p][1][torch.from_numpy(rows[p])] for p in parts]
        return torch.cat(xs).unsqueeze(0), torch.cat(ys).unsqueeze(0)

    def _gradient(
        self, params: Params, name: str, joint: bool, rows: dict[str, np.ndarray]
    ) -> Params:
        x, y = self._batch(name, joint, rows)
        grads, loss = self.engine.gradients(params, x, y)
        self._check_loss(name, float(loss.sum()))
        return grads

    def _check_loss(self, name: str, value: float) -> None:
        """Stop on a diverged minibatch loss of firm ``name`` (:func:`learning.loop.check_loss`).

        The limit is :func:`learning.loop.divergence_limit` of ``log(n_classes)``, the loss of
        a uniform guess.
        """
        check_loss(
            f"the minibatch loss of the {name} firm",
            value,
            None,
            self.setup.lr,
            divergence_limit(math.log(self.n_classes)),
        )

    def _size(self, name: str) -> int:
        """How many training examples firm ``name`` holds."""
        return int(self.data[name][1].shape[0])

    def _rows(self, steps: int) -> dict[str, np.ndarray]:
        """Minibatch positions ``(steps, batch_size)`` within each firm's data."""
        sizes = np.array([self._size(n) for n in _NAMES])
        picks = sample_batches(sizes, steps, self.setup.batch_size, self.rng)
        return {n: picks[i] for i, n in enumerate(_NAMES)}

    def _epoch(self, name: str, joint: bool, pace: float | None) -> None:
        """One pass of SGD for firm ``name``: on the joint objective or on its own data."""
        steps = -(-self._size(name) // self.setup.batch_size)
        rows = self._rows(steps)
        params = self.params[name]
        quality = self._quality(params) if pace is not None else 0.0
        for s in range(steps):
            grads = self._gradient(params, name, joint, {n: r[s] for n, r in rows.items()})
            lr = (
                paced_step_size(pace, quality, _sq_norm(grads), self.setup.lr)
                if pace is not None
                else self.setup.lr
            )
            params = _moved(params, grads, lr)
        self.params[name] = params

    def step_high(self, move: HighMove) -> None:
        r"""One round of the high firm's training as ``move`` says.

        One pass of SGD (:math:`\lceil n / B \rceil` steps) on the joint objective when
        ``move.joint``, else on the high firm's own data. With ``move.pace`` every step has the
        size :func:`games.defection_free.paced_step_size` gives for the quality at the start of
        the round, at most ``lr`` (Werner 2024, ch. 3, §3.7, proof of Proposition 5); without it
        every step is ``lr``. The model before the round is kept for :meth:`undo_high`.
        """
        self._previous_high = self.params["high"]
        self._epoch("high", move.joint, move.pace)

    def undo_high(self) -> None:
        """Return the high firm to its model before the last :meth:`step_high`.

        Raises
        ------
        ValueError
            No :meth:`step_high` came before.
        """
        if self._previous_high is None:
            raise ValueError("undo_high needs a step_high before it")
        self.params["high"] = self._previous_high

    def step_low(self, joint: bool) -> None:
        """One free round of the low firm's training (no cap).

        One pass of SGD with steps of ``lr``, on the joint objective when ``joint``, else on
        the low firm's own data.
        """
        self._epoch("low", joint, None)

    def raise_low(self, cap: float, inner: str) -> None:
        """Joint SGD steps towards ``cap``; the low firm ends at its best model not past it.

        :func:`games.defection_free.raise_to_cap` with steps of ``lr``: each step starts at
        ``lr`` (or the last halved size) and is halved while it would pass the cap; a step
        that lowers the quality is kept as a waypoint (accuracy is not monotone along SGD),
        but the firm ends at the best model seen, whose quality lies in
        ``[q_{l,t-1}, cap]``. ``inner="while"`` is Algorithm 5's printed loop: steps of
        ``lr`` while ``q <= cap``, which ends past the cap.
        """
        rows = self._rows(self.setup.max_inner)
        self._previous_low = self.params["low"]
        self.params["low"] = raise_to_cap(
            self.params["low"],
            cap,
            inner,
            quality=self._quality,
            gradient=lambda p, s: self._gradient(
                p, "low", True, {n: r[s] for n, r in rows.items()}
            ),
            moved=_moved,
            step=self.setup.lr,
            max_steps=self.setup.max_inner,
            max_halvings=self.setup.max_halvings,
            monotone=False,
        )

    def undo_low(self) -> None:
        """Return the low firm to its model before the last :meth:`raise_low`.

        Raises
        ------
        ValueError
            No :meth:`raise_low` came before.
        """
        if self._previous_low is None:
            raise ValueError("undo_low needs a raise_low before it")
        self.params["low"] = self._previous_low
