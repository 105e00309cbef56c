"""``collabecon reproduce``: the report over every reproduction, run in-process on stand-in
reproduction modules (the runner's contract: a Reproduction per module, errors reported)."""

import importlib
import json
import sys
import textwrap
from pathlib import Path

import pytest

import collabecon.reproductions as experiments
from collabecon.cli import main
from collabecon.reproductions import report

_GOOD = """
from pathlib import Path

from econ.claims import Claim, Reproduction

CALLS = []


def reproduce(scale, out, seeds=None):
    CALLS.append((scale, Path(out), seeds))
    Path(out).mkdir(parents=True, exist_ok=True)
    (Path(out) / "plot.png").write_bytes(b"png")
    claims = (
        Claim(paper="Paper A, Fig. 1", id="a.up", statement="the curve rises", published=1.5,
              measured=1.7, holds=True),
        Claim(paper="Paper A, Fig. 1", id="a.cross", statement="the curves cross once",
              published="one", measured="two", holds=False, note="n"),
    )
    return Reproduction("good", "Paper A: Figure 1", claims, "settings", ("plot.png",), {"x": 1})
"""
_NEEDS_DATA = """
from econ.claims import Claim, Reproduction

NEEDS_DATA_DIR = "images/ (the data set)"
CALLS = []


def reproduce(scale, out, seeds=None, *, data_dir=None):
    CALLS.append(data_dir)
    claim = Claim(paper="Paper B, Fig. 2", id="b.up", statement="it rises", published=None,
                  measured=1.0, holds=True)
    return Reproduction("data", "Paper B: Figure 2", (claim,))
"""
_BAD = """
def reproduce(scale, out, seeds=None):
    raise RuntimeError("the data set is missing")
"""


@pytest.fixture
def fake(tmp_path, monkeypatch):
    """Stand-in reproduction modules: ``good`` (two claims, one held) and ``bad`` (raises)."""
    code = tmp_path / "code"
    code.mkdir()
    (code / "fake_good_repro.py").write_text(textwrap.dedent(_GOOD))
    (code / "fake_bad_repro.py").write_text(textwrap.dedent(_BAD))
    (code / "fake_data_repro.py").write_text(textwrap.dedent(_NEEDS_DATA))
    monkeypatch.syspath_prepend(str(code))
    monkeypatch.setattr(
        experiments,
        "REPRODUCTIONS",
        {"good": "fake_good_repro", "bad": "fake_bad_repro", "data": "fake_data_repro"},
    )
    yield tmp_path / "report"
    for name in ("fake_good_repro", "fake_bad_repro", "fake_data_repro"):
        sys.modules.pop(name, None)


def test_report_page_and_json(fake, capsys):
    code = main(["reproduce", "--out", str(fake), "--only", "good", "--seeds", "3", "--json"])
    assert code == 0
    out = json.loads(capsys.readouterr().out)
    assert sys.modules["fake_good_repro"].CALLS == [("small", fake / "good", 3)]
    assert (out["held"], out["total"], out["failed"]) == (1, 2, [])
    assert [c["id"] for c in out["claims"]] == ["a.up", "a.cross"]
    keys = {"paper", "id", "statement", "published", "measured", "holds", "note", "reproduction"}
    assert set(out["claims"][0]) == keys
    assert out["claims"][1]["holds"] is False and out["claims"][1]["measured"] == "two"
    assert out["reproductions"]["good"]["data"] == {"x": 1}
    saved = json.loads((fake / "report.json").read_text())
    assert saved["claims"] == out["claims"]
    page = (fake / "report.md").read_text()
    assert page.startswith("# collabecon reproductions (small scale)")
    assert "| [good](#good) | 1 / 2 |" in page
    assert "## Paper A: Figure 1" in page and "settings" in page
    assert "| `a.cross` | the curves cross once | one | two | **no** | n |" in page
    assert "![good/plot.png](good/plot.png)" in page  # relative to the report's folder
    assert (fake / "good" / "plot.png").exists()


