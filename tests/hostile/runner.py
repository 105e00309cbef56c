"""Run the hostile cases as ``python -m collabecon ...`` subprocesses and classify each ending.

Each case runs in a fresh folder (its files under ``files/``, its working directory
``work/``), in a session of its own, under a wall time-out (the whole process group is
killed when it passes) and under resource limits: 6 GiB of address space and 1 GiB per file
written, so a size that is not refused up front fails there instead of taking the machine.
An ending is one of:

``clean``
    one of the case's good endings, with a right output;
``traceback``
    a Python traceback on stderr, or death by a signal;
``hang``
    still running at the time-out (killed);
``silent``
    exit code 0 where the case expects none, or with an output that is wrong (a NaN, a
    negative price, a revenue that is not price times share, an answer computed through a
    floating-point overflow, or what the case's own check finds);
``wrong-status``
    an exit code the case does not expect (2 for a run that should fail, 1 for bad input...),
    or an error that is not one line (with ``--verbose``, after its time-stamped records).
"""

from __future__ import annotations

import os
import re
import resource
import signal
import subprocess
import sys
import tempfile
import threading
import time
from collections import Counter
from collections.abc import Callable, Iterable, Sequence
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from pathlib import Path

from tests.cli_guard import stderr_fault
from tests.hostile.case import GROUPS, Case, Ran
from tests.hostile.checks import output_faults

#: the repository whose collabecon the cases run
ROOT = Path(__file__).resolve().parents[2]
OUTCOMES = ("clean", "traceback", "hang", "silent", "wrong-status")
#: limits of every case's process (bytes)
ADDRESS_SPACE = 6 << 30
FILE_SIZE = 1 << 30
#: the numeric warnings of numpy and Python: a result computed through them is not trusted
_NUMERIC_WARNING = re.compile(
    r"RuntimeWarning: (overflow|invalid value|divide by zero|underflow)|OverflowError"
)
_CODES = {2: "refuse", 1: "fail", 0: "ok", 130: "interrupted"}
#: a record of ``--verbose`` (collabecon/cli/_log.py): its time and level lead the line
_STAMPED = re.compile(r"^\d{4}-\d\d-\d\d \d\d:\d\d:\d\d,\d{3} [A-Z]+ collabecon .*\n", re.MULTILINE)


@dataclass(frozen=True)
class Result:
    """The classified ending of one case."""

    case: Case
    outcome: str
    detail: str
    code: int | None
    seconds: float
    #: the end of the run's stderr
    err: str = ""

    def to_dict(self) -> dict[str, object]:
        """A JSON-ready record."""
        return {
            "id": self.case.id,
            "group": self.case.group,
            "argv": list(self.case.argv),
            "outcome": self.outcome,
            "detail": self.detail,
            "code": self.code,
            "seconds": round(self.seconds, 2),
            "stderr_tail": self.err[-2000:],
        }


def _limits() -> None:  # pragma: no cover - runs in the child between fork and exec
    # a runner started in the background (``&``) ignores SIGINT, and its children would too:
    # Python then installs no KeyboardInterrupt handler and Ctrl-C would not reach collabecon
    signal.signal(signal.SIGINT, signal.SIG_DFL)
    resource.setrlimit(resource.RLIMIT_AS, (ADDRESS_SPACE, ADDRESS_SPACE))
    resource.setrlimit(resource.RLIMIT_FSIZE, (FILE_SIZE, FILE_SIZE))


def _environment() -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if k != "COLLABECON_DATA"}
    env.update(
        PYTHONPATH=str(ROOT),
        OMP_NUM_THREADS="1",
        MKL_NUM_THREADS="1",
        MPLBACKEND="Agg",
        PYTHONDONTWRITEBYTECODE="1",
    )
    return env


def _kill(process: subprocess.Popen[str], how: int) -> None:
    try:
        os.killpg(process.pid, how)
    except ProcessLookupError:
        pass


def run_case(case: Case, timeout_scale: float = 1.0) -> Result:
    """Run one case in a temporary folder and classify its ending."""
    start = time.perf_counter()
    with tempfile.TemporaryDirectory(prefix="collabecon-hostile-") as folder:
        files, work = Path(folder) / "files", Path(folder) / "work"
        files.mkdir()
        work.mkdir()
        if case.prepare is not None:
            case.prepare(files, work)
        prepared = {p.relative_to(work) for p in work.rglob("*")}
        argv = [sys.executable, "-m", "collabecon", *case.words(files)]
        process = subprocess.Popen(
            argv,
            cwd=work,
            env=_environment(),
            stdin=subprocess.DEVNULL,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
            errors="replace",
            start_new_session=True,
            preexec_fn=_limits,
        )
        timeout = case.timeout * timeout_scale
        timed_out = False
        try:
            if case.interrupt_after is not None:
                try:
                    out, err = process.communicate(timeout=case.interrupt_after)
                except subprocess.TimeoutExpired:
                    _kill(process, signal.SIGINT)  # Ctrl-C reaches the whole group
                    out, err = process.communicate(timeout=timeout)
            else:
                out, err = process.communicate(timeout=timeout)
        except subprocess.TimeoutExpired:
            timed_out = True
            _kill(process, signal.SIGKILL)
            out, err = process.communicate()
        finally:
            if process.poll() is None:
                _kill(process, signal.SIGKILL)
                process.wait()
        ran = Ran(process.returncode, out, err, files, work)
        outcome, detail = classify(case, ran, timed_out, prepared)
    return Result(
        case,
        outcome,
        detail,
        None if timed_out else ran.code,
        time.perf_counter() - start,
        ran.err,
    )


