"""The ``collabecon`` command line.

Every subcommand is a module in this package with two functions:

``add_arguments(parser)``
    declare its flags on an ``argparse`` parser (``--json`` is added here, for all);
``run(args) -> dict``
    do the work and return one JSON-ready object.

and optionally ``render(result) -> str`` (the human table; a key/value table otherwise) and
``exit_status(result) -> int``, and ``outputs(args)``, the ``(flag, directory)`` pairs the
run writes into (its ``--out`` and ``--checkpoint`` otherwise): each is locked for the run,
so that a second run into a directory in use is refused (:mod:`collabecon.cli._lock`).
A command that trains declares ``--threads N``
(:func:`collabecon.cli._checks.threads_argument`): torch's CPU threads are set to it, by
default to ``OMP_NUM_THREADS`` when set, else the physical cores this process may use
(:func:`learning.threads.default_threads`),
once before the command's work starts and back to their count after it
(:func:`learning.threads.use_threads`). Only the module of the chosen subcommand is imported, so
``collabecon verify`` never imports torch. Bad input (``ValueError``) becomes a one-line
message and exit code 2. ``collabecon --version`` prints the installed distribution's version
(``collabecon X.Y.Z``, the version of ``pyproject.toml``). A result that holds a NaN is
never printed: the command names the field and exits with code 1 (a quantity that has no
value is ``None`` beside a field that says why).

Progress and diagnostics are log records of the ``collabecon`` logger (:mod:`econ._log`),
which ``main`` writes on stderr for the length of the command (:mod:`collabecon.cli._log`),
at a level set by two global flags accepted anywhere on the line, before or after the
subcommand (``collabecon --quiet train ...``): ``--quiet`` keeps warnings and errors only
(no phase lines, no bars), ``--verbose`` adds debug records, each line led by its time and
level. ``--json`` alone is as quiet as ``--quiet``; with ``--verbose`` stderr carries the
debug records as well, while stdout still holds nothing but the JSON object. Errors are
not log records: each is one line on stderr, ``collabecon NAME: error: ...``, whatever the
flags.
"""

from __future__ import annotations

import argparse
import importlib
import os
import re
import sys
import warnings
from collections.abc import Callable, Sequence
from importlib.metadata import version
from types import ModuleType
from typing import NoReturn, TextIO

from collabecon.cli._lock import holding
from collabecon.cli._log import configured, level_of
from collabecon.cli._output import dump_json, first_nan, key_value_table
from econ._log import get_logger
from econ.plugins import PluginWarning

_log = get_logger(__name__)

#: the global flags: flag -> help
GLOBAL_FLAGS = {
    "--quiet": "log warnings and errors only: no progress lines, no bars",
    "--verbose": "log debug records too, each line led by its time and level",
}

#: name -> (module, one-line help). One line per subcommand; modules are imported lazily.
COMMANDS: dict[str, tuple[str, str]] = {
    "verify": ("collabecon.cli.verify", "check every registered proposition of the source papers"),
    "table1": (
        "collabecon.cli.table1",
        "Table 1 of the clustering paper: rotation and private-label tasks",
    ),
    "defection-free": (
        "collabecon.cli.defection_free",
        "defection-free collaboration between two firms on real trained models",
    ),
    "market": ("collabecon.cli.market", "the market that a set of model qualities creates"),
    "demo": (
        "collabecon.cli.demo",
        "end-to-end demo: train two firms, run the schemes, report the market",
    ),
    "cobo": (
        "collabecon.cli.cobo",
        "CoBo: collaboration weights by bilevel optimisation, against the baselines",
    ),
    "ipfl": ("collabecon.cli.ipfl", "IP-FL: incentivised personalised FL with a token economy"),
    "train": ("collabecon.cli.train", "train clients with a federated algorithm on real data"),
    "flower": (
        "collabecon.cli.flower",
        "algorithms and mechanisms as Flower federations: simulation, deployment, partitions",
    ),
    "sweep": ("collabecon.cli.sweep", "grid of runs over seeds and parameters (local pool or Ray)"),
    "bench": (
        "collabecon.cli.bench",
        "performance benchmarks against straightforward baselines (bench --help lists them)",
    ),
    "privacy": (
        "collabecon.cli.privacy",
        "privacy-accuracy utilities: existence and optimal protocols, DP accounting, "
        "measured curves",
    ),
    "pricing": (
        "collabecon.cli.pricing",
        "price-discrimination game: equilibrium, repeated play, figures",
    ),
    "duopoly": ("collabecon.cli.duopoly", "Bertrand duopoly equilibrium for two model qualities"),
    "bargain": (
        "collabecon.cli.bargain",
        "Nash bargaining solution of the duopoly, or of n firms (--firms)",
    ),
    "reproduce": (
        "collabecon.cli.reproduce",
        "run every reproduction and write one report of the papers' claims, held or not",
    ),
}


