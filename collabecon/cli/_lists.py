"""List flags of the command line: one convention on every subcommand.

A list flag takes its items as separate words or comma-separated, or both:
``--lam 0.5 1 2``, ``--lam 0.5,1,2`` and ``--lam 0.5,1 2`` are the same list. A word with a
space inside (``--lam "0.5 1 2"``), an empty item (``0.5,,1``), anything that is not a
finite number (for a list of numbers), a repeated name (where names must be distinct) or a
wrong count (where the flag takes a fixed number of items) is an error naming the flag,
never a silently different list. A list whose first item is negative joins its flag with
``=`` when written with commas (``--bias=-1,-0.9``): argparse reads a word that starts with
``-`` and is not a single number as a flag.
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
                f"{flag}: {word!r} holds a space; give the items as separate words or comma-separated",
            )
        parts = word.strip().split(",")
        if any(not p for p in parts):
            raise argparse.ArgumentError(None, f"{flag}: {word!r} has an empty item")
        items += parts
    return items


class _List(argparse.Action):
    """Parse the words of a list flag into items of ``kind``."""

    kind: type = str
    count: int | None = None
    distinct: bool = False

    def __call__(
        self,
        parser: argparse.ArgumentParser,
        namespace: argparse.Namespace,
        values: Any,
        option_string: str | None = None,
    ) -> None:
        flag = option_string or self.dest
        out = [self._item(parser, flag, item) for item in _split(flag, values)]
        if self.count is not None and len(out) != self.count:
            parser.error(f"{flag}: takes {self.count} items, got {len(out)}: {out}")
        if self.distinct:
            repeated = sorted({x for x in out if out.count(x) > 1})
            if repeated:
                parser.error(f"{flag}: items must be distinct, repeated: {', '.join(repeated)}")
        setattr(namespace, self.dest, out)

    def _item(self, parser: argparse.ArgumentParser, flag: str, item: str) -> Any:
        if self.kind is str:
            return item
        try:
            value = self.kind(item)
        except ValueError:
            parser.error(
                f"{flag}: {item!r} is not {'an integer' if self.kind is int else 'a number'}"
            )
        if not math.isfinite(value):
            parser.error(f"{flag}: {item!r} is not a finite number")
        return value


def _declare(
    parser: Any, flag: str, kind: type, item: str, count: int | None, distinct: bool, **kwargs: Any
) -> None:
    action = type("_ListAction", (_List,), {"kind": kind, "count": count, "distinct": distinct})
    kwargs.setdefault("metavar", item)
    parser.add_argument(flag, nargs="+", action=action, **kwargs)


def float_list(
    parser: argparse.ArgumentParser | Any, flag: str, *, count: int | None = None, **kwargs: Any
) -> None:
    """Declare ``flag`` as a list of numbers (words and/or comma-separated).

    ``count`` fixes how many.
    """
    _declare(parser, flag, float, "X", count, False, **kwargs)


def int_list(
    parser: argparse.ArgumentParser | Any, flag: str, *, count: int | None = None, **kwargs: Any
) -> None:
    """Declare ``flag`` as a list of integers (words and/or comma-separated).

    ``count`` fixes how many.
    """
    _declare(parser, flag, int, "N", count, False, **kwargs)


def str_list(
    parser: argparse.ArgumentParser | Any,
    flag: str,
    *,
    distinct: bool = False,
    **kwargs: Any,
) -> None:
    """Declare ``flag`` as a list of words (words and/or comma-separated).

    ``distinct`` rejects a repeated item.
    """
    _declare(parser, flag, str, "NAME", None, distinct, **kwargs)
