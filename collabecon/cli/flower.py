"""``collabecon flower``: collabecon's algorithms and mechanisms as Flower federations.

``collabecon flower simulate --algorithm fedavg,ifca --clients 10`` runs a 10-client FedAvg
and a 10-client IFCA federation in Flower's simulation engine (one SuperNode per client,
each reading only its own partition) and prints each run's accuracy. Every training flag is
a field of :class:`learning.train.TrainConfig`, as in ``collabecon train``; every
registered algorithm runs (CoBo with the pair gradients on the nodes and the collaboration
weights on the server).

A mechanism named after the action runs with its own server loop, its flags those of its
in-process command, given after its name: ``collabecon flower simulate ipfl --clients 8``
is IP-FL's token economy with the ledger on the server (:mod:`learning.runtimes.flower.ipfl`, the
flags of ``collabecon ipfl``), ``collabecon flower simulate defection-free --rounds 3`` the
mediator between two firms (:mod:`learning.runtimes.flower.duopoly`, the flags of ``collabecon
defection-free``; with ``--firms N`` among N firms under any scheme,
:mod:`learning.runtimes.flower.n_firms`). ``prepare --out DIR`` writes a run's partitions and Flower App for a
deployment, ``deploy`` runs it on a SuperLink and one SuperNode per client, each its own
process on ``127.0.0.1``; both use TLS and SuperNode authentication with credentials made for
the run unless ``--insecure`` (``docs/flower.md``). Needs ``pip install -e ".[flower]"``.
"""

from __future__ import annotations

import argparse
import dataclasses
import importlib
import tempfile
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from functools import partial
from pathlib import Path
from typing import Any

from collabecon.cli._checks import threads_argument
from collabecon.cli._output import fmt, table
from collabecon.cli.train import PARAMETER_FLAGS, TRAIN_FLAGS, add_train_flags

_ACTIONS = ("simulate", "prepare", "deploy")

#: mechanism -> (module of its in-process command, what runs where)
_MECHANISMS = {
    "ipfl": (
        "collabecon.cli.ipfl",
        "IP-FL's token economy, the ledger on the server (the flags of collabecon ipfl)",
    ),
    "defection-free": (
        "collabecon.cli.defection_free",
        "two firms (or --firms N), the mediator on the server (the flags of collabecon "
        "defection-free)",
    ),
}

_OUT_HELP = "partitions and results (default: a temp dir)"


#: the SuperLink's port and the SuperLink machine's address when not given
_PORT, _HOST = 8000, "127.0.0.1"
#: seconds ``deploy`` waits for the run when --timeout is not given, and the most it takes
_TIMEOUT, _MAX_TIMEOUT = 900.0, 30 * 86400.0
#: memory of one deployed node: a SuperNode, its SuperExec and the ClientApp it starts per
#: message (resident sizes measured on Linux, digits on the CPU: 0.14, 0.13 and 0.47 GB),
#: rounded up
_NODE_BYTES = 1 << 30
#: memory the result keeps for one round of one client (its history record, at most)
_ROUND_BYTES = 256

#: the actions each federation flag applies to, and what it sets
_FEDERATION_FLAGS = {
    "cpus": (("simulate",), "Ray's CPUs"),
    "port": (("prepare", "deploy"), "the SuperLink's port"),
    "host": (("prepare",), "the address the SuperNodes dial"),
    "insecure": (("prepare", "deploy"), "a SuperLink without TLS and node authentication"),
    "timeout": (("deploy",), "how long deploy waits for the run"),
    "threads": (("simulate",), "torch's CPU threads of the simulation's server process"),
}

_THREADS_HELP = (
    "torch's CPU threads of this process, where the simulation's server runs, from 1 to the "
    "CPUs it may use (simulate; default: OMP_NUM_THREADS when set, else its physical cores); "
    "Ray runs each node on one CPU "
    "and one thread"
)


