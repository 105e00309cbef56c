"""The reproduction report: every reproduction run at one scale, its claims gathered.

Every reproduction of :data:`collabecon.reproductions.REPRODUCTIONS` is run at one scale and
its claims gathered into one markdown page and one JSON file.

``run_report(scale, out)`` imports each module, calls ``reproduce(scale, out / name, seeds)``
and writes

``out/report.md``
    a title, a summary table (reproduction, claims held / total), then each reproduction's
    :meth:`econ.claims.Reproduction.markdown` with its figures linked relative to ``out``;
``out/report.json``
    ``status`` first (``"complete"`` or ``"incomplete"``, with ``status_why`` and
    ``missing``), then ``claims: [{paper, id, statement, published, measured, holds, note,
    reproduction}]`` over all reproductions, and ``reproductions: {name: {...}}`` with each
    one's data;
``out/results/NAME.json``
    each reproduction that finished, with the settings it ran with (:func:`settings_of`).

A reproduction that raises is reported (an error line in the page, ``error`` in the JSON)
without losing the others. A claim that does not hold is a finding, not an error. A
reproduction module that declares ``NEEDS_DATA_DIR`` (what the directory must hold) runs only
with ``data_dir``; without it, it is reported as not run (``not_run`` in the JSON), neither
an error nor left out. ``data_dir`` is passed to every ``reproduce`` that takes it.

The page and the JSON are rewritten as each reproduction finishes, each atomically (a
temporary file renamed onto the old one, :func:`econ.outputs.write_atomically`), and only
the last write, when every chosen reproduction has finished, reads complete: a run cut short
(Ctrl-C, a kill, a crash) leaves a page whose first line is ``INCOMPLETE: k of n
reproductions finished; missing: ...`` and a JSON whose ``status`` is ``"incomplete"``.
Run again into the same ``out``, the report reuses every kept result whose settings are
those of the new run (:func:`resume_plan`) and runs the others: the missing ones, those kept
under other settings, and those that raised or were not run.
"""

from __future__ import annotations

import ast
import hashlib
import importlib
import importlib.util
import json
import time
import traceback
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from importlib.metadata import version
from pathlib import Path
from typing import Any

import collabecon.reproductions as experiments
from collabecon.reproductions import inventory
from econ.claims import Claim, Reproduction, count_held
from econ.outputs import plain, write_atomically

__all__ = [
    "RESULTS",
    "ReportResult",
    "ReproductionOutcome",
    "ResumePlan",
    "resume_plan",
    "run_report",
    "select",
    "settings_of",
    "takes_data_dir",
]

#: the folder of the report's directory that keeps one JSON file per finished reproduction
RESULTS = "results"


@dataclass(frozen=True)
class ReproductionOutcome:
    """One reproduction in the report: its :class:`Reproduction`, its error, or why not run.

    ``not_run`` names the data the reproduction needs and was not given; ``reused`` says the
    outcome was kept from an earlier run with the same settings (``seconds`` are that run's).
    """

    name: str
    reproduction: Reproduction | None
    error: str | None
    seconds: float
    not_run: str | None = None
    reused: bool = False

    @property
    def held(self) -> tuple[int, int]:
        """``(held, total)`` claims; ``(0, 0)`` for a reproduction that raised."""
        return count_held(self.reproduction.claims) if self.reproduction else (0, 0)


