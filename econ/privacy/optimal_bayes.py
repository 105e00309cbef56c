r"""Optimal protocols of the Bayesian model (Tsoy et al. 2024, sections 5-6), a non-convex problem.

Accuracy. Eq. (3) times the positive :math:`x\rho^2(x+y)`, with :math:`x = \Gamma + \tau` and
:math:`y = \rho - \beta_i`, is the cubic

.. math::

    F_i(y) = y(x+y)^2 - x\rho^2\big(K_i(x+y) + \lambda_i\big), \qquad
    K_i = \frac1\rho + \frac1\tau - \frac{\lambda_i}{\rho+\tau},

whose sign is that of client i's gain at total Γ; the gain decreases in :math:`\beta_i` (increases
in y), so client i accepts exactly :math:`\beta_i \le \varphi_i(\Gamma) = \rho - y_i(\Gamma)`, y_i
the cubic's largest root (:func:`bayes_phi`: Cardano, polished by Newton steps). In terms of the
others' total :math:`\gamma_i` the same constraint reads :math:`\beta_i \le \psi_i(\gamma_i) = \rho -
1/\big(1/(\rho^2M_i) + 1/s_i\big)`, :math:`s_i = \gamma_i+\rho+\tau`,
:math:`M_i = K_i + \lambda_i/s_i`, which increases in :math:`\gamma_i` wherever it is
:math:`\ge 0`; hence :math:`\varphi_i` is nondecreasing in Γ, and so is
:math:`\Phi(\Gamma) = \sum_i\varphi_i(\Gamma)` (and a total Γ is feasible iff
:math:`\Phi(\Gamma) \ge \Gamma` with every client able to take part). The monotone Φ certifies
infeasibility: no Γ in :math:`(\Phi(u), u]` is feasible when :math:`\Phi(u) < u`. The largest
feasible Γ is found top-down by probing Φ (vectorised) and refining the highest cell that is
not certified (:func:`bayes_max_total`), to :data:`GAMMA_RTOL` of :math:`\sum_i\rho_i`. One
problem of fewer than :data:`~econ.privacy.optimal_dp.FEW_CLIENTS` clients is first searched in
Python floats (:func:`bayes_max_total_few`), certified by the same monotonicity.

Welfare: scipy SLSQP started from the best points of the family scans and the accuracy optimum;
a local optimum. :func:`econ.privacy.optimal.optimal_protocol` dispatches here.
"""

from __future__ import annotations

import math
from collections.abc import Generator

import numpy as np
from numpy.typing import ArrayLike, NDArray
from scipy.optimize import minimize

from econ.privacy.families import family_weights, scale_scan
from econ.privacy.models import Bayes
from econ.privacy.optimal_dp import FEW_CLIENTS

Array = NDArray[np.float64]

#: The accuracy optimum's total Γ is certified to this fraction of :math:`\sum_i\rho_i`: no
#: feasible total lies above the returned one by more.
GAMMA_RTOL = 1e-13


def _largest_cubic_root(a: Array, b: Array, c: Array) -> Array:
    """The largest real root of :math:`y^3 + ay^2 + by + c` (Cardano; NaN where it overflows)."""
    with np.errstate(all="ignore"):
        shift = a / 3
        p = b - a * shift
        q = (2 * shift * shift - b) * shift + c
        disc = (q / 2) ** 2 + (p / 3) ** 3
        # one real root: the cube root of larger magnitude, then the other by Vieta (no cancellation)
        u = np.cbrt(-q / 2 - np.copysign(np.sqrt(np.maximum(disc, 0.0)), q))
        one = u - np.where(u != 0, p / (3 * np.where(u != 0, u, 1.0)), 0.0)
        r = np.sqrt(np.maximum(-p / 3, 0.0))
        cos3 = np.clip(-q / (2 * np.where(r > 0, r, 1.0) ** 3), -1.0, 1.0)
        three = 2 * r * np.cos(np.arccos(cos3) / 3)
        return np.asarray(np.where(disc > 0, one, three) - shift)


