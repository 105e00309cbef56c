r"""Collaboration between two competing firms as decision rules over model qualities.

Werner (2024), ch. 3: the schemes of §3.3 (p. 62) and Algorithm 5, "Defection-Free
Collaborative Learning" (§3.4, p. 64). Every rule answers two questions each round, from
qualities alone:

1. :meth:`Scheme.high_move` -- does the high firm take a *joint* step (on the averaged loss
   :math:`f = (f(\cdot;l) + f(\cdot;h))/2`, eq. 3.1) or one on its own data, and at what
   pace (the largest growth factor :math:`b = q_{h,t}/q_{h,t-1}` it aims at);
2. :meth:`Scheme.low_move` -- after the high firm moved, does the low firm train jointly,
   and up to which quality may it go. Algorithm 5 caps it at
   :math:`\hat q_{l,t} = B(\rho_{t-1}, b)\,q_{h,t}` (step 8). Steps 7-11 only gate the
   *start* of an update, so when :math:`q_h` jumps the printed cap lets the low firm pass
   :math:`q_l^*`, and qualities never fall (assumption 4 of §3.3), so it cannot come back;
   the default rule therefore caps it at :math:`\min(\hat q_{l,t}, \rho^* q_{h,t}, q_l^*)`,
   which also makes the gating of step 7 redundant. The printed cap and three gating
   conditions (step 7, the text before Algorithm 5, the authors' code) sit behind flags.

:func:`play` runs a rule against any pair of firms that can train (:class:`Firms`: the
convex toy of :mod:`games.quadratic_firms`, or the torch driver in
:mod:`learning.drivers.defection_free`); :func:`report` turns a run into the economics and
:func:`revenue_audit` checks that neither revenue fell.

Revenues are the market's (:func:`econ.market.market_round`): each round the better model
sells as the high firm of Lemma 22 (eq. 3.4, §3.2, pp. 59-62), whichever firm owns it. A
revenue is a price times a demand (Definition 3, eq. 3.3), both non-negative, so no revenue
is negative, and welfare is consumer surplus plus both revenues in every round. The firms keep
their names: ``U_l`` is the revenue of the firm that started with the lower quality, ``U_h``
that of the other. Evaluating (3.4) with fixed labels after the low firm overtakes gives a
negative ``U_h``; only the run figures draw those numbers, labelled as plotted in the thesis
(Fig. 3.2a, :mod:`games.defection_free.figures`).

Guards the thesis lacks: the high firm's measured quality falling (:math:`b \le 1`, where
:math:`B(a, b) < a` and the square root of step 8 can be imaginary: the low firm then
waits, and a driver may undo the high step), an unknown :math:`Q = \max_x q(x)` (``q_max``,
supplied or estimated from a pooled run; Proposition 2 makes :math:`q_h^* = Q`), and noisy
measurements (``tolerance``: a rise of :math:`q_h` within it does not count, and the audit
allows the revenue change that a quality error of that size can cause). The rule of
:mod:`games.defection_free.noisy` takes the number of target examples behind each accuracy
instead and guarantees, with a stated probability, that no true revenue falls;
:func:`compare_audits` audits a run under the measured and under reference (held-out or
true) qualities.

The schemes are named by the firm that benefits: ``one-sided-low`` means the low firm is
the *beneficiary* (only the high firm shares its data, Fig. 3.2a), ``one-sided-high`` that
the high firm is (only the low firm shares, Fig. 3.2b).

The package's modules: ``rules`` (the schemes, their configuration, the pace and cap rules),
``play`` (the firms' protocol and the play loop), ``market`` (the market of a run, round by
round), ``audit`` (Proposition 3's revenue audit), ``noisy`` (the rule on measured accuracies),
``report`` (a run in the economics'
terms), ``claims`` (the chapter's claims about the schemes), ``propositions`` (the
registered statements) and ``figures`` (the run figures); the names above are re-exported
here. ``n_firms`` extends the rule to n firms in quality space, towards the n-firm Nash
bargaining solution of :mod:`econ.quality_bargaining` (its statements in
``n_firms_propositions``).
"""

from __future__ import annotations

from games.defection_free.audit import (
    AuditComparison,
    RevenueAudit,
    compare_audits,
    revenue_audit,
    revenue_slack,
)
from games.defection_free.claims import SchemeClaim, scheme_claims
from games.defection_free.market import MarketPath, fixed_label_revenues, market_path
from games.defection_free.noisy import (
    BOUNDS,
    NoisyRule,
    NoisySimulation,
    play_noisy,
    revenue_exchange_rate,
    simulate,
)
from games.defection_free.play import Firms, Play, play
from games.defection_free.report import MARKET_COLUMNS, REVENUE_CONVENTION, PlayReport, report
from games.defection_free.rules import (
    B_TILDE,
    CAP_MODES,
    GATINGS,
    INNER_MODES,
    SCHEDULES,
    SCHEMES,
    CompleteCollaboration,
    DefectionFree,
    DefectionFreeConfig,
    HighMove,
    LowMove,
    OneSided,
    Scheme,
    build_scheme,
    estimate_q_max,
    paced_step_size,
    raise_to_cap,
)

__all__ = [
    "BOUNDS",
    "B_TILDE",
    "CAP_MODES",
    "GATINGS",
    "INNER_MODES",
    "MARKET_COLUMNS",
    "REVENUE_CONVENTION",
    "SCHEDULES",
    "SCHEMES",
    "AuditComparison",
    "CompleteCollaboration",
    "DefectionFree",
    "DefectionFreeConfig",
    "Firms",
    "HighMove",
    "LowMove",
    "MarketPath",
    "NoisyRule",
    "NoisySimulation",
    "OneSided",
    "Play",
    "PlayReport",
    "RevenueAudit",
    "Scheme",
    "SchemeClaim",
    "build_scheme",
    "compare_audits",
    "estimate_q_max",
    "fixed_label_revenues",
    "market_path",
    "paced_step_size",
    "play",
    "play_noisy",
    "raise_to_cap",
    "report",
    "revenue_audit",
    "revenue_exchange_rate",
    "revenue_slack",
    "scheme_claims",
    "simulate",
]
