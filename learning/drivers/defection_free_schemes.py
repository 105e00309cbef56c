"""The collaboration schemes played by two firms that really train (Werner 2024, ch. 3, §3.5).

:func:`run_schemes` plays each scheme of :mod:`games.defection_free` (complete
collaboration, the one-sided schemes, the defection-free rule of Algorithm 5) on its own
fork of :class:`learning.drivers.defection_free.TorchFirms`, estimating :math:`Q` from a
pooled-training run when it is not given. Each run is reported by
:func:`games.defection_free.report`: revenues, consumer surplus and welfare of the market
(:data:`games.defection_free.REVENUE_CONVENTION`), kept with the firms at its end in a
:class:`DuopolyRun`. :func:`run_noisy` plays the rule on measured accuracies
(:mod:`games.defection_free.noisy`) and audits it on a held-out set as well.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, replace
from typing import Any

import numpy as np

from econ.qualities import ModelQualities
from econ.validation import choice, in_interval, positive_int
from games.defection_free import (
    BOUNDS,
    INNER_MODES,
    SCHEMES,
    AuditComparison,
    CompleteCollaboration,
    DefectionFreeConfig,
    NoisyRule,
    Play,
    PlayReport,
    build_scheme,
    compare_audits,
    estimate_q_max,
    play,
    play_noisy,
    report,
)
from learning.drivers.defection_free import TorchFirms

__all__ = ["DuopolyRun", "NoisyRun", "run_noisy", "run_schemes"]


@dataclass(frozen=True, slots=True)
class DuopolyRun:
    """One scheme on real models: per-round qualities, their economics, the firms at the end.

    The per-round qualities, the economics of them, and the firms at the end of the run.

    Attributes
    ----------
    play
        The qualities of every round (:class:`games.defection_free.Play`).
    report
        :func:`games.defection_free.report` of ``play``.
    firms
        The two firms after the last round: their final models (``firms.params``), data and
        target set; :meth:`qualities` evaluates them.
    """

    play: Play
    report: PlayReport
    firms: TorchFirms

    @property
    def round_qualities(self) -> list[ModelQualities]:
        """The qualities of every round as the market sees them.

        They are the input of :func:`econ.market.market_history`. Round 0 is the start; in the
        ``oracle`` inner mode the low firm's quality is the rule's.
        """
        return self.play.qualities()

    def qualities(
        self, target: tuple[np.ndarray, np.ndarray] | None = None, *, metric: str | None = None
    ) -> ModelQualities:
        """The firms at the end of the run as the parties of a market, in one call.

        Parameters
        ----------
        target : (x, y), optional
            A set the consumers care about. Without it (and without ``metric``), the last
            round's qualities as the run measured them on its common target set (the rule's
            quality for the low firm in the ``oracle`` inner mode, whose model is untrained).
        metric : {"accuracy", "1-loss"}, optional
            With a ``target`` or a metric other than the run's, both final models are
            evaluated (:meth:`learning.drivers.defection_free.TorchFirms.qualities_on`).

        Examples
        --------
        ``econ.market.market_round(run.qualities())`` is the market at the end of the run.
        """
        if target is None and metric in (None, self.firms.setup.metric):
            return self.play.qualities()[-1]
        return self.firms.qualities_on(target, metric=metric)

    def to_dict(self) -> dict[str, Any]:
        """The run's report, JSON-ready (:meth:`games.defection_free.PlayReport.to_dict`)."""
        return self.report.to_dict()


def _rounds(n: int) -> str:
    return f"{n} round" if n == 1 else f"{n} rounds"


def _best_quality(q_max: float | None, q_h0: float, pooled: Play | None) -> float:
    """``q_max`` when given (checked against ``q_h0``), else the estimate from ``pooled``."""
    if q_max is not None:
        in_interval("q_max", q_max, 0.0, 1.0, low_open=True)
        if q_max < q_h0:
            raise ValueError(
                f"q_max must be at least the high firm's starting quality q_h0 = {q_h0:.6g} "
                f"(Q bounds every reachable quality), got {q_max}"
            )
        return float(q_max)
    if pooled is None:
        raise ValueError("estimating Q needs a pooled-training run")
    q = estimate_q_max(pooled.measured, q_h0)
    return float(in_interval("q_max", max(q, q_h0), 0.0, 1.0, low_open=True))