def _in_units_of_rho(g: Array, lam: Array, rho: Array, tau: float) -> tuple[Array, Array]:
    r""":math:`X = (\Gamma+\tau)/\rho` and :math:`k = K\rho` of the cubic in units of ρ.

    With :math:`Y = y/\rho`, :math:`F/\rho^3 = Y(X+Y)^2 - X(k(X+Y) + \lambda)`; :math:`\beta_i =
    \rho` is acceptable iff :math:`F(0) \ge 0`, i.e. :math:`kX + \lambda \le 0`.
    """
    with np.errstate(over="ignore", invalid="ignore"):
        return (g + tau) / rho, 1 + rho / tau - lam * (rho / (rho + tau))


def bayes_phi(gamma_total: Array, lam: Array, rho: Array, tau: float) -> tuple[Array, Array]:
    r"""Each client's largest acceptable :math:`\beta_i` at each total Γ, and whether 0 is.

    For each total Γ (rows) and client (columns): :math:`\varphi_i(\Gamma) = \min(\rho - y_i,
    \Gamma)`, y_i the largest root of the cubic :math:`F_i` of the module docstring in units of
    ρ (:math:`\rho` where :math:`F_i(0) \ge 0`), and whether :math:`\beta_i = 0` is acceptable
    (:math:`F_i(\rho) \ge 0`); :math:`\varphi_i = 0` where it is not.

    References
    ----------
    Tsoy et al. (AISTATS 2024), §4.3, Eq. (3) and Theorem 4.9 (the per-client constraint at
    fixed Γ).

    Examples
    --------
    >>> import numpy as np
    >>> phi, ok = bayes_phi(np.array([1.0, 4.0]), np.array([5.0, 50.0]), np.ones(2), 1.0)
    >>> phi.round(4).tolist(), ok.tolist()
    ([[0.1325, 0.8421], [0.6046, 1.0]], [[True, True], [True, True]])
    """
    g = np.asarray(gamma_total, dtype=np.float64)[..., None]
    x, k = _in_units_of_rho(g, lam, rho, tau)
    with np.errstate(over="ignore", invalid="ignore"):
        kx = k * x
        ok0 = (x + 1) ** 2 - x * (kx + k + lam) >= 0
        full = kx + lam <= 0
        y = _largest_cubic_root(2 * x, x * (x - k), -x * (kx + lam))
        for _ in range(2):  # Newton polish; F is convex for Y >= 0
            s = x + y
            df = s * (x + 3 * y) - kx
            y -= (y * s * s - x * (k * s + lam)) / np.where(df > 0, df, np.inf)
        phi = np.where(full, rho, rho * (1 - np.clip(y, 0.0, 1.0)))
    bad = ok0 & ~np.isfinite(phi)
    if bad.any():  # beyond the floats in the cubic: bisection on the gain's sign
        phi = np.where(bad, _bisect_phi(g, lam, rho, tau, rho), phi)
    return np.asarray(np.where(ok0, np.minimum(phi, g), 0.0)), np.asarray(ok0)


def _bisect_phi(g: Array, lam: Array, rho: Array, tau: float, top: Array) -> Array:
    r""":math:`\varphi_i` by bisection on the sign of the gain of eq. (3), where the cubic overflows."""
    import sympy as sp

    from econ.privacy import symbolic as S

    total = sp.Symbol("G", positive=True)
    gain = sp.lambdify(
        (S.beta, total, S.lam, S.rho, S.tau),
        S.BAYES_GAIN.subs(S.gamma, total - S.beta),
        "numpy",
    )
    lo = np.zeros(np.broadcast_shapes(g.shape, np.shape(lam)))
    hi = np.minimum(top, g) + lo
    with np.errstate(all="ignore"):
        top_ok = gain(hi, g, lam, rho, tau) >= 0
        for _ in range(200):
            mid = 0.5 * (lo + hi)
            good = gain(mid, g, lam, rho, tau) >= 0
            lo, hi = np.where(good, mid, lo), np.where(good, hi, mid)
    return np.asarray(np.where(top_ok, np.minimum(top, g), lo))


