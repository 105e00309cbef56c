"""Fuzz of the command line: argument vectors drawn from each subcommand's own parser.

Every subcommand (and every action of one: ``privacy account``, ``bench dp``) declares its
flags with ``add_arguments(parser)``; the parser is read back here and each example draws
an argument vector from it: some of its options, each with a value from the hostile domain
of its type (in and out of range, wrong types, 1e400 and 10**30, NaN and infinity words,
negatives, zero, empty strings, missing paths, directories, garbage files, names with quotes
and newlines), often after the small valid invocation of ``tests/test_cli_bad_inputs.py``.
``collabecon.cli.main`` runs in-process in an empty working directory under the CPU guard of
:mod:`tests.cli_guard`, and the ending must be one of the two the README promises:

* exit code 2 with one line on stderr (after progress lines, for a refusal that needs work
  first), no traceback, nothing left in the working directory;
* exit code 0 or 1 with an output whose numbers are finite and economically valid
  (:mod:`tests.hostile.checks`: prices, demands, revenues non-negative, shares in [0, 1], a
  revenue is price times share).

A command that trains is drawn, in the fast suite, with one *poisoned* option last (a value
no flag of its type accepts: a negative count, a NaN, an unknown name, a file where a
directory goes), so its refusal must come before any training; the slow suite also draws it
unpoisoned from the small invocation and checks the output of the runs that finish within
the guard. The fast suite is derandomised, so it draws the same examples on every run.
"""

from __future__ import annotations

import argparse
import importlib
import tempfile
from collections.abc import Callable
from fractions import Fraction
from functools import partial
from pathlib import Path

import pytest
from hypothesis import HealthCheck, Phase, assume, given, settings
from hypothesis import strategies as st

from collabecon.cli import COMMANDS
from tests.cli_guard import Ending, run_guarded, stderr_fault
from tests.hostile.checks import output_faults
from tests.test_cli_bad_inputs import BASE, CONFIG, GARBAGE

#: subcommand paths whose work is cheap (no training): every draw runs, poisoned or not
CHEAP = {
    ("market",),
    ("duopoly",),
    ("bargain",),
    ("pricing", "equilibrium"),
    ("privacy", "exists"),
    ("privacy", "optimal"),
    ("privacy", "account"),
}
#: paths whose smallest run still takes minutes: drawn poisoned in the slow suite too
ALWAYS_POISONED = {("table1",), ("reproduce",), ("verify",), ("flower",), ("bench", "flower")}
#: CPU seconds one example may spend (imports are made before the first example)
CPU_S = 10
#: wall seconds after which an example that spends no CPU counts as hung
HANG_S = 120


def _parser(name: str) -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog=f"collabecon {name}")
    importlib.import_module(COMMANDS[name][0]).add_arguments(parser)
    return parser


def _subparsers(parser: argparse.ArgumentParser) -> argparse._SubParsersAction | None:
    for action in parser._actions:
        if isinstance(action, argparse._SubParsersAction) and action.required:
            return action
    return None


def _paths() -> list[tuple[str, ...]]:
    """``(command,)`` or ``(command, action)`` for every action of every subcommand."""
    out = []
    for name in COMMANDS:
        sub = _subparsers(_parser(name))
        out += [(name,)] if sub is None else [(name, a) for a in sub.choices]
    return out


PATHS = _paths()

# ------------------------------------------------------------------------------------------
# values by type
# ------------------------------------------------------------------------------------------

