r"""Monotone fits of measured curves: isotonic regression, then a shape-preserving interpolant.

Per client, the measured means are first made monotone by isotonic regression
(pool-adjacent-violators), then joined by the shape-preserving piecewise cubic Hermite
interpolant (Fritsch & Carlson 1980; :class:`scipy.interpolate.PchipInterpolator`), which stays
monotone between monotone data. :class:`econ.privacy.empirical.Empirical` fits its measured
(noise, ε, error) curves this way.
"""

from __future__ import annotations

import numpy as np
from numpy.typing import ArrayLike, NDArray
from scipy.interpolate import PchipInterpolator

Array = NDArray[np.float64]


def isotonic(values: ArrayLike, increasing: bool = True) -> Array:
    """Least-squares monotone fit of a sequence (pool-adjacent-violators, equal weights).

    Parameters
    ----------
    values
        One value per point, in the order of the points.
    increasing
        Fit a non-decreasing sequence (else non-increasing).

    References
    ----------
    Ayer et al. (1955), pool-adjacent-violators algorithm; used for the monotone measured curves
    of Tsoy et al. (AISTATS 2024), §7.
    """
    y = np.asarray(values, dtype=np.float64)
    if not increasing:
        return -isotonic(-y, True)
    blocks: list[list[float]] = []  # [mean, count]
    for v in y:
        blocks.append([float(v), 1.0])
        while len(blocks) > 1 and blocks[-2][0] > blocks[-1][0]:
            m2, c2 = blocks.pop()
            m1, c1 = blocks[-1]
            blocks[-1] = [(m1 * c1 + m2 * c2) / (c1 + c2), c1 + c2]
    return np.concatenate([np.full(int(c), m) for m, c in blocks])


def monotone_interpolants(x: Array, values: Array, increasing: bool) -> list[PchipInterpolator]:
    """One monotone interpolant per column of ``values`` (one row per point of ``x``).

    Each is the column's :func:`isotonic` fit joined by PCHIP.

    References
    ----------
    Fritsch & Carlson (1980), monotone piecewise cubic interpolation; used for the measured
    curves of Tsoy et al. (AISTATS 2024), §7.
    """
    return [
        PchipInterpolator(x, isotonic(values[:, i], increasing)) for i in range(values.shape[1])
    ]
