r"""Algorithm 5 on measured accuracies: no true revenue falls, with probability at least 1 - alpha.

Werner (2024), ch. 3, §3.4 (p. 64) proves Proposition 3 (no firm's revenue falls) for exact
qualities, and the Future Directions of its ch. 5 (Conclusion, part II) note that it "only
consider[s] the non-stochastic setting". Here each quality is an accuracy measured on the :math:`n` examples
of the common target set, and the rule acts only on what the measurements certify.

**Bounds.** Every measured model gets a two-sided Clopper-Pearson interval
(:func:`econ.qualities.clopper_pearson_interval`) at level :math:`1 - \delta` with
:math:`\delta = \alpha / (2R + 2)`: a run of :math:`R` rounds measures two models at the
start and at most two new ones a round (the high firm's candidate, the low firm's), so by
the union bound every interval of the run covers its true accuracy with probability at least
:math:`1 - \alpha`. The change between two models is bounded from their two intervals,
:math:`q' - q \in [\underline q' - \overline q, \overline q' - \underline q]`. A paired bound
on the per-example differences would be tighter, but the driver keeps only each model's
accuracy (:class:`learning.engine.Evaluation`), so the marginal bound is the one that holds
for every pair of models with no further assumption.

**Rule.** With :math:`(a, b)` the low and high firm's models and :math:`\bar\rho =
\min(\rho^*, 4/7)`:

1. the high firm keeps its candidate :math:`b'` only when the rise clears zero,
   :math:`d_- = \underline b' - \overline b > 0` (else it keeps :math:`b` and the low firm
   waits);
2. the low firm keeps its candidate :math:`a'` only when its rise clears zero,
   :math:`\underline a' > \overline a`, and its upper end stays under the cap
   :math:`\overline a' \le \min(\underline a + d_- M(\bar\rho),\ \bar\rho\,\underline b',\
   q_l^*)`, with :math:`M` of :func:`revenue_exchange_rate`.

**Why no revenue falls.** On the event that all intervals cover: :math:`b' - b \ge d_- > 0`
and :math:`0 < a' - a \le d_- M(\bar\rho)`, :math:`a'/b' \le \bar\rho`. :math:`U_h = q_h
g(\rho)` of eq. (3.4) is concave on :math:`0 \le q_l \le q_h` (:math:`g'' < 0`), so
:math:`U_h(a', b') - U_h(a, b) \ge -\partial_l U_h(a', b')\,(d M(\rho') - e)`
(:math:`e = a' - a`, :math:`d = b' - b`), which is non-negative because :math:`M` falls in
:math:`\rho` and :math:`\rho' \le \bar\rho`. :math:`U_l = q_h f(\rho)` rises with
:math:`q_h` everywhere and with :math:`q_l` while :math:`\rho \le 4/7`, so the path
:math:`(a, b) \to (a, b') \to (a', b')` raises it. A firm that keeps its model keeps its
revenue term unchanged.

:func:`simulate` plays the rule on true accuracies with binomial measurements and
:func:`play_noisy` on firms that train (the torch driver); the statement is registered as
``thesis.ch3.prop3.noisy`` in :mod:`games.defection_free.noisy_propositions`.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from functools import lru_cache
from typing import Any, Protocol

import numpy as np
from numpy.typing import ArrayLike, NDArray

from econ import bargaining, duopoly
from econ.outputs import plain
from econ.qualities import ModelQualities, clopper_pearson_interval
from econ.validation import choice, in_interval, positive_int
from games.defection_free.play import Firms, Play
from games.defection_free.rules import HighMove

#: How a measured accuracy is bounded: ``"clopper-pearson"`` (the guarantee) or ``"point"``
#: (the point estimate as both ends: no guarantee, the rule of exact qualities).
BOUNDS = ("clopper-pearson", "point")

#: The ratio below which the low firm's revenue rises with its quality (eq. 3.4:
#: :math:`\partial U_l/\partial q_l \propto 4 - 7\rho`).
RHO_RISING = 4.0 / 7.0


def revenue_exchange_rate(rho: ArrayLike) -> Any:
    r"""How much the low firm may rise per unit rise of the high firm, at ratio :math:`\rho`.

    .. math:: M(\rho) = \frac{\partial U_h/\partial q_h}{-\partial U_h/\partial q_l}
              = \frac{4 - 3\rho + 2\rho^2}{2 + \rho},

    from :math:`U_h = 4 q_h^2 (q_h - q_l)/(4 q_h - q_l)^2` (eq. 3.4); it falls from 2 at
    :math:`\rho = 0` to 1 at :math:`\rho = 1`.

    References
    ----------
    Werner (2024), ch. 3, §3.2, Lemma 22, eq. (3.4).

    Examples
    --------
    >>> float(revenue_exchange_rate(0.5))
    1.2
    """
    r = np.asarray(rho, dtype=np.float64)
    out = (4.0 - 3.0 * r + 2.0 * r * r) / (2.0 + r)
    return float(out) if out.ndim == 0 else out


def per_model_miss(alpha: float, rounds: int) -> float:
    r"""The miss probability :math:`\delta = \alpha/(2R + 2)` of each measured model's interval.

    Two models at the start and at most two a round: the union bound over them gives the
    whole run's :math:`1 - \alpha`.

    References
    ----------
    Werner (2024), ch. 3, §3.4 (p. 64), Algorithm 5 and Proposition 3; the bound is the
    toolkit's (``thesis.ch3.prop3.noisy``).
    """
    in_interval("alpha", alpha, 0.0, 1.0, low_open=True, high_open=True)
    return alpha / (2 * positive_int("rounds", rounds) + 2)


@lru_cache(maxsize=16)
def _table(n: int, delta: float, bound: str) -> tuple[NDArray[np.float64], NDArray[np.float64]]:
    """The interval ends of every hit count ``0 .. n``."""
    k = np.arange(n + 1)
    if bound == "point":
        low = high = k / n
    else:
        low, high = clopper_pearson_interval(k, n, 1.0 - delta)
    low.setflags(write=False)
    high.setflags(write=False)
    return low, high


@dataclass(frozen=True, slots=True)
class NoisyRule:
    r"""Algorithm 5 on accuracies measured on ``n_eval`` target examples (module docstring).

    Attributes
    ----------
    rho_star, q_l_star
        The Nash bargaining ratio and low quality (:func:`econ.bargaining.duopoly_nash_solution`).
    n_eval
        Target examples behind every accuracy.
    alpha
        The run's failure probability; each interval misses with :math:`\alpha/(2R+2)`.
    rounds
        :math:`R`.
    bound
        One of :data:`BOUNDS`.

    References
    ----------
    Werner (2024), ch. 3, §3.4 (p. 64), Algorithm 5 and Proposition 3 (exact qualities); the
    noisy rule and its guarantee are the toolkit's (``thesis.ch3.prop3.noisy``).
    """

    rho_star: float
    q_l_star: float
    n_eval: int
    alpha: float
    rounds: int
    bound: str = "clopper-pearson"

    def __post_init__(self) -> None:
        """Check the ratio, the count, ``alpha`` and the bound."""
        in_interval("rho_star", self.rho_star, 0.0, 1.0)
        in_interval("q_l_star", self.q_l_star, 0.0, 1.0)
        positive_int("n_eval", self.n_eval)
        per_model_miss(self.alpha, self.rounds)
        choice("bound", self.bound, BOUNDS)

    @classmethod
    def from_start(
        cls,
        q_l0: float,
        q_h0: float,
        q_max: float,
        n_eval: int,
        alpha: float,
        rounds: int,
        bound: str = "clopper-pearson",
    ) -> NoisyRule:
        """The rule for the start ``(q_l0, q_h0)`` and best quality ``q_max`` (Proposition 2)."""
        sol = bargaining.duopoly_nash_solution(q_l0, q_h0, q_max, allow_lower=True)
        return cls(float(sol.rho_star), float(sol.q_l_star), n_eval, alpha, rounds, bound)

    @property
    def delta(self) -> float:
        """Each measured model's miss probability (:func:`per_model_miss`)."""
        return per_model_miss(self.alpha, self.rounds)

    @property
    def rho_cap(self) -> float:
        r""":math:`\bar\rho = \min(\rho^*, 4/7)`."""
        return min(self.rho_star, RHO_RISING)

    def interval(self, hits: ArrayLike) -> tuple[NDArray[np.float64], NDArray[np.float64]]:
        """The interval ends of the accuracies ``hits / n_eval``."""
        low, high = _table(self.n_eval, self.delta, self.bound)
        k = np.asarray(hits, dtype=np.int64)
        return low[k], high[k]

    def high_rise(self, k_prev: ArrayLike, k_new: ArrayLike) -> NDArray[np.float64]:
        r"""The certified rise :math:`d_- = \underline b' - \overline b` of the high firm.

        The high firm keeps its candidate only where it is positive.
        """
        return self.interval(k_new)[0] - self.interval(k_prev)[1]

    def low_range(
        self, k_low: ArrayLike, k_high_prev: ArrayLike, k_high_new: ArrayLike
    ) -> tuple[NDArray[np.int64], NDArray[np.int64]]:
        r"""The hit counts ``k_min .. k_max`` of a low candidate the rule keeps (maybe empty).

        :math:`\underline a' > \overline a` and :math:`\overline a' \le \min(\underline a +
        d_- M(\bar\rho), \bar\rho\,\underline b', q_l^*)`; empty where :math:`d_- \le 0`.
        """
        low, high = _table(self.n_eval, self.delta, self.bound)
        a_lo, a_hi = self.interval(k_low)
        d = self.high_rise(k_high_prev, k_high_new)
        b_lo = self.interval(k_high_new)[0]
        rise = a_lo + d * revenue_exchange_rate(self.rho_cap)
        ceiling = np.minimum(np.minimum(rise, self.rho_cap * b_lo), self.q_l_star)
        k_min = np.searchsorted(low, a_hi, side="right")
        k_max = np.where(d > 0, np.searchsorted(high, ceiling, side="right") - 1, -1)
        return k_min.astype(np.int64), np.asarray(k_max, dtype=np.int64)