@dataclass(frozen=True)
class ReportResult:
    """What :func:`run_report` wrote: the outcomes so far and the two files.

    ``names`` are every chosen reproduction, in order; ``outcomes`` those finished (in the
    same order), so that the ones :attr:`missing` make the report incomplete.
    """

    scale: str
    out: Path
    outcomes: list[ReproductionOutcome] = field(default_factory=list)
    names: list[str] = field(default_factory=list)

    @property
    def failed(self) -> list[str]:
        """Names of the reproductions that raised."""
        return [o.name for o in self.outcomes if o.error is not None]

    @property
    def missing(self) -> list[str]:
        """Names of the chosen reproductions that have not finished."""
        done = {o.name for o in self.outcomes}
        return [n for n in self.names if n not in done]

    def status_why(self) -> str | None:
        """Why the report is incomplete (how many finished, which are missing), or None."""
        missing = self.missing
        if not missing:
            return None
        return (
            f"{len(self.names) - len(missing)} of {len(self.names)} reproductions finished; "
            f"missing: {', '.join(missing)} (the run was cut short or is still running; the "
            "same command with the same --out runs only the missing ones)"
        )

    def claims(self) -> list[dict[str, Any]]:
        """Every claim of every reproduction that ran, tagged with its reproduction."""
        return [
            {**c.to_dict(), "reproduction": o.name}
            for o in self.outcomes
            if o.reproduction is not None
            for c in o.reproduction.claims
        ]

    def to_dict(self) -> dict[str, Any]:
        """JSON-ready: status, scale, files, ``claims`` over all reproductions, their data."""
        reproductions: dict[str, Any] = {}
        for o in self.outcomes:
            held, total = o.held
            entry: dict[str, Any] = {"held": held, "total": total, "seconds": o.seconds}
            if o.reused:
                entry["reused"] = True
            if o.reproduction is not None:
                entry.update(o.reproduction.to_dict())
            elif o.not_run is not None:
                entry["not_run"] = o.not_run
            else:
                entry["error"] = o.error
            reproductions[o.name] = entry
        held, total = count_held_dicts(self.claims())
        why = self.status_why()
        return {
            "status": "complete" if why is None else "incomplete",
            "status_why": why,
            "missing": self.missing,
            "scale": self.scale,
            "out": str(self.out),
            "report": str(self.out / "report.md"),
            "json": str(self.out / "report.json"),
            "held": held,
            "total": total,
            "failed": self.failed,
            "reused": [o.name for o in self.outcomes if o.reused],
            "claims": self.claims(),
            "reproductions": reproductions,
            "experiments": [e.to_dict() for e in inventory.EXPERIMENTS],
        }


def count_held_dicts(claims: Sequence[dict[str, Any]]) -> tuple[int, int]:
    """``(held, total)`` over claims given as dictionaries."""
    return sum(bool(c["holds"]) for c in claims), len(claims)


def select(only: Sequence[str] | None) -> list[str]:
    """The reproductions to run: all of :data:`REPRODUCTIONS`, or the names in ``only``.

    Raises
    ------
    ValueError
        A name of ``only`` that is not a reproduction (naming the allowed ones).
    """
    known = experiments.REPRODUCTIONS
    if not only:
        return list(known)
    unknown = [n for n in only if n not in known]
    if unknown:
        raise ValueError(
            f"only: unknown reproduction {unknown[0]!r}; choose from {', '.join(known)}"
        )
    return list(dict.fromkeys(only))


def _source(module_name: str) -> bytes | None:
    """The source of module ``module_name``, read without importing it (None if not found)."""
    spec = importlib.util.find_spec(module_name)
    if spec is None or spec.origin is None or not spec.origin.endswith(".py"):
        return None
    return Path(spec.origin).read_bytes()


def takes_data_dir(module_name: str) -> bool:
    """Whether the ``reproduce`` of module ``module_name`` takes a ``data_dir`` argument.

    Read from the module's source (its top-level ``def reproduce``), so that the question
    costs no import of the module and its libraries.
    """
    source = _source(module_name)
    if source is None:
        return False
    for node in ast.parse(source).body:
        if isinstance(node, ast.FunctionDef) and node.name == "reproduce":
            arguments = [*node.args.posonlyargs, *node.args.args, *node.args.kwonlyargs]
            return any(a.arg == "data_dir" for a in arguments)
    return False


