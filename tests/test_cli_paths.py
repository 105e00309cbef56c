"""An unusable output or checkpoint directory is refused when a subcommand starts.

Every subcommand that writes checks its directory flags before any work: a file where a
directory is expected, a path under a file, or a read-only directory gives one line on
stderr naming the flag, exit code 2, no traceback, and returns at once (nothing trained).
"""

from __future__ import annotations

import argparse
import importlib
import os
import time
from pathlib import Path

import pytest

from collabecon.cli import COMMANDS, main
from collabecon.cli._paths import writable_dir

#: (argv before the path flag, the flag). Every other flag is valid, so without the check
#: each command would start its work.
WRITERS = [
    (["train", "--rounds", "1"], "--out"),
    (["train", "--rounds", "1"], "--checkpoint"),
    (["sweep", "CONFIG"], "--out"),
    (["cobo", "--rounds", "1"], "--out"),
    (["ipfl", "--rounds", "1"], "--out"),
    (["ipfl", "--rounds", "1"], "--checkpoint"),
    (["defection-free", "--rounds", "1"], "--out"),
    (["demo", "--rounds", "1"], "--out"),
    (["pricing", "repeated", "--rounds", "10"], "--out"),
    (["pricing", "figures", "--rounds", "10"], "--out"),
    (["privacy", "figure1", "--repetitions", "2"], "--out"),
    (["table1"], "--out"),
]


def _a_file(tmp_path: Path) -> Path:
    path = tmp_path / "a-file"
    path.write_text("results\n")
    return path


def _under_a_file(tmp_path: Path) -> Path:
    return _a_file(tmp_path) / "out"


def _deep_under_a_file(tmp_path: Path) -> Path:
    return _a_file(tmp_path) / "x" / "y"


def _read_only(tmp_path: Path) -> Path:
    path = tmp_path / "read-only"
    path.mkdir()
    path.chmod(0o555)
    try:
        (path / "probe").touch()
    except PermissionError:
        return path
    pytest.skip("permissions are not enforced for this user (root)")


BAD_PATHS = {
    "a file": _a_file,
    "under a file": _under_a_file,
    "deep under a file": _deep_under_a_file,
    "read-only directory": _read_only,
}


def _sweep_config(tmp_path: Path) -> str:
    config = tmp_path / "grid.toml"
    config.write_text("[train]\nrounds = 1\n\n[grid]\nseed = [0, 1]\n")
    return str(config)


@pytest.mark.parametrize("bad", BAD_PATHS)
@pytest.mark.parametrize(
    ("argv", "flag"), WRITERS, ids=[" ".join(a[:2]) + " " + f for a, f in WRITERS]
)
def test_unusable_directory_fails_at_once_naming_the_flag(tmp_path, capsys, argv, flag, bad):
    # what the parser imports is not the command's time
    importlib.import_module(COMMANDS[argv[0]][0]).add_arguments(argparse.ArgumentParser())
    path = BAD_PATHS[bad](tmp_path)
    argv = [_sweep_config(tmp_path) if a == "CONFIG" else a for a in argv]
    before = sorted(p.name for p in tmp_path.iterdir())
    start = time.process_time()
    code = main([*argv, flag, str(path)])
    cpu_seconds = time.process_time() - start
    out, err = capsys.readouterr()
    assert code == 2
    assert out == ""
    lines = err.strip().splitlines()
    assert len(lines) == 1 and "Traceback" not in err
    assert lines[0].startswith(f"collabecon {argv[0]}: error: {flag} ")
    assert str(path) in lines[0]
    # refused before any data is loaded or any model trained (CPU time, which a loaded
    # machine does not stretch as it stretches the wall clock)
    assert cpu_seconds < 2.0
    assert sorted(p.name for p in tmp_path.iterdir()) == before


def test_writable_dir_creates_nothing_it_leaves_behind(tmp_path):
    target = tmp_path / "a" / "b" / "c"
    assert writable_dir("--out", target) == target
    assert list(tmp_path.iterdir()) == []
    assert writable_dir("--out", None) is None


def test_writable_dir_accepts_an_existing_directory_and_keeps_its_files(tmp_path):
    (tmp_path / "kept.csv").write_text("1\n")
    assert writable_dir("--checkpoint", tmp_path) == tmp_path
    assert [p.name for p in tmp_path.iterdir()] == ["kept.csv"]


def test_writable_dir_message_names_the_flag_and_the_path(tmp_path):
    path = _a_file(tmp_path)
    with pytest.raises(ValueError, match=r"^--checkpoint '.*a-file' is a file, not a directory$"):
        writable_dir("--checkpoint", path)
    with pytest.raises(
        ValueError, match=r"^--out '.*a-file/out' lies under '.*a-file', which is a file$"
    ):
        writable_dir("--out", path / "out")


def test_sweep_without_out_checks_the_working_directory(tmp_path, monkeypatch, capsys):
    readonly = tmp_path / "cwd"
    readonly.mkdir()
    readonly.chmod(0o555)
    if os.access(readonly, os.W_OK):
        pytest.skip("permissions are not enforced for this user (root)")
    monkeypatch.chdir(readonly)
    assert main(["sweep", _sweep_config(tmp_path)]) == 2
    assert "--out" in capsys.readouterr().err