INT_WORDS = [
    "0",
    "1",
    "2",
    "3",
    "-1",
    "-0",
    "10",
    "1.5",
    "abc",
    "",
    "1e400",
    "nan",
    "inf",
    "1e3",
    str(10**12),
    str(10**30),
    str(2**63),
    " 7",
    "1_000",
    "\u0663",  # an Arabic-Indic three, which int() reads
]
FLOAT_WORDS = [
    "0",
    "1",
    "0.5",
    "-1",
    "-0.0",
    "1e-400",
    "1e-320",
    "1e308",
    "1e309",
    "1e400",
    "-1e400",
    "nan",
    "-nan",
    "inf",
    "-inf",
    "Infinity",
    "1/0",
    "abc",
    "",
    "1_000",
    " 0.5 ",
    str(10**30),
]
FRACTION_WORDS = [*FLOAT_WORDS, "1/2", "3/2", "-1/2", "1/3", "0/1", "1e-30"]
NAMES = {
    "device": ["cpu", "cuda", "cuda:7", "mps", "banana", ""],
    "dataset": ["digits", "mnist5k", "mnist", "cifar10", "fashion-mnist", "nope", ""],
    "model": ["mlp", "linear", "lenet5", "cnn", "nope", "dp-mean", ""],
    "algorithm": ["local", "fedavg", "ifca", "cobo", "fedavg,local", "nope", ",", ""],
    "partition": ["iid", "dirichlet", "pathological", "nope", ""],
    "engine": ["batched", "loop", "nope", ""],
    "only": ["thesis.ch3.lemma2", "nowhere.", "", "nope"],
    "address": ["auto", "127.0.0.1:1", "nohost", ":", "", "[::1]:6379"],
    "names": ["a", "b", "a,b", "a,a", "'", "x\ny", ""],
    "methods": ["cobo", "local", "cobo,local", "cobo,cobo", "magic", ""],
}
KEY_VALUES = [
    "alpha=0.5",
    "shares=[0.8,0.2]",
    "novalue",
    "=1",
    "zeta=1",
    "alpha=nan",
    "alpha=1e400",
    "alpha=-1",
    'alpha="0.5"',
]
#: the file-valued options and positionals (argparse dests)
FILES = {"path", "curve", "config"}
DIRECTORIES = {"out", "checkpoint", "data_dir"}
#: file kinds; a valid one per file flag is written by :func:`_materialise`
FILE_KINDS = [
    "@missing",
    "@directory",
    "@garbage",
    "@empty",
    "@valid",
    "@quote'\"name",
    "@new\nline",
    "",
]
DIRECTORY_KINDS = ["@missing", "@directory", "@garbage", "@quote'\"name", "@new\nline", ""]
VALID = {
    "path": "q_a,q_b\n0.3,0.8\n0.5,0.5\n",
    "config": CONFIG,
    "curve": '{"noise": [1.0], "epsilon": [[[1.0, 1.0]]], "accuracy_federated": [[[0.8, 0.8]]],'
    ' "accuracy_alone": [[0.6, 0.6]]}',
}

#: the values that no option of a type accepts (the poison of a command that trains)
POISON_INT = ["-1", "abc", "1.5", "nan", ""]
POISON_FLOAT = ["nan", "abc", "1/0", ""]
POISON_NAMES = {
    "device": ["banana"],
    "dataset": ["nope"],
    "model": ["nope"],
    "algorithm": ["nope"],
    "partition": ["nope"],
    "engine": ["nope"],
    "only": ["nowhere."],
    "methods": ["magic"],
}


def _token(dest: str, kind: str) -> str:
    """A file word: ``@KIND|DEST``, made into a real path before the call (or ``kind``)."""
    return f"{kind}|{dest}" if kind.startswith("@") else kind


def _kind(action: argparse.Action) -> str:
    """The value domain of an option: int, float, fraction, choice, file, dir, kv, name, flag."""
    if action.nargs == 0:
        return "flag"
    if action.choices is not None:
        return "choice"
    if action.dest in FILES:
        return "file"
    if action.dest in DIRECTORIES:
        return "dir"
    kind = getattr(action, "kind", action.type)
    if kind is int:
        return "int"
    if kind is float:
        return "float"
    if kind is Fraction:
        return "fraction"
    if getattr(kind, "__name__", "") == "_key_value":
        return "kv"
    return "name"


def _scalar(action: argparse.Action) -> st.SearchStrategy[str]:
    """Hostile values of one item of ``action``."""
    kind = _kind(action)
    if kind == "int":
        return st.one_of(
            st.sampled_from(INT_WORDS),
            st.integers(-(10**3), 10**3).map(str),
            st.integers(min_value=10**6).map(str),
        )
    if kind == "float":
        return st.one_of(st.sampled_from(FLOAT_WORDS), st.floats().map(repr))
    if kind == "fraction":
        return st.one_of(st.sampled_from(FRACTION_WORDS), st.fractions().map(str))
    if kind == "choice":
        return st.sampled_from([*map(str, action.choices), "nope", ""])
    if kind == "file":
        return st.sampled_from(FILE_KINDS).map(partial(_token, action.dest))
    if kind == "dir":
        return st.sampled_from(DIRECTORY_KINDS).map(partial(_token, action.dest))
    if kind == "kv":
        return st.sampled_from(KEY_VALUES)
    return st.one_of(st.sampled_from(NAMES.get(action.dest, ["x", ""])), st.text(max_size=6))