def run_schemes(
    firms: TorchFirms,
    rounds: int,
    *,
    schemes: tuple[str, ...] = SCHEMES,
    q_max: float | None = None,
    config: DefectionFreeConfig | None = None,
    inner: str = "gd",
    train_alone: bool = False,
    seed: int | np.random.Generator | None = None,
    progress: Callable[[str], None] = lambda _: None,
) -> dict[str, DuopolyRun]:
    r"""Run each of ``schemes`` for ``rounds`` rounds on its own fork of ``firms``.

    Parameters
    ----------
    q_max
        :math:`Q` for the Nash bargaining solution. None estimates it from a pooled-training
        run: complete collaboration for the same rounds from the same start (Algorithm 5
        needs :math:`q_l^* = \rho^* Q` with :math:`Q = \max_x q(x)` unknown); that run is
        also the result of ``"complete"``.
    config
        Options of the defection-free rule (its ``q_max`` is replaced by the ``Q`` used).
    inner
        The low firm's capped raise: ``"gd"`` (real training), ``"oracle"`` or ``"while"``.
    train_alone
        In the one-sided schemes, the firm that receives nothing trains on its own data
        each round (the authors' code) instead of staying put (the thesis's assumption
        before Algorithm 5, §3.4).
    seed
        Minibatch streams, one child per scheme.
    progress
        Called with a short text (``"complete (15 rounds)"``) as each scheme starts.
    """
    for name in schemes:
        choice("scheme", name, SCHEMES)
    choice("inner", inner, INNER_MODES)
    rounds = positive_int("rounds", rounds)
    streams = dict(zip(SCHEMES, np.random.default_rng(seed).spawn(len(SCHEMES)), strict=True))
    start = firms.measure()
    q_l0, q_h0 = start["low"], start["high"]
    if q_max is not None:
        _best_quality(q_max, q_h0, None)
    plays: dict[str, Play] = {}
    ends: dict[str, TorchFirms] = {}
    if q_max is None:
        why = "" if "complete" in schemes else ", to estimate Q"
        progress(f"complete ({_rounds(rounds)}{why})")
        ends["complete"] = firms.fork(streams["complete"])
        plays["complete"] = play(CompleteCollaboration(), ends["complete"], rounds)
    q = _best_quality(q_max, q_h0, plays.get("complete"))
    cfg = replace(config or DefectionFreeConfig(), q_max=q)
    runs = {}
    for name in schemes:
        if name not in plays:
            progress(f"{name} ({_rounds(rounds)})")
            rule = build_scheme(name, q_l0, q_h0, cfg, train_alone=train_alone)
            ends[name] = firms.fork(streams[name])
            plays[name] = play(rule, ends[name], rounds, inner=inner)
        rep = report(plays[name], q_max=q, tolerance=cfg.tolerance)
        runs[name] = DuopolyRun(plays[name], rep, ends[name])
    return runs


@dataclass(frozen=True, slots=True)
class NoisyRun:
    """The rule on measured accuracies, played on real models and audited twice.

    Attributes
    ----------
    rule
        The :class:`games.defection_free.NoisyRule` played.
    report
        :func:`games.defection_free.report` of the qualities the rule saw (the target set).
    heldout
        The same models' accuracies on the held-out set, round by round.
    audit
        :func:`games.defection_free.compare_audits` of the target and held-out paths.
    firms
        The firms after the last round.
    """

    rule: NoisyRule
    report: PlayReport
    heldout: tuple[ModelQualities, ...]
    audit: AuditComparison
    firms: TorchFirms

    def to_dict(self) -> dict[str, Any]:
        """The report, the rule's guarantee, both audits and the held-out qualities."""
        r = self.rule
        held = [[m["low"], m["high"]] for m in self.heldout]
        return {
            **self.report.to_dict(),
            "noisy": {
                "bound": r.bound,
                "alpha": r.alpha,
                "confidence": None if r.bound == "point" else 1.0 - r.alpha,
                "per_model_miss": r.delta,
                "n_eval": r.n_eval,
                "n_heldout": int(self.heldout[0].n_eval[0]),
                "stated_probability_no_revenue_falls": 1.0 - r.alpha
                if r.bound != "point"
                else None,
            },
            "audit": self.audit.to_dict(),
            "heldout_qualities": held,
        }


def run_noisy(
    firms: TorchFirms,
    rounds: int,
    *,
    alpha: float,
    bound: str = "clopper-pearson",
    q_max: float | None = None,
    inner: str = "gd",
    seed: int | np.random.Generator | None = None,
    progress: Callable[[str], None] = lambda _: None,
) -> NoisyRun:
    r"""Play :class:`games.defection_free.NoisyRule` on a fork of ``firms`` and audit it twice.

    ``firms`` must hold a held-out set (:attr:`~learning.drivers.defection_free.TorchFirms.heldout`)
    and measure accuracy. :math:`Q` is estimated as in :func:`run_schemes` when ``q_max`` is
    None. The audit compares the revenues under the target-set accuracies the rule saw with
    those under the held-out accuracies of the same models.

    References
    ----------
    Werner (2024), ch. 3, §3.4, Algorithm 5 and Proposition 3; ``thesis.ch3.prop3.noisy``.
    """
    choice("inner", inner, ("gd", "while"))
    choice("bound", bound, BOUNDS)
    rounds = positive_int("rounds", rounds)
    if firms.heldout is None:
        raise ValueError("run_noisy needs firms prepared with a held-out set (heldout=True)")
    heldout = firms.heldout
    pooled_stream, rule_stream = np.random.default_rng(seed).spawn(2)
    start = firms.measure()
    q_l0, q_h0 = start["low"], start["high"]
    pooled = None
    if q_max is None:
        progress(f"complete ({_rounds(rounds)}, to estimate Q)")
        pooled = play(CompleteCollaboration(), firms.fork(pooled_stream), rounds)
    q = _best_quality(q_max, q_h0, pooled)
    n_eval = int(start.n_eval[0])
    rule = NoisyRule.from_start(q_l0, q_h0, q, n_eval, alpha, rounds, bound)
    progress(f"defection-free on measured accuracies, alpha {alpha:g} ({_rounds(rounds)})")
    end = firms.fork(rule_stream)
    run, observed = play_noisy(
        rule, end, inner=inner, observe=lambda: end.qualities_on(heldout, metric="accuracy")
    )
    audit = compare_audits(
        (run.q_l, run.q_h),
        (np.array([m["low"] for m in observed]), np.array([m["high"] for m in observed])),
    )
    return NoisyRun(rule, report(run, q_max=q), observed, audit, end)
