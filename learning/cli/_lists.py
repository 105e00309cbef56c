"""List flags of the command line: one convention on every subcommand.

A list flag takes its numbers as separate words or comma-separated, or both:
``--lam 0.5 1 2``, ``--lam 0.5,1,2`` and ``--lam 0.5,1 2`` are the same list. A word with a
space inside (``--lam "0.5 1 2"``), an empty item (``0.5,,1``) or anything that is not a
finite number is an error naming the flag, never a silently different list.
"""

from __future__ import annotations

import argparse
import math
from collections.abc import Sequence
from typing import Any


def _split(flag: str, words: Sequence[str]) -> list[str]:
    items: list[str] = []
    for word in words:
        if any(c.isspace() for c in word.strip()):
            raise argparse.ArgumentError(
                None,
                f"{flag}: {word!r} holds a space; give the numbers as separate words or comma-separated",
            )
        parts = word.strip().split(",")
        if any(not p for p in parts):
            raise argparse.ArgumentError(None, f"{flag}: {word!r} has an empty item")
        items += parts
    return items


class _NumberList(argparse.Action):
    kind: type = float

    def __call__(
        self,
        parser: argparse.ArgumentParser,
        namespace: argparse.Namespace,
        values: Any,
        option_string: str | None = None,
    ) -> None:
        flag = option_string or self.dest
        out = []
        for item in _split(flag, values):
            try:
                value = self.kind(item)
            except ValueError:
                parser.error(
                    f"{flag}: {item!r} is not {'an integer' if self.kind is int else 'a number'}"
                )
            if not math.isfinite(value):
                parser.error(f"{flag}: {item!r} is not a finite number")
            out.append(value)
        setattr(namespace, self.dest, out)


class _IntList(_NumberList):
    kind = int


def float_list(parser: argparse.ArgumentParser | Any, flag: str, **kwargs: Any) -> None:
    """Declare ``flag`` as a list of numbers (words and/or comma-separated)."""
    parser.add_argument(flag, nargs="+", action=_NumberList, metavar="X", **kwargs)


def int_list(parser: argparse.ArgumentParser | Any, flag: str, **kwargs: Any) -> None:
    """Declare ``flag`` as a list of integers (words and/or comma-separated)."""
    parser.add_argument(flag, nargs="+", action=_IntList, metavar="N", **kwargs)
