"""``collabecon demo``: the README's first command, end to end."""

import contextlib
import io
import json
from decimal import Decimal

import pytest

from collabecon.cli import main
from collabecon.cli.demo import DEMO_PROPOSITIONS, GUARANTEE


def _run_demo(tmp_path, capsys, *flags):
    code = main(["demo", "--json", "--out", str(tmp_path), *flags])
    return code, json.loads(capsys.readouterr().out)


def _assert_adds_up(row, u_l, u_h, cs, welfare):
    assert row[u_l] >= 0 and row[u_h] >= 0, row
    assert row[welfare] == pytest.approx(row[cs] + row[u_l] + row[u_h], rel=0, abs=1e-12), row


def _report_table(text):
    lines = text.splitlines()
    start = next(i for i, line in enumerate(lines) if line.startswith("| scheme |"))
    header = [c.strip() for c in lines[start].strip("|").split("|")]
    rows = []
    for line in lines[start + 2 :]:
        if not line.startswith("|"):
            break
        rows.append(dict(zip(header, (c.strip() for c in line.strip("|").split("|")), strict=True)))
    return rows


@pytest.mark.slow
def test_demo_small_end_to_end(tmp_path, capsys):
    code, out = _run_demo(
        tmp_path, capsys, "--size", "300", "--target-per-class", "20", "--rounds", "2"
    )
    assert set(out["schemes"]) == {"defection-free", "complete", "one-sided-low", "one-sided-high"}
    assert out["schemes"]["defection-free"]["revenue_never_decreased"]
    # the exit status: 0 exactly when the guarantee held and every proposition agrees
    # (each proposition's agreement is tested on its own by tests/test_registry.py)
    assert sorted(p["id"] for p in out["propositions"]) == sorted(DEMO_PROPOSITIONS)
    # every claim of the chapter's experiments, held or not, with the paper's comparison
    claims = {c["id"]: c for c in out["claims"]}
    assert set(claims) == set(CLAIM_IDS) and claims[GUARANTEE]["holds"]
    keys = {"paper", "id", "statement", "published", "measured", "holds", "note"}
    assert all(
        set(c) == keys and c["paper"].startswith("Werner 2024, ch. 3") for c in out["claims"]
    )
    assert code == (0 if all(p["agrees"] for p in out["propositions"]) else 1)
    assert len(out["table"]) == 4 and len(out["table"][0]) == 9
    report = (tmp_path / "report.md").read_text()
    assert "| scheme |" in report and "![fig3_3](fig3_3.png)" in report
    assert f"| `{GUARANTEE}` |" in report and "claims hold." in report
    for name in ("fig3_1", "fig3_2a", "fig3_2b", "fig3_3", "fig3_4", "fig3_8"):
        assert (tmp_path / f"{name}.png").stat().st_size > 0

    # one revenue convention: no revenue negative, welfare = CS + revenues in every row
    for row in out["table"]:
        _assert_adds_up(row, 3, 4, 5, 6)
    for scheme in out["schemes"].values():
        assert scheme["revenue_convention"] == out["revenue_convention"]
        for row in scheme["rounds"]:
            _assert_adds_up(row, "U_l", "U_h", "consumer_surplus", "welfare")
    # the printed table adds up as printed
    printed = _report_table(report)
    assert [r["scheme"] for r in printed] == [row[0] for row in out["table"]]
    for r, row in zip(printed, out["table"], strict=True):
        money = [Decimal(r[k]) for k in ("U_l", "U_h", "consumer surplus", "welfare")]
        assert all(m >= 0 for m in money)
        assert money[3] == money[0] + money[1] + money[2], r
        assert float(money[3]) == pytest.approx(row[6], abs=1.5e-6)
        assert r["individually rational"] == ("yes" if row[8] else "no")
    # a final Nash product outside the individually rational set is never progress
    for name, scheme in out["schemes"].items():
        if not scheme["final_individually_rational"]:
            assert scheme["final_nash_gap"] >= scheme["nash_max"], name


#: Claims that do not hold at the demo's defaults (seed 0): with only the low firm sharing,
#: the high firm ends with more revenue than under defection-free collaboration (U_h 0.210
#: against 0.182), while the low firm ends with less (U_l 0.0078 against 0.0148).
#: the claims of the chapter that the demo's defaults (seed 0) do not reproduce, with the
#: numbers measured there
NOT_REPRODUCED = {
    "fig3.2b.positive_but_less": (
        "only the low firm sharing leaves the high firm a final revenue of 0.2104, above its "
        "0.1818 under defection-free collaboration (the low firm: 0.0078 vs 0.0148)"
    ),
    "fig3.3.above_one_sided": (
        "defection-free collaboration ends with U_h = 0.1818, below the 0.2104 of only the low "
        "firm sharing (U_l: 0.0148 vs 0.0078)"
    ),
}
CLAIM_IDS = (
    "fig3.1.qualities_improve",
    "fig3.1.same_quality",
    "fig3.1.revenues_to_zero",
    "fig3.2a.low_outperforms",
    "fig3.2a.high_revenue_negative",
    "fig3.2b.both_revenues_rise",
    "fig3.2b.positive_but_less",
    "fig3.3.no_revenue_decrease",
    "fig3.3.qualities_increase",
    "fig3.3.revenues_increase",
    "fig3.3.rho_converges",
    "fig3.3.above_one_sided",
    "fig3.3.nash_approaches_max",
)


@pytest.fixture(scope="module")
def default_demo(tmp_path_factory):
    """The demo at its defaults, run once for every claim."""
    out = tmp_path_factory.mktemp("demo")
    stdout = io.StringIO()
    with contextlib.redirect_stdout(stdout):
        code = main(["demo", "--json", "--out", str(out)])
    return code, json.loads(stdout.getvalue())


@pytest.mark.slow
def test_demo_default_settings(default_demo):
    code, out = default_demo
    assert code == 0  # the guarantee held and every proposition agrees
    assert out["setup"]["size"] == 500 and out["setup"]["target_per_class"] == 30
    assert out["rounds"] == 15 and out["seed"] == 0
    assert sorted(c["id"] for c in out["claims"]) == sorted(CLAIM_IDS)


@pytest.mark.slow
@pytest.mark.parametrize(
    "claim_id",
    [
        pytest.param(c, marks=pytest.mark.xfail(strict=True, reason=NOT_REPRODUCED[c]))
        if c in NOT_REPRODUCED
        else c
        for c in CLAIM_IDS
    ],
)
def test_demo_default_settings_claim(default_demo, claim_id):
    _, out = default_demo
    (claim,) = (c for c in out["claims"] if c["id"] == claim_id)
    assert claim["holds"], claim


def test_a_diverging_firm_ends_the_demo_marked_failed_with_exit_1(tmp_path, capsys, monkeypatch):
    import learning.drivers.defection_free as driver
    from learning.loop import DivergedError, Divergence

    found = Divergence(None, "the minibatch loss of the high firm", float("nan"), 2.3e4, 0.05)

    def prepare(cls, setup, seed=0, device=None):
        raise DivergedError(found)

    monkeypatch.setattr(driver.TorchFirms, "prepare", classmethod(prepare))
    out = tmp_path / "demo"
    assert main(["demo", "--out", str(out), "--rounds", "1", "--json"]) == 1
    result = json.loads(capsys.readouterr().out)
    assert result["status"] == "failed" and result["out"] == str(out)
    assert result["failed"] == found.reason and result["diverged"]["loss"] is None
    assert result["failed"].startswith("training diverged: the minibatch loss of the high firm")
