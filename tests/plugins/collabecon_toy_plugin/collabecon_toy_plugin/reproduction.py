"""A reproduction: the Bertrand duopoly of Werner (2024), ch. 3, at a few quality pairs.

The claim (section 3.2, the equilibrium of the duopoly): the firm with the better model
charges the higher price and earns the higher revenue.
"""

from __future__ import annotations

import dataclasses
from pathlib import Path
from typing import Any

from collabecon import duopoly_equilibrium
from econ.claims import ClaimSpec, Reproduction, evaluate

#: The quality pairs ``(q_l, q_h)`` of the run.
PAIRS = ((0.3, 0.8), (0.5, 0.6), (0.1, 0.95))

CLAIMS = (
    ClaimSpec(
        id="toy.duopoly.high-firm-ahead",
        statement="The firm with the better model charges more and earns more.",
        where="Werner 2024, ch. 3, section 3.2",
        measured=lambda r: [(e["p_h"] - e["p_l"], e["U_h"] - e["U_l"]) for e in r],
        holds=lambda r: all(e["p_h"] > e["p_l"] and e["U_h"] > e["U_l"] for e in r),
    ),
)


def reproduce(scale: str, out: Any, seeds: int | None = None) -> Reproduction:
    """The equilibria at :data:`PAIRS` and the claim on them (``scale`` and ``seeds`` unused)."""
    Path(out).mkdir(parents=True, exist_ok=True)
    rows = [dataclasses.asdict(duopoly_equilibrium(q_l, q_h)) for q_l, q_h in PAIRS]
    return Reproduction(
        name="toy-duopoly",
        title="Toy plugin: the duopoly's equilibrium (Werner 2024, ch. 3)",
        claims=tuple(evaluate(CLAIMS, rows)),
        data=rows,
    )