def test_a_failing_reproduction_is_reported_without_losing_the_others(fake, capsys):
    code = main(["reproduce", "--out", str(fake), "--scale", "paper"])
    assert code == 1
    text = capsys.readouterr().out
    assert "bad: error: RuntimeError: the data set is missing" in text
    assert "1 of 2 claims hold" in text
    page = (fake / "report.md").read_text()
    assert "| [bad](#bad) | error |" in page and "| [good](#good) | 1 / 2 |" in page
    assert "**error**: `RuntimeError: the data set is missing (fake_bad_repro.py:3)`" in page
    saved = json.loads((fake / "report.json").read_text())
    assert saved["failed"] == ["bad"] and saved["scale"] == "paper"
    assert "error" in saved["reproductions"]["bad"]
    assert sys.modules["fake_good_repro"].CALLS == [("paper", fake / "good", None)]


def test_reproductions_in_parallel_processes_give_the_same_page(fake, capsys):
    assert main(["reproduce", "--out", str(fake / "one"), "--only", "good,bad"]) == 1
    assert (
        main(["reproduce", "--out", str(fake / "two"), "--only", "good,bad", "--workers", "2"]) == 1
    )
    capsys.readouterr()
    one, two = ((fake / d / "report.md").read_text() for d in ("one", "two"))
    strip = lambda page: [l for l in page.splitlines() if not l.startswith("| [")]  # noqa: E731
    assert strip(one).count("## Paper A: Figure 1") == 1 and strip(one) == strip(two)
    assert (fake / "two" / "good" / "plot.png").exists()


@pytest.mark.parametrize(
    ("argv", "message"),
    [
        (
            ["--only", "good,nope"],
            "--only: unknown reproduction 'nope'; choose from good, bad, data",
        ),
        (["--seeds", "0"], "--seeds must be an integer in [1, 1000], got 0"),
        (["--seeds", "1001"], "--seeds must be an integer in [1, 1000], got 1001"),
        (["--experiments"], "--out has no effect with it"),
        (["--only", "good", "--data-dir", "."], "--data-dir has no effect with --only good"),
        (["--data-dir", "missing-dir"], "--data-dir 'missing-dir' does not exist"),
        (["--workers", "0"], "--workers must be an integer >= 1, got 0"),
        (["--scale", "huge"], "invalid choice: 'huge'"),
    ],
)
def test_bad_input_exits_2(fake, capsys, argv, message):
    try:
        code = main(["reproduce", "--out", str(fake), *argv])
    except SystemExit as exc:  # argparse's own errors
        code = exc.code
    assert code == 2
    assert message in capsys.readouterr().err
    assert not fake.exists()  # checked before any reproduction ran


def test_a_file_where_the_kept_results_go_exits_2_before_any_run(fake, capsys):
    fake.mkdir(parents=True)
    (fake / "results").write_text("a file")
    assert main(["reproduce", "--out", str(fake), "--only", "good"]) == 2
    assert "results is a file: the report keeps each finished" in capsys.readouterr().err
    assert "fake_good_repro" not in sys.modules


def test_out_that_is_a_file_exits_2(fake, capsys):
    fake.parent.mkdir(parents=True, exist_ok=True)
    fake.write_text("a file")
    assert main(["reproduce", "--out", str(fake)]) == 2
    assert "is a file, not a directory" in capsys.readouterr().err
    assert "fake_good_repro" not in sys.modules


def test_report_lists_every_table_and_figure_of_the_papers(fake, capsys):
    from collabecon.reproductions.inventory import EXPERIMENTS

    assert main(["reproduce", "--out", str(fake), "--only", "good", "--json"]) == 0
    out = json.loads(capsys.readouterr().out)
    rows = [e.to_dict() for e in EXPERIMENTS]
    assert out["experiments"] == rows
    assert json.loads((fake / "report.json").read_text())["experiments"] == rows
    page = (fake / "report.md").read_text()
    assert "## The papers' experiments" in page
    assert "| paper | label | subject | reproduced by | what is compared / why not |" in page
    for e in EXPERIMENTS:
        by = f"`{e.reproduction}`" if e.reproduction else "-"
        line = f"| {e.paper.short} | {e.label}, {e.where} | {e.subject} | {by} | "
        assert line + e.explanation().replace("|", "\\|") + " |" in page


