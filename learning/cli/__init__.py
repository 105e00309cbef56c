"""The ``collabecon`` command line.

Every subcommand is a module in this package with two functions:

``add_arguments(parser)``
    declare its flags on an ``argparse`` parser (``--json`` is added here, for all);
``run(args) -> dict``
    do the work and return one JSON-ready object.

and optionally ``render(result) -> str`` (the human table; a key/value table otherwise) and
``exit_status(result) -> int``. Only the module of the chosen subcommand is imported, so
``collabecon verify`` never imports torch. Bad input (``ValueError``) becomes a one-line
message and exit code 2.
"""

from __future__ import annotations

import argparse
import importlib
import os
import sys
from collections.abc import Sequence
from types import ModuleType
from typing import NoReturn

from learning.cli._output import dump_json, key_value_table

#: name -> (module, one-line help). One line per subcommand; modules are imported lazily.
COMMANDS: dict[str, tuple[str, str]] = {
    "verify": ("learning.cli.verify", "check every registered proposition of the source papers"),
    "table1": (
        "learning.cli.table1",
        "Table 1 of the clustering paper: rotation and private-label tasks",
    ),
    "defection-free": (
        "learning.cli.defection_free",
        "defection-free collaboration between two firms on real trained models",
    ),
    "market": ("learning.cli.market", "the market that a set of model qualities creates"),
    "demo": (
        "learning.cli.demo",
        "end-to-end demo: train two firms, run the schemes, report the market",
    ),
    "cobo": (
        "learning.cli.cobo",
        "CoBo: collaboration weights by bilevel optimisation, against the baselines",
    ),
    "ipfl": ("learning.cli.ipfl", "IP-FL: incentivised personalised FL with a token economy"),
    "train": ("learning.cli.train", "train clients with a federated algorithm on real data"),
    "sweep": ("learning.cli.sweep", "grid of runs over seeds and parameters (local pool or Ray)"),
    "bench": (
        "learning.cli.bench",
        "performance benchmarks: batched engine vs the per-client loop",
    ),
    "privacy": (
        "learning.cli.privacy",
        "privacy-accuracy utilities: existence and optimal protocols, DP accounting, "
        "measured curves",
    ),
    "pd": ("learning.cli.pd", "price-discrimination game: equilibrium, repeated play, figures"),
    "duopoly": ("learning.cli.duopoly", "Bertrand duopoly equilibrium for two model qualities"),
    "bargain": ("learning.cli.bargain", "Nash bargaining solution of the duopoly"),
}


class _Parser(argparse.ArgumentParser):
    """An argument parser whose errors are one line on stderr and exit code 2 (no usage block)."""

    def error(self, message: str) -> NoReturn:
        self.exit(2, f"{self.prog}: error: {message}\n")


def _top_parser() -> argparse.ArgumentParser:
    lines = "\n".join(f"  {name:<16}{help_}" for name, (_, help_) in COMMANDS.items())
    return _Parser(
        prog="collabecon",
        description="The economics of collaborative learning.",
        epilog=f"subcommands:\n{lines}\n\nRun `collabecon SUBCOMMAND --help` for its flags.",
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )


def _load(name: str) -> ModuleType:
    module_name, _ = COMMANDS[name]
    return importlib.import_module(module_name)


def main(argv: Sequence[str] | None = None) -> int:
    """Entry point of the ``collabecon`` console script.

    Exit codes: 0 done, 1 a check disagrees (``verify``) or a claim fails, 2 bad input (one
    line on stderr naming what is wrong), 130 interrupted (Ctrl-C, one line), 141 the reader
    of stdout went away (``collabecon ... | head``; nothing more is printed).
    """
    try:
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
    argv = list(sys.argv[1:] if argv is None else argv)
    top = _top_parser()
    if not argv or argv[0] in ("-h", "--help"):
        top.print_help()
        return 0
    name = argv[0]
    if name not in COMMANDS:
        top.error(f"unknown subcommand {name!r}; choose from {', '.join(COMMANDS)}")
    module = _load(name)
    parser = _Parser(prog=f"collabecon {name}", description=COMMANDS[name][1])
    parser.add_argument("--json", action="store_true", help="print one JSON object on stdout")
    module.add_arguments(parser)
    args = parser.parse_args(argv[1:])
    try:
        result = module.run(args)
    except ValueError as exc:
        print(f"collabecon {name}: error: {exc}", file=sys.stderr)
        return 2
    except (FileNotFoundError, PermissionError, IsADirectoryError, NotADirectoryError) as exc:
        print(f"collabecon {name}: error: {exc.strerror}: {exc.filename}", file=sys.stderr)
        return 2
    if args.json:
        print(dump_json(result))
    else:
        render = getattr(module, "render", key_value_table)
        print(render(result))
    exit_status = getattr(module, "exit_status", None)
    return int(exit_status(result)) if exit_status else 0


if __name__ == "__main__":  # pragma: no cover
    sys.exit(main())
