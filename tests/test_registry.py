"""The proposition registry as a whole: every verdict agrees, is earned, and can fail.

Each entry's check runs twice: as printed (its verdict must agree with what the entry
expects) and under its ``perturb`` arguments (its verdict must flip), so a check that
returns a fixed verdict, or compares nothing, fails here.
"""

from __future__ import annotations

import functools
from pathlib import Path

import pytest

from collabecon._verify import PACKAGES
from econ import errata
from econ import propositions as P

P.load(PACKAGES)
ENTRIES = P.registered()
ERRATA = Path(__file__).resolve().parents[1] / "docs" / "errata.md"


@functools.cache
def _outcome(prop_id: str) -> P.Outcome:
    """Each entry's check as printed, run once for every test that reads it."""
    (prop,) = (p for p in ENTRIES if p.id == prop_id)
    return P.run(prop)


@pytest.mark.parametrize("prop", ENTRIES, ids=[p.id for p in ENTRIES])
def test_verdict_as_printed_agrees(prop: P.Proposition) -> None:
    outcome = _outcome(prop.id)
    assert outcome.agrees, outcome.to_dict()
    if outcome.verdict.status is P.Status.CHECKED:
        assert outcome.verdict.n_points and outcome.verdict.drawn


@pytest.mark.parametrize("prop", ENTRIES, ids=[p.id for p in ENTRIES])
def test_verdict_flips_under_its_perturbation(prop: P.Proposition) -> None:
    if _outcome(prop.id).verdict.status is P.Status.UNCHECKED:
        assert prop.perturb is None and _outcome(prop.id).verdict.evidence.strip()
        return
    assert prop.perturb, f"{prop.id} names no perturbation under which its check could fail"
    verdict = prop.check(**prop.perturb)
    assert verdict.status is not P.Status.ERROR
    assert verdict.holds is not prop.holds, (prop.perturb, verdict)


def test_failing_entries_and_corrections_come_in_pairs() -> None:
    assert errata.twin_problems(ENTRIES) == []


def test_errata_page_is_generated_from_the_registry() -> None:
    outcomes = [_outcome(p.id) for p in ENTRIES]  # the order of P.verify()
    assert ERRATA.read_text() == errata.errata_markdown(outcomes), (
        "docs/errata.md is stale: regenerate it with `collabecon verify --markdown > docs/errata.md`"
    )
