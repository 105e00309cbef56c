"""The hostile corpus of the command line (``tests/hostile``): its reach, its judge, its run.

The fast tests check that the corpus reaches every subcommand and every kind of hostility
with at least 420 cases, and that the runner classifies endings as the README's promises
demand (a traceback, a hang, an exit 0 with a wrong answer, a wrong exit code). The slow test
runs every case as a subprocess and asserts that none ends with a traceback, a hang or a
silent wrong answer (``python -m tests.hostile --jobs 2`` prints the same table by hand).
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from collabecon.cli import COMMANDS
from tests.hostile.case import ENDINGS, GROUPS, Ran, case
from tests.hostile.corpus import all_cases
from tests.hostile.runner import classify, report, run_all, run_case

CASES = all_cases()


def test_the_corpus_reaches_every_subcommand_and_kind_of_hostility():
    assert len(CASES) >= 420
    assert {c.argv[0] for c in CASES} >= set(COMMANDS)
    assert {c.group for c in CASES} == set(GROUPS)
    assert len({c.id for c in CASES}) == len(CASES)
    assert all(c.expect <= set(ENDINGS) for c in CASES)


def test_every_believable_wrong_answer_is_named_or_checked():
    # a case of the kind either forbids an answer and says what it would be, or allows one
    # and has it checked (the economic checks of every answer, and its own where it has one)
    for c in CASES:
        if c.group == "wrong-answer":
            assert "ok" in c.expect or c.silent or c.check, c.id


def _ran(tmp_path: Path, code: int, out: str = "", err: str = "") -> Ran:
    work = tmp_path / "work"
    work.mkdir(exist_ok=True)
    return Ran(code, out, err, tmp_path, work)


REFUSE = case("r", "file", ["market"])
ANSWER = case("a", "file", ["market", "--json"], ("ok",))
VERBOSE = case("v", "file", ["--verbose", "market"])
#: a refusal under --verbose: its debug records, time-stamped, then the one error line
STAMPED = (
    "2026-11-27 10:41:07,316 DEBUG collabecon market: arguments: {}\ncollabecon market: error: y\n"
)


@pytest.mark.parametrize(
    ("kase", "code", "out", "err", "timed_out", "outcome"),
    [
        (REFUSE, 2, "", "collabecon market: error: --from: no such file\n", False, "clean"),
        (
            REFUSE,
            2,
            "",
            "Traceback (most recent call last):\n  x\nValueError: y\n",
            False,
            "traceback",
        ),
        (REFUSE, -9, "", "", False, "traceback"),
        (REFUSE, 2, "", "", True, "hang"),
        (REFUSE, 0, '{"names": []}', "", False, "silent"),
        (REFUSE, 1, "", "collabecon market: error: NaN\n", False, "wrong-status"),
        (REFUSE, 2, "", "warning: x\ncollabecon market: error: y\n", False, "wrong-status"),
        (ANSWER, 0, '{"price_a": 0.5, "share_a": 0.5, "revenue_a": 0.25}', "", False, "clean"),
        (ANSWER, 0, '{"price_a": 0.5, "share_a": 0.5, "revenue_a": 0.3}', "", False, "silent"),
        (ANSWER, 0, '{"price_a": -0.5}', "", False, "silent"),
        (ANSWER, 0, '{"share_a": 1.5}', "", False, "silent"),
        (ANSWER, 0, '{"welfare": NaN}', "", False, "silent"),
        (
            ANSWER,
            0,
            '{"p_l": 0.1}',
            "x.py:1: RuntimeWarning: overflow encountered\n",
            False,
            "silent",
        ),
        (ANSWER, 2, "", "collabecon market: error: y\n", False, "wrong-status"),
        (VERBOSE, 2, "", STAMPED, False, "clean"),
        (REFUSE, 2, "", STAMPED, False, "wrong-status"),
        (VERBOSE, 2, "", STAMPED + "collabecon market: error: z\n", False, "wrong-status"),
    ],
)
def test_the_runner_classifies_each_ending(kase, code, out, err, timed_out, outcome, tmp_path):
    assert classify(kase, _ran(tmp_path, code, out, err), timed_out)[0] == outcome


def test_a_refusal_that_leaves_files_behind_is_a_wrong_status(tmp_path):
    ran = _ran(tmp_path, 2, "", "collabecon market: error: y\n")
    (ran.work / "left.txt").write_text("x")
    outcome, detail = classify(REFUSE, ran, False)
    assert outcome == "wrong-status" and "left.txt" in detail


def test_a_case_runs_as_a_subprocess_in_its_own_folder():
    result = run_case(case("missing", "file", ["market", "--from", "{files}/none.csv"]))
    assert result.outcome == "clean", result.detail
    assert result.code == 2 and "none.csv" in result.detail


def test_the_report_counts_by_group_and_lists_the_failures(tmp_path):
    result = run_case(case("answer", "file", ["duopoly", "--ql", "0.3", "--qh", "0.8"]))
    text = report([result])
    assert "file" in text and "silent" in text and "answer" in text
    assert json.dumps(result.to_dict())


@pytest.mark.slow
def test_no_hostile_input_ends_with_a_traceback_a_hang_or_a_silent_wrong_answer():
    results = run_all(CASES, jobs=2)
    bad = [r for r in results if r.outcome in ("traceback", "hang", "silent")]
    assert not bad, report(results)
