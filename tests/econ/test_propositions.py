import pytest
import sympy as sp

from econ import errata
from econ import propositions as P


def test_helpers_give_the_three_verdicts():
    x = sp.Symbol("x")
    assert P.is_zero((x + 1) ** 2 - x**2 - 2 * x - 1, "square").status is P.Status.PROVED
    assert P.is_zero(sp.Integer(3), "constant").status is P.Status.REFUTED
    pts = [{"v": v} for v in range(5)]
    ok = P.on_points(lambda v: v >= 0, pts, "v >= 0", drawn="0..4")
    assert ok.status is P.Status.CHECKED and ok.n_points == 5 and ok.drawn == "0..4"
    bad = P.on_points(lambda v: v < 3, pts, "v < 3", drawn="0..4")
    assert bad.status is P.Status.REFUTED and bad.counterexample == {"v": 3}


def test_points_outside_the_hypothesis_are_not_evidence():
    pts = [{"v": v} for v in range(-3, 3)]
    # v >= 0 is the hypothesis: the negative points are skipped and said so, never refute
    verdict = P.on_points(
        lambda v: v * v >= v, pts, "v^2 >= v", drawn="-3..2", hypothesis=lambda v: v >= 0
    )
    assert verdict.status is P.Status.CHECKED and verdict.n_points == 3
    assert "3 further points outside the hypothesis" in verdict.evidence
    with pytest.raises(ValueError, match="no point satisfies"):
        P.on_points(lambda v: True, pts, "t", drawn="d", hypothesis=lambda v: v > 10)
    with pytest.raises(ValueError, match="drawn"):
        P.checked("e", 3, drawn=" ")


def test_expectation_and_errors_decide_agreement():
    def boom() -> P.Verdict:
        raise RuntimeError("no")

    ok = P.Proposition("t.a", "src", "s", lambda: P.proved("e"))
    wrong = P.Proposition("t.b", "src", "s", lambda: P.refuted("e", {"x": 1}), holds=False)
    err = P.Proposition("t.c", "src", "s", boom)
    outcomes = [P.run(ok), P.run(wrong), P.run(err)]
    assert [o.agrees for o in outcomes] == [True, True, False]
    assert outcomes[2].verdict.status is P.Status.ERROR
    assert P.summary(outcomes) == {
        "proved": 1,
        "checked": 0,
        "refuted": 1,
        "unchecked": 0,
        "error": 1,
        "disagreeing": 1,
        "errors_in_papers": 1,
        "errors_in_code": 0,
        "errors_in_readings": 0,
    }
    assert outcomes[1].to_dict()["counterexample"] == {"x": 1}


def test_an_unchecked_entry_gives_its_reason_and_names_no_perturbation():
    reason = "no instance computes the constant"
    bare = P.Proposition("t.u", "src", "s", lambda: P.unchecked(reason))
    perturbed = P.Proposition("t.v", "src", "s", lambda: P.unchecked(reason), perturb={"c": 1})
    outcomes = [P.run(bare), P.run(perturbed)]
    assert [o.verdict.status for o in outcomes] == [P.Status.UNCHECKED] * 2
    assert [o.agrees for o in outcomes] == [True, False]
    assert not outcomes[0].verdict.holds and outcomes[0].verdict.evidence == reason
    assert P.summary(outcomes)["unchecked"] == 2
    with pytest.raises(ValueError, match="reason"):
        P.unchecked(" ")


def test_twins_are_checked_in_both_directions():
    fails = P.Proposition("t.x", "src", "s", lambda: P.refuted("e", {}), holds=False)
    twin = P.Proposition("t.x.corrected", "src", "s", lambda: P.proved("e"))
    orphan = P.Proposition("t.y.corrected", "src", "s", lambda: P.proved("e"))
    lone = P.Proposition("t.z", "src", "s", lambda: P.refuted("e", {}), holds=False)
    assert errata.twin_problems([fails, twin]) == []
    assert errata.twin_problems([fails, twin, orphan, lone]) == [
        "t.y.corrected has no parent expected to fail",
        "t.z is expected to fail but has no holding .corrected twin",
    ]


def test_errata_lists_refuted_entries_by_kind_with_their_correction():
    fails = P.Proposition(
        "t.x", "Paper, eq. (1)", "x = 2", lambda: P.refuted("x is 3", {"x": 3}), holds=False
    )
    code = P.Proposition(
        "t.c", "Code", "bounds (0, 1)", lambda: P.refuted("escapes", {}), holds=False, kind="code"
    )
    twin = P.Proposition("t.x.corrected", "Paper, eq. (1)", "x = 3", lambda: P.proved("3 = 3"))
    page = errata.errata_markdown([P.run(fails), P.run(code), P.run(twin)])
    paper_part, code_part = page.split("## Errors in the authors' code")
    assert (
        "### `t.x`" in paper_part
        and "x = 3" in paper_part
        and "**Counterexample:** x = 3" in paper_part
    )
    assert "### `t.c`" in code_part
    assert "Readings of ambiguous text that do not hold\n\nNone registered." in page
