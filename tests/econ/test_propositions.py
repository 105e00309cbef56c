import sympy as sp

from econ import propositions as P


def test_helpers_give_the_three_verdicts():
    x = sp.Symbol("x")
    assert P.is_zero((x + 1) ** 2 - x**2 - 2 * x - 1, "square").status is P.Status.PROVED
    assert P.is_zero(sp.Integer(3), "constant").status is P.Status.REFUTED
    pts = [{"v": v} for v in range(5)]
    assert P.on_points(lambda v: v >= 0, pts, "v >= 0").status is P.Status.CHECKED
    bad = P.on_points(lambda v: v < 3, pts, "v < 3")
    assert bad.status is P.Status.REFUTED and bad.counterexample == {"v": 3}


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
        "error": 1,
        "disagreeing": 1,
    }
    assert outcomes[1].to_dict()["counterexample"] == {"x": 1}


def test_every_registered_proposition_agrees():
    P.load(("econ", "games"))
    outcomes = list(P.verify())
    bad = [o.to_dict() for o in outcomes if not o.agrees]
    assert outcomes and not bad
    ids = [o.proposition.id for o in outcomes]
    for pid in ids:
        if pid.endswith(".corrected"):
            assert pid.removesuffix(".corrected") in ids