class _Parser(argparse.ArgumentParser):
    """An argument parser whose errors are one line on stderr and exit code 2 (no usage block)."""

    def error(self, message: str) -> NoReturn:
        self.exit(2, f"{self.prog}: error: {_one_line(message)}\n")


def _top_parser() -> argparse.ArgumentParser:
    lines = "\n".join(f"  {name:<16}{help_}" for name, (_, help_) in COMMANDS.items())
    parser = _Parser(
        prog="collabecon",
        description="The economics of collaborative learning.",
        epilog=f"subcommands:\n{lines}\n\nRun `collabecon SUBCOMMAND --help` for its flags.",
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    parser.add_argument("--version", action="store_true", help="print the version and exit")
    _global_flags(parser)
    return parser


def _global_flags(parser: argparse.ArgumentParser) -> None:
    """List the global flags in ``parser``'s help (``main`` takes them off the line itself)."""
    group = parser.add_argument_group("logging (anywhere on the line)")
    for flag, help_ in GLOBAL_FLAGS.items():
        group.add_argument(flag, action="store_true", help=help_)


def _take_global_flags(argv: list[str]) -> tuple[list[str], dict[str, bool]]:
    """``argv`` without the global flags, and which were given (``{"quiet": True, ...}``).

    They are taken wherever they stand before a ``--`` that ends the options, so that
    ``collabecon --quiet train ...``, ``collabecon train --quiet ...`` and
    ``collabecon flower simulate ipfl ... --quiet`` mean the same.
    """
    end = argv.index("--") if "--" in argv else len(argv)
    given = {flag.lstrip("-"): flag in argv[:end] for flag in GLOBAL_FLAGS}
    rest = [a for a in argv[:end] if a not in GLOBAL_FLAGS] + argv[end:]
    return rest, given


def _load(name: str) -> ModuleType:
    module_name, _ = COMMANDS[name]
    return importlib.import_module(module_name)


def _flags_of(parser: argparse.ArgumentParser) -> dict[str, str]:
    """Keyword -> flag for every option of ``parser`` and its subcommands (``lr`` -> ``--lr``)."""
    flags: dict[str, str] = {}
    for action in parser._actions:
        if isinstance(action, argparse._SubParsersAction):
            for sub in action.choices.values():
                flags.update(_flags_of(sub))
        elif action.option_strings and action.dest not in ("help", "json", *_GLOBAL_DESTS):
            flags.setdefault(action.dest, action.option_strings[-1])
    return flags


_GLOBAL_DESTS = tuple(flag.lstrip("-") for flag in GLOBAL_FLAGS)


def _flag_names(message: str, parser: argparse.ArgumentParser, keywords: dict[str, str]) -> str:
    """Name the command-line flag where a library message names its Python keyword.

    A plain-word keyword (``rounds``) is replaced where a message states a condition on it:
    at the start (``rounds must be ...``), before ``=`` (``clusters=5``) or before ``must``.
    A keyword with an underscore (``dataset_size``) is no English word and is replaced
    wherever it stands, as are the entries of a module's ``KEYWORDS``: library keywords that
    differ from the flag's own (``q_l`` for ``--ql``, ``order=True`` for ``--order``).
    """
    for literal, flag in keywords.items():
        if not literal.isidentifier():
            message = message.replace(literal, flag)
    named = {k: v for k, v in keywords.items() if k.isidentifier()}
    flags = {**_flags_of(parser), **named}
    for keyword, flag in sorted(flags.items(), key=lambda kv: -len(kv[0])):
        word = re.escape(keyword)
        if "_" in keyword or keyword in named:
            pattern = rf"(?<![\w-]){word}(?![\w-])"
        else:
            pattern = rf"(?<![\w-]){word}(?=(=| must\b))|^{word}(?=\s)"
        message = re.sub(pattern, flag, message)
    return re.sub(r"(--[\w-]+)=True\b", r"\1", message)  # a switch is given, not set to True


def _outputs(module: ModuleType, args: argparse.Namespace) -> list[tuple[str, object]]:
    """The output directories a run writes into: ``module.outputs(args)``, else its flags.

    Without an ``outputs`` function of its own a subcommand writes into the directories
    of its ``--out`` and ``--checkpoint`` flags, where given.
    """
    own = getattr(module, "outputs", None)
    if own is not None:
        return list(own(args))
    return [(f"--{d}", getattr(args, d, None)) for d in ("out", "checkpoint")]


def _thread_count(args: argparse.Namespace) -> int | None:
    """The checked ``--threads`` of a command that declares it, else None.

    A mechanism's flags (``collabecon flower simulate ipfl ...``) are in ``args.settings``.
    """
    settings = getattr(args, "settings", None)
    flags = settings if isinstance(settings, argparse.Namespace) else args
    if not hasattr(flags, "threads"):
        return None
    from collabecon.cli._checks import threads_flag

    return threads_flag(flags.threads)


def _one_line(message: str) -> str:
    """``message`` on one line: a line break inside it (a path's) is shown escaped."""
    return message.replace("\r", "\\r").replace("\n", "\\n")


def _show_plugin_warning(show: Callable[..., None]) -> Callable[..., None]:
    """``warnings.showwarning`` that prints a :class:`econ.plugins.PluginWarning` as one line.

    ``collabecon: warning: ...`` on stderr, whatever the logging flags (the registries are
    first consulted while the flags are declared, before the command's log is configured);
    any other warning goes to ``show``.
    """

    def shown(
        message: Warning | str,
        category: type[Warning],
        filename: str,
        lineno: int,
        file: TextIO | None = None,
        line: str | None = None,
    ) -> None:
        if issubclass(category, PluginWarning):
            print(f"collabecon: warning: {_one_line(str(message))}", file=sys.stderr)
        else:
            show(message, category, filename, lineno, file, line)

    return shown


def main(argv: Sequence[str] | None = None) -> int:
    """Entry point of the ``collabecon`` console script.

    Exit codes: 0 done, 1 a check disagrees (``verify``) or a claim fails, 2 bad input (one
    line on stderr naming what is wrong), 130 interrupted (Ctrl-C, one line), 141 the reader
    of stdout went away (``collabecon ... | head``; nothing more is printed). An installed
    plugin that is not registered (:mod:`econ.plugins`) is one line
    ``collabecon: warning: ...`` on stderr.
    """
    try:
        with warnings.catch_warnings():
            warnings.showwarning = _show_plugin_warning(warnings.showwarning)
            return _main(argv)
    except KeyboardInterrupt:
        print("collabecon: interrupted", file=sys.stderr)
        return 130
    except BrokenPipeError:
        # the reader closed the pipe: stop quietly, and keep Python's exit-time flush of
        # stdout from failing again
        os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())
        return 141


