"""The chapter's claims about the schemes, checked on their reports (Werner 2024, ch. 3).

Lemma 23 (complete collaboration), Figures 3.2a-b (one-sided sharing), Propositions 3 and 5
and Figure 3.3 (defection-free), each a :class:`SchemeClaim` with the numbers it rests on.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from econ.outputs import plain
from games.defection_free.report import PlayReport


@dataclass(frozen=True, slots=True)
class SchemeClaim:
    """One qualitative claim of the chapter about a run, with the numbers it rests on.

    References
    ----------
    Werner (2024), ch. 3, §§3.3-3.5 (the claims of Lemma 23, Propositions 3 and 5, Figures 3.2-3.3).
    """

    claim: str
    holds: bool
    evidence: str

    def to_dict(self) -> dict[str, Any]:
        """JSON-ready: the claim, whether it holds, and the evidence."""
        return plain({"claim": self.claim, "holds": self.holds, "evidence": self.evidence})


def _ends(rep: PlayReport, key: str) -> tuple[float, float]:
    return float(rep.rows[0][key]), float(rep.rows[-1][key])


def scheme_claims(reports: dict[str, PlayReport], *, nash_gap: float = 0.05) -> list[SchemeClaim]:
    r"""Werner (2024) ch. 3's claims about the schemes, checked on runs from one start.

    Defection-free (Prop. 3, 5; Fig. 3.3): no revenue fell, both qualities rose, the ratio
    moved towards :math:`\rho^*`, and the Nash product ends individually rational and
    within ``nash_gap`` (relative) of its maximum at the best quality reached. Complete
    collaboration (Lemma 23): the quality gap and the high firm's revenue shrink. Only the
    high firm shares (Fig. 3.2a): the high firm loses revenue. Only the low firm shares
    (Fig. 3.2b): both revenues rise, and the low firm ends below its defection-free
    revenue. Revenues are the market's (:data:`REVENUE_CONVENTION`). Claims about schemes
    missing from ``reports`` are skipped.

    References
    ----------
    Werner (2024), ch. 3, §3.3, Lemma 23 and Figures 3.2a-b; §3.4, Propositions 3 and 5; §3.5,
    Figure 3.3.
    """
    out = []
    df = reports.get("defection-free")
    if df is not None:
        a = df.audit
        out.append(
            SchemeClaim(
                "defection-free: no revenue fell in any round",
                a.never_decreased,
                f"min change U_l {a.min_change_low:.3g}, U_h {a.min_change_high:.3g}",
            )
        )
        (l0, l1), (h0, h1) = _ends(df, "q_l"), _ends(df, "q_h")
        out.append(
            SchemeClaim(
                "defection-free: both qualities rose",
                l1 > l0 and h1 > h0,
                f"q_l {l0:.3f} -> {l1:.3f}, q_h {h0:.3f} -> {h1:.3f}",
            )
        )
        r0, r1 = _ends(df, "rho")
        out.append(
            SchemeClaim(
                "defection-free: rho moved towards rho*",
                abs(r1 - df.rho_star) <= abs(r0 - df.rho_star),
                f"rho {r0:.3f} -> {r1:.3f}, rho* {df.rho_star:.3f}",
            )
        )
        rel = df.final_nash_gap / df.nash_max if df.nash_max > 0 else 0.0
        rational = df.final_individually_rational
        out.append(
            SchemeClaim(
                f"defection-free: Nash product within {nash_gap:.0%} of its maximum",
                rational and rel <= nash_gap,
                f"N_T {df.rows[-1]['nash_product']:.3g}"
                f"{'' if rational else ' (outside the individually rational set)'}, "
                f"max {df.nash_max:.3g}, gap {rel:.1%}",
            )
        )
    full = reports.get("complete")
    if full is not None:
        (l0, l1), (h0, h1) = _ends(full, "q_l"), _ends(full, "q_h")
        u0, u1 = _ends(full, "U_h")
        out.append(
            SchemeClaim(
                "complete: the qualities converge and the high firm's revenue falls",
                abs(h1 - l1) < abs(h0 - l0) and u1 < u0,
                f"|q_h - q_l| {abs(h0 - l0):.3f} -> {abs(h1 - l1):.3f}, U_h {u0:.4f} -> {u1:.4f}",
            )
        )
    low = reports.get("one-sided-low")
    if low is not None:
        u0, u1 = _ends(low, "U_h")
        out.append(
            SchemeClaim(
                "only the high firm shares: the high firm loses revenue",
                u1 < u0,
                f"U_h {u0:.4f} -> {u1:.4f}",
            )
        )
    high = reports.get("one-sided-high")
    if high is not None:
        (a0, a1), (b0, b1) = _ends(high, "U_l"), _ends(high, "U_h")
        out.append(
            SchemeClaim(
                "only the low firm shares: both revenues rise",
                a1 > a0 and b1 > b0,
                f"U_l {a0:.4f} -> {a1:.4f}, U_h {b0:.4f} -> {b1:.4f}",
            )
        )
        if df is not None:
            d1 = float(df.rows[-1]["U_l"])
            out.append(
                SchemeClaim(
                    "only the low firm shares: the low firm ends below defection-free",
                    a1 < d1,
                    f"U_l {a1:.4f} vs defection-free {d1:.4f}",
                )
            )
    return out