def _poison(action: argparse.Action) -> st.SearchStrategy[str] | None:
    """Values that ``action`` must refuse, or None when its type has none."""
    kind = _kind(action)
    if kind == "int":
        return st.sampled_from(POISON_INT)
    if kind in ("float", "fraction"):
        return st.sampled_from(POISON_FLOAT)
    if kind == "choice":
        return st.just("nope")
    if kind == "file":
        return st.sampled_from(["@missing", "@directory", "@garbage"]).map(
            partial(_token, action.dest)
        )
    if kind == "dir":
        bad = ["@garbage", ""] if action.dest in ("out", "checkpoint") else ["@garbage"]
        return st.sampled_from(bad).map(partial(_token, action.dest))
    if kind == "kv":
        return st.sampled_from(["novalue", "=1"])
    if kind == "name" and action.dest in POISON_NAMES:
        return st.sampled_from(POISON_NAMES[action.dest])
    return None


def _words(
    draw: Callable[..., object], action: argparse.Action, values: st.SearchStrategy[str]
) -> list[str]:
    """The words of one option: its flag and its value(s); a list as words or with commas."""
    flag = action.option_strings[-1]
    if action.nargs == 0:
        return [flag]
    if action.nargs not in ("+", "*"):
        return [flag, str(draw(values))]
    items = [str(x) for x in draw(st.lists(values, min_size=1, max_size=3))]
    if draw(st.booleans()):
        return [f"{flag}={','.join(items)}"]
    return [flag, *items]


def _options(parser: argparse.ArgumentParser) -> list[argparse.Action]:
    return [
        a for a in parser._actions if a.option_strings and a.dest not in ("help", "json", "version")
    ]


def _positionals(parser: argparse.ArgumentParser) -> list[argparse.Action]:
    return [a for a in parser._actions if not a.option_strings]


@st.composite
def _argv(draw: Callable[..., object], path: tuple[str, ...], poisoned: bool) -> list[str]:
    """An argument vector of ``path``; with ``poisoned``, its last option is a poison."""
    parser = _parser(path[0])
    words = [path[0]]
    sub = _subparsers(parser)
    if sub is not None:
        parser = sub.choices[path[1]]
        words.append(path[1])
    base = " ".join(path)
    start = BASE.get(base, BASE.get(path[0]))
    mechanism: list[str] = []
    if start is not None and draw(st.booleans()):
        words = list(start)
    else:
        for action in _positionals(parser):
            if isinstance(action, argparse._SubParsersAction):
                if draw(st.booleans()):  # flower's optional mechanism, after the options
                    name = draw(st.sampled_from(sorted(action.choices)))
                    mechanism = [name, *_drawn_options(draw, action.choices[name], 2)]
            else:
                words.append(str(draw(_scalar(action))))
        for action in _options(parser):
            if action.required:
                words += _words(draw, action, _scalar(action))
    words += _drawn_options(draw, parser, 3)
    if poisoned:
        candidates = [a for a in _options(parser) if _poison(a) is not None]
        action = draw(st.sampled_from(candidates))
        words += _words(draw, action, _poison(action))  # type: ignore[arg-type]
    words += mechanism
    if draw(st.booleans()):
        words.append("--json")
    return words


def _drawn_options(draw: Callable[..., object], parser: argparse.ArgumentParser, most: int):
    chosen = draw(st.lists(st.sampled_from(_options(parser)), max_size=most, unique_by=id))
    words: list[str] = []
    for action in chosen:
        words += _words(draw, action, _scalar(action))
    return words


def _materialise(argv: list[str], files: Path) -> list[str]:
    """``argv`` with each ``@KIND|DEST`` made into a path under ``files`` (written there)."""
    out = []
    for word in argv:
        word = {"@config": "@valid|config", "@FILE": "@garbage|path"}.get(word, word)
        head, eq, value = word.partition("=") if word.startswith("--") else ("", "", word)
        if not eq:
            head, value = "", word
        if value.startswith("@") and "|" in value:
            value = str(_make(*value.rsplit("|", 1), files))
        out.append(f"{head}{eq}{value}")
    return out


