"""The records of the papers' experiment inventory: a source paper and one of its experiments.

Holds :class:`Paper` and the five papers (:data:`PAPERS`), and :class:`Experiment`, one table or
figure of a paper's experiment sections with the reproduction that measures it or the reason
it is not reproduced. The rows are in :mod:`collabecon.reproductions.inventory_thesis` and
:mod:`collabecon.reproductions.inventory_articles`, the inventory and its table in
:mod:`collabecon.reproductions.inventory`.

References
----------
Werner (2024), PhD thesis, ch. 2-4; Werner et al. (TMLR 2023); Hashemi, He and Jaggi
(NeurIPS 2024); Tsoy et al. (AISTATS 2024); Khan et al. (IP-FL): their experiment sections.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

__all__ = ["CLUSTERING", "COBO", "IPFL", "PAPERS", "THESIS", "TSOY", "Experiment", "Paper"]


@dataclass(frozen=True, slots=True)
class Paper:
    """A source paper: a short name for tables and its full citation."""

    short: str
    citation: str


THESIS = Paper(
    "Werner 2024 (thesis)",
    "Werner (2024), Collaborative Learning: Aligning Goals and Outcomes, PhD thesis, UC Berkeley",
)
CLUSTERING = Paper(
    "Werner et al. 2023",
    "Werner, He, Jordan, Jaggi, Karimireddy (TMLR 2023), Provably Personalized and Robust "
    "Federated Learning",
)
COBO = Paper(
    "CoBo (Hashemi et al. 2024)",
    "Hashemi, He and Jaggi (NeurIPS 2024), CoBo: Collaborative Learning via Bilevel Optimization",
)
TSOY = Paper(
    "Tsoy et al. 2024",
    "Tsoy et al. (AISTATS 2024), Provable Mutual Benefits from Federated Learning in "
    "Privacy-Sensitive Domains",
)
IPFL = Paper(
    "IP-FL (Khan et al.)", "Khan et al., IP-FL: Incentivized and Personalized Federated Learning"
)

#: The five papers, in the order of :data:`EXPERIMENTS`.
PAPERS = (THESIS, CLUSTERING, COBO, TSOY, IPFL)


@dataclass(frozen=True, slots=True, kw_only=True)
class Experiment:
    """One table or figure of a paper's experiments, and what reproduces it.

    Parameters
    ----------
    paper
        The paper that prints it.
    label
        Its label in the paper (``"Table 2.1"``, ``"Figure 3"``).
    where
        Where the paper prints it: section, pages or appendix.
    subject
        What it shows, in one line.
    reproduction
        The key of :data:`collabecon.reproductions.REPRODUCTIONS` that measures it, or None.
    compared
        For a reproduced row: what is compared with the paper, on which data, and what is not.
    claims
        For a reproduced row: the ids of its claims in the reproduction, as ``fnmatch``
        patterns (``"fig3.1.*"``).
    reason
        For a row not reproduced: why.
    statements
        Registered statements (:mod:`econ.propositions` ids) that check what it shows.

    Raises
    ------
    ValueError
        Both or neither of ``reproduction`` and ``reason``; ``compared`` or ``claims`` missing
        on a reproduced row, or given on one that is not.
    """

    paper: Paper
    label: str
    where: str
    subject: str
    reproduction: str | None = None
    compared: str = ""
    claims: tuple[str, ...] = ()
    reason: str = ""
    statements: tuple[str, ...] = ()

    def __post_init__(self) -> None:
        """Check that the row is reproduced or explained, not both."""
        if (self.reproduction is None) == (not self.reason):
            raise ValueError(
                f"{self.label}: give exactly one of reproduction and reason, got "
                f"reproduction={self.reproduction!r}, reason={self.reason!r}"
            )
        if self.reproduction is not None and not (self.compared and self.claims):
            raise ValueError(
                f"{self.label}: a reproduced row names what is compared and its claims"
            )
        if self.reproduction is None and (self.compared or self.claims):
            raise ValueError(f"{self.label}: compared and claims belong to a reproduced row")

    @property
    def reproduced(self) -> bool:
        """Whether a reproduction measures what the table or figure shows."""
        return self.reproduction is not None

    def explanation(self) -> str:
        """What is compared (a reproduced row, with its claims) or why not, in one line."""
        if self.reproduction is None:
            text = _why_not(self.reason)
        else:
            ids = ", ".join(f"`{c}`" for c in self.claims)
            text = f"{self.compared}; claims {ids}"
        if self.statements:
            text += "; statements " + ", ".join(f"`{s}`" for s in self.statements)
        return text

    def to_dict(self) -> dict[str, Any]:
        """JSON-ready: the ``experiments`` items of report.json."""
        return {
            "paper": self.paper.citation,
            "label": self.label,
            "where": self.where,
            "subject": self.subject,
            "reproduction": self.reproduction,
            "compared": self.compared,
            "claims": list(self.claims),
            "reason": self.reason,
            "statements": list(self.statements),
            "explanation": self.explanation(),
        }


def _why_not(reason: str) -> str:
    """``reason`` as a row's last column: prefixed "not reproduced: " unless it says so."""
    return reason if reason.startswith("not reproduced") else f"not reproduced: {reason}"