def settings_of(name: str, scale: str, seeds: int | None, data_dir: str | None) -> dict[str, Any]:
    """The settings reproduction ``name`` runs with, kept beside its result.

    ``{module, scale, seeds, data_dir, version, source_sha256}``: the data directory
    (resolved) only for a reproduction that takes one, the collabecon version and the
    SHA-256 of the reproduction module's source. A kept result is reused only under the
    same settings.
    """
    module_name = experiments.REPRODUCTIONS[name]
    source = _source(module_name)
    reads = data_dir is not None and takes_data_dir(module_name)
    return {
        "module": module_name,
        "scale": scale,
        "seeds": seeds,
        "data_dir": str(Path(data_dir).resolve()) if reads and data_dir is not None else None,
        "version": version("collabecon"),
        "source_sha256": None if source is None else hashlib.sha256(source).hexdigest(),
    }


@dataclass(frozen=True)
class ResumePlan:
    """What a run into a report's directory does with the results kept there.

    ``names`` are the chosen reproductions in order, ``settings`` each one's
    (:func:`settings_of`), ``reused`` the kept outcomes run with the same settings, and
    ``why`` says, for each kept result that is not reused, why it is run again.
    """

    names: list[str]
    settings: dict[str, dict[str, Any]]
    reused: dict[str, ReproductionOutcome]
    why: dict[str, str]

    @property
    def to_run(self) -> list[str]:
        """The chosen reproductions that are run (all but the reused), in order."""
        return [n for n in self.names if n not in self.reused]


def _result_path(out: Path, name: str) -> Path:
    return out / RESULTS / f"{name}.json"


def _kept(name: str, record: Any) -> tuple[dict[str, Any], ReproductionOutcome]:
    """The settings and the outcome of a kept result (KeyError, TypeError, ValueError if bad)."""
    settings, stored = record["settings"], record["reproduction"]
    if not isinstance(settings, dict):
        raise TypeError("settings is not an object")
    claims = tuple(Claim(**c) for c in stored["claims"])
    reproduction = Reproduction(
        stored["name"],
        stored["title"],
        claims,
        stored["body"],
        tuple(stored["figures"]),
        stored["data"],
    )
    return settings, ReproductionOutcome(
        name, reproduction, None, float(record["seconds"]), reused=True
    )


def resume_plan(
    scale: str,
    out: str | Path,
    names: Sequence[str],
    seeds: int | None = None,
    data_dir: str | None = None,
) -> ResumePlan:
    """Which of ``names`` a run into ``out`` reuses from ``out/results``, and why not the others.

    A kept result is reused when every field of its settings equals the new run's
    (:func:`settings_of`); one that cannot be read, or was run with other settings, is run
    again, its reason in ``why``.
    """
    out = Path(out)
    settings = {n: settings_of(n, scale, seeds, data_dir) for n in names}
    reused: dict[str, ReproductionOutcome] = {}
    why: dict[str, str] = {}
    for name in names:
        path = _result_path(out, name)
        if not path.exists():
            continue
        try:
            kept, outcome = _kept(name, json.loads(path.read_text()))
        except (OSError, KeyError, TypeError, ValueError) as exc:
            why[name] = f"its kept result {path} cannot be read ({type(exc).__name__}: {exc})"
            continue
        differs = [k for k, v in settings[name].items() if kept.get(k) != v]
        if differs:
            why[name] = "its kept result ran with " + ", ".join(
                f"{k} {kept.get(k)!r} (now {settings[name][k]!r})" for k in differs
            )
        else:
            reused[name] = outcome
    return ResumePlan(list(names), settings, reused, why)


def _run_one(
    name: str, module_name: str, scale: str, out: Path, seeds: int | None, data_dir: str | None
) -> ReproductionOutcome:
    start = time.perf_counter()
    try:
        module = importlib.import_module(module_name)
        needs = getattr(module, "NEEDS_DATA_DIR", None)
        if needs and data_dir is None:
            why = f"needs --data-dir, a directory holding {needs}"
            return ReproductionOutcome(name, None, None, time.perf_counter() - start, why)
        takes = takes_data_dir(module_name)
        options = {"data_dir": data_dir} if takes and data_dir is not None else {}
        reproduction = module.reproduce(scale, out / name, seeds, **options)
        if not isinstance(reproduction, Reproduction):
            raise TypeError(
                f"{module_name}.reproduce returned {type(reproduction).__name__}, "
                "not a Reproduction"
            )
    except Exception as exc:  # a failing reproduction is reported; the others still run
        last = traceback.extract_tb(exc.__traceback__)[-1:] if exc.__traceback__ else []
        where = f" ({Path(last[0].filename).name}:{last[0].lineno})" if last else ""
        error = f"{type(exc).__name__}: {exc}{where}"
        return ReproductionOutcome(name, None, error, time.perf_counter() - start)
    return ReproductionOutcome(name, reproduction, None, time.perf_counter() - start)


