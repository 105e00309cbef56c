"""The tracked tree describes collabecon and cites papers, never documents outside it.

Code, tests, notebooks, docs, benchmarks and the README cite the five papers (section, equation,
table, figure, page) or ``docs/errata.md`` by registry id. They do not cite working notes (their
file names, section numbers, check ids, typo numbers or provenance tags), point outside the
repository, or tell the story of how the tree was built (who worked when, on which numbered
item, what the code was before). The patterns below are precise enough to have no false
positives on the tree: ``spec`` as a Python name (``spec = ...``, ``spec.loader``) and
matplotlib colours ("C0"-"C9") are allowed. The examples that must be caught are written with
two spaces between their words, which the patterns accept and a reader's search does not.
"""

from __future__ import annotations

import re
import subprocess
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
SELF = Path(__file__).resolve().relative_to(ROOT).as_posix()

#: Suffixes of the files that hold prose: code, tests, notebooks, docs, benchmarks, README.
SUFFIXES = (".py", ".md", ".ipynb", ".toml", ".rst", ".txt", ".cfg", ".yaml", ".yml")

#: What may not appear, with a name for the report.
FORBIDDEN: dict[str, re.Pattern[str]] = {
    "cites the spec": re.compile(r"\bspec\b(?!\s*=[^=]|\.[A-Za-z_])", re.IGNORECASE),
    "spec file": re.compile(r"\bspec/[\w-]+\.md\b"),
    # written with [.] and [d] so that this file does not itself name the paths it forbids
    "outside the repository": re.compile(
        r"[.][.]/share[d]\b|\bshare[d]/(?:spec|seeds)\b|/wor[k]/(?:shared|brief|wt|main)\b"
        r"|\bARCHITECTUR[E][.]md\b"
    ),
    "provenance tag of the notes": re.compile(r"\[(?:NEW|R|C|I|S|X|D|RC|FS)\]"),
    "note typo number": re.compile(r"\btypos? [0-9]+", re.IGNORECASE),
    "note claim id": re.compile(r"\bclaims? [A-Z]{1,2}[0-9]+\b"),
    "note id style": re.compile(r"\b[A-Z][0-9]+-style\b"),
    "note theory id": re.compile(r"\bT-(?:[A-Z]{1,2}[0-9]+|[a-e])\b"),
    "note check id": re.compile(r"(?<![\"'\w])C[12][0-9](?![\"'\w])|\bC-[A-Z]{2,4}-[0-9]"),
    # a process's POSIX session (setsid) is the software's own term
    "build session": re.compile(r"(?<!POSIX )\bsessions?\b", re.IGNORECASE),
    "the builders' assignment": re.compile(r"\bthis\s+task\b", re.IGNORECASE),
    "issue number": re.compile(r"\bissues?\s+#?[0-9]+\b", re.IGNORECASE),
    "rounds of the building": re.compile(r"\brounds?\s+of\s+work\b", re.IGNORECASE),
    "numbered items of a plan": re.compile(r"\bwork\s+(?:items?|packages?)\b", re.IGNORECASE),
    "measured when built": re.compile(r"\bas\s+measured\s+in\b", re.IGNORECASE),
    "history of the code": re.compile(r"\bused\s+to\s+be\b", re.IGNORECASE),
    "instructions to the builders": re.compile(r"\b(?:the|this)\s+brief\b", re.IGNORECASE),
    "change under review": re.compile(
        r"\b(?:this|the|that)\s+(?:PR|pull\s+request|commit|ticket)\b", re.IGNORECASE
    ),
}


def tracked_files() -> list[str]:
    """Every tracked file with a prose suffix, relative to the repository root."""
    out = subprocess.run(
        ["git", "ls-files", "-z"], cwd=ROOT, capture_output=True, check=True
    ).stdout.decode()
    return sorted(p for p in out.split("\0") if p.endswith(SUFFIXES) and p != SELF)


def hits(paths: list[str]) -> list[str]:
    """``path:line: [rule] text`` for every forbidden pattern in ``paths``."""
    found = []
    for path in paths:
        file = ROOT / path
        if not file.is_file():
            continue
        for number, line in enumerate(file.read_text(errors="replace").splitlines(), 1):
            for rule, pattern in FORBIDDEN.items():
                if pattern.search(line):
                    found.append(f"{path}:{number}: [{rule}] {line.strip()[:160]}")
    return found


def test_the_tree_cites_papers_and_describes_the_software():
    if not (ROOT / ".git").exists():
        pytest.skip("not a git checkout")
    found = hits(tracked_files())
    assert not found, "\n".join(found)


@pytest.mark.parametrize(
    "text",
    [
        "see sp" + "ec ch3 §8.3",
        "(sp" + "ec cobo §7.2 A)",
        "section 2.7 of the sp" + "ec",
        "Sp" + "ec ch2 claims",
        "`../shar" + "ed/ARCHI" + "TECTURE.md`",
        "(see ``ARCHI" + "TECTURE.md``, *Errors*)",
        "readings of ``sp" + "ec/ch2-clustering.md``",
        'source="sp' + 'ec ch3 section 6, C13 [NEW]"',
        "(sp" + "ec ch3 typo 26)",
        "the CFL toy failure (claim U12)",
        "C12-style note ids",
        "sp" + "ec T-G1, T-G2",
        "convex toy (C23)",
        "checks C-EQ-1..9 of section 5",
        "session  3 measured 2.25x",
        "none lent to this  ta" + "sk",
        "Issue  3's target",
        "in the last round  of  work",
        "the second work  item of the plan",
        "2.3x, as  measured  in the earlier run",
        "this flag used  to  be called --scale",
        "as the  brief asks",
        "this  PR adds the estimator",
        "fixed in that  commit",
    ],
)
def test_each_pattern_catches_what_it_is_for(text):
    assert any(p.search(text) for p in FORBIDDEN.values()), text


@pytest.mark.parametrize(
    "text",
    [
        "spec = importlib.util.spec_from_file_location(name, path)",
        "spec.loader.exec_module(module)",
        'ax.plot(x, y, "-o", color="C0")',
        "Werner et al. (2023), §4.3 and Fig. 4",
        "Khan et al., §6.1 and App. D.2.3-D.2.4",
        "parameter sets P0 and P2; the thesis's T = 20,000 rounds",
        "docs/errata.md, thesis.ch3.prop3.step",
        "Lemma 22 of Werner (2024)",
        "the work of each client is one call",
        "the ratio measured in one run against the baseline",
        "stop a run whose loss is no longer a finite number",
        "the estimator is used to price each round",
        "a brief summary of the round",
    ],
)
def test_legitimate_text_passes(text):
    assert not any(p.search(text) for p in FORBIDDEN.values()), text
