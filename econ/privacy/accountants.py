r"""(ε, δ) of Gaussian noise through a privacy accountant, when ``dp-accounting`` is installed.

The closed-form conversions of :mod:`econ.privacy.conversions` cover one release of the
Gaussian mechanism (the analytic calibration of Balle & Wang 2018). An accountant also
composes: ``compositions`` releases with noise multiplier :math:`z = \sigma/\Delta` each (for
example the rounds of DP-SGD without amplification). Two accountants of Google's
``dp-accounting`` are offered:

``"pld"``
    privacy loss distributions (Koskela et al. 2020; Doroshenko et al. 2022): tight up to
    discretisation, and for one release equal to the analytic Gaussian ε;
``"rdp"``
    Rényi DP (Mironov 2017): an upper bound, looser but fast.

Install with ``pip install collabecon[privacy]``.
"""

from __future__ import annotations

import importlib
from types import ModuleType

from scipy.optimize import brentq

from econ.privacy.conversions import analytic_gaussian_sigma
from econ.validation import choice, in_interval, positive, positive_int

ACCOUNTANTS = ("pld", "rdp")


def _dp_accounting() -> ModuleType:
    try:
        return importlib.import_module("dp_accounting")
    except ImportError as exc:  # pragma: no cover - depends on the environment
        raise ValueError(
            "accountant conversions need the optional package dp-accounting: "
            "pip install 'collabecon[privacy]'"
        ) from exc


def accountant_epsilon(
    sigma: float,
    delta: float,
    sensitivity: float,
    *,
    compositions: int = 1,
    accountant: str = "pld",
) -> float:
    r"""ε of ``compositions`` Gaussian releases with noise ``sigma`` at the given δ.

    Parameters
    ----------
    sigma
        Standard deviation of the Gaussian noise added to each release.
    delta
        Target δ in (0, 1).
    sensitivity
        :math:`\ell_2` sensitivity Δ of each release; the noise multiplier is σ/Δ.
    compositions
        Number of releases composed.
    accountant
        ``"pld"`` (tight) or ``"rdp"`` (upper bound).
    """
    s = float(positive("sigma", sigma))
    d = float(in_interval("delta", delta, 0.0, 1.0, low_open=True, high_open=True))
    z = s / float(positive("sensitivity", sensitivity))
    k = positive_int("compositions", compositions)
    choice("accountant", accountant, ACCOUNTANTS)
    dpa = _dp_accounting()
    event = dpa.dp_event.SelfComposedDpEvent(dpa.dp_event.GaussianDpEvent(noise_multiplier=z), k)
    acc = dpa.pld.PLDAccountant() if accountant == "pld" else dpa.rdp.RdpAccountant()
    acc.compose(event)
    return float(acc.get_epsilon(d))


def accountant_sigma(
    epsilon: float,
    delta: float,
    sensitivity: float,
    *,
    compositions: int = 1,
    accountant: str = "pld",
) -> float:
    """The smallest Gaussian noise whose ``compositions`` releases are (ε, δ)-DP per the accountant."""
    eps = float(positive("epsilon", epsilon))

    def excess(sigma: float) -> float:
        return (
            accountant_epsilon(
                sigma, delta, sensitivity, compositions=compositions, accountant=accountant
            )
            - eps
        )

    # Composition only adds privacy loss, so one release's analytic calibration bounds from below.
    lo = 0.9 * analytic_gaussian_sigma(eps, delta, sensitivity)
    hi = 2.0 * lo * compositions**0.5
    while excess(hi) > 0:
        lo, hi = hi, 2.0 * hi
    return float(brentq(excess, lo, hi, xtol=1e-10 * hi))
