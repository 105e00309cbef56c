r"""Figure 1 of Tsoy et al. (2024, section 6), with the exact optimum the paper lacks.

Protocol effectiveness :math:`\Gamma/\Gamma^*` against the mean of :math:`\ln\lambda`.

Setting (section 6 and the authors' published notebook): N = 5 clients, n = 100, σ = 10 (ρ = 1),
:math:`\lambda_i = e^{\omega_i}`, :math:`\omega_i \sim N(m, 1)`; DP: B = 20; Bayes: τ = 1.
For each m, ``repetitions`` draws; one random stream, the DP panel first, then the Bayesian
panel continuing it. Per draw:

* ``personalised`` / ``symmetric`` -- the authors' 100-point scale scan of the ζ (DP) or
  clipped-ξ (Bayes) family and of the symmetric family;
* ``personalised_exact`` / ``symmetric_exact`` (DP only) -- the same families at their exact
  largest scale: :math:`Z(Z-1)\rho/(Z-\zeta_{\min})` and :math:`N(N\zeta_{\min}-1)^+\rho/(N-1)`;
* ``optimum`` -- the largest Γ over all mutually beneficial protocols (exact: the Newton root of
  the DP mean, the certified search of the Bayesian model), for all draws of a grid point at once
  (:func:`econ.privacy.optimal.max_accuracy_totals`, the Γ of
  :func:`~econ.privacy.optimal.optimal_protocol`).

Each column is the mean of :math:`\Gamma/(N\rho)` with its standard error ``std(ddof=1)/sqrt(R)``.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

import numpy as np
from numpy.typing import NDArray

from econ.privacy.families import scale_scan
from econ.privacy.models import Bayes, DPMean, Model
from econ.privacy.optimal import max_accuracy_totals
from econ.validation import positive_int

Array = NDArray[np.float64]

#: The m-grids of the authors' published notebook for Figure 1.
DP_GRID = np.linspace(-2.5, 3.5, 9)
BAYES_GRID = np.linspace(1.5, 4.5, 9)


@dataclass(frozen=True, eq=False)
class Panel:
    """One panel of Figure 1: for each m, column name -> (mean, standard error) of Γ/Γ*.

    References
    ----------
    Tsoy et al. (AISTATS 2024), §6, Figure 1 (one half of it).
    """

    model: str
    log_lam_mean: Array
    columns: dict[str, tuple[Array, Array]]

    def rows(self) -> list[dict[str, float | str]]:
        """One flat record per m (for CSV and JSON).

        References
        ----------
        Tsoy et al. (AISTATS 2024), §6, Figure 1 (the plotted effectiveness Γ/Γ*).
        """
        out: list[dict[str, float | str]] = []
        for k, m in enumerate(self.log_lam_mean):
            row: dict[str, float | str] = {"panel": self.model, "log_lam_mean": float(m)}
            for name, (mean, se) in self.columns.items():
                row[name], row[f"{name}_se"] = float(mean[k]), float(se[k])
            out.append(row)
        return out


def _dp_row(model: DPMean, lam: Array) -> dict[str, float]:
    zeta, rho, n = model.zeta(lam), float(model.rho(lam.size)[0]), lam.size
    z = zeta.sum()
    return {
        "personalised": scale_scan(model, lam, "zeta").sum(),
        "symmetric": scale_scan(model, lam, "symmetric").sum(),
        "personalised_exact": z * (z - 1) * rho / (z - zeta.min()) if z > 1 else 0.0,
        "symmetric_exact": n * max(0.0, (n * zeta.min() - 1) * rho / (n - 1)),
    }


def _bayes_row(model: Bayes, lam: Array) -> dict[str, float]:
    return {
        "personalised": scale_scan(model, lam, "xi").sum(),
        "symmetric": scale_scan(model, lam, "symmetric").sum(),
    }


def _row(model: DPMean | Bayes, lam: Array) -> dict[str, float]:
    return _dp_row(model, lam) if isinstance(model, DPMean) else _bayes_row(model, lam)


def _panel(
    model: Model,
    grid: Array,
    repetitions: int,
    rng: np.random.Generator,
    n_clients: int,
    progress: Callable[[], None],
) -> Panel:
    scale = n_clients * float(model.rho(n_clients)[0])
    per_m: list[dict[str, Array]] = []
    if not isinstance(model, DPMean | Bayes):
        raise ValueError(f"Figure 1 has no panel for the {model.name} model")
    for m in grid:
        lams = np.array(
            [rng.lognormal(mean=m, sigma=1.0, size=n_clients) for _ in range(repetitions)]
        )
        draws = [_row(model, lam) for lam in lams]
        values = {k: np.array([d[k] for d in draws]) / scale for k in draws[0]}
        values["optimum"] = max_accuracy_totals(model, lams) / scale
        per_m.append(values)
        progress()
    if not per_m:  # an empty grid gives an empty panel
        return Panel(model.name, np.asarray(grid, dtype=np.float64), {})
    columns = {
        k: (
            np.array([c[k].mean() for c in per_m]),
            np.array(
                [
                    c[k].std(ddof=1) / np.sqrt(repetitions) if repetitions > 1 else np.nan
                    for c in per_m
                ]
            ),
        )
        for k in per_m[0]
    }
    return Panel(model.name, np.asarray(grid, dtype=np.float64), columns)


def effectiveness_panels(
    repetitions: int = 1000,
    seed: int | np.random.Generator | None = 179,
    *,
    n_clients: int = 5,
    dp_grid: Array = DP_GRID,
    bayes_grid: Array = BAYES_GRID,
    progress: Callable[[], None] = lambda: None,
) -> tuple[Panel, Panel]:
    """Both panels of Figure 1 (DP mean, then Bayes) from one random stream.

    ``repetitions`` = 1000 is the paper's text, 300 the authors' published notebook; seed 179
    is the notebook's. ``progress`` is called once per grid point (e.g. to advance a bar).

    References
    ----------
    Tsoy et al. (AISTATS 2024), §6, Figure 1 (upper half: DP mean, B = 20; lower half: Bayes, τ
    = 1).
    """
    rng = np.random.default_rng(seed)
    reps, n = positive_int("repetitions", repetitions), positive_int("n_clients", n_clients)
    if n < 2:
        raise ValueError(f"n_clients must be >= 2, got {n}")
    dp = _panel(
        DPMean(n=100.0, sigma=10.0, bound=20.0), np.asarray(dp_grid), reps, rng, n, progress
    )
    bayes = _panel(
        Bayes(n=100.0, sigma=10.0, tau=1.0), np.asarray(bayes_grid), reps, rng, n, progress
    )
    return dp, bayes
