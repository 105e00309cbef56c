"""A deployment on separate processes: one SuperLink, one SuperNode per client, ``flwr run``.

:func:`write_app` writes the Flower App that ``flwr run`` ships to the SuperLink (its
components are :data:`learning.runtimes.flower.apps.server_app` and
:data:`learning.runtimes.flower.apps.client_app`; its run config names the server's ``meta-dir``) and a
Flower configuration (``FLWR_HOME/config.toml``) naming the SuperLink. :func:`deploy` does the
whole run on this machine: it writes the partitions, starts ``flower-superlink`` and
``flower-supernode --node-config "partition-id=<k> data-dir='<dir>'"`` for every client (each
node reads only its own partition), runs ``flwr run`` and reads back the result the ServerApp
wrote (:mod:`learning.runtimes.flower.results`). On several machines the same commands run with the
SuperLink's address in place of ``127.0.0.1`` (``docs/flower.md``). :func:`deploy_ipfl` and
:func:`deploy_duopoly` deploy the mechanisms that run their own server loop
(:func:`learning.runtimes.flower.apps.serve_any`) in the same way.
"""

from __future__ import annotations

import contextlib
import json
import os
import socket
import subprocess
import sys
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import torch

import learning
from learning.runtimes.flower.apps import check_flower_config
from learning.runtimes.flower.partitions import write_partitions
from learning.runtimes.flower.processes import Processes
from learning.train import TrainConfig

__all__ = ["deploy", "deploy_duopoly", "deploy_ipfl", "launch", "write_app"]

_APP = """[build-system]
requires = ["hatchling"]
build-backend = "hatchling.build"

[project]
name = "collabecon-flower"
version = "1.0.0"
description = "collabecon's algorithms as a Flower App"
license = "MIT"
dependencies = []

[tool.hatch.build.targets.wheel]
packages = ["."]

[tool.flwr.app]
publisher = "collabecon"

[tool.flwr.app.components]
serverapp = "learning.runtimes.flower.apps:server_app"
clientapp = "learning.runtimes.flower.apps:client_app"

[tool.flwr.app.config]
meta-dir = {meta_dir}
"""

_CONFIG = """[superlink]
default = "collabecon"

[superlink.collabecon]
address = {address}
insecure = true
"""


def write_app(directory: str | os.PathLike[str], meta_dir: str, address: str) -> Path:
    """Write the Flower App and its ``flwr-home/config.toml`` under ``directory``.

    The App is a ``pyproject.toml``; returns the App's directory.
    """
    directory = Path(directory)
    app = directory / "app"
    app.mkdir(parents=True, exist_ok=True)
    (app / "pyproject.toml").write_text(_APP.format(meta_dir=json.dumps(str(meta_dir))))
    home = directory / "flwr-home"
    home.mkdir(exist_ok=True)
    (home / "config.toml").write_text(_CONFIG.format(address=json.dumps(address)))
    return app


def _wait_for_port(port: int, process: subprocess.Popen[bytes], timeout: float) -> None:
    """Wait until the SuperLink accepts connections on ``port``.

    ``flwr run`` refuses to start before.

    Raises
    ------
    RuntimeError
        The SuperLink exited, or did not listen within ``timeout`` seconds.
    """
    end = time.monotonic() + timeout
    while True:
        if process.poll() is not None:
            raise RuntimeError(f"the SuperLink exited with code {process.returncode}")
        try:
            with socket.create_connection(("127.0.0.1", port), timeout=1.0):
                return
        except OSError:
            if time.monotonic() > end:
                raise RuntimeError(
                    f"the SuperLink did not listen on port {port} within {timeout:g} s"
                ) from None
            time.sleep(0.2)


def _bin(name: str) -> str:
    """The Flower command ``name`` installed next to the running Python.

    Raises
    ------
    RuntimeError
        When it is not there (Flower is not installed in this environment).
    """
    path = Path(sys.executable).with_name(name)
    if not path.exists():
        raise RuntimeError(
            f"{name} is not installed next to {sys.executable}: "
            "pip install 'collabecon[flower]' in this environment"
        )
    return str(path)


def _deploy(
    out: str | os.PathLike[str],
    nodes: int,
    write: Callable[[Path], Any],
    port: int,
    timeout: float,
) -> dict[str, Any]:
    """``write(out/data)`` (a run's partitions), then :func:`launch` on ``nodes`` nodes.

    The seconds count from the writing.
    """
    out = Path(out).resolve()
    started = time.perf_counter()
    write(out / "data")
    return launch(out, nodes, port=port, timeout=timeout, started=started)