def firm_revenues(
    q_l: ArrayLike, q_h: ArrayLike
) -> tuple[NDArray[np.float64], NDArray[np.float64]]:
    """Revenues of the firm that started low and of the other, the better model selling high.

    Vectorised :func:`games.defection_free.market_path` revenues (eq. 3.4 with the roles of
    the round).

    References
    ----------
    Werner (2024), ch. 3, §3.2, Lemma 22, eq. (3.4).
    """
    a, b = np.broadcast_arrays(np.asarray(q_l, float), np.asarray(q_h, float))
    u_lo, u_hi = duopoly.revenues(np.minimum(a, b), np.maximum(a, b))
    swapped = a > b
    return np.where(swapped, u_hi, u_lo), np.where(swapped, u_lo, u_hi)


@dataclass(frozen=True, slots=True)
class NoisySimulation:
    """Many simulated runs of :class:`NoisyRule`: where a true or a measured revenue fell.

    ``true_drop[i]``: run ``i`` had a round where a revenue under the true accuracies fell;
    ``measured_drop[i]``: the same under the measured ones. ``moves_high``/``moves_low``:
    rounds where each firm kept its candidate, summed over runs.

    References
    ----------
    Werner (2024), ch. 3, §3.4 (p. 64), Algorithm 5 and Proposition 3; the bound is the
    toolkit's (``thesis.ch3.prop3.noisy``).
    """

    true_drop: NDArray[np.bool_]
    measured_drop: NDArray[np.bool_]
    moves_high: int
    moves_low: int

    @property
    def true_frequency(self) -> float:
        """Share of runs with a true revenue drop."""
        return float(self.true_drop.mean())

    @property
    def measured_frequency(self) -> float:
        """Share of runs with a measured revenue drop."""
        return float(self.measured_drop.mean())

    def to_dict(self) -> dict[str, Any]:
        """JSON-ready: the runs, both drop frequencies and the kept moves."""
        return plain(
            {
                "runs": int(self.true_drop.size),
                "true_drop_frequency": self.true_frequency,
                "measured_drop_frequency": self.measured_frequency,
                "moves_high": self.moves_high,
                "moves_low": self.moves_low,
            }
        )


