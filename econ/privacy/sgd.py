r"""Step sizes, round count and error bound of Algorithm 1 (Tsoy et al. 2024, section 4.2, App. B.4).

With :math:`\chi = \mu/L` and :math:`y^0_* = L\mu nND^2/\sigma^2`, the optimal steps of Lemma B.4 are

.. math::

    \eta^{t+1}_* = \frac{y^t}{L(y^t+1)}, \qquad
    y^{t+1}_* = \Big(1 - \chi\frac{y^t_*}{y^t_*+1}\Big)y^t_*,

and Theorem 4.3 bounds :math:`\Delta w^m = \mathbf E\|w^m-w^*\|^2` by

.. math::

    \Delta w^{m,\mathrm{ub}} = \begin{cases}
      \big((1 + \frac{\chi}{2-\chi}(m-T))L\mu\Gamma\big)^{-1}, & m \ge T,\\
      (1-\chi/2)^m\,y^0_*/(L\mu\Gamma), & m < T,\end{cases}
    \qquad T = \max\Big(\Big\lceil\frac{-\ln y^0_*}{\ln(1-\chi/2)}\Big\rceil, 1\Big).
"""

from __future__ import annotations

import numpy as np
import sympy as sp
from numpy.typing import NDArray

from econ.propositions import Verdict, checked, is_zero, on_points, proposition, refuted
from econ.validation import in_interval, positive, positive_int

_y, _chi, _L, _eta, _t = sp.symbols("y chi L eta t", positive=True)
#: Lemma B.4: one step of the bound recursion, its minimiser and the optimal recursion map h.
Y_NEXT = (1 - 2 * _eta * _chi * _L + _L * _chi * _L * _eta**2) * _y + _L * _chi * _L * _eta**2
ETA_STAR = _y / (_L * (_y + 1))
H_MAP = (1 - _chi * _y / (_y + 1)) * _y


def rounds(y0: float, chi: float, *, integer: bool = False) -> float:
    r""":math:`T = \max(-\ln y^0/\ln(1-\chi/2), 1)`; with ``integer`` the ceiling (spec T5)."""
    y = float(positive("y0", y0))
    c = float(in_interval("chi", chi, 0.0, 1.0, low_open=True))
    t = -np.log(y) / np.log(1 - c / 2)
    return float(max(np.ceil(t) if integer else t, 1.0))


def bound_recursion(y0: float, chi: float, steps: int) -> NDArray[np.float64]:
    """The exact optimal-step sequence y^0, ..., y^steps of Lemma B.4."""
    y = np.empty(positive_int("steps", steps) + 1)
    y[0] = float(positive("y0", y0))
    c = float(in_interval("chi", chi, 0.0, 1.0, low_open=True))
    for t in range(steps):
        y[t + 1] = (1 - c * y[t] / (y[t] + 1)) * y[t]
    return y


def step_sizes(y0: float, L: float, mu: float, steps: int) -> NDArray[np.float64]:
    r"""Optimal steps :math:`\eta^{t+1} = y^t/(L(y^t+1))`; they do not depend on α (Lemma B.4)."""
    y = bound_recursion(y0, float(positive("mu", mu)) / float(positive("L", L)), steps)[:-1]
    return y / (L * (y + 1))


def error_bound(m: float, y0: float, chi: float) -> float:
    r""":math:`L\mu\Gamma\,\Delta w^{m,\mathrm{ub}}` of Theorem 4.3 (divide by :math:`L\mu\Gamma`)."""
    t_rounds = rounds(y0, chi, integer=True)
    if m >= t_rounds:
        return float(1 / (1 + chi / (2 - chi) * (m - t_rounds)))
    return float((1 - chi / 2) ** m * y0)


@proposition(
    "tsoy.lemmaB.4",
    source="Tsoy et al. (2024), Lemma B.4",
    statement="eta* = y/(L(y+1)) minimises the one-step bound and gives y' = (1 - chi y/(y+1)) y",
)
def _lemma_b4() -> Verdict:
    foc = is_zero(sp.diff(Y_NEXT, _eta).subs(_eta, ETA_STAR), "d y'/d eta at eta*")
    rec = is_zero(Y_NEXT.subs(_eta, ETA_STAR) - H_MAP, "y'(eta*) - h(y)")
    convex = sp.diff(Y_NEXT, _eta, 2)
    if not (foc.holds and rec.holds) or not convex.is_positive:
        return (
            foc
            if not foc.holds
            else rec
            if not rec.holds
            else refuted("not convex", {"d2": str(convex)})
        )
    return Verdict(foc.status, f"{foc.evidence}; {rec.evidence}; second derivative {convex} > 0")


@proposition(
    "tsoy.lemmaB.4.monotone",
    source="Tsoy et al. (2024), Appendix B.4 (proof of Theorem 4.3)",
    statement="as printed: h(y) = (1 - chi y/(y+1)) y is decreasing in y",
    holds=False,
)
def _h_decreasing_printed() -> Verdict:
    h = sp.lambdify((_y, _chi), H_MAP)
    if h(2.0, 0.5) > h(1.0, 0.5):
        return refuted("h increases", {"chi": 0.5, "h(1)": h(1.0, 0.5), "h(2)": h(2.0, 0.5)})
    return checked("h(2) <= h(1) at chi = 0.5", 1)


@proposition(
    "tsoy.lemmaB.4.monotone.corrected",
    source="Tsoy et al. (2024), Appendix B.4; spec T9",
    statement="h is increasing: h'(y) = ((1 - chi)(y+1)^2 + chi)/(y+1)^2 > 0 for chi in (0, 1]",
)
def _h_increasing() -> Verdict:
    return is_zero(
        sp.diff(H_MAP, _y) - ((1 - _chi) * (_y + 1) ** 2 + _chi) / (_y + 1) ** 2,
        "h'(y) - closed form",
    )


@proposition(
    "tsoy.thm4.3",
    source="Tsoy et al. (2024), Theorem 4.3 (Appendix B.4; spec T10)",
    statement="L mu Gamma E||w^m - w*||^2 <= 1/(1 + chi(m - T)/(2 - chi)) for m >= T under the optimal steps",
)
def _thm43() -> Verdict:
    zt = 1 / (1 + _chi / (2 - _chi) * _t)
    gap = sp.factor(sp.simplify(zt.subs(_t, _t + 1) - H_MAP.subs(_y, zt)))
    target = (
        _chi**2
        * _t
        * (2 - _chi)
        * (1 - _chi)
        / ((_chi * _t + 2) * (_chi * _t - _chi + 2) * (_chi * _t - 2 * _chi + 4))
    )
    induction = is_zero(gap - target, "z^{t+1} - h(z^t) - chi^2 t (2-chi)(1-chi)/(...) (>= 0)")
    points = [
        {"L": L, "mu": mu, "y0": y0, "m": m}
        for L, mu, y0 in ((2.0, 1.0, 64000.0), (1.0, 0.5, 5e4), (10.0, 1.0, 1e6), (1.0, 0.01, 10.0))
        for m in range(1, 4 * int(rounds(y0, mu / L, integer=True)) + 1, 7)
    ]
    numeric = on_points(
        lambda L, mu, y0, m: (
            bound_recursion(y0, mu / L, m)[-1] <= error_bound(m, y0, mu / L) * (1 + 1e-12)
        ),
        points,
        "exact recursion y^m <= Theorem 4.3 bound, m <= 4T",
    )
    if not induction.holds:
        return induction
    return (
        numeric
        if not numeric.holds
        else Verdict(numeric.status, f"{numeric.evidence}; {induction.evidence}")
    )
