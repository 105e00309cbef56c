"""``collabecon demo``: the README's first command, end to end."""

import json

import pytest

from learning.cli import main


def _run_demo(tmp_path, capsys, *flags):
    code = main(["demo", "--json", "--out", str(tmp_path), *flags])
    return code, json.loads(capsys.readouterr().out)


def test_demo_small_end_to_end(tmp_path, capsys):
    code, out = _run_demo(
        tmp_path, capsys, "--size", "300", "--target-per-class", "20", "--rounds", "2"
    )
    assert code == 0
    assert set(out["schemes"]) == {"defection-free", "complete", "one-sided-low", "one-sided-high"}
    assert out["schemes"]["defection-free"]["revenue_never_decreased"]
    assert all(p["agrees"] for p in out["propositions"]) and len(out["propositions"]) == 5
    assert len(out["table"]) == 4 and len(out["table"][0]) == 8
    report = (tmp_path / "report.md").read_text()
    assert "| scheme |" in report and "![fig3_3](fig3_3.png)" in report
    for name in ("fig3_1", "fig3_2a", "fig3_2b", "fig3_3", "fig3_4", "fig3_8"):
        assert (tmp_path / f"{name}.png").stat().st_size > 0


@pytest.mark.slow
def test_demo_default_settings_hold_every_claim(tmp_path, capsys):
    code, out = _run_demo(tmp_path, capsys)
    assert code == 0
    failed = [c for c in out["claims"] if not c["holds"]]
    assert not failed, failed