def _main(argv: Sequence[str] | None) -> int:
    argv, given = _take_global_flags(list(sys.argv[1:] if argv is None else argv))
    top = _top_parser()
    if not argv or argv[0] in ("-h", "--help"):
        top.print_help()
        return 0
    if argv[0] == "--version":
        if len(argv) > 1:
            top.error(f"--version takes no other arguments, got {argv[1]!r}")
        print(f"collabecon {version('collabecon')}")
        return 0
    name = argv[0]
    if name not in COMMANDS:
        top.error(f"unknown subcommand {name!r}; choose from {', '.join(COMMANDS)}")
    module = _load(name)
    parser = _Parser(prog=f"collabecon {name}", description=COMMANDS[name][1])
    parser.add_argument("--json", action="store_true", help="print one JSON object on stdout")
    module.add_arguments(parser)
    _global_flags(parser)
    parser.set_defaults(**given)
    args = parser.parse_args(argv[1:])
    try:
        level = level_of(**given, json=bool(getattr(args, "json", False)))
    except ValueError as exc:
        parser.error(str(exc))
    with configured(name, level):
        _log.debug("arguments: %s", vars(args))
        return _run(name, module, parser, args)


def _run(
    name: str, module: ModuleType, parser: argparse.ArgumentParser, args: argparse.Namespace
) -> int:
    """Run subcommand ``name`` with ``args`` and print its result; the exit code."""
    try:
        with holding(_outputs(module, args)):
            threads = _thread_count(args)
            if threads is None:
                result = module.run(args)
            else:
                from learning.threads import use_threads

                previous = use_threads(threads)
                _log.debug("torch CPU threads: %d (were %d)", threads, previous)
                try:
                    result = module.run(args)
                finally:
                    use_threads(previous)
    except ValueError as exc:
        message = _flag_names(str(exc), parser, getattr(module, "KEYWORDS", {}))
        print(f"collabecon {name}: error: {_one_line(message)}", file=sys.stderr)
        return 2
    except OSError as exc:  # a path missing, unreadable, too long, ...: the system's reason
        where = "" if exc.filename is None else f": {_one_line(str(exc.filename))}"
        print(f"collabecon {name}: error: {exc.strerror or exc}{where}", file=sys.stderr)
        return 2
    hole = first_nan(result)
    if hole is not None:
        print(
            f"collabecon {name}: error: the result holds no number at {hole} (NaN): "
            "the computation failed there",
            file=sys.stderr,
        )
        return 1
    if args.json:
        print(dump_json(result))
    else:
        render = getattr(module, "render", key_value_table)
        print(render(result))
    exit_status = getattr(module, "exit_status", None)
    return int(exit_status(result)) if exit_status else 0


if __name__ == "__main__":  # pragma: no cover
    sys.exit(main())