def _relative_figures(reproduction: Reproduction, name: str) -> Reproduction:
    """The reproduction with its figures named relative to the report's folder."""
    figures = tuple(f"{name}/{Path(f).name}" for f in reproduction.figures)
    return Reproduction(
        reproduction.name,
        reproduction.title,
        reproduction.claims,
        reproduction.body,
        figures,
        reproduction.data,
    )


def markdown(result: ReportResult) -> str:
    """The report page: title, summary table, the papers' experiments, each reproduction.

    A page written before every chosen reproduction finished begins with the line
    ``INCOMPLETE: ...`` (:meth:`ReportResult.status_why`) and lists the missing ones in its
    summary table.
    """
    held, total = count_held_dicts(result.claims())
    why = result.status_why()
    lines = [] if why is None else [f"INCOMPLETE: {why}", ""]
    lines += [
        f"# collabecon reproductions ({result.scale} scale)",
        "",
        "Every claim each paper makes about the experiments reproduced here, measured on our "
        "run next to the paper's number; a claim that does not hold is reported, not dropped.",
        "",
        "| reproduction | claims held / total | seconds |",
        "|---|---|---|",
    ]
    for o in result.outcomes:
        h, t = o.held
        cell = "error" if o.error is not None else f"{h} / {t}"
        if o.not_run is not None:
            cell = "not run: needs --data-dir"
        lines.append(f"| [{o.name}](#{o.name}) | {cell} | {o.seconds:.1f} |")
    lines += [f"| {name} | missing: not finished | - |" for name in result.missing]
    ran = "all reproductions that ran" if why is None else "the reproductions finished so far"
    lines += ["", f"{held} of {total} claims hold over {ran}.", ""]
    reused = [o.name for o in result.outcomes if o.reused]
    if reused:
        lines += [
            f"Kept from an earlier run with the same settings: {', '.join(reused)} (their "
            "seconds are that run's).",
            "",
        ]
    lines += [inventory.markdown(level=2)]
    for o in result.outcomes:
        lines += [f'<a id="{o.name}"></a>', ""]
        if o.not_run is not None:
            lines += [f"## {o.name}", "", f"**not run**: {o.not_run}", ""]
        elif o.reproduction is None:
            lines += [f"## {o.name}", "", f"**error**: `{o.error}`", ""]
        else:
            lines += [_relative_figures(o.reproduction, o.name).markdown(level=2)]
    return "\n".join(lines).rstrip() + "\n"


