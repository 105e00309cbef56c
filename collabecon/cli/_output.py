"""Output helpers of the command line: JSON encoding and plain-text tables."""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from typing import Any

import numpy as np

from econ.outputs import plain


def dump_json(result: Mapping[str, Any]) -> str:
    """One strict JSON object.

    Values pass through :func:`econ.outputs.plain`: numpy and sympy numbers and arrays are
    converted, NaN/inf become null.
    """
    return json.dumps(plain(result), allow_nan=False)


def first_nan(value: Any, where: str = "result") -> str | None:
    """The path (``result.rows[3].price``) of the first NaN in ``value``, or None.

    Mappings, sequences, arrays and numbers are searched; infinities are not NaN (an
    epsilon of a mechanism without noise is infinite).
    """
    if isinstance(value, (float, np.floating)):
        return where if np.isnan(value) else None
    if isinstance(value, np.ndarray):
        if value.dtype.kind in "fc" and np.isnan(value).any():
            index = np.argwhere(np.isnan(value))[0]
            return f"{where}[{', '.join(str(int(i)) for i in index)}]"
        if value.dtype.kind != "O":
            return None
        value = value.tolist()
    if isinstance(value, Mapping):
        for key, item in value.items():
            found = first_nan(item, f"{where}.{key}")
            if found is not None:
                return found
    elif isinstance(value, (list, tuple)):
        for i, item in enumerate(value):
            found = first_nan(item, f"{where}[{i}]")
            if found is not None:
                return found
    return None


def fmt(value: Any, digits: int = 6) -> str:
    """A number in a table: ``digits`` significant figures; everything else as ``str``."""
    if isinstance(value, (bool, np.bool_)):
        return str(bool(value))
    if isinstance(value, (float, np.floating)):
        return f"{float(value):.{digits}g}"
    if isinstance(value, np.ndarray):
        return ", ".join(fmt(v, digits) for v in value.ravel())
    if isinstance(value, (list, tuple)):
        return ", ".join(fmt(v, digits) for v in value)
    return str(value)


def table(rows: Sequence[Sequence[Any]], header: Sequence[str]) -> str:
    """A left-aligned plain-text table."""
    cells = [[fmt(c) for c in row] for row in rows]
    widths = [max(len(h), *(len(r[i]) for r in cells)) for i, h in enumerate(header)]
    line = "  ".join("-" * w for w in widths)
    out = ["  ".join(h.ljust(w) for h, w in zip(header, widths, strict=True)), line]
    out += ["  ".join(c.ljust(w) for c, w in zip(r, widths, strict=True)) for r in cells]
    return "\n".join(out)


def key_value_table(result: Mapping[str, Any]) -> str:
    """The default human output: one line per key."""
    return table([(k, v) for k, v in result.items()], ("quantity", "value"))
