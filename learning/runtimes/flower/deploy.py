"""A deployment on separate processes: one SuperLink, one SuperNode per client, ``flwr run``.

:func:`write_app` writes the Flower App that ``flwr run`` ships to the SuperLink (its
components are :data:`learning.runtimes.flower.apps.server_app` and
:data:`learning.runtimes.flower.apps.client_app`; its run config names the server's
``meta-dir``) and a Flower configuration (``FLWR_HOME/config.toml``) naming the SuperLink and
how to trust it. :func:`deployment_commands` gives every command line of a deployment as an
argument list (no shell reads it, so a path holds any character). :func:`deploy` does the
whole run on this machine: it checks the ports (:mod:`learning.runtimes.flower.ports`),
writes the partitions and the run's credentials (:mod:`learning.runtimes.flower.credentials`),
starts ``flower-superlink`` with TLS and SuperNode authentication, registers every
SuperNode's public key (``flwr supernode register``), starts ``flower-supernode`` for every
client (each reads only its own partition: ``--node-config 'partition-id=<k>
data-dir="<dir>"'``), runs ``flwr run`` and reads back the result the ServerApp wrote
(:mod:`learning.runtimes.flower.results`). ``insecure=True`` runs the same processes without
TLS and without node authentication (:data:`learning.runtimes.flower.credentials.INSECURE_COST`). On several machines the same
commands run with the SuperLink's address in place of ``127.0.0.1`` (``docs/flower.md``).
:func:`deploy_ipfl` and :func:`deploy_firms` deploy the mechanisms that run their own
server loop (:func:`learning.runtimes.flower.apps.serve_any`) in the same way.
"""

from __future__ import annotations

import contextlib
import json
import os
import subprocess
import sys
import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import torch

import learning
from learning.runtimes.flower.apps import check_flower_config
from learning.runtimes.flower.credentials import Credentials, dial_address, write_credentials
from learning.runtimes.flower.partitions import write_partitions
from learning.runtimes.flower.ports import (
    LOOPBACK,
    check_ports,
    node_port,
    refuse_taken,
    wait_until_listening,
)
from learning.runtimes.flower.processes import DeploymentFailed, Processes
from learning.runtimes.flower.quoting import toml_string
from learning.train import TrainConfig

__all__ = [
    "Commands",
    "deploy",
    "deploy_firms",
    "deploy_ipfl",
    "deployment_commands",
    "launch",
    "write_app",
]

#: the SuperLink connection the Flower configuration names
CONNECTION = "collabecon"

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
default = "{connection}"

