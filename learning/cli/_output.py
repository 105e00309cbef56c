"""Output helpers of the command line: JSON encoding and plain-text tables."""

from __future__ import annotations

import json
import math
from collections.abc import Mapping, Sequence
from typing import Any

import numpy as np


def _jsonable(value: Any) -> Any:
    if isinstance(value, np.generic):
        return value.item()
    if isinstance(value, np.ndarray):
        return value.tolist()
    if hasattr(value, "to_dict"):
        return value.to_dict()
    raise TypeError(f"not JSON serialisable: {type(value).__name__}")


def _finite(value: Any) -> Any:
    """Replace non-finite floats by None so that the output is strict JSON."""
    if isinstance(value, float) and not math.isfinite(value):
        return None
    if isinstance(value, dict):
        return {k: _finite(v) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [_finite(v) for v in value]
    return value


def dump_json(result: Mapping[str, Any]) -> str:
    """One strict JSON object (numpy scalars and arrays converted, NaN/inf as null)."""
    plain = json.loads(json.dumps(result, default=_jsonable))
    return json.dumps(_finite(plain), allow_nan=False)


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
