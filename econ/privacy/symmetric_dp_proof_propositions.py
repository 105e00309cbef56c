r"""The proofs of Tsoy et al.'s Theorems 5.1 and 5.2 (DP mean and DP SGD), display by display.

Holds the registered checks of the derivations in Appendix B.3 (the optimal symmetric noise
:math:`\beta^*` of the DP mean, :math:`\rho - \beta^*`, :math:`(N-1)\beta^* + \rho`, the gain
:math:`h(\beta^*)` and :math:`N\,d(1/(\alpha^*)^2)/dn`) and Appendix B.8 (the derivative in
:math:`n` of the DP-SGD optimum), each printed display against the model of
:mod:`econ.privacy.symbolic`, with the ``.corrected`` twin of a display that fails. The
theorems themselves are in :mod:`econ.privacy.symmetric_dp_propositions`.

References
----------
N. Tsoy, A. Mihalkova et al., *Provable Mutual Benefits from Federated Learning in
Privacy-Sensitive Domains*, AISTATS 2024, section 5, Theorems 5.1-5.2, Appendices B.3 and B.8.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import numpy as np
import sympy as sp

from econ.privacy import symbolic as S
from econ.privacy._checks import all_hold, identity, proves_positive
from econ.propositions import Verdict, proposition

_e, _m = sp.symbols("e m", positive=True)  # margin sqrt((N-1) lambda) - kappa rho, and N - 1


def _integer_clients(rng: np.random.Generator) -> dict[sp.Symbol, int]:
    """N - 1 = m a whole number, so that a sampled point is a number of clients."""
    return {_m: int(rng.integers(1, 30))}


def _b3_displays(
    beta_star: Callable[..., sp.Expr],
    rho_minus_beta: Callable[..., sp.Expr],
    shifted: Callable[..., sp.Expr],
    gain: Callable[..., sp.Expr],
    dn_inverse: Callable[..., sp.Expr],
) -> Verdict:
    r"""Every display of Appendix B.3 after the first-order condition, for all N >= 2.

    With N = 1 + m (m a whole number at a sampled point) and lambda = (kappa rho + e)^2/m, the
    profitable case. The d/dn display is taken with kappa = sqrt(2 ln(1.25 n^2)) B/n and
    rho = n/sigma^2 (the B of the extracted text's sqrt(2 ln(1.25 n^2) B) read outside the root,
    as in section 4.1's kappa).
    """
    k, r, lam = S.kappa, S.rho, S.lam
    n = 1 + _m
    h = S.DP_MEAN_SYM_GAIN.subs(S.n_clients, n)
    at = {lam: (k * r + _e) ** 2 / _m}
    beta = beta_star(n, lam, k, r).subs(at)
    root = sp.sqrt(_m * lam).subs(at)

    def same(expr: sp.Expr, what: str) -> Verdict:
        return identity(expr, what, sample=_integer_clients)

    # d/dn of N/(alpha*)^2 = sqrt((N-1) lambda)/kappa(n) - rho(n), at fixed N, lambda, B, sigma
    size, bound, sigma = sp.symbols("n B sigma", positive=True)
    kappa_n = sp.sqrt(2 * sp.log(sp.Rational(5, 4) * size**2)) * bound / size
    rho_n = size / sigma**2
    inverse = sp.sqrt(_m * lam) / kappa_n - rho_n
    return all_hold(
        [
            same(sp.diff(h, S.beta).subs(at).subs(S.beta, beta), "h'(beta*) (the beta* display)"),
            lambda: same(
                1 / beta - 1 / r - n / (root / k - r),
                "1/beta* - 1/rho - N/(sqrt((N-1) lambda)/kappa - rho)",
            ),
            lambda: same(r - beta - rho_minus_beta(n, root, k, r), "rho - beta* - its display"),
            lambda: same(
                (n - 1) * beta + r - shifted(n, root, k, r), "(N-1) beta* + rho - its display"
            ),
            lambda: same(
                beta / (r - beta) - (root - k * r) / (n * k * r),
                "beta*/(rho - beta*) - (sqrt((N-1) lambda) - kappa rho)/(N kappa rho)",
            ),
            lambda: same(
                beta / ((n - 1) * beta + r) - (root - k * r) / (n * root),
                "beta*/((N-1) beta* + rho) - (sqrt((N-1) lambda) - kappa rho)/(N sqrt((N-1) lambda))",
            ),
            lambda: same(
                h.subs(at).subs(S.beta, beta) - gain(n, lam, k, r).subs(at),
                "h(beta*) - its display",
            ),
            lambda: identity(
                sp.diff(inverse, size) - dn_inverse(_m * lam, size, kappa_n, rho_n),
                "N d(1/(alpha*)^2)/dn - its display",
            ),
            lambda: proves_positive(
                -sp.diff(n / inverse, sigma) * inverse**2 / n, "-d(alpha*)^2/d sigma (alpha*)^2/N"
            ),
        ],
        "Appendix B.3: beta* solves h' = 0, and each later display is the value it names",
    )


def _b3_beta_star(N: sp.Expr, lam: sp.Expr, kappa: sp.Expr, rho: sp.Expr) -> sp.Expr:
    return (
        (sp.sqrt((N - 1) * lam) - kappa * rho)
        * rho
        / (sp.sqrt((N - 1) * lam) + (N - 1) * kappa * rho)
    )


def _b3_dn(mlam: sp.Expr, n: sp.Expr, kappa: sp.Expr, rho: sp.Expr) -> sp.Expr:
    return (
        sp.sqrt(mlam) / kappa - rho - sp.sqrt(mlam) / (sp.log(sp.Rational(5, 4) * n**2) * kappa)
    ) / n


_B3_CORRECTED = {
    "rho_minus_beta": lambda N, root, kappa, rho: (
        N * kappa * rho**2 / (root + (N - 1) * kappa * rho)
    ),
    "shifted": lambda N, root, kappa, rho: N * root * rho / (root + (N - 1) * kappa * rho),
    "gain": lambda N, lam, kappa, rho: (sp.sqrt((N - 1) * lam) - kappa * rho) ** 2 / (N * rho),
}


@proposition(
    "tsoy.thm5.1.proof",
    source=(
        "Tsoy et al. (2024), Appendix B.3 (proof of Theorem 5.1), the displays after 'First, "
        "notice that': rho - beta* = N kappa rho^2/(sqrt((N-1) lambda) + kappa rho) and (N-1) "
        "beta* + rho = N sqrt((N-1) lambda) rho/(sqrt((N-1) lambda) + kappa rho), and the last "
        "display h(beta*) = (sqrt((N-1) lambda - kappa rho))^2/(N rho)"
    ),
    statement=(
        "as printed, for (N-1) lambda > kappa^2 rho^2 and beta* = (sqrt((N-1) lambda) - kappa "
        "rho) rho/(sqrt((N-1) lambda) + (N-1) kappa rho): rho - beta* = N kappa rho^2/(sqrt((N-1) "
        "lambda) + kappa rho), (N-1) beta* + rho = N sqrt((N-1) lambda) rho/(sqrt((N-1) lambda) + "
        "kappa rho), h(beta*) = (sqrt((N-1) lambda - kappa rho))^2/(N rho)"
    ),
    holds=False,
    perturb=_B3_CORRECTED,
)
def _b3_printed(
    beta_star: Callable[..., sp.Expr] = _b3_beta_star,
    rho_minus_beta: Callable[..., sp.Expr] = lambda N, root, kappa, rho: (
        N * kappa * rho**2 / (root + kappa * rho)
    ),
    shifted: Callable[..., sp.Expr] = lambda N, root, kappa, rho: (
        N * root * rho / (root + kappa * rho)
    ),
    gain: Callable[..., sp.Expr] = lambda N, lam, kappa, rho: (
        sp.sqrt((N - 1) * lam - kappa * rho) ** 2 / (N * rho)
    ),
    dn_inverse: Callable[..., sp.Expr] = _b3_dn,
) -> Verdict:
    """The printed displays; the counterexample is in N - 1 = m, e = sqrt((N-1) lambda) - kappa rho."""
    return _b3_displays(beta_star, rho_minus_beta, shifted, gain, dn_inverse)


@proposition(
    "tsoy.thm5.1.proof.corrected",
    source=(
        "Tsoy et al. (2024), Appendix B.3 (proof of Theorem 5.1): the two displays after 'First, "
        "notice that' with the denominator sqrt((N-1) lambda) + (N-1) kappa rho of the beta* "
        "display, and the last display with kappa rho outside the root"
    ),
    statement=(
        "for (N-1) lambda > kappa^2 rho^2: beta* = (sqrt((N-1) lambda) - kappa rho) rho/"
        "(sqrt((N-1) lambda) + (N-1) kappa rho) solves h' = 0, 1/beta* - 1/rho = N/(sqrt((N-1) "
        "lambda)/kappa - rho), rho - beta* = N kappa rho^2/(sqrt((N-1) lambda) + (N-1) kappa rho), "
        "(N-1) beta* + rho = N sqrt((N-1) lambda) rho/(sqrt((N-1) lambda) + (N-1) kappa rho), the "
        "two printed ratios, h(beta*) = (sqrt((N-1) lambda) - kappa rho)^2/(N rho), the printed "
        "N d(1/(alpha*)^2)/dn, and (alpha*)^2 falls in sigma"
    ),
    perturb={
        "rho_minus_beta": lambda N, root, kappa, rho: N * kappa * rho**2 / (root + kappa * rho)
    },
)
def _b3_corrected(
    beta_star: Callable[..., sp.Expr] = _b3_beta_star,
    rho_minus_beta: Callable[..., sp.Expr] = _B3_CORRECTED["rho_minus_beta"],
    shifted: Callable[..., sp.Expr] = _B3_CORRECTED["shifted"],
    gain: Callable[..., sp.Expr] = _B3_CORRECTED["gain"],
    dn_inverse: Callable[..., sp.Expr] = _b3_dn,
) -> Verdict:
    """Every display of the derivation, symbolically for all N >= 2."""
    return _b3_displays(beta_star, rho_minus_beta, shifted, gain, dn_inverse)


def _b8_dn(
    log_slope: Callable[..., sp.Expr], log_slope_indicator: Callable[..., sp.Expr]
) -> Verdict:
    r"""The two d(alpha*)^2/dn displays of Appendix B.8 as d ln (alpha*)^2/dn.

    (alpha*)^2 = sqrt(N L mu) kappa/sqrt(lambda d) with kappa = 16 sqrt(2e ln(1.25 T n^2)
    ln(4 n^2) T) B/n and T = T(n); the second display puts dT/dn = -1/(n ln(1 - chi/2)), its
    value where T = -ln(y^0_*)/ln(1 - chi/2) >= 1 (y^0_* proportional to n).
    """
    size, chi = sp.symbols("n chi", positive=True)
    t_of = sp.Function("T")(size)
    kappa = sp.sqrt(sp.log(sp.Rational(5, 4) * t_of * size**2) * sp.log(4 * size**2) * t_of) / size
    exact = sp.diff(sp.log(kappa), size)
    slope, t_sym = sp.symbols("q T", positive=True)  # q = dT/dn (its sign is free here)
    exact = exact.subs(sp.Derivative(t_of, size), slope).subs(t_of, t_sym)
    rate = sp.log(1 - chi / 2)  # negative for chi in (0, 1]
    branch = {slope: -1 / (size * rate)}

    def sample(rng: np.random.Generator) -> dict[sp.Symbol, Any]:
        return {
            size: int(rng.integers(2, 10_000)),
            chi: sp.Rational(int(rng.integers(1, 100)), 100),
            t_sym: 1 + sp.Rational(int(rng.integers(1, 50)), 7),
        }

    return all_hold(
        [
            identity(
                exact - log_slope(size, t_sym, slope),
                "d ln (alpha*)^2/dn - first display",
                sample=sample,
            ),
            lambda: identity(
                exact.subs(branch) - log_slope_indicator(size, t_sym, rate),
                "d ln (alpha*)^2/dn - second display (T >= 1 branch)",
                sample=sample,
            ),
        ],
        "Appendix B.8's d(alpha*)^2/dn displays are the logarithmic derivative of (alpha*)^2",
    )


def _b8_first_printed(n: sp.Expr, T: sp.Expr, dT: sp.Expr) -> sp.Expr:
    return -(
        1 / n
        - (2 / n + dT) / (2 * sp.log(sp.Rational(5, 4) * T * n**2))
        - 1 / (sp.log(4 * n**2) * n)
        - dT / (2 * T)
    )


def _b8_second_printed(n: sp.Expr, T: sp.Expr, rate: sp.Expr) -> sp.Expr:
    ell = sp.log(sp.Rational(5, 4) * T * n**2)
    return -(1 - 1 / ell + 1 / (2 * ell * rate) - 1 / sp.log(4 * n**2) + 1 / (2 * T * rate)) / n


def _b8_first_corrected(n: sp.Expr, T: sp.Expr, dT: sp.Expr) -> sp.Expr:
    return -(
        1 / n
        - (2 / n + dT / T) / (2 * sp.log(sp.Rational(5, 4) * T * n**2))
        - 1 / (sp.log(4 * n**2) * n)
        - dT / (2 * T)
    )


def _b8_second_corrected(n: sp.Expr, T: sp.Expr, rate: sp.Expr) -> sp.Expr:
    ell = sp.log(sp.Rational(5, 4) * T * n**2)
    return -(1 - 1 / ell + 1 / (2 * T * ell * rate) - 1 / sp.log(4 * n**2) + 1 / (2 * T * rate)) / n


@proposition(
    "tsoy.thm5.2.proof.dn",
    source=(
        "Tsoy et al. (2024), Appendix B.8 (proof of Theorem 5.2), the displays 'd(alpha*)^2/dn = "
        "-(alpha*)^2 (1/n - (2/n + dT/dn)/(2 ln(1.25 T n^2)) - ...)' and the one after 'we have' "
        "with the term [..]/(2 ln(1.25 n^2 T) ln(1 - chi/2))"
    ),
    statement=(
        "as printed: d(alpha*)^2/dn = -(alpha*)^2 (1/n - (2/n + dT/dn)/(2 ln(1.25 T n^2)) - "
        "1/(n ln(4 n^2)) - (dT/dn)/(2T)), and with dT/dn = -1/(n ln(1 - chi/2)) (T >= 1) it is "
        "-(alpha*)^2/n (1 - 1/ln(1.25 T n^2) + 1/(2 ln(1.25 n^2 T) ln(1 - chi/2)) - 1/ln(4 n^2) "
        "+ 1/(2T ln(1 - chi/2)))"
    ),
    holds=False,
    perturb={"log_slope": _b8_first_corrected, "log_slope_indicator": _b8_second_corrected},
)
def _b8_printed(
    log_slope: Callable[..., sp.Expr] = _b8_first_printed,
    log_slope_indicator: Callable[..., sp.Expr] = _b8_second_printed,
) -> Verdict:
    """The printed displays against sympy's logarithmic derivative (T > 1, chi in (0, 1))."""
    return _b8_dn(log_slope, log_slope_indicator)


@proposition(
    "tsoy.thm5.2.proof.dn.corrected",
    source=(
        "Tsoy et al. (2024), Appendix B.8 (proof of Theorem 5.2), the two d(alpha*)^2/dn "
        "displays, with d ln(1.25 T n^2)/dn = 2/n + (dT/dn)/T in place of 2/n + dT/dn"
    ),
    statement=(
        "d(alpha*)^2/dn = -(alpha*)^2 (1/n - (2/n + (dT/dn)/T)/(2 ln(1.25 T n^2)) - 1/(n "
        "ln(4 n^2)) - (dT/dn)/(2T)); with dT/dn = -1/(n ln(1 - chi/2)) (T >= 1) it is "
        "-(alpha*)^2/n (1 - 1/ln(1.25 T n^2) + 1/(2T ln(1.25 n^2 T) ln(1 - chi/2)) - 1/ln(4 n^2) "
        "+ 1/(2T ln(1 - chi/2))) = -(alpha*)^2/n (1 - O(1/ln n))"
    ),
    perturb={"log_slope": _b8_first_printed},
)
def _b8_corrected(
    log_slope: Callable[..., sp.Expr] = _b8_first_corrected,
    log_slope_indicator: Callable[..., sp.Expr] = _b8_second_corrected,
) -> Verdict:
    """Both displays, symbolically."""
    return _b8_dn(log_slope, log_slope_indicator)
