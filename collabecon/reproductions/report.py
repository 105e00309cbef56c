"""The reproduction report: every reproduction run at one scale, its claims gathered.

Every reproduction of :data:`collabecon.reproductions.REPRODUCTIONS` is run at one scale and
its claims gathered into one markdown page and one JSON file.

``run_report(scale, out)`` imports each module, calls ``reproduce(scale, out / name, seeds)``
and writes

``out/report.md``
    a title, a summary table (reproduction, claims held / total), then each reproduction's
    :meth:`econ.claims.Reproduction.markdown` with its figures linked relative to ``out``;
``out/report.json``
    ``claims: [{paper, id, statement, published, measured, holds, note, reproduction}]`` over
    all reproductions, and ``reproductions: {name: {...}}`` with each one's data.

A reproduction that raises is reported (an error line in the page, ``error`` in the JSON)
without losing the others. A claim that does not hold is a finding, not an error. A
reproduction module that declares ``NEEDS_DATA_DIR`` (what the directory must hold) runs only
with ``data_dir``; without it, it is reported as not run (``not_run`` in the JSON), neither
an error nor left out. ``data_dir`` is passed to every ``reproduce`` that takes it.
"""

from __future__ import annotations

import importlib
import inspect
import json
import time
import traceback
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import collabecon.reproductions as experiments
from collabecon.reproductions import inventory
from econ.claims import Reproduction, count_held
from econ.outputs import plain

__all__ = ["ReportResult", "ReproductionOutcome", "run_report", "select"]


@dataclass(frozen=True)
class ReproductionOutcome:
    """One reproduction in the report: its :class:`Reproduction`, its error, or why not run.

    ``not_run`` names the data the reproduction needs and was not given.
    """

    name: str
    reproduction: Reproduction | None
    error: str | None
    seconds: float
    not_run: str | None = None

    @property
    def held(self) -> tuple[int, int]:
        """``(held, total)`` claims; ``(0, 0)`` for a reproduction that raised."""
        return count_held(self.reproduction.claims) if self.reproduction else (0, 0)


@dataclass(frozen=True)
class ReportResult:
    """What :func:`run_report` wrote: the outcomes and the two files."""

    scale: str
    out: Path
    outcomes: list[ReproductionOutcome] = field(default_factory=list)

    @property
    def failed(self) -> list[str]:
        """Names of the reproductions that raised."""
        return [o.name for o in self.outcomes if o.error is not None]

    def claims(self) -> list[dict[str, Any]]:
        """Every claim of every reproduction that ran, tagged with its reproduction."""
        return [
            {**c.to_dict(), "reproduction": o.name}
            for o in self.outcomes
            if o.reproduction is not None
            for c in o.reproduction.claims
        ]

    def to_dict(self) -> dict[str, Any]:
        """JSON-ready: scale, files, ``claims`` over all reproductions, per-reproduction data."""
        reproductions: dict[str, Any] = {}
        for o in self.outcomes:
            held, total = o.held
            entry: dict[str, Any] = {"held": held, "total": total, "seconds": o.seconds}
            if o.reproduction is not None:
                entry.update(o.reproduction.to_dict())
            elif o.not_run is not None:
                entry["not_run"] = o.not_run
            else:
                entry["error"] = o.error
            reproductions[o.name] = entry
        held, total = count_held_dicts(self.claims())
        return {
            "scale": self.scale,
            "out": str(self.out),
            "report": str(self.out / "report.md"),
            "json": str(self.out / "report.json"),
            "held": held,
            "total": total,
            "failed": self.failed,
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
        takes = "data_dir" in inspect.signature(module.reproduce).parameters
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
    """The report page: title, summary table, the papers' experiments, each reproduction."""
    held, total = count_held_dicts(result.claims())
    lines = [
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
    lines += ["", f"{held} of {total} claims hold over all reproductions that ran.", ""]
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
        Reproductions run at once, each in its own process (1: one after the other, here).
    data_dir
        The directory of the data sets read from files, passed to every ``reproduce`` that
        takes ``data_dir``; the reproductions that need it are not run without it.
    progress
        Called with a reproduction's name before it runs (``workers`` = 1) or when it has
        finished (``workers`` > 1).

    The page is rewritten as each reproduction finishes, so an interrupted run leaves the
    reproductions that finished on it, in the order of ``only``.

    Raises
    ------
    ValueError
        ``scale`` not in :data:`SCALES`, ``seeds`` < 1, or an unknown name in ``only``.
    """
    if scale not in experiments.SCALES:
        raise ValueError(f"scale must be one of {', '.join(experiments.SCALES)}, got {scale!r}")
    if seeds is not None and seeds < 1:
        raise ValueError(f"seeds must be an integer >= 1, got {seeds}")
    if workers < 1:
        raise ValueError(f"workers must be an integer >= 1, got {workers}")
    names = select(only)
    out = Path(out)
    out.mkdir(parents=True, exist_ok=True)
    result = ReportResult(scale, out)
    modules = {name: experiments.REPRODUCTIONS[name] for name in names}
    if workers == 1:
        for name in names:
            progress(name)
            result.outcomes.append(_run_one(name, modules[name], scale, out, seeds, data_dir))
            _write(result)
        return result
    import multiprocessing
    from concurrent.futures import ProcessPoolExecutor, as_completed

    done: dict[str, ReproductionOutcome] = {}
    context = multiprocessing.get_context("spawn")  # CUDA and threads do not survive a fork
    with ProcessPoolExecutor(min(workers, len(names)), mp_context=context) as pool:
        futures = {
            pool.submit(_run_one, n, modules[n], scale, out, seeds, data_dir): n for n in names
        }
        for future in as_completed(futures):
            done[futures[future]] = future.result()
            progress(futures[future])
            result.outcomes[:] = [done[n] for n in names if n in done]
            _write(result)
    return result


def _write(result: ReportResult) -> None:
    """report.md and report.json of the reproductions that have finished."""
    (result.out / "report.md").write_text(markdown(result))
    (result.out / "report.json").write_text(
        json.dumps(plain(result.to_dict()), allow_nan=False, indent=1)
    )