def _excess(totals: Array, lam: Array, rho: Array, tau: float) -> Array:
    r""":math:`\Phi(\Gamma) - \Gamma` at each Γ, :math:`-\infty` where a client cannot take part.

    Row k of ``lam`` belongs to ``totals[k]``, or one ``lam`` to all totals.
    """
    phi, ok0 = bayes_phi(totals, lam, rho, tau)
    return np.asarray(np.where(ok0.all(axis=-1), phi.sum(axis=-1) - totals, -np.inf))


#: Offsets of the probes: a uniform grid, a chain, and the geometric steps about a root.
_UNIFORM = np.arange(16.0) / 16
_CHAIN = 0.9 * np.arange(48.0)
_ABOVE, _BELOW = 0.5 ** np.arange(32.0), 0.35 ** np.arange(32.0)


def _probes(
    bottom: float, top: float, low: tuple[float, float] | None, u: float, hu: float
) -> Array:
    """Descending probe totals in (bottom, top].

    Uniform; until a feasible total is known, a chain below ``top`` spaced by 0.9 |H(u)| (cells
    that Φ certifies where the excess changes little); after, geometric about the secant root.
    """
    pts = [top - (top - bottom) * _UNIFORM]
    if low is None and np.isfinite(hu):
        pts.append(top + hu * _CHAIN)
    if low is not None:
        lo, h_lo = low
        guess = lo + (u - lo) * h_lo / (h_lo - hu) if np.isfinite(hu) else 0.5 * (lo + top)
        guess = min(max(guess, bottom), top)
        pts += [guess + (top - guess) * _ABOVE, guess - (guess - bottom) * _BELOW]
    p = np.sort(np.concatenate(pts))[::-1]
    keep = (p > bottom) & (p <= top)
    keep[1:] &= p[1:] < p[:-1]
    return np.asarray(p[keep])


_Search = Generator[Array, Array, float]


def _search(top: float) -> _Search:
    """The search of :func:`bayes_max_total`: yields probe totals, is sent their excesses."""
    tol = GAMMA_RTOL * top
    u, hu = top, 0.0
    low: tuple[float, float] | None = None  # a feasible total below u
    floors: list[tuple[float, float]] = []  # lower ends of uncertified cells, searched later
    q = top - top * _UNIFORM  # the first round probes the top and a uniform grid
    for _ in range(10_000):
        hq = yield q
        feasible = hq >= 0
        # stop at the first feasible probe, or at the first whose cell below is not certified
        stop = feasible.copy()
        stop[:-1] |= q[:-1] + hq[:-1] > q[1:]
        stop[-1] = True
        j = int(np.argmax(stop))
        if feasible[j]:
            return float(q[j])
        u, hu = float(q[j]), float(hq[j])
        if j + 1 < q.size:
            below = np.flatnonzero(feasible[j + 1 :])
            if below.size:
                k = j + 1 + int(below[0])
                if low is None or q[k] > low[0]:
                    low = (float(q[k]), float(hq[k]))
            if not feasible[j + 1]:
                floors.append((float(q[j + 1]), float(hq[j + 1])))
        while True:  # the next probes, below Phi(u), or the answer once nothing is left
            bottom = max(low[0] if low else 0.0, floors[-1][0] if floors else 0.0)
            v = u + hu  # Phi(u): no total in (v, u] is feasible
            if v > bottom + tol:
                q = _probes(bottom, v, low, u, hu)
                break
            if low is not None and bottom == low[0]:
                return low[0]
            if not floors:
                return 0.0
            u, hu = floors.pop()
    raise RuntimeError("the certified search of the largest feasible total did not finish")