def _make(kind: str, dest: str, files: Path) -> Path:
    if kind == "@missing":
        return files / "missing" / "nothing.here"
    if kind == "@valid":
        path = files / {"path": "valid.csv", "config": "valid.toml"}.get(dest, "valid.json")
        path.write_text(VALID[dest])
        return path
    path = Path(tempfile.mkdtemp(dir=files)) / kind[1:]
    if kind == "@garbage":
        path.write_bytes(GARBAGE)
    elif kind == "@empty":
        path.write_bytes(b"")
    elif dest in DIRECTORIES or kind == "@directory":
        path.mkdir()
    else:  # a file flag given a name with quotes or a newline: a valid file of that name
        path.write_text(VALID[dest])
    return path


def _judge(argv: list[str], ending: Ending, poisoned: bool) -> str | None:
    """Why the ending breaks the promise; None when it keeps it."""
    if ending.escaped is not None:
        return f"an exception escaped main: {ending.escaped}"
    if ending.code == 2:
        fault = stderr_fault(ending.err)
        if fault:
            return f"exit 2 with {fault}"
        if ending.left:
            return f"a refusal left files behind: {list(ending.left)}"
        return None
    if ending.code not in (0, 1):
        return f"exit code {ending.code!r}: {ending.err[-300:]!r}"
    if "Traceback" in ending.err:
        return f"exit {ending.code} with a traceback on stderr: {ending.err[-300:]!r}"
    if poisoned:
        return f"the poisoned option was not refused (exit {ending.code})"
    if ending.code == 1 and not ending.out:
        fault = stderr_fault(ending.err)
        return f"exit 1 without output and {fault}" if fault else None
    faults = output_faults(ending.out, "--json" in argv)
    return f"exit {ending.code} with a wrong output: {'; '.join(faults[:3])}" if faults else None


@pytest.fixture(scope="module", autouse=True)
def _imported():
    """Import what the paths import on their first call, so the guard times the work only."""
    for path in PATHS:
        _parser(path[0])
    importlib.import_module("econ.privacy.accountants")
    importlib.import_module("econ.privacy.optimal")
    importlib.import_module("learning.train")


def _check(data: st.DataObject, path: tuple[str, ...], slow: bool, tmp: Path) -> None:
    cheap = path in CHEAP
    poisoned = not cheap and (not slow or path in ALWAYS_POISONED or data.draw(st.booleans()))
    drawn = data.draw(_argv(path, poisoned), label="argv")
    argv = _materialise(drawn, Path(tempfile.mkdtemp(dir=tmp)))
    ending = run_guarded(argv, CPU_S, HANG_S)
    if ending.too_slow:
        # an unpoisoned run of a command that trains may need more than the guard
        assume(cheap or poisoned)
        pytest.fail(f"{argv!r}: still working after {CPU_S} s of CPU: neither done nor refused")
    fault = _judge(argv, ending, poisoned)
    assert fault is None, f"{argv!r}: {fault}"


#: examples per path: a cheap path, a path that trains (fast suite); the slow suite's
FAST_EXAMPLES = (25, 8)
SLOW_EXAMPLES = (300, 25)
#: cheap paths whose answers still cost about a second each (PLD accounting): fewer examples
#: in the fast suite
FAST_FEWER = {("privacy", "account"): 8}


def _fuzz(path: tuple[str, ...], slow: bool, tmp: Path) -> None:
    cheap, trains = SLOW_EXAMPLES if slow else FAST_EXAMPLES

    examples = cheap if path in CHEAP else trains
    if not slow:
        examples = FAST_FEWER.get(path, examples)

    @settings(
        max_examples=examples,
        derandomize=not slow,
        # the fast suite reports the example it drew: shrinking a refusal that came after
        # work would repeat the work
        phases=tuple(Phase) if slow else (Phase.explicit, Phase.generate),
        database=None,
        deadline=None,
        suppress_health_check=list(HealthCheck),
    )
    @given(data=st.data())
    def drawn(data: st.DataObject) -> None:
        _check(data, path, slow, tmp)

    drawn()


@pytest.mark.parametrize("path", PATHS, ids=" ".join)
def test_drawn_arguments_end_cleanly(path, tmp_path):
    _fuzz(path, slow=False, tmp=tmp_path)


@pytest.mark.slow
@pytest.mark.parametrize("path", PATHS, ids=" ".join)
def test_many_drawn_arguments_end_cleanly(path, tmp_path):
    _fuzz(path, slow=True, tmp=tmp_path)


def test_every_subcommand_and_action_is_drawn():
    assert {p[0] for p in PATHS} == set(COMMANDS)
    assert ("privacy", "account") in PATHS and ("bench", "dp") in PATHS
    assert all(p in PATHS for p in CHEAP | ALWAYS_POISONED)