def _add_federation_flags(parser: argparse.ArgumentParser) -> None:
    parser.add_argument(
        "--cpus", type=int, default=None, help="CPUs for Ray (simulate; default: all)"
    )
    parser.add_argument(
        "--port",
        type=int,
        default=None,
        help=f"the SuperLink's port, 1-65535 (prepare, deploy; default {_PORT}); SuperNode k "
        "serves its runtime API on port + 100 + k",
    )
    parser.add_argument(
        "--host",
        default=None,
        help="the SuperLink machine's address as the SuperNodes dial it: an IP address or a DNS "
        f"name, written into its TLS certificate (prepare; default {_HOST}); deploy runs on "
        f"{_HOST}",
    )
    parser.add_argument(
        "--insecure",
        action="store_true",
        help="no TLS and no SuperNode authentication (prepare, deploy); by default the run's "
        "own CA, SuperLink certificate and SuperNode keys are made and used (docs/flower.md)",
    )
    parser.add_argument(
        "--timeout",
        type=float,
        default=None,
        help=f"seconds deploy waits for the run (default {_TIMEOUT:g})",
    )


class _Mechanism(argparse._SubParsersAction):
    """The optional mechanism after the action.

    Its own flags follow its name and are parsed into ``settings``; a flag of the algorithm
    runs given before the name is refused (it would set nothing), except ``--json``.
    """

    def __call__(
        self,
        parser: argparse.ArgumentParser,
        namespace: argparse.Namespace,
        values: str | Sequence[Any] | None,
        option_string: str | None = None,
    ) -> None:
        assert isinstance(values, list) and values
        name, rest = values[0], values[1:]
        if name not in self.choices:
            raise argparse.ArgumentError(
                self, f"invalid choice: {name!r} (choose from {', '.join(self.choices)})"
            )
        given = [
            action.option_strings[-1]
            for action in parser._actions
            if action.option_strings
            and action.dest not in ("help", "json")
            and getattr(namespace, action.dest, action.default) != action.default
        ]
        if given:
            parser.error(
                f"{', '.join(given)} before {name!r}: the flags of a mechanism follow its name "
                f"(collabecon flower ACTION {name} --help)"
            )
        settings = self.choices[name].parse_args(rest)
        setattr(namespace, self.dest, name)
        namespace.settings = settings
        namespace.json = bool(namespace.json or settings.json)


def add_arguments(parser: argparse.ArgumentParser) -> None:
    """Declare the arguments of ``collabecon flower``.

    The positional ``action`` (``simulate``, ``prepare`` or ``deploy``); the training flags
    of :func:`collabecon.cli.train.add_train_flags` (``--algorithm`` takes comma-separated
    names, each its own run); ``--data-dir``, ``--out`` and the federation's flags
    (``--cpus``, ``--port``, ``--host``, ``--insecure``, ``--timeout``, ``--threads``, each
    refused with an action it has no effect on); and an optional mechanism (``ipfl`` or ``defection-free``) whose flags, those of its in-process
    command, follow its name.

    Parameters
    ----------
    parser : argparse.ArgumentParser
        The subcommand's parser (``--json`` is declared on it already).
    """
    parser.add_argument(
        "action",
        choices=_ACTIONS,
        help="simulate; prepare a deployment's partitions and Flower App; deploy on this "
        "machine (a SuperLink and one SuperNode per client, separate processes)",
    )
    add_train_flags(
        parser,
        help_for={
            "algorithm": "algorithm names, comma-separated (each its own run on the same nodes)"
        },
        parameters=PARAMETER_FLAGS[:2],
    )
    parser.add_argument("--data-dir", default=None, help="directory of file-based datasets")
    parser.add_argument("--out", default=None, metavar="DIR", help=_OUT_HELP)
    threads_argument(parser, _THREADS_HELP)
    _add_federation_flags(parser)
    mechanisms = parser.add_subparsers(
        action=_Mechanism,
        dest="mechanism",
        metavar="MECHANISM",
        required=False,
        help="a mechanism with its own server loop instead of --algorithm; its flags "
        "follow its name (collabecon flower ACTION MECHANISM --help)",
    )
    for name, (module, help_) in _MECHANISMS.items():
        sub = mechanisms.add_parser(name, help=help_, description=help_)
        importlib.import_module(module).add_arguments(sub)
        for action in sub._actions:
            if action.dest == "out":
                action.help = _OUT_HELP
            elif action.dest == "threads":
                action.help = _THREADS_HELP
        sub.add_argument("--json", action="store_true", help="print one JSON object on stdout")
        _add_federation_flags(sub)