def test_experiments_flag_lists_the_inventory_and_runs_nothing(fake, capsys):
    from collabecon.reproductions.inventory import EXPERIMENTS

    assert main(["reproduce", "--experiments"]) == 0
    text = capsys.readouterr().out
    reproduced = sum(e.reproduction is not None for e in EXPERIMENTS)
    assert f"{reproduced} of {len(EXPERIMENTS)} tables and figures reproduced" in text
    assert all(e.label in text and e.explanation() in text for e in EXPERIMENTS)
    assert main(["reproduce", "--experiments", "--json"]) == 0
    assert json.loads(capsys.readouterr().out) == {
        "experiments": [e.to_dict() for e in EXPERIMENTS]
    }
    assert "fake_good_repro" not in sys.modules and not fake.exists()


def test_out_is_required_to_run_the_reproductions(fake, capsys):
    assert main(["reproduce"]) == 2
    assert (
        "--out is required (the report directory) unless --experiments" in capsys.readouterr().err
    )
    assert "fake_good_repro" not in sys.modules


def test_a_reproduction_that_needs_data_is_not_run_without_data_dir(fake, capsys):
    code = main(["reproduce", "--out", str(fake), "--only", "good,data"])
    assert code == 0  # not an error
    text = capsys.readouterr().out
    assert "data: not run: needs --data-dir, a directory holding images/ (the data set)" in text
    assert sys.modules["fake_data_repro"].CALLS == []
    page = (fake / "report.md").read_text()
    assert "| [data](#data) | not run: needs --data-dir |" in page
    assert "**not run**: needs --data-dir, a directory holding images/ (the data set)" in page
    saved = json.loads((fake / "report.json").read_text())
    assert saved["failed"] == [] and "not_run" in saved["reproductions"]["data"]


def test_data_dir_reaches_the_reproductions_that_take_it(fake, tmp_path, capsys):
    argv = ["reproduce", "--out", str(fake), "--only", "good,data", "--json"]
    assert main([*argv, "--data-dir", str(tmp_path)]) == 0
    out = json.loads(capsys.readouterr().out)
    assert sys.modules["fake_data_repro"].CALLS == [str(tmp_path)]
    assert sys.modules["fake_good_repro"].CALLS == [("small", fake / "good", None)]
    assert (out["held"], out["total"]) == (2, 3)


def _first_line(path):
    return path.read_text().splitlines()[0]


def test_an_interrupted_run_says_so_first_and_a_second_run_finishes_it(
    fake, tmp_path, monkeypatch, capsys
):
    argv = ["reproduce", "--out", str(fake), "--only", "good,data", "--data-dir", str(tmp_path)]
    data = importlib.import_module("fake_data_repro")

    def interrupted(*args, **kwargs):
        raise KeyboardInterrupt

    with monkeypatch.context() as patch:
        patch.setattr(data, "reproduce", interrupted)
        assert main(argv) == 130
    capsys.readouterr()
    line = "INCOMPLETE: 1 of 2 reproductions finished; missing: data (the run was cut short"
    assert _first_line(fake / "report.md").startswith(line)
    assert "| data | missing: not finished | - |" in (fake / "report.md").read_text()
    saved = json.loads((fake / "report.json").read_text())
    assert list(saved)[:3] == ["status", "status_why", "missing"]
    assert (saved["status"], saved["missing"], saved["failed"]) == ("incomplete", ["data"], [])
    assert saved["status_why"].startswith("1 of 2 reproductions finished; missing: data")
    assert (fake / "results" / "good.json").exists()
    assert not (fake / "results" / "data.json").exists()

    assert main(argv) == 0  # the same command again: only the missing one runs
    err = capsys.readouterr().err
    assert "reusing good: finished earlier in" in err and "[1/1] running data" in err
    assert sys.modules["fake_good_repro"].CALLS == [("small", fake / "good", None)]
    assert sys.modules["fake_data_repro"].CALLS == [str(tmp_path)]
    assert _first_line(fake / "report.md") == "# collabecon reproductions (small scale)"
    page = (fake / "report.md").read_text()
    assert "Kept from an earlier run with the same settings: good" in page
    assert "| [good](#good) | 1 / 2 |" in page and "## Paper A: Figure 1" in page
    saved = json.loads((fake / "report.json").read_text())
    assert (saved["status"], saved["status_why"], saved["missing"]) == ("complete", None, [])
    assert saved["reused"] == ["good"] and saved["reproductions"]["good"]["reused"] is True
    assert (saved["held"], saved["total"]) == (2, 3)