def _falls(before: tuple[NDArray, NDArray], after: tuple[NDArray, NDArray]) -> NDArray[np.bool_]:
    return np.asarray((after[0] < before[0] - 1e-12) | (after[1] < before[1] - 1e-12))


def simulate(
    rule: NoisyRule,
    q_l0: float,
    q_h0: float,
    *,
    runs: int,
    rng: np.random.Generator,
    q_max: float = 1.0,
    high_step: tuple[float, float] = (-0.02, 0.08),
    low_reach: tuple[float, float] = (0.5, 1.1),
) -> NoisySimulation:
    r"""Play ``rule`` for ``rule.rounds`` rounds on true accuracies, ``runs`` times at once.

    Each round the high firm's candidate has true accuracy :math:`b + U(\text{high_step})`
    (clipped to :math:`[0, Q]`; a step may lower it, as SGD may) and the low firm's aims at
    the largest accuracy the rule would keep, :math:`a + u\,(k_{max}/n - a)` with :math:`u
    \sim U(\text{low_reach})` (it may overshoot). Every model is measured once, its hit count
    :math:`\mathrm{Binomial}(n, q)`; the rule keeps or rejects each candidate from the
    counts alone.

    References
    ----------
    Werner (2024), ch. 3, §3.4, Algorithm 5 (the quality-level simulation of §3.5, here with
    measured accuracies).
    """
    positive_int("runs", runs)
    if not 0.0 <= q_l0 < q_h0 <= q_max <= 1.0:
        raise ValueError(f"need 0 <= q_l0 < q_h0 <= q_max <= 1, got {q_l0}, {q_h0}, {q_max}")
    n = rule.n_eval
    a, b = np.full(runs, float(q_l0)), np.full(runs, float(q_h0))
    k_a, k_b = rng.binomial(n, a), rng.binomial(n, b)
    true_drop = np.zeros(runs, dtype=bool)
    measured_drop = np.zeros(runs, dtype=bool)
    moves_high = moves_low = 0
    for _ in range(rule.rounds):
        true_before, measured_before = firm_revenues(a, b), firm_revenues(k_a / n, k_b / n)
        b_c = np.clip(b + rng.uniform(*high_step, runs), 0.0, q_max)
        k_bc = rng.binomial(n, b_c)
        up = rule.high_rise(k_b, k_bc) > 0
        k_min, k_max = rule.low_range(k_a, k_b, k_bc)
        aim = np.clip(a + rng.uniform(*low_reach, runs) * (np.maximum(k_max, 0) / n - a), 0, 1)
        k_ac = rng.binomial(n, aim)
        keep_low = up & (k_min <= k_max) & (k_min <= k_ac) & (k_ac <= k_max)
        a, k_a = np.where(keep_low, aim, a), np.where(keep_low, k_ac, k_a)
        b, k_b = np.where(up, b_c, b), np.where(up, k_bc, k_b)
        moves_high += int(up.sum())
        moves_low += int(keep_low.sum())
        true_drop |= _falls(true_before, firm_revenues(a, b))
        measured_drop |= _falls(measured_before, firm_revenues(k_a / n, k_b / n))
    return NoisySimulation(true_drop, measured_drop, moves_high, moves_low)


