r"""Privacy constants κ of the two DP models (leak = κ/α) and the shuffling bound behind them.

DP mean estimation (Tsoy et al. 2024, section 4.1; Theorem A.1 with sensitivity B/n and
δ = 1/n²):

.. math:: \kappa = \frac{\sqrt{2\ln(1.25 n^2)}\,B}{n}.

DP SGD with m rounds of batch size b = n/m (Theorem 4.4; Feldman et al. 2022 Theorem 3.8 for
amplification by shuffling, loosened as in Appendix B.5):

.. math:: \kappa = \frac{16\sqrt{2e\ln(1.25 m n^2)\ln(4n^2)}\,B}{\sqrt{m}\,b}
          = \frac{16\sqrt{2e\ln(1.25 m n^2)\ln(4n^2)\,m}\,B}{n}.
"""

from __future__ import annotations

from typing import overload

import numpy as np
from numpy.typing import ArrayLike, NDArray

from econ.validation import in_interval, positive


def _shaped(out: ArrayLike, *inputs: ArrayLike) -> NDArray[np.float64] | float:
    """A Python float when every input is a scalar, else the array."""
    arr = np.asarray(out, dtype=np.float64)
    return float(arr) if all(np.ndim(x) == 0 for x in inputs) else arr


@overload
def kappa_mean(n: float, bound: float) -> float: ...
@overload
def kappa_mean(n: ArrayLike, bound: float) -> NDArray[np.float64]: ...
def kappa_mean(n: ArrayLike, bound: float) -> NDArray[np.float64] | float:
    r""":math:`\kappa = \sqrt{2\ln(1.25n^2)}\,B/n` (Tsoy et al. 2024, section 4.1); a float for scalars.

    References
    ----------
    N. Tsoy, A. Mihalkova et al., *Provable Mutual Benefits from Federated Learning in
    Privacy-Sensitive Domains*, AISTATS 2024, §4.1 and Theorem A.1.

    Examples
    --------
    >>> round(kappa_mean(100, 20.0), 4)  # sqrt(2 ln 12500) * 20 / 100
    0.8687
    """
    n_ = in_interval("n", n, 1.0)
    return _shaped(np.sqrt(2 * np.log(1.25 * n_**2)) * positive("bound", bound) / n_, n, bound)


@overload
def kappa_sgd(n: float, rounds: float, bound: float) -> float: ...
@overload
def kappa_sgd(n: ArrayLike, rounds: float, bound: float) -> NDArray[np.float64]: ...
def kappa_sgd(n: ArrayLike, rounds: float, bound: float) -> NDArray[np.float64] | float:
    r""":math:`\kappa = 16\sqrt{2e\ln(1.25mn^2)\ln(4n^2)\,m}\,B/n` (Theorem 4.4 with b = n/m); a float for scalars.

    References
    ----------
    N. Tsoy, A. Mihalkova et al., *Provable Mutual Benefits from Federated Learning in
    Privacy-Sensitive Domains*, AISTATS 2024, Theorem 4.4 and Appendix B.5.

    Examples
    --------
    >>> round(kappa_sgd(100, 10, 20.0), 4)
    263.1222
    """
    n_ = in_interval("n", n, 1.0)
    m = in_interval("rounds", rounds, 1.0)
    return _shaped(
        16
        * np.sqrt(2 * np.e * np.log(1.25 * m * n_**2) * np.log(4 * n_**2) * m)
        * positive("bound", bound)
        / n_,
        n,
        rounds,
        bound,
    )


@overload
def round_epsilon(n: float, rounds: float, bound: float, alpha: float) -> float: ...
@overload
def round_epsilon(
    n: ArrayLike, rounds: float, bound: float, alpha: ArrayLike
) -> NDArray[np.float64]: ...
def round_epsilon(
    n: ArrayLike, rounds: float, bound: float, alpha: ArrayLike
) -> NDArray[np.float64] | float:
    r"""Per-round local budget :math:`\varepsilon_0 = \sqrt{2\ln(1.25mn^2)}\,B/(b\alpha)`, b = n/m (a float for scalars).

    References
    ----------
    N. Tsoy, A. Mihalkova et al., *Provable Mutual Benefits from Federated Learning in
    Privacy-Sensitive Domains*, AISTATS 2024, Theorem 4.4 and Appendix B.5.

    Examples
    --------
    >>> round(round_epsilon(100, 10, 20.0, 1.0), 4)  # batches of b = 10
    9.6896
    """
    n_ = in_interval("n", n, 1.0)
    m = in_interval("rounds", rounds, 1.0)
    batch = n_ / m
    return _shaped(
        np.sqrt(2 * np.log(1.25 * m * n_**2))
        * positive("bound", bound)
        / (batch * positive("alpha", alpha)),
        n,
        rounds,
        bound,
        alpha,
    )


@overload
def shuffle_epsilon(eps0: float, rounds: float, delta: float) -> float: ...
@overload
def shuffle_epsilon(eps0: ArrayLike, rounds: float, delta: float) -> NDArray[np.float64]: ...
def shuffle_epsilon(eps0: ArrayLike, rounds: float, delta: float) -> NDArray[np.float64] | float:
    r"""Amplification by shuffling before loosening (Theorem A.2, Feldman et al. 2022 Thm 3.8).

    .. math::

        \varepsilon = \ln\Big(1 + \frac{e^{\varepsilon_0}-1}{e^{\varepsilon_0}+1}
        \Big(\frac{8\sqrt{e^{\varepsilon_0}\ln(4/\delta)}}{\sqrt m} + \frac{8e^{\varepsilon_0}}{m}\Big)\Big)

    References
    ----------
    N. Tsoy, A. Mihalkova et al., *Provable Mutual Benefits from Federated Learning in
    Privacy-Sensitive Domains*, AISTATS 2024, Theorem A.2; V. Feldman, A. McMillan, K. Talwar,
    *Hiding Among the Clones*, FOCS 2021, Theorem 3.8.

    Examples
    --------
    >>> round(shuffle_epsilon(0.5, 100, 1e-5), 4)
    0.6606
    """
    e0 = positive("eps0", eps0)
    m = in_interval("rounds", rounds, 1.0)
    d = in_interval("delta", delta, 0.0, 1.0, low_open=True, high_open=True)
    return _shaped(
        np.log1p(
            np.tanh(e0 / 2)
            * (8 * np.sqrt(np.exp(e0) * np.log(4 / d)) / np.sqrt(m) + 8 * np.exp(e0) / m)
        ),
        eps0,
        rounds,
        delta,
    )