def bayes_max_total(lam: ArrayLike, rho: ArrayLike, tau: float) -> Array:
    r"""The largest feasible total Γ of each row of Bayesian clients (0: only the trivial one).

    Row k of ``lam`` is one problem (a vector is one row; ``rho`` broadcasts against it).
    Top-down over :math:`(0, \sum_i\rho_i]`, every Γ above the current bound u certified
    infeasible: the monotone :math:`\Phi` (module docstring) certifies :math:`(\Phi(u), u]`,
    and a cell :math:`(q', q]` between probes when :math:`\Phi(q) \le q'`. The first feasible
    probe below certified cells is the answer; otherwise the highest uncertified cell is probed
    again, finer (and about the secant root once a feasible total lies below it), until it is
    narrower than :data:`GAMMA_RTOL` times :math:`\sum_i\rho_i`. The rows' probes are
    evaluated together, in one call of :func:`bayes_phi` per round. A single client gains
    nothing (its gain at :math:`\gamma = 0` decreases from 0 in :math:`\beta`): 0.

    References
    ----------
    Tsoy et al. (AISTATS 2024), §6 and §4.3, Eq. (3); the certificate is that of the monotone
    iteration of A. Tarski, *A lattice-theoretical fixpoint theorem and its applications*,
    Pacific J. Math. 5 (1955).

    Examples
    --------
    >>> import numpy as np
    >>> bayes_max_total([[5.0, 8, 12, 20, 50], [4.5] * 5], np.ones(5), 1.0).round(6).tolist()
    [4.684211, 0.0]
    """
    lam_ = np.atleast_2d(np.asarray(lam, dtype=np.float64))
    rho_ = np.broadcast_to(np.asarray(rho, dtype=np.float64), lam_.shape)
    out = np.zeros(lam_.shape[0])
    if lam_.shape[1] == 1:  # alone, the gain of eq. (3) at gamma = 0 is < 0 for every beta > 0
        return out
    top = rho_.sum(axis=1)
    # every client accepts beta = rho at the top (then also beta = 0: the gain decreases)
    x_top, k_top = _in_units_of_rho(top[:, None], lam_, rho_, tau)
    with np.errstate(over="ignore", invalid="ignore"):
        at_top = np.all(k_top * x_top + lam_ <= 0, axis=1)
    out[at_top] = top[at_top]
    searches = {k: _search(float(top[k])) for k in np.flatnonzero(~at_top)}
    pending = {k: next(s) for k, s in searches.items()}
    while pending:
        rows = list(pending)
        sizes = [pending[k].size for k in rows]
        idx = np.repeat(rows, sizes)
        values = _excess(np.concatenate([pending[k] for k in rows]), lam_[idx], rho_[idx], tau)
        pending = {}
        for k, part in zip(rows, np.split(values, np.cumsum(sizes)[:-1]), strict=True):
            try:
                pending[k] = searches[k].send(part)
            except StopIteration as done:
                out[k] = done.value
    return out


def _bayes_caps_few(
    g: float, lam: list[float], rho: list[float], tau: float
) -> tuple[list[float], bool] | None:
    r"""Each client's cap :math:`\varphi_i(\Gamma)` at one total, in Python floats.

    The arithmetic of :func:`bayes_phi` (with :func:`_in_units_of_rho` and
    :func:`_largest_cubic_root`; the cube root as a power 1/3, which the Newton polish takes
    to the same root) one client at a time, and whether every client can take part; ``None`` where a cap of a client that can take part is not finite (the array path
    then bisects).
    """
    caps: list[float] = []
    every = True
    for lam_i, r in zip(lam, rho, strict=True):
        x, k = (g + tau) / r, 1 + r / tau - lam_i * (r / (r + tau))
        kx = k * x
        if (x + 1) * (x + 1) - x * (kx + k + lam_i) < 0:
            caps.append(0.0)
            every = False
            continue
        if kx + lam_i <= 0:
            caps.append(min(r, g))
            continue
        a, b, c = 2 * x, x * (x - k), -x * (kx + lam_i)
        shift = a / 3
        p = b - a * shift
        q = (2 * shift * shift - b) * shift + c
        disc = (q / 2) * (q / 2) + (p / 3) * (p / 3) * (p / 3)
        if disc > 0:
            w = -q / 2 - math.copysign(math.sqrt(disc), q)
            u = math.copysign(abs(w) ** (1 / 3), w)  # np.cbrt's root to an ulp or two
            y = (u - p / (3 * u) if u != 0 else u) - shift
        else:
            m = math.sqrt(max(-p / 3, 0.0))
            cos3 = min(max(-q / (2 * (m if m > 0 else 1.0) ** 3), -1.0), 1.0)
            y = 2 * m * math.cos(math.acos(cos3) / 3) - shift
        for _ in range(2):  # Newton polish, as in bayes_phi
            t = x + y
            df = t * (x + 3 * y) - kx
            if df > 0:
                y -= (y * t * t - x * (k * t + lam_i)) / df
        phi = r * (1 - min(max(y, 0.0), 1.0))
        if not math.isfinite(phi):
            return None
        caps.append(min(phi, g))
    return caps, every