@dataclass(frozen=True, slots=True)
class _Run:
    """One federation of a command.

    It has a name (``run-<i>-<name>``), a number of nodes and of rounds, ``write(directory)``
    writing its partitions and ``deploy(out, port=..., timeout=..., insecure=...)`` running it
    on separate processes (:mod:`learning.runtimes.flower.deploy`).
    """

    name: str
    clients: int
    rounds: int
    write: Callable[[Path], Any]
    deploy: Callable[..., dict[str, Any]]


def _algorithm_runs(args: argparse.Namespace) -> list[_Run]:
    """The runs of ``--algorithm``, each a split algorithm.

    See :func:`learning.runtimes.flower.apps.serve`.
    """
    from learning.runtimes.flower.apps import check_flower_config
    from learning.runtimes.flower.deploy import deploy
    from learning.runtimes.flower.partitions import write_partitions
    from learning.train import TrainConfig

    names = [a.strip() for a in str(args.algorithm).split(",") if a.strip()]
    if not names:
        raise ValueError(f"--algorithm must name at least one algorithm, got {args.algorithm!r}")
    fields = {name: getattr(args, name) for name in TRAIN_FLAGS if name != "algorithm"}
    runs = []
    for name in names:
        config = TrainConfig(
            algorithm=name,
            **fields,
            partition_params=dict(args.partition_params),
            algorithm_params=dict(args.algorithm_params),
        )
        check_flower_config(config)
        data_dir = args.data_dir
        runs.append(
            _Run(
                name,
                config.clients,
                config.rounds,
                partial(write_partitions, config, data_dir=data_dir),
                partial(deploy, config, data_dir=data_dir),
            )
        )
    return runs


def _on_cpu(device: str | None) -> None:
    if device not in (None, "cpu"):
        raise ValueError(f"--device {device!r}: the Flower federation computes on the CPU")


def _ipfl_run(flags: argparse.Namespace) -> _Run:
    """IP-FL as ``collabecon ipfl`` with ``flags`` configures it (:mod:`collabecon.cli.ipfl`)."""
    from collabecon.cli.ipfl import run_config
    from learning.runtimes.flower.deploy import deploy_ipfl
    from learning.runtimes.flower.ipfl import check_ipfl_run, write_ipfl_partitions

    if flags.compare or flags.lr_grid is not None:
        raise ValueError(
            "--compare: IP-FL against the baselines, each with a learning rate chosen on "
            "validation data, runs in process (collabecon ipfl --compare)"
        )
    if flags.checkpoint is not None or flags.resume:
        raise ValueError("--checkpoint, --resume: a Flower federation keeps no checkpoints")
    _on_cpu(flags.device)
    run = run_config(flags)
    check_ipfl_run(run)
    return _Run(
        "ipfl",
        run.clients,
        run.rounds,
        partial(write_ipfl_partitions, run, data_dir=flags.data_dir),
        partial(deploy_ipfl, run, data_dir=flags.data_dir),
    )


def _given(cls: type, flags: argparse.Namespace) -> dict[str, Any]:
    """The fields of dataclass ``cls`` that ``flags`` sets (a flag of the same name, not None)."""
    values = {f.name: getattr(flags, f.name, None) for f in dataclasses.fields(cls)}
    return {name: value for name, value in values.items() if value is not None}


