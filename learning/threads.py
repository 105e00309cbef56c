"""Torch's CPU threads: the CPUs this process may use, its physical cores, and the setting.

torch runs each CPU kernel on a pool of intra-op threads (``torch.set_num_threads``). Its
own default is one thread per CPU the OpenMP runtime sees, and on a machine whose cores
are busy with other jobs every thread of a small kernel waits for the slowest: the
per-client training loop of LeNet-5 ran 3 to 15 times slower on two threads than on one on
a busy 2-core machine (``bench/RESULTS.md``). The commands of ``collabecon`` therefore set the count once, before any
work, to ``--threads`` or by default to :func:`default_threads`: ``OMP_NUM_THREADS`` where
the environment sets it (the convention torch and OpenMP follow), else
:func:`physical_cores` (a second hardware thread of a core shares the core's arithmetic
units, so it adds little to dense kernels).

Only the CPUs in this process's affinity mask count (``os.sched_getaffinity``: a
``taskset`` or a container's cpuset). Importing this module does not import torch.
"""

from __future__ import annotations

import multiprocessing
import os
from concurrent.futures import ProcessPoolExecutor
from pathlib import Path

__all__ = [
    "cpus",
    "default_threads",
    "physical_cores",
    "start_worker",
    "use_threads",
    "worker_share",
]

#: where Linux describes the topology of CPU ``{cpu}``
_TOPOLOGY = "/sys/devices/system/cpu/cpu{cpu}/topology"
#: where Linux lists every CPU with its package and core (the fallback to :data:`_TOPOLOGY`)
_CPUINFO = "/proc/cpuinfo"


def _allowed() -> set[int] | None:
    """The CPU numbers this process may run on, or None where the platform does not say."""
    affinity = getattr(os, "sched_getaffinity", None)
    return set(affinity(0)) if affinity is not None else None


def cpus() -> int:
    """The logical CPUs this process may run on (its affinity, else the machine's count)."""
    allowed = _allowed()
    return len(allowed) if allowed else os.cpu_count() or 1


def _cores_from_sysfs(allowed: set[int]) -> set[tuple[str, str]] | None:
    """``(package, core)`` of every allowed CPU from sysfs, or None if any is unreadable."""
    cores = set()
    for cpu in allowed:
        folder = Path(_TOPOLOGY.format(cpu=cpu))
        try:
            package = (folder / "physical_package_id").read_text().strip()
            core = (folder / "core_id").read_text().strip()
        except OSError:
            return None
        cores.add((package, core))
    return cores


def _cores_from_cpuinfo(allowed: set[int], text: str) -> set[tuple[str, str]] | None:
    """``(physical id, core id)`` of every allowed CPU from ``/proc/cpuinfo``'s ``text``.

    None when a listed allowed CPU has no ``core id`` (architectures that do not report
    it) or when an allowed CPU is not listed.
    """
    cores: dict[int, tuple[str, str]] = {}
    for block in text.split("\n\n"):
        fields = dict(
            (key.strip(), value.strip())
            for key, sep, value in (line.partition(":") for line in block.splitlines())
            if sep
        )
        if "processor" not in fields or not fields["processor"].isdigit():
            continue
        cpu = int(fields["processor"])
        if cpu not in allowed:
            continue
        if "core id" not in fields:
            return None
        cores[cpu] = (fields.get("physical id", "0"), fields["core id"])
    return set(cores.values()) if set(cores) == allowed else None


def physical_cores() -> int:
    """The physical cores among the CPUs this process may run on (at least 1).

    Two logical CPUs are one core when they share a package and a core id: read from
    sysfs (``/sys/devices/system/cpu/cpuN/topology``), else from ``/proc/cpuinfo``; where
    neither describes every allowed CPU (not Linux, or a kernel that hides them) every
    logical CPU counts as a core (:func:`cpus`).
    """
    allowed = _allowed()
    if not allowed:
        return cpus()
    cores = _cores_from_sysfs(allowed)
    if cores is None:
        try:
            cores = _cores_from_cpuinfo(allowed, Path(_CPUINFO).read_text())
        except OSError:
            cores = None
    return max(1, len(cores)) if cores else len(allowed)


def default_threads() -> int:
    """``OMP_NUM_THREADS`` where it is a positive integer, else :func:`physical_cores`.

    At most :func:`cpus`: an environment that asks for more threads than this process has
    CPUs gets one per CPU.
    """
    given = os.environ.get("OMP_NUM_THREADS", "").strip()
    count = int(given) if given.isdigit() and int(given) > 0 else physical_cores()
    return min(count, cpus())


def use_threads(threads: int, *, interop: bool = False) -> int:
    """Set torch's intra-op CPU threads to ``threads``; return the count it had.

    With ``interop``, torch's inter-op threads too, where torch still allows it: once per
    process, before any inter-op work has started (a fresh worker process); otherwise
    they are left as they are. Training here starts no inter-op work (no
    ``torch.jit.fork``), so the intra-op count is what decides.

    Raises
    ------
    ValueError
        ``threads`` is not an integer >= 1.
    """
    if isinstance(threads, bool) or not isinstance(threads, int) or threads < 1:
        raise ValueError(f"threads must be an integer >= 1, got {threads!r}")
    import torch

    previous = torch.get_num_threads()
    torch.set_num_threads(threads)
    if interop:
        try:
            torch.set_num_interop_threads(threads)
        except RuntimeError:  # set before, or inter-op work has started: keep it
            pass
    return previous


def worker_share(workers: int) -> int:
    r"""The threads of each of ``workers`` processes: this process's torch threads, shared.

    :math:`\max(1, \lfloor T / w \rfloor)` for ``T`` = ``torch.get_num_threads()`` and
    ``w`` = ``workers``, so that ``w`` workers together use about the ``T`` threads this
    process was given (``--threads`` of a command).
    """
    import torch

    return max(1, torch.get_num_threads() // max(1, int(workers)))


def start_worker(threads: int) -> None:
    """Initialise a spawned worker process: torch on ``threads`` intra- and inter-op threads.

    A spawned process does not inherit its parent's setting; this is the ``initializer``
    of the process pools of the sweeps and reproductions.
    """
    use_threads(threads, interop=True)


def worker_pool(processes: int) -> ProcessPoolExecutor:
    """A pool of ``processes`` spawned workers that share this process's torch threads.

    Spawned, not forked (CUDA and torch's threads do not survive a fork); each worker starts
    with :func:`start_worker` on its :func:`worker_share` of the threads. The pool of the
    reproductions and of CoBo's methods.
    """
    return ProcessPoolExecutor(
        processes,
        mp_context=multiprocessing.get_context("spawn"),
        initializer=start_worker,
        initargs=(worker_share(processes),),
    )