def test_while_a_run_is_going_its_report_reads_incomplete(fake, monkeypatch, capsys):
    good = importlib.import_module("fake_good_repro")
    seen = []
    real = good.reproduce

    def peeking(scale, out, seeds=None):
        seen.append(_first_line(fake / "report.md"))
        seen.append(json.loads((fake / "report.json").read_text())["status"])
        return real(scale, out, seeds)

    def peeking_bad(scale, out, seeds=None):
        seen.append(_first_line(fake / "report.md"))
        raise RuntimeError("the data set is missing")

    monkeypatch.setattr(good, "reproduce", peeking)
    monkeypatch.setattr(importlib.import_module("fake_bad_repro"), "reproduce", peeking_bad)
    assert main(["reproduce", "--out", str(fake), "--only", "good"]) == 0
    assert seen[0].startswith("INCOMPLETE: 0 of 1 reproductions finished; missing: good")
    assert seen[1] == "incomplete"
    assert _first_line(fake / "report.md").startswith("# collabecon")  # complete now
    assert main(["reproduce", "--out", str(fake), "--only", "good,bad"]) == 1
    # the complete page of the first run was replaced before the second ran anything
    assert seen[2].startswith("INCOMPLETE: 1 of 2 reproductions finished; missing: bad")
    assert len(seen) == 3  # good was reused, not run again
    capsys.readouterr()


def test_a_kept_result_of_other_settings_is_run_again(fake, capsys):
    argv = ["reproduce", "--out", str(fake), "--only", "good"]
    assert main([*argv, "--seeds", "3"]) == 0
    assert main([*argv, "--seeds", "2"]) == 0
    err = capsys.readouterr().err
    assert "running good again: its kept result ran with seeds 3 (now 2)" in err
    assert [c[2] for c in sys.modules["fake_good_repro"].CALLS] == [3, 2]
    kept = json.loads((fake / "results" / "good.json").read_text())
    assert kept["settings"]["seeds"] == 2 and kept["settings"]["scale"] == "small"
    assert set(kept["settings"]) == {
        "module",
        "scale",
        "seeds",
        "data_dir",
        "version",
        "source_sha256",
    }
    (fake / "results" / "good.json").write_text("{not json")
    assert main([*argv, "--seeds", "2"]) == 0
    assert "running good again: its kept result" in capsys.readouterr().err
    assert len(sys.modules["fake_good_repro"].CALLS) == 3


def test_a_kept_result_of_another_version_or_source_is_not_reused(fake, monkeypatch, capsys):
    argv = ["reproduce", "--out", str(fake), "--only", "good"]
    assert main(argv) == 0
    with monkeypatch.context() as patch:
        patch.setattr(report, "version", lambda name: "0.0.0")
        assert main(argv) == 0
    assert "(now '0.0.0')" in capsys.readouterr().err
    code = fake.parent / "code" / "fake_good_repro.py"
    code.write_text(code.read_text() + "\n# changed\n")
    assert main(argv) == 0
    err = capsys.readouterr().err
    assert "running good again: its kept result ran with version '0.0.0'" in err
    assert "source_sha256" in err
    assert len(sys.modules["fake_good_repro"].CALLS) == 3


def test_a_reproduction_that_raised_is_run_again_and_not_kept(fake, capsys):
    argv = ["reproduce", "--out", str(fake), "--only", "good,bad"]
    assert main(argv) == 1
    assert not (fake / "results" / "bad.json").exists()
    assert main(argv) == 1
    err = capsys.readouterr().err
    assert "reusing good" in err and "[1/1] running bad" in err


def test_only_the_reproductions_that_take_a_data_dir_read_it(fake):
    assert report.takes_data_dir("fake_data_repro")
    assert not report.takes_data_dir("fake_good_repro")
    assert report.settings_of("good", "small", None, str(fake))["data_dir"] is None
    assert report.settings_of("data", "small", None, ".")["data_dir"] == str(Path(".").resolve())