def _duopoly_run(flags: argparse.Namespace) -> _Run:
    """Defection-free collaboration as ``collabecon defection-free`` with ``flags`` plays it.

    The same split, pre-training and minibatch stream (``--seed``) as
    :mod:`collabecon.cli.defection_free`.
    """
    from collabecon.cli._checks import counts_at_least
    from games.defection_free import DefectionFreeConfig
    from learning.drivers.defection_free import DuopolySetup
    from learning.runtimes.flower.deploy import deploy_firms
    from learning.runtimes.flower.duopoly import write_duopoly_partitions

    counts_at_least(flags, ("rounds",))
    counts_at_least(flags, ("seed",), low=0)
    if flags.firms is not None:
        return _n_firm_run(flags)
    if flags.figures:
        raise ValueError("--figures: the four schemes' figures run in process")
    if flags.scheme != "defection-free":
        raise ValueError(
            f"--scheme {flags.scheme!r}: the Flower mediator plays the defection-free rule "
            "(Algorithm 5)"
        )
    if flags.inner != "gd":
        raise ValueError(f"--inner {flags.inner!r}: the Flower firms take real SGD steps (gd)")
    if flags.train_alone:
        raise ValueError("--train-alone applies to the one-sided schemes, not defection-free")
    _on_cpu(flags.device)
    setup = DuopolySetup(
        **_given(DuopolySetup, flags),
        init_epochs=(0, flags.init_epochs_high),
        metric=flags.quality,
    )
    config = DefectionFreeConfig(**_given(DefectionFreeConfig, flags))
    played = (setup, flags.seed, flags.rounds)
    options = {"q_max": flags.q_max, "config": config, "stream": flags.seed}
    return _Run(
        "defection-free",
        2,
        flags.rounds,
        partial(write_duopoly_partitions, *played, **options),
        partial(deploy_firms, *played, **options),
    )


def _n_firm_run(flags: argparse.Namespace) -> _Run:
    """N firms as ``collabecon defection-free --firms N`` with ``flags`` plays them.

    The same split, pre-training and minibatch stream (``--seed``), any scheme.
    """
    from collabecon.cli._defection_free_n import check_n_firm_run, n_firm_contradictions
    from learning.runtimes.flower.deploy import deploy_firms
    from learning.runtimes.flower.n_firms import write_n_firm_partitions

    n_firm_contradictions(flags)
    _on_cpu(flags.device)
    played = (check_n_firm_run(flags), flags.seed, flags.rounds)
    options = {"scheme": flags.scheme, "q_max": flags.q_max}
    return _Run(
        "defection-free",
        flags.firms,
        flags.rounds,
        partial(write_n_firm_partitions, *played, **options),
        partial(deploy_firms, *played, **options),
    )


def outputs(args: argparse.Namespace) -> list[tuple[str, object]]:
    """The directory the command writes into: ``--out``, given before or after a mechanism."""
    flags = args.settings if args.mechanism else args
    return [("--out", flags.out)]


def _federation_flags(action: str, flags: argparse.Namespace) -> None:
    """Refuse a federation flag the action does not use, and values out of range.

    Raises
    ------
    ValueError
        A flag given with an action it has no effect on (naming both), ``--cpus`` below 1,
        ``--timeout`` not in (0, 30 days], ``--port`` outside 1-65535, or a ``--host`` that
        is no address.
    """
    for dest, (actions, what) in _FEDERATION_FLAGS.items():
        if getattr(flags, dest) not in (None, False) and action not in actions:
            raise ValueError(
                f"--{dest} ({what}) has no effect with {action}; it applies to "
                f"{' and '.join(actions)}"
            )
    if flags.cpus is not None and flags.cpus < 1:
        raise ValueError(f"--cpus must be an integer >= 1, got {flags.cpus}")
    if flags.timeout is not None and not 0 < flags.timeout <= _MAX_TIMEOUT:
        raise ValueError(
            f"--timeout must be a number of seconds in (0, {_MAX_TIMEOUT:g}] (30 days), "
            f"got {flags.timeout}"
        )
    if flags.port is not None:
        from learning.runtimes.flower.ports import check_ports

        check_ports("--port", flags.port, 0)
    if flags.host is not None:
        from learning.runtimes.flower.credentials import host_address

        host_address("--host", flags.host)


def _sizes(action: str, runs: Sequence[_Run]) -> None:
    """Refuse runs whose history, or whose deployed processes, outgrow this machine's memory."""
    from collabecon.cli._checks import fits_in_memory

    for r in runs:
        fits_in_memory(
            f"--rounds {r.rounds} with {r.clients} clients (the history the result keeps)",
            r.rounds * r.clients * _ROUND_BYTES,
        )
        if action == "deploy":
            fits_in_memory(
                f"{r.clients} clients deployed (a SuperNode and a ClientApp process each)",
                r.clients * _NODE_BYTES,
            )


