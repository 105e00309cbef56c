"""Outputs a user takes as they are: JSON-ready data, Python scalars, pandas tables.

:func:`plain` is the one conversion of a result to JSON-ready data (``to_dict`` of every
result, ``collabecon --json``): numpy arrays become lists, numpy and sympy numbers become
``int``/``float``/``bool`` (a symbolic expression its string), tuples lists, and NaN or
infinite floats ``None``, so ``json.dumps(..., allow_nan=False)`` always succeeds.

:func:`scalar_or_array` gives a Python ``float`` where the inputs were scalars and keeps the
array otherwise; :func:`frame` builds a pandas DataFrame, pandas being optional.
:func:`write_atomically` writes a file so that a reader, or a run resumed after a kill, sees
the old file or the whole new one, never a part.
"""

from __future__ import annotations

import dataclasses
import json
import math
import numbers
import os
import uuid
from collections.abc import Mapping
from pathlib import Path
from typing import Any

import numpy as np

__all__ = [
    "fields_frame",
    "frame",
    "plain",
    "plain_fields",
    "scalar_or_array",
    "write_atomically",
]


def _number(value: Any) -> Any:
    if isinstance(value, float) and not math.isfinite(value):
        return None
    return value


def _key(key: Any) -> str:
    """A mapping key as JSON writes it (``1`` -> ``"1"``, ``True`` -> ``"true"``)."""
    return key if isinstance(key, str) else json.dumps(plain(key))


def plain(value: Any) -> Any:
    """``value`` as JSON-ready data: dicts, lists, str, bool, int, finite float or None.

    Objects with a ``to_dict`` method are converted through it; mappings keep their keys
    (as strings, as JSON writes them); sequences and arrays become lists; numpy and sympy
    numbers and fractions become Python numbers (a sympy expression with free symbols its
    string); non-finite floats become ``None``.

    Raises
    ------
    TypeError
        For a value with no JSON form (a function, a tensor, an arbitrary object).
    """
    if value is None or isinstance(value, (bool, str)):
        return value
    if isinstance(value, int):
        return int(value)
    if isinstance(value, float):
        return _number(float(value))
    if isinstance(value, np.generic):
        return plain(value.item())
    if isinstance(value, np.ndarray):
        return plain(value.tolist())
    if isinstance(value, Mapping):
        return {_key(k): plain(v) for k, v in value.items()}
    if isinstance(value, (list, tuple, set, frozenset)):
        return [plain(v) for v in value]
    if hasattr(value, "to_dict"):
        return plain(value.to_dict())
    if isinstance(value, numbers.Integral):
        return int(value)
    if isinstance(value, numbers.Real):  # fractions.Fraction, ...
        return _number(float(value))
    if type(value).__module__.startswith("sympy"):
        return _sympy(value)
    raise TypeError(f"not JSON serialisable: {type(value).__name__}")


def _sympy(value: Any) -> Any:
    if getattr(value, "is_Boolean", False) and value in (True, False):
        return bool(value)
    if getattr(value, "is_Integer", False):
        return int(value)
    if getattr(value, "is_number", False):
        try:
            return _number(float(value))
        except TypeError:  # a complex number
            return str(value)
    return str(value)


def scalar_or_array(value: Any, *inputs: Any) -> Any:
    """``value`` as a Python ``float`` (``bool`` for booleans) when every input is a scalar.

    With no ``inputs`` the shape of ``value`` decides: a 0-d array is a scalar. Arrays in,
    arrays out: any input with a dimension keeps ``value`` as an array.
    """
    arr = np.asarray(value)
    scalar = all(np.ndim(x) == 0 for x in inputs) if inputs else True
    if arr.ndim != 0 or not scalar:
        return value
    if arr.dtype == np.bool_:
        return bool(arr)
    return float(arr)


def frame(records: list[dict[str, Any]] | Mapping[str, Any], what: str) -> Any:
    """A pandas DataFrame of ``records`` (a list of rows, or columns by name).

    Raises
    ------
    ValueError
        When pandas is not installed, naming ``pip install pandas``; ``what`` names the
        result in the message.
    """
    try:
        import pandas as pd
    except ImportError as exc:
        raise ValueError(
            f"{what}.to_frame() needs pandas, which is not installed: pip install pandas"
        ) from exc
    return pd.DataFrame(records)


def plain_fields(record: Any) -> dict[str, Any]:
    """JSON-ready ``{name: plain(value)}`` over the fields of the dataclass ``record``."""
    return {f.name: plain(getattr(record, f.name)) for f in dataclasses.fields(record)}


def fields_frame(record: Any, what: str) -> Any:
    """:func:`frame` of the dataclass ``record``: one column per field, each flattened."""
    return frame(
        {f.name: np.ravel(getattr(record, f.name)) for f in dataclasses.fields(record)}, what
    )


def write_atomically(path: str | os.PathLike[str], text: str) -> None:
    """Write ``text`` to a new file beside ``path`` and rename it onto ``path``.

    The temporary file is flushed to disk before :func:`os.replace`, which replaces ``path``
    in one step; it is removed again if the write fails or is interrupted.
    """
    path = Path(path)
    tmp = path.with_name(f".{path.name}.{os.getpid()}.{uuid.uuid4().hex[:8]}.tmp")
    try:
        with tmp.open("x") as fh:
            fh.write(text)
            fh.flush()
            os.fsync(fh.fileno())
        os.replace(tmp, path)
    except BaseException:
        tmp.unlink(missing_ok=True)
        raise