class UndoableFirms(Firms, Protocol):
    """:class:`~games.defection_free.Firms` that can also withdraw the low firm's last raise.

    References
    ----------
    Werner (2024), ch. 3, §3.4 (p. 64), Algorithm 5 (the two models it updates).
    """

    def undo_low(self) -> None:
        """Return the low firm to its model before the last :meth:`raise_low`."""
        ...


def hit_counts(measured: ModelQualities, n_eval: int) -> tuple[int, int]:
    """The hit counts ``(low, high)`` behind two accuracies measured on ``n_eval`` examples.

    References
    ----------
    Werner (2024), ch. 3, §3.5: a model's quality is its accuracy on the target set.
    """
    if measured.metric != "accuracy" or (measured.n_eval != n_eval).any():
        raise ValueError(
            f"the noisy rule needs accuracies on {n_eval} examples, got {measured.metric!r} on "
            f"{measured.n_eval.tolist()}"
        )
    k = np.rint(measured.quality * n_eval).astype(np.int64)
    return int(k[measured.names.index("low")]), int(k[measured.names.index("high")])


def play_noisy(
    rule: NoisyRule,
    firms: UndoableFirms,
    *,
    inner: str = "gd",
    observe: Callable[[], ModelQualities] | None = None,
) -> tuple[Play, tuple[ModelQualities, ...]]:
    r"""Play :class:`NoisyRule` for ``rule.rounds`` rounds on firms that train.

    Each round the high firm takes a joint step and keeps it only where
    :meth:`NoisyRule.high_rise` is positive; then the low firm is raised
    (:meth:`~games.defection_free.Firms.raise_low`) towards the largest accuracy the rule
    would keep, :math:`k_{max}/n` of :meth:`NoisyRule.low_range`, and keeps the result only
    when its hit count lies in that range. ``observe`` (for example the models' accuracies on
    a held-out set) is called at the start and after every round; its results come back
    beside the :class:`~games.defection_free.Play`.

    The guarantee of the module docstring takes every measurement as a fresh draw of
    :math:`n` target examples. Here every model is measured on the same target set, the
    rule's choices depend on it, and the low firm's raise compares many models on it and
    keeps the best, so the kept model's accuracy on the target is biased upwards; the union
    bound then covers the candidates only as if each were measured once, which an audit on
    a held-out set (``observe``) checks.

    References
    ----------
    Werner (2024), ch. 3, §3.4 (p. 64), Algorithm 5; ``thesis.ch3.prop3.noisy``.
    """
    n = rule.n_eval
    first = firms.measure()
    k_l, k_h = hit_counts(first, n)
    measured, cap, observed = [first], [np.nan], [] if observe is None else [observe()]
    for _ in range(rule.rounds):
        firms.step_high(HighMove(joint=True))
        k_hc = hit_counts(firms.measure(), n)[1]
        limit = np.nan
        if rule.high_rise(k_h, k_hc) > 0:
            k_min, k_max = (int(x) for x in rule.low_range(k_l, k_h, k_hc))
            if k_min <= k_max:
                limit = k_max / n
                firms.raise_low(limit, inner)
                k_lc = hit_counts(firms.measure(), n)[0]
                if k_min <= k_lc <= k_max:
                    k_l = k_lc
                else:
                    firms.undo_low()
            k_h = k_hc
        else:
            firms.undo_high()
        measured.append(firms.measure())
        cap.append(limit)
        if observe is not None:
            observed.append(observe())
    qualities = np.array([[m["low"], m["high"]] for m in measured])
    run = Play(
        scheme="defection-free",
        q_l=qualities[:, 0],
        q_h=qualities[:, 1],
        cap=np.array(cap),
        hat_q=np.full(len(cap), np.nan),
        measured=tuple(measured),
    )
    return run, tuple(observed)