def _ports(args: argparse.Namespace, flags: argparse.Namespace, port: int) -> None:
    """Refuse ports out of range, an ``--out`` Flower cannot name and (deploy) taken ports.

    Checked before Flower is imported: a refusal costs no more than importing torch. The nodes
    are the clients (``--clients``; the firms for ``defection-free``, two unless ``--firms``).
    """
    from learning.runtimes.flower.ports import check_ports, refuse_taken
    from learning.runtimes.flower.quoting import toml_string

    if args.mechanism == "defection-free":
        from collabecon.cli._defection_free_n import n_firm_contradictions

        n_firm_contradictions(flags)  # the number of firms before their ports
        nodes = 2 if flags.firms is None else int(flags.firms)
    else:
        nodes = max(int(flags.clients), 0)
    if flags.out is not None:
        toml_string(str(Path(flags.out).resolve()), "--out")
    check_ports("--port", port, nodes)
    if args.action == "deploy":
        refuse_taken("--port", port, nodes)


def _bind(host: str) -> str:
    """The interface the SuperLink at ``host`` listens on: the address, or every IPv4 one."""
    import ipaddress

    try:
        return ipaddress.ip_address(host).compressed
    except ValueError:  # a DNS name: the SuperLink machine's interfaces are not known here
        return "0.0.0.0"


def _prepare(flags: argparse.Namespace, run: _Run, out: Path, port: int) -> dict[str, Any]:
    """Write ``run``'s partitions, credentials, Flower App and configuration; the commands."""
    from learning.runtimes.flower.credentials import dial_address, host_address, write_credentials
    from learning.runtimes.flower.deploy import deployment_commands, write_app

    host = host_address("--host", flags.host or _HOST)
    data = out / "data"
    run.write(data)
    credentials = (
        None if flags.insecure else write_credentials(out / "credentials", host, run.clients)
    )
    address = dial_address(host, port)
    app = write_app(out, str(data), address, None if credentials is None else credentials.ca)
    commands = deployment_commands(
        out, run.clients, address=address, bind=_bind(host), port=port, credentials=credentials
    )
    server = sorted(p.name for p in data.iterdir() if not p.name.startswith("partition-"))
    return {
        "clients": run.clients,
        "server_files": server,
        "app": str(app),
        "security": "insecure" if credentials is None else "tls+node-auth",
        "address": address,
        "credentials": None if credentials is None else str(credentials.ca.parent),
        "flwr_home": str(out / "flwr-home"),
        "commands": dataclasses.asdict(commands),
    }