def _last_line(text: str) -> str:
    lines = [line for line in text.strip().splitlines() if line.strip()]
    return lines[-1][:300] if lines else "(nothing on stderr)"


def classify(
    case: Case, ran: Ran, timed_out: bool, prepared: set[Path] | None = None
) -> tuple[str, str]:
    """The outcome of a run (module docstring) and a line saying why.

    ``prepared`` are the paths (relative to the working directory) the case put there itself.
    """
    if timed_out:
        return "hang", f"still running after {case.timeout:g} s: {_last_line(ran.err)}"
    if "Traceback (most recent call last)" in ran.err:
        return "traceback", _last_line(ran.err)
    if ran.code < 0:
        return "traceback", f"killed by signal {-ran.code}: {_last_line(ran.err)}"
    ending = _CODES.get(ran.code)
    if ending is None:
        return "wrong-status", f"exit code {ran.code}: {_last_line(ran.err)}"
    own = case.check(ran) if case.check is not None else None
    if ending == "ok":
        faults = output_faults(ran.out, "--json" in case.argv)
        if _NUMERIC_WARNING.search(ran.err):
            faults.append(
                f"computed through a numeric warning: {_NUMERIC_WARNING.search(ran.err)[0]}"
            )
        if own:
            faults.append(own)
        if "ok" not in case.expect:
            return "silent", case.silent or "exit 0 where the case expects no answer"
        if faults:
            return "silent", "; ".join(faults[:3])
        return "clean", "exit 0"
    if own:
        return "silent", own
    if ending not in case.expect:
        return "wrong-status", f"exit {ran.code} ({ending}): {_last_line(ran.err)}"
    if ending == "fail" and ran.out.strip():
        return "clean", f"exit 1 with a result: {_last_line(ran.err)}"
    # Ctrl-C comes while the work goes on: its one line follows the progress
    # --verbose asks for its time-stamped records: the error is still the one line after them
    err = _STAMPED.sub("", ran.err) if "--verbose" in case.argv else ran.err
    fault = stderr_fault(err, case.after_work or ending == "interrupted")
    if fault:
        return "wrong-status", f"exit {ran.code} with {fault}"
    left = sorted(
        str(p.relative_to(ran.work))
        for p in ran.work.rglob("*")
        if p.relative_to(ran.work) not in (prepared or set())
    )
    if ending == "refuse" and left:
        return "wrong-status", f"a refusal left files in the working directory: {left[:5]}"
    return "clean", _last_line(ran.err)


def run_all(
    cases: Sequence[Case],
    jobs: int = 2,
    timeout_scale: float = 1.0,
    echo: bool = False,
    on_result: Callable[[Result], None] | None = None,
) -> list[Result]:
    """Run ``cases`` on ``jobs`` threads (each waits on its subprocess); results in order.

    ``on_result`` is called with each result as it comes (from the threads, one at a time).
    """
    lock = threading.Lock()

    def one(c: Case) -> Result:
        result = run_case(c, timeout_scale)
        if on_result is not None:
            with lock:
                on_result(result)
        if echo:
            mark = "." if result.outcome == "clean" else result.outcome[0].upper()
            print(mark, end="", file=sys.stderr, flush=True)
        return result

    with ThreadPoolExecutor(max_workers=jobs) as pool:
        results = list(pool.map(one, cases))
    if echo:
        print(file=sys.stderr)
    return results


def report(results: Iterable[Result]) -> str:
    """A table of counts (group x outcome) and one line per case that did not end clean."""
    results = list(results)
    counts = Counter((r.case.group, r.outcome) for r in results)
    groups = [g for g in GROUPS if any(r.case.group == g for r in results)]
    width = max([len("group"), *(len(g) for g in groups)])
    head = "  ".join([f"{'group':<{width}}", *(f"{o:>12}" for o in OUTCOMES), f"{'total':>6}"])
    lines = [head, "-" * len(head)]
    for g in [*groups, "all"]:
        row = [
            counts[(g, o)] if g != "all" else sum(counts[(x, o)] for x in groups) for o in OUTCOMES
        ]
        lines.append("  ".join([f"{g:<{width}}", *(f"{n:>12}" for n in row), f"{sum(row):>6}"]))
    failing = [r for r in results if r.outcome != "clean"]
    if failing:
        lines += ["", f"{len(failing)} case(s) not clean:"]
        for outcome in OUTCOMES[1:]:
            for r in failing:
                if r.outcome == outcome:
                    lines.append(f"  [{outcome}] {r.case.id}: {r.detail}")
    return "\n".join(lines)
