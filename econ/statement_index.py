r"""Which numbered statements of the papers the proposition registry covers.

Every Lemma, Proposition, Theorem and Corollary that the five papers number (appendix ones
included) is listed here with the place it is printed and the registry ids
(:mod:`econ.propositions`) that register it: the statement itself, its parts, the steps of
its proof and their ``.corrected`` twins. A statement no entry registers yet has an empty
``ids`` tuple and is reported as missing by :func:`coverage`.

A result of the clustering paper that the thesis prints alike (its chapter 2 repeats the
paper with every lemma number shifted by one) is covered by the ``thesis.ch2`` entry whose
source cites it.

References
----------
M. Werner, *Collaborative Learning: Aligning Goals and Outcomes*, PhD thesis (2024), chapters 2-4.
M. Werner, L. He, M. Jordan, M. Jaggi, S. P. Karimireddy, *Provably Personalized and Robust
Federated Learning*, TMLR 2023.
D. Hashemi, L. He, M. Jaggi, *CoBo: Collaborative Learning via Bilevel Optimization*,
NeurIPS 2024.
N. Tsoy et al., *Provable Mutual Benefits from Federated Learning in Privacy-Sensitive
Domains*, AISTATS 2024.
Khan et al., *IP-FL: Incentivized and Personalized Federated Learning*, arXiv 2304.07514 v4.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass
from typing import Any

from econ.propositions import Outcome, Status

__all__ = ["PAPERS", "PaperStatements", "Statement", "coverage", "indexed_ids"]


@dataclass(frozen=True, slots=True)
class Statement:
    """One numbered statement of a paper.

    Attributes
    ----------
    label
        The statement's name as printed, e.g. ``"Lemma 3"``; unique within its paper.
    place
        Where it is printed (section or appendix).
    ids
        The registry ids that register it; empty while none does.

    References
    ----------
    The five papers of the module's references; each statement's place is its row's
    ``place``.
    """

    label: str
    place: str
    ids: tuple[str, ...] = ()


@dataclass(frozen=True, slots=True)
class PaperStatements:
    """A paper (or a chapter of the thesis) and its numbered statements.

    References
    ----------
    The five papers of the module's references; each statement's place is its row's
    ``place``.
    """

    key: str
    title: str
    statements: tuple[Statement, ...]


def _s(label: str, place: str, *ids: str) -> Statement:
    return Statement(label, place, ids)


def _twin(*ids: str) -> tuple[str, ...]:
    """Each id followed by its ``.corrected`` twin."""
    return tuple(x for i in ids for x in (i, f"{i}.corrected"))


_CH2_PROOF_T1 = "§2.6, proof of Theorem 1"
_CH2_PROOF_T3 = "§2.6, proof of Theorem 3"
_CH2_PROOF_T4 = "§2.6, proof of Theorem 4"
_THM2 = ("thesis.ch2.thm2.construction", *_twin("thesis.ch2.thm2.constant"))

THESIS_CH2 = PaperStatements(
    "thesis.ch2",
    "Werner (2024), PhD thesis, ch. 2 (federated clustering)",
    (
        _s("Theorem 1", "§2.3", *_twin("thesis.ch2.thm1")),
        _s(
            "Theorem 2",
            "§2.3; proof §2.6",
            "thesis.ch2.thm2",
            "thesis.ch2.thm2.indistinguishable",
            "thesis.ch2.thm2.single",
            *_THM2,
        ),
        _s("Lemma 1", "§2.3; proof §2.6", "thesis.ch2.lemma1.a4", *_twin("thesis.ch2.lemma1.a5")),
        _s("Theorem 3", "§2.3", *_twin("thesis.ch2.thm3", "thesis.ch2.thm3.radius")),
        _s("Theorem 4", "§2.3", *_twin("thesis.ch2.thm4")),
        _s("Lemma 2", _CH2_PROOF_T1, *_twin("thesis.ch2.lemma2")),
        _s("Lemma 3", _CH2_PROOF_T1, "thesis.ch2.lemma3"),
        _s("Lemma 4", _CH2_PROOF_T1, *_twin("thesis.ch2.lemma4")),
        _s("Lemma 5", _CH2_PROOF_T1, "thesis.ch2.lemma5"),
        _s("Lemma 6", _CH2_PROOF_T1, "thesis.ch2.lemma6"),
        _s("Lemma 7", _CH2_PROOF_T3, "thesis.ch2.lemma7"),
        _s("Lemma 8", _CH2_PROOF_T3, *_twin("thesis.ch2.lemma8")),
        _s("Lemma 9", _CH2_PROOF_T3, *_twin("thesis.ch2.lemma9")),
        _s("Lemma 10", _CH2_PROOF_T3, "thesis.ch2.lemma10"),
        _s("Lemma 11", _CH2_PROOF_T3, *_twin("thesis.ch2.lemma11")),
        _s("Lemma 12", _CH2_PROOF_T3, *_twin("thesis.ch2.lemma12")),
        _s("Lemma 13", _CH2_PROOF_T3, "thesis.ch2.lemma13"),
        _s("Lemma 14", _CH2_PROOF_T4, "thesis.ch2.lemma14"),
        _s("Lemma 15", _CH2_PROOF_T4, *_twin("thesis.ch2.lemma15")),
        _s("Lemma 16", _CH2_PROOF_T4, *_twin("thesis.ch2.lemma16")),
        _s("Lemma 17", _CH2_PROOF_T4, "thesis.ch2.lemma17"),
        _s("Lemma 18", _CH2_PROOF_T4, *_twin("thesis.ch2.lemma18")),
        _s("Lemma 19", _CH2_PROOF_T4, *_twin("thesis.ch2.lemma19")),
        _s("Lemma 20", _CH2_PROOF_T4, "thesis.ch2.lemma20"),
    ),
)

_CH3 = "thesis.ch3"
THESIS_CH3 = PaperStatements(
    "thesis.ch3",
    "Werner (2024), PhD thesis, ch. 3 (defection-free collaboration in a duopoly)",
    (
        _s("Lemma 21", "§3.2; proof §3.7", f"{_CH3}.lemma21"),
        _s(
            "Lemma 22",
            "§3.2; proof §3.7",
            f"{_CH3}.lemma22",
            f"{_CH3}.lemma22.global",
            *_twin(f"{_CH3}.lemma22.argmax"),
        ),
        _s("Proposition 1", "§3.2; proof §3.7", *(f"{_CH3}.prop1.{k}" for k in range(1, 5))),
        _s("Lemma 23", "§3.3", f"{_CH3}.lemma23"),
        _s("Proposition 2", "§3.4", f"{_CH3}.prop2", *_twin(f"{_CH3}.prop2.step")),
        _s(
            "Proposition 3",
            "§3.4; proof §3.7",
            f"{_CH3}.prop3",
            f"{_CH3}.prop3.cap_high",
            f"{_CH3}.prop3.gd",
            f"{_CH3}.prop3.quadratics",
            *_twin(
                f"{_CH3}.prop3.cap_low",
                f"{_CH3}.prop3.step",
                f"{_CH3}.prop3.strict",
                f"{_CH3}.prop3.strict_l",
            ),
        ),
        _s("Proposition 4", "§3.4", f"{_CH3}.prop4", f"{_CH3}.prop4.gd", f"{_CH3}.nash.program"),
        _s(
            "Proposition 5",
            "§3.4; proof §3.7",
            f"{_CH3}.prop5",
            f"{_CH3}.prop5.b_tilde",
            f"{_CH3}.prop5.fig37",
            f"{_CH3}.prop5.gd",
            *_twin(f"{_CH3}.prop5.gd.as_printed"),
        ),
        _s("Theorem 5", "§3.4; proof §3.7", f"{_CH3}.thm5", *_twin(f"{_CH3}.thm5.identity")),
        _s(
            "Corollary 1",
            "§3.4; proof §3.7",
            f"{_CH3}.cor1",
            *_twin(f"{_CH3}.cor1.case1", f"{_CH3}.cor1.as_printed"),
        ),
        _s("Lemma 24", "§3.7, proof of Proposition 5", f"{_CH3}.lemma24"),
        _s("Lemma 25", "§3.7", f"{_CH3}.lemma25", f"{_CH3}.eq3.17", f"{_CH3}.eq3.18"),
    ),
)

_CH4 = "thesis.ch4"
THESIS_CH4 = PaperStatements(
    "thesis.ch4",
    "Werner (2024), PhD thesis, ch. 4 (price discrimination)",
    (
        _s(
            "Theorem 6",
            "§4.2; proof §4.7",
            f"{_CH4}.thm6.indifference",
            *_twin(
                f"{_CH4}.thm6",
                f"{_CH4}.thm6.buying",
                f"{_CH4}.thm6.proof_blind",
                f"{_CH4}.thm6.proof_f",
                f"{_CH4}.thm6.unique",
            ),
        ),
        _s(
            "Corollary 2",
            "§4.2; proof §4.7",
            f"{_CH4}.cor2.closed_forms",
            f"{_CH4}.cor2.thesis_profile",
            *_twin(f"{_CH4}.cor2", f"{_CH4}.cor2.buyer_forms"),
        ),
        _s("Corollary 3", "§4.2", f"{_CH4}.cor3"),
        _s("Lemma 26", "§4.3", *_twin(f"{_CH4}.lemma26")),
        _s("Proposition 6", "§4.3; proof §4.7", *_twin(f"{_CH4}.prop6")),
        _s("Proposition 7", "§4.3; proof §4.7", f"{_CH4}.prop7"),
        _s("Proposition 8", "§4.3; proof §4.7", *_twin(f"{_CH4}.prop8")),
        _s("Lemma 27", "§4.3; proof §4.7", *_twin(f"{_CH4}.lemma27", f"{_CH4}.lemma27.proof")),
        _s("Lemma 28", "§4.3; proof §4.7", f"{_CH4}.lemma28"),
        _s("Lemma 29", "§4.3; proof §4.7", *_twin(f"{_CH4}.lemma29")),
        _s("Proposition 9", "§4.3; proof §4.7", f"{_CH4}.prop9"),
        _s("Proposition 10", "§4.3; proof §4.7", *_twin(f"{_CH4}.prop10", f"{_CH4}.prop10.proof")),
        _s("Lemma 30", "§4.7, proof of Lemma 28", f"{_CH4}.lemma30"),
    ),
)

CLUSTERING = PaperStatements(
    "clustering",
    "Werner, He, Jordan, Jaggi, Karimireddy, 'Provably Personalized and Robust Federated "
    "Learning' (TMLR 2023)",
    (
        _s("Theorem 1", "§3.1.1; proof App. A.1", *_twin("thesis.ch2.thm1")),
        _s(
            "Theorem 2",
            "§3.1.2; proof App. A.2",
            "thesis.ch2.thm2",
            "thesis.ch2.thm2.indistinguishable",
            "thesis.ch2.thm2.single",
            *_THM2,
        ),
        _s(
            "Theorem 3", "§3.2; proof App. A.3", *_twin("thesis.ch2.thm3", "thesis.ch2.thm3.radius")
        ),
        _s("Theorem 4", "§3.3.1; proof App. A.4", *_twin("thesis.ch2.thm4")),
        _s("Lemma 1", "App. A.1", *_twin("thesis.ch2.lemma2")),
        _s("Lemma 2", "App. A.1", *_twin("clustering.lemma2")),
        _s("Lemma 3", "App. A.1", *_twin("thesis.ch2.lemma4")),
        _s("Lemma 4", "App. A.1", "thesis.ch2.lemma5"),
        _s("Lemma 5", "App. A.1", "thesis.ch2.lemma6"),
        _s("Lemma 6", "App. A.3", "thesis.ch2.lemma7"),
        _s("Lemma 7", "App. A.3", *_twin("thesis.ch2.lemma8")),
        _s("Lemma 8", "App. A.3", *_twin("thesis.ch2.lemma9")),
        _s("Lemma 9", "App. A.3", "thesis.ch2.lemma10"),
        _s("Lemma 10", "App. A.3", *_twin("thesis.ch2.lemma11")),
        _s("Lemma 11", "App. A.3", *_twin("clustering.lemma11")),
        _s("Lemma 12", "App. A.3", "thesis.ch2.lemma13"),
        _s("Lemma 13", "App. A.4", "thesis.ch2.lemma14"),
        _s("Lemma 14", "App. A.4", *_twin("thesis.ch2.lemma15")),
        _s("Lemma 15", "App. A.4", *_twin("thesis.ch2.lemma16")),
        _s("Lemma 16", "App. A.4", "thesis.ch2.lemma17"),
        _s("Lemma 17", "App. A.4", *_twin("thesis.ch2.lemma18")),
        _s("Lemma 18", "App. A.4", "clustering.lemma18"),
        _s("Lemma 19", "App. A.4", "thesis.ch2.lemma20"),
    ),
)

COBO = PaperStatements(
    "cobo",
    "Hashemi, He and Jaggi, 'CoBo: Collaborative Learning via Bilevel Optimization' (NeurIPS 2024)",
    (
        _s(
            "Theorem 1 (exact gradients)",
            "§3, the first Theorem 1",
            *_twin("cobo.thm1.consensus", "cobo.thm1.gradient"),
        ),
        _s(
            "Theorem 1 (stochastic gradients)",
            "§3, the second Theorem 1; proof App. A",
            "cobo.thm1.proof.case1",
            *_twin(
                "cobo.thm1.stochastic.consensus",
                "cobo.thm1.stochastic.gradient",
                "cobo.thm1.proof.case2",
            ),
        ),
        _s("Corollary 2", "§3; proof App. A", *_twin("cobo.cor2")),
        _s("Lemma 3", "App. A", *_twin("cobo.lemma3", "cobo.lemma3.proof.weight_variance")),
        _s("Lemma 4", "App. A", *_twin("cobo.lemma4")),
    ),
)

TSOY = PaperStatements(
    "tsoy",
    "Tsoy et al., 'Provable Mutual Benefits from Federated Learning in Privacy-Sensitive "
    "Domains' (AISTATS 2024)",
    (
        _s("Theorem 4.1", "§4.1; proof App. B.1", "tsoy.thm4.1"),
        _s("Theorem 4.2", "§4.1; proof App. B.2", "tsoy.thm4.2", "tsoy.thm4.2.family_max"),
        _s(
            "Theorem 4.3",
            "§4.2; proof App. B.4",
            "tsoy.thm4.3",
            "tsoy.thm4.3.monte_carlo",
            *_twin("tsoy.lemmaB.4.monotone", "tsoy.thm4.3.proof.final"),
        ),
        _s(
            "Theorem 4.4",
            "§4.2; proof App. B.5",
            "tsoy.thm4.4",
            "tsoy.thm4.4.one_pass",
            *_twin("tsoy.thm4.4.kappa_display"),
        ),
        _s("Theorem 4.5", "§4.2; proof App. B.6", "tsoy.thm4.5", "tsoy.thm4.5.concave"),
        _s("Corollary 4.6", "§4.2; proof App. B.7", "tsoy.cor4.6"),
        _s("Theorem 4.7", "§4.3; proof App. B.10", "tsoy.thm4.7-4.8"),
        _s("Theorem 4.8", "§4.3; proof App. B.9", "tsoy.thm4.7-4.8"),
        _s("Theorem 4.9", "§4.3; proof App. B.11", "tsoy.thm4.9", "tsoy.thm4.9.local_only"),
        _s("Theorem 4.11", "§4.4; proof App. B.14", "tsoy.thm4.11"),
        _s("Theorem 5.1", "§5; proof App. B.3", *_twin("tsoy.thm5.1", "tsoy.thm5.1.proof")),
        _s("Theorem 5.2", "§5; proof App. B.8", *_twin("tsoy.thm5.2", "tsoy.thm5.2.proof.dn")),
        _s("Theorem 5.3", "§5; proof App. B.12", "tsoy.thm5.3", "tsoy.thm5.3.self_consistency"),
        _s("Theorem 5.4", "§5; proof App. B.13", "tsoy.thm5.4"),
        _s("Theorem A.1", "App. A", "tsoy.thmA.1"),
        _s("Theorem A.2", "App. A", *_twin("tsoy.thmA.2")),
        _s("Lemma B.1", "App. B.4", "tsoy.lemmaB.1"),
        _s("Lemma B.2", "App. B.4", "tsoy.lemmaB.2"),
        _s("Lemma B.3", "App. B.4", "tsoy.lemmaB.3"),
        _s("Lemma B.4", "App. B.4", "tsoy.lemmaB.4"),
        _s("Lemma B.5", "App. B.12", "tsoy.lemmaB.5"),
        _s("Lemma B.6", "App. B.12", "tsoy.lemmaB.5"),
        _s("Lemma C.1", "App. C.2.1", "tsoy.lemmaC.1"),
        _s("Lemma C.2", "App. C.2.1", "tsoy.lemmaC.2"),
    ),
)

IPFL = PaperStatements(
    "ipfl",
    "Khan et al., 'IP-FL: Incentivized and Personalized Federated Learning' (arXiv 2304.07514 v4)",
    (
        _s(
            "Proposition 1",
            "§5; proof App. I",
            "ipfl.prop1.lloyd",
            *_twin("ipfl.prop1.bias"),
        ),
        _s("Theorem 3", "§5; proof App. I", "ipfl.thm3"),
        _s("Theorem 4", "§5; proof App. I", *_twin("ipfl.thm4")),
        _s("Theorem 6", "§5; proof App. I", "ipfl.thm6"),
        _s("Corollary 8.1", "App. I", *_twin("ipfl.cor8.1")),
    ),
)

#: Every indexed paper, the thesis as its three chapters.
PAPERS: tuple[PaperStatements, ...] = (
    THESIS_CH2,
    THESIS_CH3,
    THESIS_CH4,
    CLUSTERING,
    COBO,
    TSOY,
    IPFL,
)


def indexed_ids(paper: PaperStatements) -> tuple[str, ...]:
    """The distinct registry ids of ``paper``'s statements, in the order of the index.

    References
    ----------
    The five papers of the module's references; each statement's place is its row's
    ``place``.
    """
    return tuple(dict.fromkeys(i for s in paper.statements for i in s.ids))


def coverage(outcomes: Iterable[Outcome]) -> dict[str, dict[str, Any]]:
    """Per paper: how many numbered statements the checked ``outcomes`` register, and how.

    A statement counts as registered when at least one of its ids is among ``outcomes``, and
    as unchecked when every one of its entries there is ``unchecked`` (registered with the
    reason no check is possible). The verdicts are counted over the paper's distinct ids.

    Parameters
    ----------
    outcomes
        Checked entries, e.g. ``collabecon._verify.verify()``; ids outside the index are
        ignored.

    Returns
    -------
    dict
        ``{paper key: {"title", "numbered", "registered", "unchecked", "missing",
        "unchecked_labels", "verdicts"}}``; ``missing`` lists the labels of the statements no
        outcome registers, ``verdicts`` counts the paper's outcomes by status.

    References
    ----------
    The five papers of the module's references; each statement's place is its row's
    ``place``.
    """
    status = {o.proposition.id: o.verdict.status for o in outcomes}
    report: dict[str, dict[str, Any]] = {}
    for paper in PAPERS:
        missing, unchecked = [], []
        for statement in paper.statements:
            found = [status[i] for i in statement.ids if i in status]
            if not found:
                missing.append(statement.label)
            elif all(s is Status.UNCHECKED for s in found):
                unchecked.append(statement.label)
        verdicts = {s.value: 0 for s in Status}
        for i in indexed_ids(paper):
            if i in status:
                verdicts[status[i].value] += 1
        report[paper.key] = {
            "title": paper.title,
            "numbered": len(paper.statements),
            "registered": len(paper.statements) - len(missing),
            "unchecked": len(unchecked),
            "missing": missing,
            "unchecked_labels": unchecked,
            "verdicts": verdicts,
        }
    return report
