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

The PLD accountant holds the privacy loss on a grid. dp-accounting's interval
:data:`PLD_INTERVAL` = 1e-4 needs :math:`W/10^{-4}` points for a loss spread over a width
:math:`W`, which grows as :math:`1/z^2` for one release and with the number of subsampled
steps: noise 0.001 asks for 10¹⁰ points. :func:`pld_grid` measures :math:`W` before any work
(the single step's range from dp-accounting's connect-the-dots bounds; the composed range
from its Chernoff truncation bounds, on a probe of :data:`PROBE_POINTS` points) and widens
the interval until at most :data:`PLD_POINTS` points are needed. Every interval gives an
upper bound on ε (the grid rounds each loss up, Doroshenko et al. 2022, and truncated tails
count as infinite loss); a wider one is looser by about the interval per composed step.
Where even :data:`PLD_INTERVAL_MAX` needs more points, the accountant refuses
(:class:`GridTooLarge`) and the RDP accountant, whose cost does not depend on the noise,
answers instead.

Install with ``pip install collabecon[privacy]``.
"""

from __future__ import annotations

import contextlib
import importlib
import logging
import math
from collections.abc import Iterator, Mapping
from dataclasses import dataclass
from types import ModuleType
from typing import Any

import numpy as np
from scipy.optimize import brentq

from econ.privacy.conversions import analytic_gaussian_sigma
from econ.validation import choice, fits_in_memory, in_interval, positive, positive_int

ACCOUNTANTS = ("pld", "rdp")

#: dp-accounting's PLD discretisation interval (its ``value_discretization_interval``).
PLD_INTERVAL = 1e-4
#: The widest interval :func:`pld_grid` chooses (100 times dp-accounting's).
PLD_INTERVAL_MAX = 1e-2
#: Most points of one privacy loss distribution: about 300 bytes and 35 µs of dp-accounting's
#: work each, so at most about 150 MiB and 20 s per array.
PLD_POINTS = 2**19
#: Bytes of dp-accounting's work per point of a privacy loss distribution (measured).
PLD_BYTES_PER_POINT = 320
#: The least Poisson sampling rate the PLD accountant takes: dp-accounting inverts the
#: subsampled loss :math:`\log(1 - q + q e^x)` through :math:`\log(1 - q)`, which cancels to
#: equal logarithms at rates of a few float epsilons (2^-52); 2^-48 keeps a margin of 16.
_PLD_RATE_MIN = 2.0**-48
#: Points of the probe distribution whose Chernoff bounds give the composed range.
PROBE_POINTS = 2**12
#: dp-accounting's tail mass truncation of a self-composition.
_TAIL_MASS = 1e-15
#: Most doublings or halvings of the noise while :func:`accountant_sigma` brackets its root.
SEARCH_STEPS = 80


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


#: The neighbouring data sets an accounting protects against, by :func:`adjacency`.
ADJACENCIES = ("replace-one", "add-remove")


def adjacency(sampling: str, sampling_rate: float = 1.0) -> str:
    """The neighbouring relation under which :func:`accountant_epsilon` accounts.

    ``"replace-one"`` (one example swapped for another) for fixed-size batches below the
    whole data set (:math:`q < 1`), ``"add-remove"`` (one example added or removed)
    otherwise: Poisson sampling, and releases that see all the data.

    References
    ----------
    Balle, Barthe, Gaboardi, Privacy Amplification by Subsampling: Tight Analyses via
    Couplings and Divergences, NeurIPS 2018 (the neighbouring relation of each sampling);
    Mironov, Talwar, Zhang, Rényi Differential Privacy of the Sampled Gaussian Mechanism,
    2019 (Poisson sampling under add-or-remove neighbours).

    Examples
    --------
    >>> adjacency("fixed", 32 / 400), adjacency("poisson", 32 / 400)
    ('replace-one', 'add-remove')
    """
    choice("sampling", sampling, SAMPLINGS)
    q = float(in_interval("sampling_rate", sampling_rate, 0.0, 1.0, low_open=True))
    return ADJACENCIES[0] if sampling == "fixed" and q < 1.0 else ADJACENCIES[1]


def accounting(accountant: str, sampling: str, sampling_rate: float = 1.0) -> dict[str, str]:
    """What an ε of :func:`accountant_epsilon` means: its accountant, sampling and adjacency.

    The object every reported ε carries beside it (``accounting`` in the command line's
    JSON).

    References
    ----------
    Mironov, Rényi Differential Privacy, CSF 2017 (the RDP accountant); Koskela, Jälkö,
    Honkela, Computing Tight Differential Privacy Guarantees Using FFT, AISTATS 2020 (the PLD
    accountant); Balle, Barthe, Gaboardi, Privacy Amplification by Subsampling: Tight
    Analyses via Couplings and Divergences, NeurIPS 2018 (sampling and adjacency,
    :func:`adjacency`).

    Examples
    --------
    >>> accounting("rdp", "poisson", 0.01)
    {'accountant': 'rdp', 'sampling': 'poisson', 'adjacency': 'add-remove'}
    """
    choice("accountant", accountant, ACCOUNTANTS)
    return {
        "accountant": accountant,
        "sampling": sampling,
        "adjacency": adjacency(sampling, sampling_rate),
    }


def accounting_text(description: Mapping[str, str]) -> str:
    """One line naming an :func:`accounting`, for the human reports.

    References
    ----------
    The works :func:`accounting` cites.

    Examples
    --------
    >>> accounting_text(accounting("rdp", "fixed", 0.08))
    'RDP accountant, fixed-size sampling, replace-one adjacency'
    """
    sampling = {"fixed": "fixed-size", "poisson": "Poisson"}[description["sampling"]]
    return (
        f"{description['accountant'].upper()} accountant, {sampling} sampling, "
        f"{description['adjacency']} adjacency"
    )


def _accountant(accountant: str, sampling: str, sampling_rate: float, z: float, k: int) -> Any:
    dpa = _dp_accounting()
    choice("accountant", accountant, ACCOUNTANTS)
    relation = dpa.privacy_accountant.NeighboringRelation
    fixed = adjacency(sampling, sampling_rate) == "replace-one"
    if fixed and accountant == "pld":
        raise ValueError(
            "dp-accounting's PLD accountant has no fixed-size sampling; use accountant='rdp' "
            "or sampling='poisson'"
        )
    if accountant == "pld" and sampling_rate < _PLD_RATE_MIN:
        raise ValueError(
            f"sampling_rate={sampling_rate:g} is below {_PLD_RATE_MIN:.2g}, where the PLD "
            "accountant's subsampled loss, log(1 - q + q e^x), cancels in floats; use the RDP "
            "accountant"
        )
    if accountant == "pld":
        grid = pld_grid(z, k, sampling_rate)
        if not grid.feasible:
            raise GridTooLarge(
                f"the PLD accountant needs {grid.widest_points:.3g} points for noise multiplier "
                f"{z:g} over {k} step(s) at sampling rate {sampling_rate:g}, more than "
                f"{PLD_POINTS} even at interval {PLD_INTERVAL_MAX:g}; use accountant='rdp'",
                grid.widest_points,
            )
        fits_in_memory(f"the PLD accountant's grid of {grid.points:.3g} points", grid.nbytes)
        return dpa.pld.PLDAccountant(value_discretization_interval=grid.interval)
    return dpa.rdp.RdpAccountant(
        neighboring_relation=relation.REPLACE_ONE if fixed else relation.ADD_OR_REMOVE_ONE
    )


class GridTooLarge(ValueError):
    """The PLD accountant needs more than :data:`PLD_POINTS` points even at :data:`PLD_INTERVAL_MAX`.

    ``points`` is the number it would need there; ``noise_floor``, set by
    :func:`accountant_sigma`, the smallest noise multiplier the grid resolves.

    References
    ----------
    Koskela, Jälkö, Honkela, Computing Tight Differential Privacy Guarantees Using FFT,
    AISTATS 2020 (the discretised privacy loss distribution and its grid).
    """

    def __init__(self, message: str, points: float, noise_floor: float | None = None):
        super().__init__(message)
        self.points = points
        self.noise_floor = noise_floor


@dataclass(frozen=True, slots=True)
class PLDGrid:
    """The grid of the PLD accountant for one accounting (:func:`pld_grid`).

    Attributes
    ----------
    width
        The range of the privacy loss the accountant holds (the widest of the single step's
        and the composition's), in nats.
    interval
        The discretisation interval: :data:`PLD_INTERVAL`, or wider where that needs more
        than :data:`PLD_POINTS` points.
    points
        The points of the largest distribution at ``interval``.
    adjacencies
        How many distributions dp-accounting holds (2 with subsampling: add and remove).

    References
    ----------
    Doroshenko, Ghazi, Kamath, Kumar, Manurangsi, Connect the Dots: Tighter Discrete
    Approximations of Privacy Loss Distributions, PETS 2022 (the pessimistic grid).
    """

    width: float
    interval: float
    points: float
    adjacencies: int

    @property
    def feasible(self) -> bool:
        """Whether ``interval`` is at most :data:`PLD_INTERVAL_MAX`."""
        return self.interval <= PLD_INTERVAL_MAX

    @property
    def widest_points(self) -> float:
        """The points needed at :data:`PLD_INTERVAL_MAX` (infinite where the loss overflows)."""
        return self.width / PLD_INTERVAL_MAX + 1

    @property
    def nbytes(self) -> float:
        """Estimated bytes of dp-accounting's largest arrays on this grid."""
        return PLD_BYTES_PER_POINT * self.points * self.adjacencies


@contextlib.contextmanager
def _quiet_absl() -> Iterator[None]:
    """Silence dp-accounting's warnings while it accounts.

    Its RDP accountant logs a warning for each order whose moment series does not converge and
    leaves that order out; the bound over the remaining orders stays a valid bound.
    """
    logger = logging.getLogger("absl")
    level = logger.level
    logger.setLevel(logging.ERROR)
    try:
        yield
    finally:
        logger.setLevel(level)


def _poisson_pld_epsilon(z: float, k: int, q: float, delta: float) -> float:
    """ε of ``k`` Poisson-subsampled Gaussian steps by the PLD accountant, in time that k bounds.

    The same loss distribution and self-composition as dp-accounting's ``PLDAccountant``
    (add-or-remove neighbours), except that a step whose discretised loss has so few points
    that dp-accounting keeps it sparse is made dense first: the sparse self-composition
    composes one step at a time (``k`` Python iterations) and sizes its result as
    ``points**k`` (a ``k``-bit integer), so a million steps at a tiny sampling rate took
    seconds and 10^9 never ended; the dense one raises the FFT of the step to the power ``k``.
    """
    dpa = _dp_accounting()
    pld = dpa.pld.privacy_loss_distribution
    pmf = dpa.pld.pld_pmf
    step = pld.from_gaussian_mechanism(
        standard_deviation=z,
        value_discretization_interval=pld_grid(z, k, q).interval,
        sampling_prob=q,
    )
    # dp-accounting exposes a distribution's two PMFs only as attributes
    remove, add = step._pmf_remove, step._pmf_add
    if isinstance(remove, pmf.SparsePLDPmf) or isinstance(add, pmf.SparsePLDPmf):
        step = pld.PrivacyLossDistribution(remove.to_dense_pmf(), add.to_dense_pmf())
    return float(step.self_compose(k).get_epsilon_for_delta(delta))


def pld_grid(noise_multiplier: float, compositions: int = 1, sampling_rate: float = 1.0) -> PLDGrid:
    r"""The grid the PLD accountant uses for ``compositions`` subsampled Gaussian steps.

    The width :math:`W` of the privacy loss is the larger of one step's range (the
    connect-the-dots bounds of dp-accounting's ``GaussianPrivacyLoss``; with
    ``sampling_rate`` 1 the steps compose into one release of noise :math:`z/\sqrt{k}`) and,
    with subsampling, the composition's range after dp-accounting's Chernoff truncation
    (``compute_self_convolve_bounds`` at tail mass 1e-15, on a probe of :data:`PROBE_POINTS`
    points; the bounds do not depend on the interval). The interval is
    :math:`\max(10^{-4}, W/2^{19})`.

    Parameters
    ----------
    noise_multiplier
        The noise multiplier :math:`z` of every step (> 0).
    compositions
        The number :math:`k` of steps.
    sampling_rate
        The Poisson sampling rate :math:`q` in (0, 1].

    Returns
    -------
    PLDGrid
        Infinite ``width`` and ``points`` where the loss overflows floats.

    References
    ----------
    Doroshenko, Ghazi, Kamath, Kumar, Manurangsi, Connect the Dots: Tighter Discrete
    Approximations of Privacy Loss Distributions, PETS 2022 (the pessimistic grid, an upper
    bound at every interval); Koskela, Jälkö, Honkela, Computing Tight Differential Privacy
    Guarantees Using FFT, AISTATS 2020 (composition by FFT, truncated tails).

    Examples
    --------
    >>> pld_grid(1.0).interval  # one release of noise 1: dp-accounting's own interval
    0.0001
    >>> grid = pld_grid(0.05)  # 7.9 million points at 1e-4: a 15 times wider interval
    >>> grid.feasible, round(grid.interval / PLD_INTERVAL)
    (True, 15)
    >>> pld_grid(0.001).feasible  # 10 billion points at 1e-4, 100 million at 1e-2
    False
    """
    z = float(positive("noise_multiplier", noise_multiplier))
    k = positive_int("compositions", compositions)
    q = float(in_interval("sampling_rate", sampling_rate, 0.0, 1.0, low_open=True))
    _dp_accounting()
    from dp_accounting.pld import common
    from dp_accounting.pld import privacy_loss_distribution as pld
    from dp_accounting.pld import privacy_loss_mechanism as plm

    std = z / math.sqrt(k) if q == 1.0 else z
    adjacencies = [plm.AdjacencyType.REMOVE] + ([plm.AdjacencyType.ADD] if q < 1.0 else [])
    width = 0.0
    with np.errstate(all="ignore"):
        for adjacency in adjacencies:
            try:
                bounds = plm.GaussianPrivacyLoss(
                    std, sampling_prob=q, adjacency_type=adjacency
                ).connect_dots_bounds()
                width = max(width, float(bounds.epsilon_upper - bounds.epsilon_lower))
            except (OverflowError, ZeroDivisionError):
                width = math.inf
    if not math.isfinite(width):
        return PLDGrid(math.inf, math.inf, math.inf, len(adjacencies))
    if q < 1.0 and k > 1 and width > 0:  # a loss that vanishes in floats composes to 0
        step = width / PROBE_POINTS
        probe = pld.from_gaussian_mechanism(
            std, sampling_prob=q, value_discretization_interval=step
        )
        for pmf in (probe._pmf_remove, probe._pmf_add):  # dp-accounting's two distributions
            low, high = common.compute_self_convolve_bounds(
                pmf.to_dense_pmf()._probs, k, _TAIL_MASS
            )
            width = max(width, (high - low + 1) * step)
    interval = max(PLD_INTERVAL, width / PLD_POINTS)
    return PLDGrid(width, interval, math.ceil(width / interval) + 1, len(adjacencies))


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

    Raises
    ------
    GridTooLarge
        ``accountant="pld"`` where its grid needs more than :data:`PLD_POINTS` points even at
        :data:`PLD_INTERVAL_MAX` (:func:`pld_grid`).
    ValueError
        A parameter out of range, ε infinite (noise too small for floats), or noise so
        large that its square overflows.

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
    event = _event(z, k, sampling_rate, sampling, dataset_size)
    acc = _accountant(accountant, sampling, float(sampling_rate), z, k)
    with np.errstate(divide="ignore", over="ignore"), _quiet_absl():  # tiny noise: infinite loss
        try:
            if accountant == "pld" and sampling_rate < 1:
                epsilon = _poisson_pld_epsilon(z, k, float(sampling_rate), d)
            else:
                acc.compose(event)
                epsilon = float(acc.get_epsilon(d))
        except OverflowError:  # the RDP of order a is a / (2 z^2): z^2 beyond the floats
            raise ValueError(
                f"noise {z:g} (in units of the sensitivity) is beyond what the {accountant} "
                "accountant computes in floats: its square overflows"
            ) from None
    if not math.isfinite(epsilon):
        raise ValueError(
            f"noise {z:g} (in units of the sensitivity) gives no finite epsilon at "
            f"delta={d:g}: the privacy loss overflows floats"
        )
    return epsilon


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
    r"""The smallest Gaussian noise whose ``compositions`` releases are (ε, δ)-DP per the accountant.

    With the subsampling of :func:`accountant_epsilon`, of which this is the inverse in σ.
    The root is bracketed from one release's analytic calibration times
    :math:`\sqrt{k}` (exact without subsampling; amplification by subsampling takes σ
    below it) by at most :data:`SEARCH_STEPS` doublings and as many halvings, then found by
    Brent's method in at most 100 steps.

    Raises
    ------
    GridTooLarge
        ``accountant="pld"`` where the noise that reaches ``epsilon`` lies below the
        smallest the PLD grid resolves (``noise_floor``, in units of the sensitivity).
    ValueError
        A parameter out of range, or no noise in the searched range reaches ``epsilon``.

    References
    ----------
    Abadi et al., Deep Learning with Differential Privacy, CCS 2016 (DP-SGD, subsampled Gaussian
    steps); Mironov, Rényi Differential Privacy, CSF 2017 (the RDP accountant); Koskela, Jälkö,
    Honkela, Computing Tight Differential Privacy Guarantees Using FFT, AISTATS 2020 (the PLD
    accountant), as implemented by Google's dp-accounting library. Used for the leak of Tsoy et
    al. (AISTATS 2024), §3.2, Definition 3.1. Inverted in σ here.
    """
    eps = float(positive("epsilon", epsilon))
    scale = float(positive("sensitivity", sensitivity))
    k = positive_int("compositions", compositions)
    options = dict(
        compositions=k,
        accountant=accountant,
        sampling_rate=sampling_rate,
        sampling=sampling,
        dataset_size=dataset_size,
    )

    def excess(sigma: float) -> float:
        try:
            return accountant_epsilon(sigma, delta, scale, **options) - eps  # type: ignore[arg-type]
        except GridTooLarge as exc:
            raise GridTooLarge(
                f"epsilon={eps:g} needs a noise multiplier below {sigma / scale:.3g}, where "
                f"the PLD accountant needs {exc.points:.3g} points, more than {PLD_POINTS} "
                f"even at interval {PLD_INTERVAL_MAX:g}; use accountant='rdp'",
                exc.points,
                sigma / scale,
            ) from None

    hi = analytic_gaussian_sigma(eps, delta, scale) * math.sqrt(k)
    for _ in range(SEARCH_STEPS):
        try:
            if excess(hi) <= 0:
                break
        except GridTooLarge:
            if float(sampling_rate) == 1.0:
                raise  # without subsampling the root is hi itself
        hi *= 2.0
    else:
        raise ValueError(f"no noise up to sigma={hi:.3g} brings epsilon down to {eps:g}")
    lo = hi / 2.0
    for _ in range(SEARCH_STEPS):
        if excess(lo) >= 0:
            break
        lo /= 2.0
    else:
        raise ValueError(f"every noise above sigma={lo:.3g} gives epsilon below {eps:g}")
    root, found = brentq(excess, lo, hi, xtol=1e-10 * hi, maxiter=100, full_output=True, disp=False)
    if not found.converged:
        raise ValueError(f"no noise in [{lo:.3g}, {hi:.3g}] found for epsilon={eps:g} in 100 steps")
    return float(root)
