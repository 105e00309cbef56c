"""The coverage index: every id it names is registered, its labels are unique, and the
share of unchecked statements stays small.
"""

from __future__ import annotations

import functools
import json
from typing import Any

import pytest

from collabecon._verify import PACKAGES
from collabecon.cli import main
from econ import propositions as P
from econ import statement_index as S
from tests.test_registry import _outcome

P.load(PACKAGES)
REGISTERED = {p.id for p in P.registered()}
KEYS = [paper.key for paper in S.PAPERS]


@functools.cache
def _coverage() -> dict[str, dict[str, Any]]:
    """The coverage of every indexed entry (each check run once, shared with the registry's tests)."""
    ids = {i for paper in S.PAPERS for i in S.indexed_ids(paper)}
    return S.coverage(_outcome(i) for i in sorted(ids & REGISTERED))


@pytest.mark.parametrize("paper", S.PAPERS, ids=KEYS)
def test_every_indexed_id_is_registered(paper: S.PaperStatements) -> None:
    assert [i for i in S.indexed_ids(paper) if i not in REGISTERED] == []


@pytest.mark.parametrize("paper", S.PAPERS, ids=KEYS)
def test_labels_are_unique_within_a_paper(paper: S.PaperStatements) -> None:
    labels = [s.label for s in paper.statements]
    assert len(labels) == len(set(labels))
    assert all(s.place.strip() for s in paper.statements)


@pytest.mark.parametrize("key", KEYS)
def test_coverage_reports_the_statements_without_an_entry_as_missing(key: str) -> None:
    (paper,) = (p for p in S.PAPERS if p.key == key)
    report = _coverage()[key]
    assert report["missing"] == [s.label for s in paper.statements if not s.ids]
    assert report["numbered"] == len(paper.statements)
    assert report["registered"] == len(paper.statements) - len(report["missing"])
    assert sum(report["verdicts"].values()) == len(S.indexed_ids(paper))


@pytest.mark.parametrize("key", KEYS)
def test_unchecked_statements_are_under_a_tenth_of_each_paper(key: str) -> None:
    report = _coverage()[key]
    assert report["unchecked"] < 0.1 * report["numbered"], report["unchecked_labels"]


def test_coverage_counts_a_statement_whose_entries_are_all_unchecked() -> None:
    statement = S.IPFL.statements[0]
    outcomes = [
        P.Outcome(
            P.Proposition(i, "source", "statement", lambda: P.unchecked("no instance")),
            P.unchecked("no instance"),
            0.0,
        )
        for i in statement.ids
    ]
    report = S.coverage(outcomes)["ipfl"]
    assert report["unchecked_labels"] == [statement.label]
    assert report["verdicts"]["unchecked"] == len(statement.ids)
    assert statement.label not in report["missing"]


def test_verify_json_has_the_coverage_of_each_paper(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["verify", "--json", "--only", "ipfl."]) == 0
    out = json.loads(capsys.readouterr().out)
    assert set(out) >= {"propositions", "summary", "papers"}
    assert list(out["papers"]) == ["ipfl"]
    report = out["papers"]["ipfl"]
    assert set(report) == {
        "title",
        "numbered",
        "registered",
        "unchecked",
        "missing",
        "unchecked_labels",
        "verdicts",
    }
    assert report["numbered"] == len(S.IPFL.statements)
    assert "unchecked" in out["summary"]


def test_verify_text_has_the_table_of_papers(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["verify", "--only", "cobo."]) == 0
    text = capsys.readouterr().out
    assert "numbered statements per paper" in text
    assert "cobo" in text.split("numbered statements per paper")[1]
