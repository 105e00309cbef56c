"""The cost of ``collabecon verify``: CPU time of a fresh process checking the registry.

``collabecon verify`` imports every module of ``econ``, ``games`` and ``learning.theory``
(each registers its statements, some deriving closed forms with sympy as they load) and runs
every registered check. Its cost is measured as a user would pay it: a new Python process
running ``python -m collabecon verify --json`` with ``OMP_NUM_THREADS=1``, its CPU time
(user + system, from :func:`os.wait4`) and wall time (:func:`collabecon.bench.timing.best_of_each`
around each run), the best of ``--repeats`` runs. The
verdicts are counted so that a figure always comes with what it checked.

Run: ``collabecon bench verify [--only PREFIX] [--repeats 1] [--against CHECKOUT]``
(``--against``: another checkout of this repository, timed alternately). The repeats are refused
above :data:`MAX_VERIFY_RUNS`.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import tempfile
from collections.abc import Callable
from typing import Any

from collabecon.bench.timing import best_of_each, repeats_count, within

__all__ = ["MAX_VERIFY_RUNS", "measure_verify"]

#: the most runs of ``collabecon verify`` one benchmark makes (each about half a minute)
MAX_VERIFY_RUNS = 20


def _one_run(prefix: str, checkout: str | None) -> tuple[float, dict[str, Any]]:
    """CPU seconds (user + system) and the JSON of one ``collabecon verify --json`` process.

    ``checkout`` (a directory holding the packages) goes first on ``PYTHONPATH`` and is the
    working directory, which ``python -m`` puts before it.
    """
    env = {**os.environ, "OMP_NUM_THREADS": "1"}
    if checkout is not None:
        env["PYTHONPATH"] = os.pathsep.join([checkout, env.get("PYTHONPATH", "")]).rstrip(
            os.pathsep
        )
    argv = [sys.executable, "-m", "collabecon", "verify", "--json"]
    if prefix:
        argv += ["--only", prefix]
    with tempfile.TemporaryFile() as out, tempfile.TemporaryFile() as err:
        child = subprocess.Popen(argv, stdout=out, stderr=err, env=env, cwd=checkout)
        _, status, usage = os.wait4(child.pid, 0)
        child.returncode = os.waitstatus_to_exitcode(status)
        out.seek(0)
        text = out.read().decode()
        if child.returncode not in (0, 1) or not text.strip():
            err.seek(0)
            last = (err.read().decode().strip().splitlines() or ["no output"])[-1]
            raise ValueError(f"collabecon verify ended with code {child.returncode}: {last}")
    return usage.ru_utime + usage.ru_stime, json.loads(text)


def measure_verify(
    *,
    prefix: str = "",
    repeats: int = 1,
    against: str | None = None,
    progress: Callable[[str], None] = lambda _: None,
) -> dict[str, Any]:
    """CPU and wall seconds of ``collabecon verify`` in a fresh process, the best of ``repeats``.

    Returns the entries checked, the counts of each verdict (``summary`` of the verify JSON)
    and whether every verdict agrees with its entry's expectation. With ``against`` (another
    checkout of this repository, e.g. a ``git worktree`` of an earlier commit) its
    ``collabecon verify`` runs alternately with this one, and ``against`` reports its times,
    whether its verdicts are the same (``same_verdicts``: every id with the same status) and
    the ratio of the CPU times.

    Raises
    ------
    ValueError
        ``repeats`` not an integer in [1, :data:`MAX_VERIFY_RUNS`], or a run of
        ``collabecon verify`` that fails (a ``prefix`` matching no entry, for one).

    Parameters
    ----------
    prefix
        Only the entries whose id starts with it (``collabecon verify --only``); ``""``
        checks every entry.
    repeats
        Runs of ``collabecon verify``; the shortest CPU and wall times are kept.
    against
        A directory put first on ``PYTHONPATH`` for the runs of the comparison.
    progress
        Called with a short text as each run starts.
    """
    repeats_count(repeats)
    within(f"repeats={repeats}", repeats, MAX_VERIFY_RUNS, "runs of collabecon verify")
    if against is not None and not os.path.isdir(os.path.join(against, "collabecon")):
        raise ValueError(f"--against {against!r} holds no collabecon package")
    sides: dict[str, str | None] = {"ours": None}
    if against is not None:
        sides["against"] = against
    cpu_of = {side: float("inf") for side in sides}
    json_of: dict[str, dict[str, Any]] = {}

    def run(side: str) -> Callable[[], None]:
        def once() -> None:
            cpu, json_of[side] = _one_run(prefix, sides[side])
            cpu_of[side] = min(cpu_of[side], cpu)

        return once

    only = f" --only {prefix}" if prefix else ""
    progress(f"collabecon verify{only}: {repeats} run(s) of each of {', '.join(sides)}")
    wall_of = {
        side: t.seconds for side, t in best_of_each({s: run(s) for s in sides}, repeats).items()
    }
    cpu, wall, result = cpu_of["ours"], wall_of["ours"], json_of["ours"]
    entries = result.get("propositions", [])
    out: dict[str, Any] = {
        "prefix": prefix,
        "repeats": repeats,
        "threads": 1,
        "entries": len(entries),
        "cpu_seconds": round(cpu, 2),
        "wall_seconds": round(wall, 2),
        "summary": result.get("summary", {}),
        "all_agree": all(e.get("agrees", False) for e in entries),
    }
    if against is not None:
        status = {e["id"]: e["status"] for e in json_of["against"].get("propositions", [])}
        out["against"] = {
            "checkout": against,
            "cpu_seconds": round(cpu_of["against"], 2),
            "wall_seconds": round(wall_of["against"], 2),
            "same_verdicts": status == {e["id"]: e["status"] for e in entries},
            "cpu_ratio": round(cpu_of["against"] / cpu, 2),
        }
    return out