def run(args: argparse.Namespace) -> dict[str, Any]:
    """Simulate, prepare or deploy the federations the flags name.

    ``simulate`` writes each run's partitions under ``--out`` (a temporary folder when not
    given) and runs them all in one Flower simulation
    (:func:`learning.runtimes.flower.simulation.simulate_directories`); ``prepare`` writes
    one run's partitions, its credentials (unless ``--insecure``), Flower App and Flower
    configuration, and returns the command lines that run it
    (:func:`learning.runtimes.flower.deploy.deployment_commands`); ``deploy`` runs one run on
    a SuperLink and one SuperNode per client, each its own process on ``127.0.0.1``, with TLS
    and SuperNode authentication unless ``--insecure``. Every check (flags, ports free,
    sizes) comes before any work.

    Parameters
    ----------
    args : argparse.Namespace
        The flags of :func:`add_arguments`; a mechanism's own flags are in ``args.settings``.

    Returns
    -------
    dict
        ``action``, ``out`` and ``mechanism`` (None for ``--algorithm``), and: ``prepare``:
        ``clients``, ``server_files``, ``app`` (the App's folder), ``security``
        (``"tls+node-auth"`` or ``"insecure"``), ``address`` (what the SuperNodes dial),
        ``credentials`` (their folder, None when insecure), ``flwr_home`` and ``commands``
        (argument lists: ``superlink``, ``register``, ``supernodes``, ``run``);
        ``simulate``: ``runs``, one record per run; ``deploy``: ``status`` (``"done"`` or
        ``"failed"``, with the reason in ``failed``) and ``runs``. A split algorithm's record
        is ``config``, ``history`` (one ``RoundRecord`` per round), per client ``loss`` and
        ``accuracy``, ``mean_accuracy``, ``seconds``, ``epsilon`` and its ``accounting``
        (accountant, sampling, adjacency; under DP-SGD); a
        mechanism's is its result's ``to_dict``. A simulated record adds ``result`` (the path
        of its ``result.json``), a deployed one ``deployment_seconds``, ``processes``,
        ``security`` and ``ports``.

    Raises
    ------
    ValueError
        Flower not installed, a bad ``--data-dir``, ``--out``, ``--cpus``, ``--port``,
        ``--host`` or ``--timeout``, a federation flag the action does not use, a port
        taken, runs too large for this machine's memory, an algorithm without a client
        half, a mechanism flag the federation does not run, more than one algorithm for
        ``prepare`` or ``deploy``, or a run the Flower server refused; the command exits
        with code 2.
    """
    from collabecon.cli._checks import existing_dir
    from collabecon.cli._paths import writable_dir
    from learning.runtimes.flower import require_flower

    flags = args.settings if args.mechanism else args
    existing_dir("--data-dir", flags.data_dir)
    writable_dir("--out", flags.out)
    _federation_flags(args.action, flags)
    port = _PORT if flags.port is None else flags.port
    if args.action != "simulate":
        _ports(args, flags, port)
    require_flower()
    if args.mechanism == "ipfl":
        runs = [_ipfl_run(flags)]
    elif args.mechanism == "defection-free":
        runs = [_duopoly_run(flags)]
    else:
        runs = _algorithm_runs(args)
    if args.action != "simulate" and len(runs) != 1:
        raise ValueError(f"--algorithm: {args.action} runs one experiment; name one algorithm")
    _sizes(args.action, runs)
    if flags.insecure:
        from econ._log import get_logger
        from learning.runtimes.flower.credentials import INSECURE_COST

        get_logger(__name__).warning(INSECURE_COST)
    out = Path(flags.out or tempfile.mkdtemp(prefix="collabecon-flower-")).resolve()
    head = {"action": args.action, "out": str(out), "mechanism": args.mechanism}
    if args.action == "prepare":
        return {**head, **_prepare(flags, runs[0], out, port)}
    if args.action == "deploy":
        from learning.runtimes.flower.processes import DeploymentFailed

        timeout = _TIMEOUT if flags.timeout is None else flags.timeout
        try:
            done = runs[0].deploy(out, port=port, timeout=timeout, insecure=flags.insecure)
        except DeploymentFailed as exc:
            return {**head, "status": "failed", "failed": str(exc), "runs": []}
        done.pop("models")
        return {**head, "status": "done", "runs": [done]}
    from learning.runtimes.flower.results import result_dict, write_result
    from learning.runtimes.flower.simulation import simulate_directories

    directories = [out / f"run-{i}-{r.name}" for i, r in enumerate(runs)]
    for r, directory in zip(runs, directories, strict=True):
        r.write(directory)
    try:
        results = simulate_directories(
            [(str(d), str(d)) for d in directories],
            max(r.clients for r in runs),
            cpus=flags.cpus,
        )
    except RuntimeError as exc:  # the server refused what the nodes reported
        if isinstance(exc.__cause__, ValueError):
            raise ValueError(f"the Flower server refused the run: {exc.__cause__}") from exc
        raise
    return {
        **head,
        "runs": [
            {**result_dict(result), "result": str(write_result(result, directory))}
            for result, directory in zip(results, directories, strict=True)
        ],
    }


def exit_status(result: dict[str, Any]) -> int:
    """1 when the deployment failed (``status`` ``"failed"``), else 0."""
    return 1 if result.get("status") == "failed" else 0


def _algorithm_row(r: dict[str, Any]) -> list[Any]:
    """A split run's row."""
    config, last = r["config"], r["history"][-1]
    accuracy, test_loss, train_loss = r["mean_accuracy"], last["test_loss"], last["train_loss"]
    seconds = r.get("deployment_seconds", r["seconds"])
    return [
        config["algorithm"],
        config["clients"],
        config["rounds"],
        fmt(accuracy),
        fmt(test_loss),
        fmt(train_loss),
        fmt(seconds),
    ]


