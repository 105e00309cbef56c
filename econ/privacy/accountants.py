r"""(ε, δ) of Gaussian noise through a privacy accountant, when ``dp-accounting`` is installed.

The closed-form conversions of :mod:`econ.privacy.conversions` cover one release of the
Gaussian mechanism (the analytic calibration of Balle & Wang 2018), with no dependency. An
accountant also composes and amplifies: ``compositions`` releases with noise multiplier
:math:`z = \sigma/\Delta` each, each computed on a random subsample of the data (the steps of
DP-SGD, Abadi et al. 2016). Subsampling is described by ``sampling_rate`` :math:`q` and
``sampling``:

``"poisson"``
    each example joins each step independently with probability :math:`q`
    (``PoissonSampledDpEvent``; add-or-remove-one neighbours), as Opacus samples;
``"fixed"``
    each step draws :math:`b = q n` distinct examples of :math:`n` uniformly
    (``SampledWithoutReplacementDpEvent``; replace-one neighbours), as
    :func:`learning.dp.sample_subsets` does. dp-accounting accounts for it with RDP only.

``sampling_rate=1`` is no subsampling (every release sees every example). Two accountants of
Google's ``dp-accounting`` are offered:

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
from typing import Any

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


SAMPLINGS = ("poisson", "fixed")


def _event(
    z: float, compositions: int, sampling_rate: float, sampling: str, dataset_size: int | None
) -> Any:
    dpa = _dp_accounting()
    release = dpa.dp_event.GaussianDpEvent(noise_multiplier=z)
    q = float(in_interval("sampling_rate", sampling_rate, 0.0, 1.0, low_open=True))
    choice("sampling", sampling, SAMPLINGS)
    if sampling == "fixed" or dataset_size is not None:
        if dataset_size is None:
            raise ValueError("sampling='fixed' needs dataset_size (the examples sampled from)")
        n = positive_int("dataset_size", dataset_size)
        b = round(q * n)
        if b < 1 or abs(b - q * n) > 1e-9 * n:
            raise ValueError(
                f"sampling_rate * dataset_size must be a whole batch size >= 1, got {q} * {n}"
            )
    if q == 1.0:
        step = release
    elif sampling == "poisson":
        step = dpa.dp_event.PoissonSampledDpEvent(sampling_probability=q, event=release)
    else:
        step = dpa.dp_event.SampledWithoutReplacementDpEvent(
            source_dataset_size=n, sample_size=b, event=release
        )
    return dpa.dp_event.SelfComposedDpEvent(step, compositions)


def _accountant(accountant: str, sampling: str, sampling_rate: float) -> Any:
    dpa = _dp_accounting()
    choice("accountant", accountant, ACCOUNTANTS)
    relation = dpa.privacy_accountant.NeighboringRelation
    fixed = sampling == "fixed" and sampling_rate < 1.0
    if fixed and accountant == "pld":
        raise ValueError(
            "dp-accounting's PLD accountant has no fixed-size sampling; use accountant='rdp' "
            "or sampling='poisson'"
        )
    if accountant == "pld":
        return dpa.pld.PLDAccountant()
    return dpa.rdp.RdpAccountant(
        neighboring_relation=relation.REPLACE_ONE if fixed else relation.ADD_OR_REMOVE_ONE
    )


def accountant_epsilon(
    sigma: float,
    delta: float,
    sensitivity: float,
    *,
    compositions: int = 1,
    accountant: str = "pld",
    sampling_rate: float = 1.0,
    sampling: str = "poisson",
    dataset_size: int | None = None,
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
        Number of releases composed (the steps of DP-SGD).
    accountant
        ``"pld"`` (tight) or ``"rdp"`` (upper bound).
    sampling_rate
        The probability :math:`q` that an example takes part in a release (1: every
        release sees all the data).
    sampling
        ``"poisson"`` or ``"fixed"`` (module docstring); ``"fixed"`` needs
        ``dataset_size`` with :math:`q n` a whole batch size, and ``accountant="rdp"``.
    dataset_size
        The number :math:`n` of examples sampled from (``"fixed"``).

    References
    ----------
    Abadi et al., Deep Learning with Differential Privacy, CCS 2016 (DP-SGD, subsampled Gaussian
    steps); Mironov, Rényi Differential Privacy, CSF 2017 (the RDP accountant); Koskela, Jälkö,
    Honkela, Computing Tight Differential Privacy Guarantees Using FFT, AISTATS 2020 (the PLD
    accountant), as implemented by Google's dp-accounting library. Used for the leak of Tsoy et
    al. (AISTATS 2024), §3.2, Definition 3.1.

    Examples
    --------
    DP-SGD with noise multiplier 1, batches of 256 of 60,000 examples, 160 steps:

    >>> round(accountant_epsilon(1.0, 1e-5, 1.0, compositions=160, sampling_rate=256 / 60000), 2)
    0.34
    """
    s = float(positive("sigma", sigma))
    d = float(in_interval("delta", delta, 0.0, 1.0, low_open=True, high_open=True))
    z = s / float(positive("sensitivity", sensitivity))
    k = positive_int("compositions", compositions)
    acc = _accountant(accountant, sampling, float(sampling_rate))
    acc.compose(_event(z, k, sampling_rate, sampling, dataset_size))
    return float(acc.get_epsilon(d))


def accountant_sigma(
    epsilon: float,
    delta: float,
    sensitivity: float,
    *,
    compositions: int = 1,
    accountant: str = "pld",
    sampling_rate: float = 1.0,
    sampling: str = "poisson",
    dataset_size: int | None = None,
) -> float:
    """The smallest Gaussian noise whose ``compositions`` releases are (ε, δ)-DP per the accountant.

    With the subsampling of :func:`accountant_epsilon`, of which this is the inverse in σ.

    References
    ----------
    Abadi et al., Deep Learning with Differential Privacy, CCS 2016 (DP-SGD, subsampled Gaussian
    steps); Mironov, Rényi Differential Privacy, CSF 2017 (the RDP accountant); Koskela, Jälkö,
    Honkela, Computing Tight Differential Privacy Guarantees Using FFT, AISTATS 2020 (the PLD
    accountant), as implemented by Google's dp-accounting library. Used for the leak of Tsoy et
    al. (AISTATS 2024), §3.2, Definition 3.1. Inverted in σ here.
    """
    eps = float(positive("epsilon", epsilon))
    options = dict(
        compositions=compositions,
        accountant=accountant,
        sampling_rate=sampling_rate,
        sampling=sampling,
        dataset_size=dataset_size,
    )

    def excess(sigma: float) -> float:
        return accountant_epsilon(sigma, delta, sensitivity, **options) - eps  # type: ignore[arg-type]

    # ε falls as σ grows; bracket the root by halving and doubling from one release's
    # analytic calibration (amplification by subsampling can take σ below it).
    hi = analytic_gaussian_sigma(eps, delta, sensitivity) * max(1.0, compositions**0.5)
    while excess(hi) > 0:
        hi *= 2.0
    lo = hi / 2.0
    while excess(lo) < 0 and lo > 1e-6 * hi:
        lo /= 2.0
    if excess(lo) < 0:
        raise ValueError(f"every noise above {lo:.3g} gives epsilon below {eps}")
    return float(brentq(excess, lo, hi, xtol=1e-10 * hi))