def _bayes_excess_few(g: float, lam: list[float], rho: list[float], tau: float) -> float | None:
    """:func:`_excess` of one total in Python floats (``None``: see :func:`_bayes_caps_few`)."""
    found = _bayes_caps_few(g, lam, rho, tau)
    if found is None:
        return None
    caps, every = found
    return sum(caps) - g if every else -math.inf


#: The most steps of the Python-float search before it leaves the problem to the arrays.
FEW_STEPS = 96


def bayes_max_total_few(lam: list[float], rho: list[float], tau: float, top: float) -> float | None:
    r"""The largest feasible total Γ of one problem of few clients, in Python floats.

    The certificate of :func:`bayes_max_total`, probed one total at a time: from
    :math:`u = \sum_i\rho_i` (``top``) the monotone iteration :math:`u \leftarrow \Phi(u)`
    descends without skipping a feasible total, since each step leaves only
    :math:`(\Phi(u), u]`, certified infeasible, and it returns the first feasible :math:`u`.
    Once the secant of the last two steps puts the root within half of
    :data:`GAMMA_RTOL` :math:`\sum_i\rho_i` below :math:`\Phi(u)`, the total a quarter of it
    further down is probed; if it is feasible it is the answer (everything above it is
    certified but a cell narrower than the tolerance). 0 when :math:`\Phi(u)` falls to the
    tolerance (or a client cannot take part: :math:`-\infty`). ``None`` when a cap is not
    finite or :data:`FEW_STEPS` steps do not finish (a slowly converging iteration), for
    :func:`bayes_max_total` to decide.

    References
    ----------
    Tsoy et al. (AISTATS 2024), §6 and §4.3, Eq. (3); A. Tarski, *A lattice-theoretical
    fixpoint theorem and its applications*, Pacific J. Math. 5 (1955) (the monotone iteration
    from above converges to the greatest fixed point).
    """
    if len(lam) == 1:  # as in bayes_max_total
        return 0.0
    x_top = [(top + tau) / r for r in rho]
    k_top = [1 + r / tau - lam_i * (r / (r + tau)) for lam_i, r in zip(lam, rho, strict=True)]
    if all(k * x + lam_i <= 0 for k, x, lam_i in zip(k_top, x_top, lam, strict=True)):
        return top
    tol = GAMMA_RTOL * top
    u, hu = top, _bayes_excess_few(top, lam, rho, tau)
    previous: tuple[float, float] | None = None
    for _ in range(FEW_STEPS):
        if hu is None:
            return None
        if hu >= 0:
            return u
        v = u + hu  # Phi(u): no total in (v, u] is feasible
        if not v > tol:
            return 0.0
        if previous is not None:
            slope = hu - previous[1]
            guess = u - hu * (u - previous[0]) / slope if slope != 0 else u
            probe = min(guess, v) - tol / 4
            if v - guess <= tol / 2 and probe > 0:
                h_probe = _bayes_excess_few(probe, lam, rho, tau)
                if h_probe is None:
                    return None
                if h_probe >= 0:
                    return probe
        previous = (u, hu)
        u, hu = v, _bayes_excess_few(v, lam, rho, tau)
    return None