def deploy(
    config: TrainConfig,
    out: str | os.PathLike[str],
    *,
    port: int = 8000,
    data_dir: str | None = None,
    timeout: float = 900.0,
) -> dict[str, Any]:
    """Run ``config`` on a SuperLink and ``config.clients`` SuperNodes, each its own process.

    The processes run on this machine. Returns the ServerApp's ``result.json`` as a dict,
    with the final client models (``models``, stacked) and the seconds of the whole
    deployment.

    Raises
    ------
    ValueError
        A run the federation does not run (:func:`learning.runtimes.flower.apps.check_flower_config`).
    RuntimeError
        ``flwr run`` failed or the result is missing (the processes' logs are in ``out``).
    """
    check_flower_config(config)
    return _deploy(
        out, config.clients, lambda data: write_partitions(config, data, data_dir), port, timeout
    )


def deploy_ipfl(
    run: Any,
    out: str | os.PathLike[str],
    *,
    port: int = 8000,
    data_dir: str | None = None,
    timeout: float = 900.0,
) -> dict[str, Any]:
    """IP-FL (:class:`learning.drivers.ipfl.IPFLRun`) deployed as :func:`deploy` deploys a run.

    The ledger is on the SuperLink's ServerApp, with one SuperNode per client
    (:mod:`learning.runtimes.flower.ipfl`).
    """
    from learning.runtimes.flower.ipfl import write_ipfl_partitions

    return _deploy(
        out, run.clients, lambda data: write_ipfl_partitions(run, data, data_dir), port, timeout
    )


def deploy_duopoly(
    setup: Any,
    seed: int,
    rounds: int,
    out: str | os.PathLike[str],
    *,
    port: int = 8000,
    timeout: float = 900.0,
    **options: Any,
) -> dict[str, Any]:
    """Defection-free collaboration (:mod:`learning.runtimes.flower.duopoly`) deployed.

    The mediator is on the SuperLink's ServerApp, with one SuperNode per firm. ``options`` go
    to :func:`learning.runtimes.flower.duopoly.write_duopoly_partitions`.
    """
    from learning.runtimes.flower.duopoly import write_duopoly_partitions

    return _deploy(
        out,
        2,
        lambda data: write_duopoly_partitions(setup, seed, rounds, data, **options),
        port,
        timeout,
    )


def launch(
    out: Path,
    nodes: int,
    *,
    port: int = 8000,
    timeout: float = 900.0,
    started: float | None = None,
) -> dict[str, Any]:
    """Start the SuperLink and ``nodes`` SuperNodes, run the App on them, read the result.

    Node ``k`` reads ``out/data``'s ``partition-<k>.npz``; the module docstring describes the
    deployment.

    The processes, and every process they start, end with the run: on its return or
    error, on SIGTERM, SIGHUP or SIGINT of this process, and when this process is killed
    (:class:`learning.runtimes.flower.processes.Processes` says what is guaranteed where).
    """
    started = time.perf_counter() if started is None else started
    data = out / "data"
    address = f"127.0.0.1:{int(port)}"
    app = write_app(out, str(data), address)
    root = str(Path(learning.__file__).resolve().parents[1])
    env = {
        **os.environ,
        "PYTHONPATH": os.pathsep.join(p for p in (root, os.environ.get("PYTHONPATH", "")) if p),
        # the SuperLink starts flower-superexec by name: the running Python's tools come first
        "PATH": os.pathsep.join(
            p for p in (str(Path(sys.executable).parent), os.environ.get("PATH", "")) if p
        ),
        "FLWR_TELEMETRY_ENABLED": "0",
        "FLWR_HOME": str(out / "flwr-home"),
    }
    result_path = data / "result.json"
    with contextlib.ExitStack() as logs, Processes() as processes:

        def start(args: list[str], log: str) -> subprocess.Popen[bytes]:
            return processes.start(
                args, stdout=logs.enter_context((out / log).open("wb")), env=env, cwd=out
            )

        superlink = start(
            [_bin("flower-superlink"), "--insecure", "--port", str(port)], "superlink.log"
        )
        _wait_for_port(int(port), superlink, timeout=min(timeout, 120.0))
        for k in range(int(nodes)):
            start(
                [
                    _bin("flower-supernode"),
                    "--insecure",
                    "--superlink",
                    address,
                    "--port",
                    str(int(port) + 100 + k),
                    "--node-config",
                    f"partition-id={k} data-dir='{data}'",
                ],
                f"supernode-{k}.log",
            )
        run = start([_bin("flwr"), "run", str(app), "collabecon", "--stream"], "flwr-run.log")
        try:
            code = run.wait(timeout=timeout)
        except subprocess.TimeoutExpired:
            raise RuntimeError(
                f"flwr run did not end within {timeout:g} s; logs in {out}"
            ) from None
        if code != 0 or not result_path.exists():
            raise RuntimeError(
                f"flwr run failed (exit {code}); logs in {out}: flwr-run.log, "
                "superlink.log, supernode-<k>.log"
            )
    result = json.loads(result_path.read_text())
    result["models"] = torch.load(data / "models.pt", weights_only=True)
    result["deployment_seconds"] = time.perf_counter() - started
    result["processes"] = 1 + int(nodes)
    return result