def run_report(
    scale: str,
    out: str | Path,
    *,
    only: Sequence[str] | None = None,
    seeds: int | None = None,
    workers: int = 1,
    data_dir: str | None = None,
    progress: Callable[[str], None] = lambda name: None,
    plan: ResumePlan | None = None,
) -> ReportResult:
    """Run the reproductions at ``scale`` into ``out`` and write report.md and report.json.

    Parameters
    ----------
    scale
        ``"small"`` (CPU, minutes) or ``"paper"`` (the papers' sizes).
    out
        The report's folder; reproduction ``name`` writes into ``out / name``.
    only
        Names of :data:`REPRODUCTIONS` to run (all when None or empty).
    seeds
        Seeds per reproduction (each module's default when None).
    workers
        Reproductions run at once, each in its own process (1: one after the other, here);
        the processes share this process's torch threads, each
        :func:`learning.threads.worker_share` of them.
    data_dir
        The directory of the data sets read from files, passed to every ``reproduce`` that
        takes ``data_dir``; the reproductions that need it are not run without it.
    progress
        Called with a reproduction's name before it runs (here: ``workers`` = 1 or one
        reproduction to run) or when it has finished (in a pool of ``workers`` > 1
        processes); not for the reused ones.
    plan
        The results of ``out/results`` to reuse (:func:`resume_plan` of the same arguments,
        computed here when None).

    The page is written before the first reproduction runs and again as each one finishes;
    until the last has finished it says it is incomplete, and which are missing. Each
    finished reproduction is kept in ``out/results/NAME.json`` with its settings.

    Raises
    ------
    ValueError
        ``scale`` not in :data:`SCALES`, ``seeds`` < 1, ``workers`` < 1, an unknown name in
        ``only``, a ``plan`` of other reproductions, or a file where ``out/results`` goes.
    """
    if scale not in experiments.SCALES:
        raise ValueError(f"scale must be one of {', '.join(experiments.SCALES)}, got {scale!r}")
    if seeds is not None and seeds < 1:
        raise ValueError(f"seeds must be an integer >= 1, got {seeds}")
    if workers < 1:
        raise ValueError(f"workers must be an integer >= 1, got {workers}")
    names = select(only)
    out = Path(out)
    if plan is None:
        plan = resume_plan(scale, out, names, seeds, data_dir)
    elif plan.names != names:
        raise ValueError(f"plan is of {', '.join(plan.names)}, not of {', '.join(names)}")
    out.mkdir(parents=True, exist_ok=True)
    if (out / RESULTS).exists() and not (out / RESULTS).is_dir():
        raise ValueError(
            f"{out / RESULTS} is a file: the report keeps each finished reproduction in a "
            "folder of that name"
        )
    result = ReportResult(scale, out, names=names)
    done: dict[str, ReproductionOutcome] = dict(plan.reused)

    def finished(outcome: ReproductionOutcome) -> None:
        done[outcome.name] = outcome
        _keep(out, outcome, plan.settings[outcome.name])
        result.outcomes[:] = [done[n] for n in names if n in done]
        _write(result)

    result.outcomes[:] = [done[n] for n in names if n in done]
    _write(result)  # replaces the page of an earlier run at once
    modules = {name: experiments.REPRODUCTIONS[name] for name in plan.to_run}
    if workers == 1 or len(plan.to_run) < 2:
        for name in plan.to_run:
            progress(name)
            finished(_run_one(name, modules[name], scale, out, seeds, data_dir))
        return result
    from concurrent.futures import as_completed

    from learning.threads import worker_pool

    with worker_pool(min(workers, len(modules))) as pool:
        futures = {
            pool.submit(_run_one, n, modules[n], scale, out, seeds, data_dir): n for n in modules
        }
        try:
            for future in as_completed(futures):
                outcome = future.result()
                progress(futures[future])
                finished(outcome)
        except BaseException:  # interrupted: start nothing more, keep what finished
            pool.shutdown(wait=False, cancel_futures=True)
            raise
    return result


def _keep(out: Path, outcome: ReproductionOutcome, settings: dict[str, Any]) -> None:
    """Keep a finished reproduction in ``out/results/NAME.json`` with its settings."""
    reproduction = outcome.reproduction
    if reproduction is None:  # an error or a reproduction not run is run again, not kept
        return
    record = {
        "settings": settings,
        "seconds": outcome.seconds,
        "reproduction": {**reproduction.to_dict(), "body": reproduction.body},
    }
    path = _result_path(out, outcome.name)
    path.parent.mkdir(parents=True, exist_ok=True)
    write_atomically(path, json.dumps(plain(record), allow_nan=False, indent=1) + "\n")


def _write(result: ReportResult) -> None:
    """report.json, then report.md, of the reproductions that have finished (atomically)."""
    write_atomically(
        result.out / "report.json",
        json.dumps(plain(result.to_dict()), allow_nan=False, indent=1) + "\n",
    )
    write_atomically(result.out / "report.md", markdown(result))