def bayes_accuracy(model: Bayes, lam: Array) -> tuple[Array | None, str]:
    r"""The most accurate Bayesian protocol, and the method's note.

    The largest feasible total (:func:`bayes_max_total`) with
    :math:`\beta = \varphi(\Gamma)\,\Gamma/\sum_i\varphi_i(\Gamma)`; ``None`` when only the
    trivial protocol is feasible.

    References
    ----------
    Tsoy et al. (AISTATS 2024), §6 and §4.3, Eq. (3).
    """
    rho, tau = model.rho(lam.size), model.tau
    method = (
        "exact 1-D: largest feasible Gamma, certified top-down by the monotone sum of the "
        "clients' closed-form caps (cubic roots of eq. 3)"
    )
    top = float(rho.sum())
    few = lam.size < FEW_CLIENTS  # Python floats first (bayes_max_total_few)
    found = bayes_max_total_few(lam.tolist(), rho.tolist(), tau, top) if few else None
    g = float(bayes_max_total(lam, rho, tau)[0]) if found is None else found
    if not g > 0:
        return None, method
    if g == top:
        return rho.copy(), method
    caps = _bayes_caps_few(g, lam.tolist(), rho.tolist(), tau) if few else None
    phi = bayes_phi(np.array([g]), lam, rho, tau)[0][0] if caps is None else np.array(caps[0])
    if not phi.sum() > 0:
        return None, method
    return phi * (g / phi.sum()), method


def bayes_welfare(model: Bayes, lam: Array, nu: Array) -> tuple[Array | None, str]:
    """A locally welfare-optimal Bayesian protocol, and the method's note.

    SLSQP from the best scanned starts; ``None`` for the trivial protocol.

    References
    ----------
    Tsoy et al. (AISTATS 2024), §5 (optimal protocols for utility) and §4.3, Eq. (3).
    """
    rho = model.rho(lam.size)
    method = "non-convex: scipy SLSQP from the best scanned starts (symmetric, xi, max-accuracy families); a local optimum"
    starts = [np.zeros_like(lam)]
    if np.ptp(rho) == 0:
        starts += [scale_scan(model, lam, fam, grid=200) for fam in ("symmetric", "xi")]
        w = family_weights(model, lam, "xi")
        if w.max() > 0:
            starts += [w * b for b in np.linspace(0, rho[0] / w.max(), 50)[1:]]
        starts += [np.full_like(lam, b) for b in np.linspace(0, rho[0], 50)[1:]]
    best_acc, _ = bayes_accuracy(model, lam)
    if best_acc is not None:
        starts += [best_acc * f for f in (0.25, 0.5, 0.75, 1.0)]

    def welfare(b: Array) -> float:
        return float(nu @ model.gain(np.clip(b, 0, rho), lam))

    # the trivial protocol is always feasible (its gain is 0 up to rounding)
    feasible = starts[:1] + [s for s in starts[1:] if model.gain(s, lam).min() >= 0]
    feasible.sort(key=welfare, reverse=True)
    best, best_value = feasible[0], welfare(feasible[0])
    for start in feasible[:3]:
        res = minimize(
            lambda b: -welfare(b),
            start,
            method="SLSQP",
            bounds=list(zip(np.zeros_like(rho), rho, strict=True)),
            constraints=[{"type": "ineq", "fun": lambda b: model.gain(np.clip(b, 0, rho), lam)}],
            options={"maxiter": 500, "ftol": 1e-12},
        )
        cand = np.clip(res.x, 0, rho)
        if model.gain(cand, lam).min() >= -1e-10 and welfare(cand) > best_value:
            best, best_value = cand, welfare(cand)
    return (best if best.any() else None), method
