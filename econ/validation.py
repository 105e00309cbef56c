"""Input checks shared by every layer.

Each check raises :class:`ValueError` naming the parameter, the offending value and the
allowed range, before any work starts (``docs/conventions.md``).
"""

from __future__ import annotations

import json
import math
import os
from pathlib import Path
from typing import Any

import numpy as np
from numpy.typing import ArrayLike, NDArray


def _show(value: Any) -> str:
    arr = np.asarray(value)
    if arr.ndim == 0:
        return repr(arr.item())
    return np.array2string(arr, threshold=8, precision=6)


def as_finite(name: str, value: ArrayLike) -> NDArray[np.float64]:
    """Return ``value`` as a float array, or raise if any entry is NaN or infinite."""
    arr = np.asarray(value, dtype=np.float64)
    if not (math.isfinite(arr) if arr.ndim == 0 else np.isfinite(arr).all()):
        raise ValueError(f"{name} must be finite, got {_show(value)}")
    return arr


def in_interval(
    name: str,
    value: ArrayLike,
    low: float = -np.inf,
    high: float = np.inf,
    *,
    low_open: bool = False,
    high_open: bool = False,
) -> NDArray[np.float64]:
    """Return ``value`` as a finite float array after checking it lies in the interval.

    ``low_open`` / ``high_open`` make the corresponding end strict.
    """
    arr = as_finite(name, value)
    if arr.ndim == 0:  # one number: compared as a Python float, the same comparisons
        v = float(arr)
        if not ((v <= low if low_open else v < low) or (v >= high if high_open else v > high)):
            return arr
    too_low = arr <= low if low_open else arr < low
    too_high = arr >= high if high_open else arr > high
    if (too_low | too_high).any():
        left = "(" if low_open else "["
        right = ")" if high_open else "]"
        bad = arr[too_low | too_high] if arr.ndim else arr
        raise ValueError(f"{name} must lie in {left}{low:g}, {high:g}{right}, got {_show(bad)}")
    return arr


def unit_interval(name: str, value: ArrayLike) -> NDArray[np.float64]:
    """Check ``value`` in [0, 1]: qualities, probabilities, shares."""
    return in_interval(name, value, 0.0, 1.0)


def positive(name: str, value: ArrayLike) -> NDArray[np.float64]:
    """Check ``value > 0``."""
    return in_interval(name, value, 0.0, low_open=True)


def non_negative(name: str, value: ArrayLike) -> NDArray[np.float64]:
    """Check ``value >= 0``."""
    return in_interval(name, value, 0.0)


def positive_int(name: str, value: Any) -> int:
    """Check ``value`` is an integer >= 1 and return it as ``int``."""
    if isinstance(value, (bool, np.bool_)) or not isinstance(value, (int, np.integer)):
        raise ValueError(f"{name} must be an integer >= 1, got {value!r}")
    if value < 1:
        raise ValueError(f"{name} must be an integer >= 1, got {value!r}")
    return int(value)


def choice(name: str, value: str, allowed: tuple[str, ...] | list[str]) -> str:
    """Check ``value`` is one of ``allowed``."""
    if value not in allowed:
        raise ValueError(f"{name} must be one of {', '.join(map(repr, allowed))}; got {value!r}")
    return value


#: The deepest nesting of arrays and objects :func:`read_json` accepts (the toolkit's own
#: files nest a few levels).
JSON_MAX_DEPTH = 32
#: Bytes of parsed Python objects per byte of a text file, an upper estimate (a small number
#: in an object or a CSV row takes up to about this much once parsed), for the memory check
#: of a file before it is parsed.
PARSED_BYTES_PER_BYTE = 64


def file_fits_in_memory(path: str | os.PathLike[str], what: str = "file") -> None:
    """Refuse a text file whose parsed contents would not fit in memory, before reading it.

    Raises
    ------
    ValueError
        The file's size times :data:`PARSED_BYTES_PER_BYTE` exceeds the physical memory
        (:func:`fits_in_memory`), naming ``what`` and the path.
    """
    p = Path(path)
    fits_in_memory(
        f"the {what} {p} ({_size(p.stat().st_size)})", PARSED_BYTES_PER_BYTE * p.stat().st_size
    )


def _refuse_constant(name: str) -> Any:
    raise ValueError(f"{name} is no JSON number")


def _finite_float(text: str) -> float:
    value = float(text)
    if not np.isfinite(value):
        raise ValueError(f"the number {text} lies beyond the largest float")
    return value


