"""One writer per output directory: a live owner's lock refuses a second run, a stale one is taken over."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from collabecon.cli import main
from collabecon.cli._lock import LOCK_NAME, output_lock


def test_a_directory_in_use_by_a_live_process_is_refused(tmp_path: Path, capsys) -> None:
    sleeper = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(60)"])
    try:
        out = tmp_path / "out"
        out.mkdir()
        owner = {"pid": sleeper.pid, "started": None, "command": ["collabecon", "demo"]}
        (out / LOCK_NAME).write_text(json.dumps(owner))
        code = main(["pricing", "figures", "--out", str(out)])
        err = capsys.readouterr().err
        assert code == 2
        assert err.count("\n") == 1
        assert f"pid {sleeper.pid}" in err and "in use" in err
        assert json.loads((out / LOCK_NAME).read_text())["pid"] == sleeper.pid
    finally:
        sleeper.kill()
        sleeper.wait()


def test_a_stale_lock_is_taken_over_with_a_message(tmp_path: Path, caplog) -> None:
    gone = subprocess.Popen([sys.executable, "-c", "pass"])
    gone.wait()
    (tmp_path / LOCK_NAME).write_text(json.dumps({"pid": gone.pid, "command": ["x"]}))
    with output_lock("--out", tmp_path) as directory:
        assert json.loads((directory / LOCK_NAME).read_text())["pid"] == os.getpid()
    assert "stale lock" in caplog.text
    assert not (tmp_path / LOCK_NAME).exists()


def test_the_lock_is_released_and_created_directories_removed_when_empty(tmp_path: Path) -> None:
    target = tmp_path / "a" / "b"
    with output_lock("--out", target):
        assert (target / LOCK_NAME).exists()
    assert not (tmp_path / "a").exists()


def test_an_empty_directory_name_is_refused(tmp_path: Path) -> None:
    with pytest.raises(ValueError, match="empty path"), output_lock("--out", ""):
        pass


def test_a_lock_file_that_is_a_directory_or_holds_a_huge_pid_is_handled(tmp_path, caplog) -> None:
    (tmp_path / "d" / LOCK_NAME).mkdir(parents=True)
    with pytest.raises(ValueError, match="not a plain file"), output_lock("--out", tmp_path / "d"):
        pass
    (tmp_path / LOCK_NAME).write_text(json.dumps({"pid": 10**30}))
    with output_lock("--out", tmp_path):
        pass
    assert "stale lock" in caplog.text