[superlink.{connection}]
address = {address}
{trust}
"""


def write_app(
    directory: str | os.PathLike[str],
    meta_dir: str,
    address: str,
    root_certificates: str | os.PathLike[str] | None = None,
) -> Path:
    """Write the Flower App and its ``flwr-home/config.toml`` under ``directory``.

    The App is a ``pyproject.toml``; returns the App's directory. The configuration trusts
    the SuperLink's certificate when it is signed by ``root_certificates`` (a CA
    certificate), and connects without TLS when that is None.
    """
    directory = Path(directory)
    app = directory / "app"
    app.mkdir(parents=True, exist_ok=True)
    (app / "pyproject.toml").write_text(
        _APP.format(meta_dir=toml_string(str(meta_dir))), encoding="utf-8"
    )
    home = directory / "flwr-home"
    home.mkdir(exist_ok=True)
    trust = (
        "insecure = true"
        if root_certificates is None
        else f"root-certificates = {toml_string(str(Path(root_certificates).resolve()))}"
    )
    (home / "config.toml").write_text(
        _CONFIG.format(connection=CONNECTION, address=toml_string(address), trust=trust),
        encoding="utf-8",
    )
    return app


@dataclass(frozen=True, slots=True)
class Commands:
    """The command lines of a deployment, each an argument list (no shell parses them).

    ``register`` (one a SuperNode, empty without node authentication) and ``run`` read the
    Flower configuration of ``FLWR_HOME`` (``<out>/flwr-home``).
    """

    superlink: list[str]
    register: list[list[str]]
    supernodes: list[list[str]]
    run: list[str]


def deployment_commands(
    out: Path,
    nodes: int,
    *,
    address: str,
    bind: str,
    port: int,
    credentials: Credentials | None,
    tool: Callable[[str], str] = str,
) -> Commands:
    """Every command line of a deployment whose files are under ``out``.

    Parameters
    ----------
    out : Path
        The run's folder: ``data/`` (the partitions), ``app/``, ``flwr-home/``.
    nodes : int
        SuperNodes; node ``k`` reads ``data/partition-<k>.npz`` and serves its runtime API
        on ``127.0.0.1``, port ``port + 100 + k``.
    address : str
        The SuperLink's address as the SuperNodes dial it (``host:port``).
    bind : str
        The interface the SuperLink listens on.
    port : int
        The SuperLink's port.
    credentials : Credentials or None
        TLS and node authentication (:func:`learning.runtimes.flower.credentials.write_credentials`);
        None runs without either (``--insecure``).
    tool : callable
        The path of a Flower command from its name (the bare name by default).
    """
    data = out / "data"
    # the App needs no package installed at run time; a run submitted by another gets none
    superlink = [
        tool("flower-superlink"),
        "--host",
        bind,
        "--port",
        str(int(port)),
        "--disable-runtime-dependency-installation",
    ]
    if credentials is None:
        superlink.append("--insecure")
        secure: list[list[str]] = [["--insecure"] for _ in range(int(nodes))]
    else:
        superlink += [
            "--ssl-ca-certfile",
            str(credentials.ca),
            "--ssl-certfile",
            str(credentials.certificate),
            "--ssl-keyfile",
            str(credentials.key),
            "--enable-supernode-auth",
        ]
        secure = [
            ["--root-certificates", str(credentials.ca), "--auth-supernode-private-key", str(key)]
            for key in credentials.node_keys
        ]
    register = (
        []
        if credentials is None
        else [
            [tool("flwr"), "supernode", "register", str(key), CONNECTION, "--format", "json"]
            for key in credentials.node_public_keys
        ]
    )
    supernodes = [
        [
            tool("flower-supernode"),
            *secure[k],
            "--superlink",
            address,
            "--host",
            LOOPBACK,
            "--port",
            str(node_port(port, k)),
            "--node-config",
            f"partition-id={k} data-dir={toml_string(str(data))}",
        ]
        for k in range(int(nodes))
    ]
    run = [tool("flwr"), "run", str(out / "app"), CONNECTION, "--stream"]
    return Commands(superlink, register, supernodes, run)


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


def check_deployment(out: str | os.PathLike[str], port: int, nodes: int) -> None:
    """Refuse, before any work, a deployment on this machine that cannot start.

    ``port`` and the SuperNodes' ports (:func:`learning.runtimes.flower.ports.check_ports`)
    must be in range and free on ``127.0.0.1``
    (:func:`learning.runtimes.flower.ports.refuse_taken`), and ``out`` a path Flower's
    configuration can name (:func:`learning.runtimes.flower.quoting.toml_string`).

    Raises
    ------
    ValueError
        One line naming what is wrong.
    """
    toml_string(str(Path(out).resolve()), "out")
    check_ports("port", port, nodes)
    refuse_taken("port", port, nodes)


def _deploy(
    out: str | os.PathLike[str],
    nodes: int,
    write: Callable[[Path], Any],
    port: int,
    timeout: float,
    insecure: bool,
) -> dict[str, Any]:
    """Check the deployment, ``write(out/data)`` (a run's partitions), then :func:`launch`.

    The seconds count from the writing.
    """
    check_deployment(out, port, nodes)
    out = Path(out).resolve()
    started = time.perf_counter()
    write(out / "data")
    return launch(out, nodes, port=port, timeout=timeout, started=started, insecure=insecure)


def deploy(
    config: TrainConfig,
    out: str | os.PathLike[str],
    *,
    port: int = 8000,
    data_dir: str | None = None,
    timeout: float = 900.0,
    insecure: bool = False,
) -> dict[str, Any]:
    """Run ``config`` on a SuperLink and ``config.clients`` SuperNodes, each its own process.

    The processes run on this machine (:func:`launch`). Returns the ServerApp's
    ``result.json`` as a dict, with the final client models (``models``, stacked), the
    seconds of the whole deployment and how it was secured.

    Raises
    ------
    ValueError
        A run the federation does not run
        (:func:`learning.runtimes.flower.apps.check_flower_config`), or a port out of range
        or taken (:func:`check_deployment`), before any work.
    DeploymentFailed
        A process failed or the result is missing (the processes' logs are in ``out``).
    """
    check_flower_config(config)
    return _deploy(
        out,
        config.clients,
        lambda data: write_partitions(config, data, data_dir),
        port,
        timeout,
        insecure,
    )


def deploy_ipfl(
    run: Any,
    out: str | os.PathLike[str],
    *,
    port: int = 8000,
    data_dir: str | None = None,
    timeout: float = 900.0,
    insecure: bool = False,
) -> dict[str, Any]:
    """IP-FL (:class:`learning.drivers.ipfl.IPFLRun`) deployed as :func:`deploy` deploys a run.

    The ledger is on the SuperLink's ServerApp, with one SuperNode per client
    (:mod:`learning.runtimes.flower.ipfl`).
    """
    from learning.runtimes.flower.ipfl import write_ipfl_partitions

    return _deploy(
        out,
        run.clients,
        lambda data: write_ipfl_partitions(run, data, data_dir),
        port,
        timeout,
        insecure,
    )


def deploy_firms(
    setup: Any,
    seed: int,
    rounds: int,
    out: str | os.PathLike[str],
    *,
    port: int = 8000,
    timeout: float = 900.0,
    insecure: bool = False,
    **options: Any,
) -> dict[str, Any]:
    """Collaborating firms deployed, the mediator on the SuperLink's ServerApp.

    Two firms for a :class:`learning.drivers.defection_free.DuopolySetup`
    (:mod:`learning.runtimes.flower.duopoly`), ``setup.firms`` for a
    :class:`learning.drivers.defection_free_n.NFirmSetup`
    (:mod:`learning.runtimes.flower.n_firms`); one SuperNode per firm. ``options`` go to the
    module's ``write_duopoly_partitions`` or ``write_n_firm_partitions``.
    """
    from learning.drivers.defection_free_n import NFirmSetup
    from learning.runtimes.flower.duopoly import write_duopoly_partitions
    from learning.runtimes.flower.n_firms import write_n_firm_partitions

    many = isinstance(setup, NFirmSetup)
    write: Callable[..., Any] = write_n_firm_partitions if many else write_duopoly_partitions
    nodes = setup.firms if many else 2
    return _deploy(
        out,
        nodes,
        lambda data: write(setup, seed, rounds, data, **options),
        port,
        timeout,
        insecure,
    )


def _ended(process: subprocess.Popen[bytes], timeout: float, what: str, log: str) -> int:
    """Wait for ``process``; its exit code.

    Raises
    ------
    DeploymentFailed
        It did not end within ``timeout`` seconds.
    """
    try:
        return process.wait(timeout=timeout)
    except subprocess.TimeoutExpired:
        raise DeploymentFailed(f"{what} did not end within {timeout:g} s; see {log}") from None


def launch(
    out: Path,
    nodes: int,
    *,
    port: int = 8000,
    timeout: float = 900.0,
    started: float | None = None,
    insecure: bool = False,
) -> dict[str, Any]:
    """Start the SuperLink and ``nodes`` SuperNodes, run the App on them, read the result.

    Node ``k`` reads ``out/data``'s ``partition-<k>.npz``; the module docstring describes the
    deployment. Every process binds ``127.0.0.1`` only: the SuperLink ``port``, SuperNode
    ``k`` ``port + 100 + k``. Before the SuperLink starts, every port must be free
    (:func:`check_deployment`); once a process listens, its port must be held by the
    deployment's processes alone (:func:`learning.runtimes.flower.ports.wait_until_listening`).
    Unless ``insecure``, the run's credentials are written to ``out/credentials``, the
    SuperLink serves TLS and admits only the SuperNodes whose keys were registered, and
    ``flwr`` trusts only the run's CA.

    The processes, and every process they start, end with the run: on its return or
    error, on SIGTERM, SIGHUP or SIGINT of this process, and when this process is killed
    (:class:`learning.runtimes.flower.processes.Processes` says what is guaranteed where).

    Returns
    -------
    dict
        The ServerApp's ``result.json``, with ``models``, ``deployment_seconds``,
        ``processes`` (the SuperLink and the SuperNodes), ``security`` (``"tls+node-auth"``
        or ``"insecure"``) and ``ports`` (``superlink``, ``supernodes``).

    Raises
    ------
    ValueError
        A port out of range, taken before the start or beside a process of the deployment.
    DeploymentFailed
        A process exited, did not listen, or did not end in time; ``flwr run`` failed or
        wrote no result (the logs are in ``out``).
    """
    started = time.perf_counter() if started is None else started
    check_deployment(out, port, nodes)
    data = out / "data"
    credentials = None if insecure else write_credentials(out / "credentials", LOOPBACK, nodes)
    write_app(
        out,
        str(data),
        dial_address(LOOPBACK, port),
        None if credentials is None else credentials.ca,
    )
    commands = deployment_commands(
        out,
        nodes,
        address=dial_address(LOOPBACK, port),
        bind=LOOPBACK,
        port=port,
        credentials=credentials,
        tool=_bin,
    )
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
    start_wait = min(timeout, 120.0)
    with contextlib.ExitStack() as logs, Processes() as processes:

        def start(args: list[str], log: str) -> subprocess.Popen[bytes]:
            return processes.start(
                args, stdout=logs.enter_context((out / log).open("wb")), env=env, cwd=out
            )

        superlink = start(commands.superlink, "superlink.log")
        wait_until_listening("port", port, "the SuperLink", superlink, processes.pids, start_wait)
        registering = [
            start(command, f"register-{k}.log") for k, command in enumerate(commands.register)
        ]
        for k, process in enumerate(registering):
            log = f"register-{k}.log"
            code = _ended(process, start_wait, f"registering SuperNode {k}", str(out / log))
            if code != 0:
                raise DeploymentFailed(
                    f"flwr supernode register failed for SuperNode {k} (exit {code}); "
                    f"see {out / log}"
                )
        supernodes = [
            start(command, f"supernode-{k}.log") for k, command in enumerate(commands.supernodes)
        ]
        for k, process in enumerate(supernodes):
            wait_until_listening(
                "port", node_port(port, k), f"SuperNode {k}", process, processes.pids, start_wait
            )
        run = start(commands.run, "flwr-run.log")
        code = _ended(run, timeout, "flwr run", str(out / "flwr-run.log"))
        if code != 0 or not result_path.exists():
            raise DeploymentFailed(
                f"flwr run failed (exit {code}); logs in {out}: flwr-run.log, "
                "superlink.log, supernode-<k>.log"
            )
    result = json.loads(result_path.read_text())
    result["models"] = torch.load(data / "models.pt", weights_only=True)
    result["deployment_seconds"] = time.perf_counter() - started
    result["processes"] = 1 + int(nodes)
    result["security"] = "insecure" if insecure else "tls+node-auth"
    result["ports"] = {
        "superlink": int(port),
        "supernodes": [node_port(port, k) for k in range(int(nodes))],
    }
    return result