def _unique_keys(pairs: list[tuple[str, Any]]) -> dict[str, Any]:
    out: dict[str, Any] = {}
    for key, value in pairs:
        if key in out:
            raise ValueError(f"an object names the key {key!r} twice")
        out[key] = value
    return out


def _depth(value: Any) -> int:
    """The nesting depth of a parsed JSON value (a scalar 0, ``[]`` 1), without recursion."""
    deepest, stack = 0, [(value, 0)]
    while stack:
        item, depth = stack.pop()
        if isinstance(item, (dict, list)):
            deepest = max(deepest, depth + 1)
            stack.extend(
                (v, depth + 1) for v in (item.values() if isinstance(item, dict) else item)
            )
    return deepest


def read_json(path: str | os.PathLike[str], what: str = "file") -> Any:
    """The JSON value in the file at ``path``, read strictly.

    Strict JSON (RFC 8259) in UTF-8 and nothing else: where Python's :func:`json.loads`
    keeps the last of a repeated key, reads ``NaN`` and ``Infinity`` and turns ``1e400`` into
    an infinite float, this refuses them.

    Raises
    ------
    ValueError
        One line naming ``what`` and the path: the file cannot be read, would not fit in
        memory once parsed (:func:`file_fits_in_memory`), is not UTF-8 or not JSON; an object
        names a key twice; it holds ``NaN``, ``Infinity``, ``-Infinity`` or a number beyond
        the largest float; its arrays and objects nest deeper than :data:`JSON_MAX_DEPTH`.
    """
    p = Path(path)
    try:
        file_fits_in_memory(p, what)
        text = p.read_bytes().decode("utf-8")
    except OSError as exc:
        raise ValueError(f"cannot read the {what} {p}: {exc}") from None
    except UnicodeDecodeError as exc:
        raise ValueError(f"the {what} {p} is not UTF-8 text: {exc}") from None

    try:
        value = json.loads(
            text,
            object_pairs_hook=_unique_keys,
            parse_constant=_refuse_constant,
            parse_float=_finite_float,
        )
    except RecursionError:
        raise ValueError(
            f"the {what} {p} nests arrays and objects deeper than {JSON_MAX_DEPTH} levels"
        ) from None
    except json.JSONDecodeError as exc:
        raise ValueError(f"{p} is not JSON: {exc}") from None
    except ValueError as exc:  # a hook's refusal, or an integer of too many digits
        raise ValueError(f"{p} is not strict JSON: {exc}") from None
    if _depth(value) > JSON_MAX_DEPTH:
        raise ValueError(
            f"the {what} {p} nests arrays and objects deeper than {JSON_MAX_DEPTH} levels"
        )
    return value


def fits_in_memory(what: str, nbytes: float) -> None:
    """Refuse work whose arrays need more memory than this machine has, before allocating.

    Parameters
    ----------
    what : str
        The sizes that ask for it (``"--consumers 100000000000"``, ``"n_consumers=..."``),
        for the message.
    nbytes : float
        Estimated bytes of the largest arrays the work allocates.

    Raises
    ------
    ValueError
        ``nbytes`` exceeds the physical memory, with both amounts.
    """
    total = _physical_memory()
    if total is not None and nbytes > total:
        raise ValueError(
            f"{what} needs about {_size(nbytes)} of memory, more than the {_size(total)} "
            "this machine has"
        )


def _physical_memory() -> int | None:
    import os

    try:
        return int(os.sysconf("SC_PAGE_SIZE")) * int(os.sysconf("SC_PHYS_PAGES"))
    except (AttributeError, OSError, ValueError):
        return None


def _size(nbytes: float) -> str:
    for unit in ("B", "KiB", "MiB", "GiB", "TiB", "PiB"):
        if nbytes < 1024 or unit == "PiB":
            return f"{nbytes:.3g} {unit}"
        nbytes /= 1024
    return f"{nbytes:.3g} PiB"  # pragma: no cover


def shown(value: ArrayLike) -> str:
    """``value`` for a message: one number where all its entries are equal, else a short list.

    Examples
    --------
    >>> shown([2.0, 2.0]), shown([1e308, 1.0])
    ('2', '[1.e+308,1.e+000]')
    """
    arr = np.asarray(value, dtype=np.float64)
    if arr.size and np.all(arr == arr.flat[0]):
        return f"{float(arr.flat[0]):g}"
    return np.array2string(arr, threshold=4, precision=4, separator=",")
