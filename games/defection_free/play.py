"""A scheme played against a pair of firms that can train, round by round.

:class:`Firms` is what a rule needs of the firms (the convex toy of
:mod:`games.quadratic_firms`, or the torch driver in :mod:`learning.drivers.defection_free`);
:func:`play` runs a :class:`~games.defection_free.rules.Scheme` on them and records the
qualities of every round (:class:`Play`), Werner (2024), ch. 3, §3.3 and Algorithm 5.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Protocol

import numpy as np
from numpy.typing import NDArray

from econ.outputs import frame, plain
from econ.qualities import ModelQualities
from econ.validation import choice, positive_int
from games.defection_free.rules import INNER_MODES, HighMove, Scheme


class Firms(Protocol):
    """Two firms that can train: the convex toy, or real models (the torch driver).

    References
    ----------
    Werner (2024), ch. 3, §3.4 (p. 64), Algorithm 5 (the two models it updates); the objective of
    eq. (3.1).
    """

    def measure(self) -> ModelQualities:
        """Current qualities, names ``("low", "high")``."""
        ...

    def step_high(self, move: HighMove) -> None:
        """One round of the high firm's training as ``move`` says."""
        ...

    def undo_high(self) -> None:
        """Return the high firm to its model before the last :meth:`step_high`."""
        ...

    def step_low(self, joint: bool) -> None:
        """One free round of the low firm's training (no cap)."""
        ...

    def raise_low(self, cap: float, inner: str) -> None:
        """Raise the low firm's quality towards ``cap`` by gradient steps on the joint objective.

        With ``inner="gd"`` the steps never pass the cap: each step is at most the gap over the
        squared gradient norm and at most the smooth step, halved while it would pass the cap. With
        ``inner="while"`` they are Algorithm 5's steps 9-11 as printed, ``while q <= cap``, which
        stop only once the quality has passed the cap.
        """
        ...


@dataclass(frozen=True, slots=True)
class Play:
    r"""The qualities of every round of a scheme, round 0 being the start.

    ``cap`` is the quality the low firm was allowed this round (NaN: uncapped), ``hat_q``
    Algorithm 5's :math:`\hat q` (NaN where not computed). ``measured`` are the qualities
    the firms' models have; in the ``oracle`` inner mode the low firm's quality is set by the
    rule instead (``q_l`` then differs from ``measured``), as the authors' code does for the
    experiments of §3.5 (Fig. 3.3): it never trains the low model.

    References
    ----------
    Werner (2024), ch. 3, §3.4, Algorithm 5, and §3.5 (p. 69), Figure 3.3 (the quality-level runs).
    """

    scheme: str
    q_l: NDArray[np.float64]
    q_h: NDArray[np.float64]
    cap: NDArray[np.float64]
    hat_q: NDArray[np.float64]
    measured: tuple[ModelQualities, ...]

    def qualities(self) -> list[ModelQualities]:
        """Per-round qualities as the market sees them (the rule's in oracle mode)."""
        return [
            ModelQualities(
                names=m.names, quality=np.array([ql, qh]), metric=m.metric, n_eval=m.n_eval
            )
            for m, ql, qh in zip(self.measured, self.q_l, self.q_h, strict=True)
        ]

    def to_dict(self) -> dict[str, Any]:
        """JSON-ready: the scheme and one record per round (NaN as None).

        Each record holds ``t, q_l, q_h, cap, hat_q``.
        """
        columns = self._columns()
        rows = [dict(zip(columns, row, strict=True)) for row in zip(*columns.values(), strict=True)]
        return plain({"scheme": self.scheme, "rounds": rows})

    def to_frame(self) -> Any:
        """A pandas DataFrame indexed by round ``t``: ``q_l, q_h, cap, hat_q`` (needs pandas)."""
        return frame(self._columns(), "Play").set_index("t")

    def _columns(self) -> dict[str, Any]:
        return {
            "t": np.arange(self.q_l.size),
            "q_l": self.q_l,
            "q_h": self.q_h,
            "cap": self.cap,
            "hat_q": self.hat_q,
        }


def play(scheme: Scheme, firms: Firms, rounds: int, *, inner: str = "gd") -> Play:
    """Run ``scheme`` on ``firms`` for ``rounds`` rounds.

    Each round the high firm moves first (undone when its quality fell and the move asks
    for it), then the low firm: a free round of training, or a capped raise (``inner``
    ``"gd"``: guarded gradient steps; ``"oracle"``: the low quality is *set* to the cap,
    the thesis's quality-level simulation; ``"while"``: the literal loop of Algorithm 5).

    References
    ----------
    Werner (2024), ch. 3, §3.3 (p. 62) and §3.4 (p. 64), Algorithm 5 (lines 9-11 for
    ``inner="while"``).
    """
    rounds = positive_int("rounds", rounds)
    choice("inner", inner, INNER_MODES)
    first = firms.measure()
    q_l, q_h = first["low"], first["high"]
    ql, qh, cap, hat, measured = [q_l], [q_h], [np.nan], [np.nan], [first]
    for _ in range(rounds):
        high = scheme.high_move(q_l, q_h)
        if not high.idle:
            firms.step_high(high)
        q_h_new = firms.measure()["high"] if not high.idle else q_h
        if high.undo_if_worse and q_h_new < q_h:
            firms.undo_high()
            q_h_new = q_h
        low = scheme.low_move(q_l, q_h, q_h_new)
        if low.cap is None:
            firms.step_low(low.joint)
        elif inner != "oracle" and low.cap > q_l:
            firms.raise_low(low.cap, inner)
        now = firms.measure()
        q_l = max(q_l, low.cap) if inner == "oracle" and low.cap is not None else now["low"]
        q_h = now["high"]
        ql.append(q_l)
        qh.append(q_h)
        cap.append(np.nan if low.cap is None else low.cap)
        hat.append(np.nan if low.hat_q is None else low.hat_q)
        measured.append(now)
    return Play(
        scheme=scheme.name,
        q_l=np.array(ql),
        q_h=np.array(qh),
        cap=np.array(cap),
        hat_q=np.array(hat),
        measured=tuple(measured),
    )
