"""JSON-ready values for the ``to_dict`` methods of :mod:`econ.privacy`.

Arrays become nested lists of Python floats, numpy scalars Python scalars, and NaN or
infinite floats ``None`` (strict JSON has no NaN or Infinity).
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from typing import Any

import numpy as np


def plain(value: Any) -> Any:
    """``value`` with every array, numpy scalar and non-finite float made JSON-ready."""
    if isinstance(value, np.ndarray):
        return plain(value.tolist())
    if isinstance(value, (bool, np.bool_)):
        return bool(value)
    if isinstance(value, (int, np.integer)):
        return int(value)
    if isinstance(value, (float, np.floating)):
        f = float(value)
        return f if math.isfinite(f) else None
    if isinstance(value, Mapping):
        return {str(k): plain(v) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [plain(v) for v in value]
    return value