def _ipfl_text(r: dict[str, Any]) -> str:
    """The cluster models' accuracy on every source distribution, and the ledger."""
    accuracy = r["cluster_accuracy"]
    rows = [(f"c{k}", *(fmt(100 * a, 4) for a in accs)) for k, accs in enumerate(accuracy)]
    start, end = r["tokens_start"], r["tokens_end"]
    personal = r["personalised_accuracy"]
    return "\n".join(
        [
            table(rows, ["cluster", *(f"θ{d} (%)" for d in range(len(accuracy[0])))]),
            f"\ntokens: start {fmt(sum(start))} total, end min {fmt(min(end), 4)} / max "
            f"{fmt(max(end), 4)}, pools {fmt(sum(r['pools_end']), 4)}; personalised accuracy "
            f"{fmt(100 * sum(personal) / len(personal), 4)} % over {len(r['history'])} rounds",
        ]
    )


def _prepare_text(result: dict[str, Any]) -> str:
    """What ``prepare`` wrote, and the command lines that run it, quoted for a POSIX shell."""
    from shlex import join, quote

    commands = result["commands"]
    home = f"FLWR_HOME={quote(result['flwr_home'])} "
    lines = [
        f"wrote {result['clients']} partitions and the server's "
        f"{', '.join(result['server_files'])} to {result['out']}/data and the Flower App "
        f"to {result['app']}",
    ]
    if result["credentials"] is None:
        lines.append("no TLS, no SuperNode authentication (--insecure)")
    else:
        lines.append(
            f"TLS and SuperNode authentication: credentials in {result['credentials']} (ca.crt "
            "to every machine, server.crt and server.key to the SuperLink's only, "
            "node-<k>.key to node k's only)"
        )
    lines += [f"SuperLink ({result['address']}):", f"  {join(commands['superlink'])}"]
    if commands["register"]:
        lines.append("register the SuperNodes' keys, once the SuperLink runs:")
        lines += [f"  {home}{join(c)}" for c in commands["register"]]
    lines += [f"SuperNode {k}:\n  {join(c)}" for k, c in enumerate(commands["supernodes"])]
    lines += ["the run:", f"  {home}{join(commands['run'])}"]
    return "\n".join(lines)


def render(result: dict[str, Any]) -> str:
    """The human report of :func:`run`'s result.

    ``prepare``: what was written where and the command lines of the deployment. A failed
    deployment: why, and where the logs are. Otherwise, per run: IP-FL's cluster accuracies
    and ledger, the defection-free report of :func:`collabecon.cli.defection_free.render`, or
    a row per split algorithm (mean accuracy, last test and train loss, seconds); then each
    run's ε under DP-SGD with its accounting, its processes, security and seconds, and the
    output folder.
    """
    if result["action"] == "prepare":
        return _prepare_text(result)
    if result.get("status") == "failed":
        return f"deployment failed: {result['failed']}\nlogs in {result['out']}"
    runs = result["runs"]
    if result["mechanism"] == "ipfl":
        lines = [_ipfl_text(r) for r in runs]
    elif result["mechanism"] == "defection-free":
        from collabecon.cli import defection_free

        lines = [defection_free.render(r["runs"]["defection-free"]) for r in runs]
    else:
        head = [
            "algorithm",
            "clients",
            "rounds",
            "mean accuracy",
            "test loss",
            "train loss",
            "seconds",
        ]
        lines = [table([_algorithm_row(r) for r in runs], head)]
    for r in runs:
        if r.get("epsilon") is not None:
            from econ.privacy.accountants import accounting_text

            eps = ", ".join(fmt(e, 3) for e in r["epsilon"])
            delta = r["config"]["dp_delta"]
            lines.append(
                f"{r['config']['algorithm']} with DP-SGD: epsilon at delta {delta:g}: {eps} "
                f"({accounting_text(r['accounting'])})"
            )
        if "processes" in r:
            security = {"insecure": "no TLS, no SuperNode authentication"}.get(
                r["security"], "TLS and SuperNode authentication"
            )
            lines.append(
                f"{r['processes']} processes on 127.0.0.1 ({security}), "
                f"{fmt(r['deployment_seconds'], 4)} s of deployment"
            )
        elif result["mechanism"]:
            lines.append(f"the rounds took {fmt(r['seconds'], 4)} s")
    return "\n".join([*lines, f"results in {result['out']}"])
