r"""A client model measured by training: the utilities of Tsoy et al. (2024) on a measured curve.

Tsoy et al. (2024), section 3, give client :math:`i` of a protocol the utility

.. math::

    u_i = -\mathrm{leak}_i^2 - \lambda_i\,\mathrm{err}_i^2, \qquad
    u_i^0 = u_i(\mathrm{err}_i^0, 0)

(section 3, "Parametric Utility Form" with p = 2, and Definition 3.2 with the outside option of
training alone). Section 7 proposes to replace theoretical error bounds by "an empirical scaling
law for error" measured on small runs. :class:`Empirical` does that for DP-SGD training
(local SGD with per-example clipping and Gaussian noise of multiplier :math:`z_i`, averaged by
FedAvg):

* the protocol is one noise multiplier :math:`z_i` per client, inside the measured range
  :math:`[z_{\min}, z_{\max}]` (the curve says nothing outside it: a ``ValueError``);
* :math:`\mathrm{leak}_i = \varepsilon_i(z_i)`, the client's measured DP-SGD ε at its own noise
  (at the curve's δ), interpolated between the measured noise levels;
* :math:`\mathrm{err}_i = 1 - \mathrm{accuracy}_i`, the test error of the federated model on
  client :math:`i`'s own test set, interpolated in the noise;
* :math:`\mathrm{err}_i^0` is the measured test error of client :math:`i`'s model trained alone
  without DP: a model that is never released leaks nothing, as in the paper's
  :math:`u_i^0 = -\lambda_i\,\mathrm{err}_i^{0\,2}` (sections 4.1-4.3).

Interpolation, monotone by construction (:mod:`econ.privacy.monotone`): per client, the measured
means are made monotone (error non-decreasing, ε non-increasing in the noise) and joined by a
shape-preserving interpolant in :math:`\ln z` (ε in :math:`\ln\varepsilon`, exact for
:math:`\varepsilon \propto 1/z`).

Assumption where the measurement is thinner than the protocol: the curve measures federated
training with one common noise multiplier, while a protocol gives each client its own. The
federated error at noise levels :math:`z` is taken to be the measured error at the aggregate

.. math:: \bar z(z) = \sqrt{\frac{\sum_k w_k^2 z_k^2}{\sum_k w_k^2}},

the common multiplier whose noise in FedAvg's weighted average (weights :math:`w_k`, the
clients' training-set sizes) has the same variance, since the clients' Gaussian noises are
independent with the same clipping norm and batch size. Clipping bias and the clients' sampling
noise do not depend on :math:`z`. Privacy needs no such assumption: client :math:`i`'s ε depends
on its own noise only (the server's average is post-processing).
"""

from __future__ import annotations

import math
import os
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any, ClassVar

import numpy as np
from numpy.typing import ArrayLike, NDArray

from econ.outputs import plain
from econ.privacy.client_model import client_weights
from econ.privacy.monotone import monotone_interpolants
from econ.validation import read_json

Array = NDArray[np.float64]

#: Points of the grid of aggregate noise levels scanned by the existence test (plus the
#: measured levels themselves).
GRID = 1025


def _matrix(name: str, value: ArrayLike, shape: tuple[int, int]) -> Array:
    arr = np.asarray(value, dtype=np.float64)
    if arr.shape != shape:
        raise ValueError(
            f"{name} must have one row per noise level and one column per client {shape}, "
            f"got shape {arr.shape}"
        )
    return arr


def _errors(name: str, value: Array) -> Array:
    bad = ~np.isfinite(value) | (value < 0)
    if bad.any():
        raise ValueError(
            f"{name} must be finite errors >= 0 (1 - accuracy for classifiers), "
            f"got {float(value[bad].ravel()[0])!r} among its entries"
        )
    return value


@dataclass(frozen=True, eq=False)
class Empirical:
    r"""Clients of a measured (noise, ε, error) curve of DP-SGD training (see the module).

    Parameters
    ----------
    noise
        Measured noise multipliers :math:`z_1 < \dots < z_K` (at least two, all > 0).
    epsilon
        ε of each client at each noise level, shape (K, N), > 0.
    error_federated
        Test error of the federated model on each client's test set, shape (K, N), >= 0
        (1 - accuracy for a classifier).
    error_alone
        Test error of each client's model trained alone without DP, shape (N,).
    error_local
        Optional test error of each client's model trained alone with DP-SGD, shape (K, N)
        (the local-only curve; not needed for the utilities).
    weights
        FedAvg's aggregation weights (training-set sizes), shape (N,); default equal.

    References
    ----------
    Tsoy et al. (AISTATS 2024), §3.3 (utility u_i = -leak_i^2 - lambda_i err_i^2, p = 2),
    Definition 3.2 and §7 (an empirical scaling law for error in place of a theoretical bound).
    """

    noise: ArrayLike
    epsilon: ArrayLike
    error_federated: ArrayLike
    error_alone: ArrayLike
    error_local: ArrayLike | None = None
    weights: ArrayLike | None = None
    name: ClassVar[str] = "empirical"

    def __post_init__(self) -> None:
        r"""Check the measured curves, store them as float arrays and fit their interpolants.

        The noise levels must be finite, > 0 and strictly increasing; ε finite and > 0 and the
        errors finite and >= 0, each of shape (K, N) (``error_alone`` (N,)); the weights one
        positive number per client. :math:`\ln\varepsilon` and the errors are interpolated
        monotonically in :math:`\ln z` (:func:`econ.privacy.monotone.monotone_interpolants`).
        """
        z = np.asarray(self.noise, dtype=np.float64)
        if z.ndim != 1 or z.size < 2:
            raise ValueError(f"noise must list at least two noise levels, got {self.noise!r}")
        if not np.all(np.isfinite(z)) or np.any(z <= 0) or np.any(np.diff(z) <= 0):
            raise ValueError(f"noise must be finite, > 0 and strictly increasing, got {z.tolist()}")
        alone = np.atleast_1d(np.asarray(self.error_alone, dtype=np.float64))
        if alone.ndim != 1 or alone.size == 0:
            raise ValueError(
                f"error_alone must have one entry per client, got {self.error_alone!r}"
            )
        shape = (z.size, alone.size)
        eps = _matrix("epsilon", self.epsilon, shape)
        if not np.all(np.isfinite(eps)) or np.any(eps <= 0):
            bad = eps[~(np.isfinite(eps) & (eps > 0))]
            raise ValueError(
                f"epsilon must be finite and > 0, got {float(bad.ravel()[0])!r} among its entries"
            )
        fed = _errors("error_federated", _matrix("error_federated", self.error_federated, shape))
        _errors("error_alone", alone)
        local = None
        if self.error_local is not None:
            local = _errors("error_local", _matrix("error_local", self.error_local, shape))
        w = np.ones(alone.size) if self.weights is None else np.asarray(self.weights, float)
        if w.shape != alone.shape or not np.all(np.isfinite(w)) or np.any(w <= 0):
            raise ValueError(
                f"weights must be {alone.size} positive numbers (one per client), got {self.weights!r}"
            )
        for field, value in (
            ("noise", z),
            ("epsilon", eps),
            ("error_federated", fed),
            ("error_alone", alone),
            ("error_local", local),
            ("weights", w),
        ):
            object.__setattr__(self, field, value)
        log_z = np.log(z)
        object.__setattr__(
            self, "_log_eps", monotone_interpolants(log_z, np.log(eps), increasing=False)
        )
        object.__setattr__(self, "_fed", monotone_interpolants(log_z, fed, increasing=True))
        if local is not None:
            object.__setattr__(self, "_local", monotone_interpolants(log_z, local, increasing=True))

    # ----------------------------------------------------------------------------------------
    # construction from a saved curve
    # ----------------------------------------------------------------------------------------

    @classmethod
    def from_curve(cls, curve: Mapping[str, Any] | str | os.PathLike[str]) -> Empirical:
        """The model of a measured curve: a path to its JSON file, or its ``to_dict()``.

        Reads ``noise``, and per seed, noise level and client ``epsilon``,
        ``accuracy_federated``, ``accuracy_local``; per seed and client ``accuracy_alone``;
        and ``train_sizes`` (:func:`learning.drivers.privacy_curve.measure` writes them). Means over the
        seeds are the measured values.

        Raises
        ------
        ValueError
            A file that cannot be read or is not such a curve (naming what is wrong).

        References
        ----------
        Tsoy et al. (AISTATS 2024), §3.3 (utility u_i = -leak_i^2 - lambda_i err_i^2, p = 2),
        Definition 3.2 and §7 (an empirical scaling law for error in place of a theoretical
        bound) (the measured curve it reads).
        """
        source = "curve"
        if not isinstance(curve, Mapping):
            path = Path(curve)
            source = str(path)
            curve = read_json(path, "curve file")
            if not isinstance(curve, Mapping):
                raise ValueError(f"{path} is not a privacy curve (a JSON object is expected)")
        keys = ("noise", "epsilon", "accuracy_federated", "accuracy_alone")
        missing = [k for k in keys if k not in curve]
        if missing:
            raise ValueError(f"{source} is not a privacy curve: missing {', '.join(missing)}")

        def seed_mean(key: str) -> Array:
            """The array under ``key``, averaged over its first axis (the seeds)."""
            values = np.asarray(curve[key], dtype=np.float64)
            if values.size == 0:
                raise ValueError(f"{key} is empty")
            return values.mean(axis=0)

        try:
            noise = np.asarray(curve["noise"], dtype=np.float64)
            eps = seed_mean("epsilon")
            fed = 1 - seed_mean("accuracy_federated")
            alone = 1 - seed_mean("accuracy_alone")
            local_err = (
                None if curve.get("accuracy_local") is None else 1 - seed_mean("accuracy_local")
            )
            sizes = curve.get("train_sizes")
            weights = None if sizes is None else np.asarray(sizes, dtype=np.float64)
            if weights is not None and weights.ndim == 2:
                weights = seed_mean("train_sizes")
        except (TypeError, ValueError, IndexError) as exc:
            raise ValueError(f"{source} holds malformed curve arrays: {exc}") from None
        try:
            return cls(noise, eps, fed, alone, local_err, weights)
        except ValueError as exc:
            raise ValueError(f"{source}: {exc}") from None

    # ----------------------------------------------------------------------------------------
    # the measured functions
    # ----------------------------------------------------------------------------------------

    @property
    def n_clients(self) -> int:
        """The number N of measured clients.

        References
        ----------
        Tsoy et al. (AISTATS 2024), §3.1 (the N clients).
        """
        return int(np.asarray(self.error_alone).size)

    @property
    def noise_range(self) -> tuple[float, float]:
        """The smallest and largest measured noise multipliers.

        References
        ----------
        Tsoy et al. (AISTATS 2024), §7 (the range of the measured error scaling law).
        """
        z = np.asarray(self.noise)
        return float(z[0]), float(z[-1])

    def _check_noise(self, noise: ArrayLike, name: str = "noise") -> Array:
        z = np.asarray(noise, dtype=np.float64)
        lo, hi = self.noise_range
        if z.size and (
            not np.all(np.isfinite(z)) or z.min() < lo * (1 - 1e-12) or z.max() > hi * (1 + 1e-12)
        ):
            raise ValueError(
                f"{name} must lie in the measured range [{lo:g}, {hi:g}] of noise multipliers "
                f"(the curve says nothing outside it), got {np.atleast_1d(z).tolist()}"
            )
        return np.clip(z, lo, hi)

    def _per_client(self, noise: ArrayLike) -> Array:
        z = self._check_noise(noise)
        if z.shape[-1:] != (self.n_clients,):
            raise ValueError(
                f"noise must have one multiplier per client ({self.n_clients}), got shape {z.shape}"
            )
        return z

    def _check_lam(self, lam: ArrayLike) -> Array:
        lam_ = client_weights(lam)
        if lam_.size != self.n_clients:
            raise ValueError(
                f"lam must have one weight per measured client ({self.n_clients}), got {lam_.size}"
            )
        return lam_

    def epsilon_at(self, noise: ArrayLike) -> Array:
        r""":math:`\varepsilon_i(z_i)`: each client's ε at its own noise (shape (..., N)).

        References
        ----------
        Tsoy et al. (AISTATS 2024), §3.2, Definition 3.1 (leak_i as the ε of DP) and §7.
        """
        z = np.log(self._per_client(noise))
        return np.stack([np.exp(f(z[..., i])) for i, f in enumerate(self._log_eps)], axis=-1)  # type: ignore[attr-defined]

    def error_federated_at(self, common: ArrayLike) -> Array:
        """Interpolated federated test error of every client at common noise levels.

        The result has shape (..., N).

        References
        ----------
        Tsoy et al. (AISTATS 2024), §3.2 (err_i) and §7 (empirical scaling law for error).
        """
        s = np.log(self._check_noise(common, "common noise"))
        return np.stack([f(s) for f in self._fed], axis=-1)  # type: ignore[attr-defined]

    def error_local_at(self, common: ArrayLike) -> Array:
        """Interpolated test error of every client's DP-SGD model trained alone (shape (..., N)).

        References
        ----------
        Tsoy et al. (AISTATS 2024), §3.3 (err_i^0, training alone) and §7.
        """
        if self.error_local is None:
            raise ValueError("this curve has no local-only measurements")
        s = np.log(self._check_noise(common, "common noise"))
        return np.stack([f(s) for f in self._local], axis=-1)  # type: ignore[attr-defined]

    def aggregate(self, noise: ArrayLike) -> Array:
        r""":math:`\bar z = \sqrt{\sum_k w_k^2 z_k^2/\sum_k w_k^2}` (the module's assumption).

        References
        ----------
        Tsoy et al. (AISTATS 2024), §3.1 (the protocol's noise levels α_i) and §7; the aggregate
        is this module's assumption, built on them.
        """
        z = self._per_client(noise)
        w2 = np.asarray(self.weights) ** 2
        return np.asarray(np.sqrt((z**2 @ w2) / w2.sum()))

    # ----------------------------------------------------------------------------------------
    # utilities (the interface of the built-in models, with noise multipliers as the protocol)
    # ----------------------------------------------------------------------------------------

    def err2(self, noise: ArrayLike, lam: ArrayLike) -> Array:
        r""":math:`\mathrm{err}_i^2` at the aggregate noise :math:`\bar z(z)`.

        References
        ----------
        Tsoy et al. (AISTATS 2024), §3.3 (err_i^2 in the parametric utility) and §7.
        """
        self._check_lam(lam)
        return self.error_federated_at(self.aggregate(noise)) ** 2

    def leak2(self, noise: ArrayLike, lam: ArrayLike) -> Array:
        r""":math:`\mathrm{leak}_i^2 = \varepsilon_i(z_i)^2`.

        References
        ----------
        Tsoy et al. (AISTATS 2024), §3.3 (leak_i^2 in the parametric utility) and Definition
        3.1.
        """
        self._check_lam(lam)
        return self.epsilon_at(noise) ** 2

    def utility(self, noise: ArrayLike, lam: ArrayLike) -> Array:
        r""":math:`u_i = -\varepsilon_i(z_i)^2 - \lambda_i\,\mathrm{err}_i(\bar z)^2`.

        References
        ----------
        Tsoy et al. (AISTATS 2024), §3.3, parametric utility form with p = 2.
        """
        lam_ = self._check_lam(lam)
        return -self.leak2(noise, lam_) - lam_ * self.err2(noise, lam_)

    def utility_alone(self, lam: ArrayLike) -> Array:
        r""":math:`u_i^0 = -\lambda_i\,\mathrm{err}_i^{0\,2}` (trained alone, nothing released).

        References
        ----------
        Tsoy et al. (AISTATS 2024), §3.3, Definition 3.2 (u_i^0, the utility from local
        training).
        """
        lam_ = self._check_lam(lam)
        return np.asarray(-lam_ * np.asarray(self.error_alone) ** 2)

    def gain(self, noise: ArrayLike, lam: ArrayLike) -> Array:
        r""":math:`u_i - u_i^0`; the protocol is mutually beneficial iff all are >= 0.

        References
        ----------
        Tsoy et al. (AISTATS 2024), §3.3, Definition 3.2 (mutually beneficial protocol).
        """
        return self.utility(noise, lam) - self.utility_alone(lam)

    def minimal_noise(self, common: ArrayLike, lam: ArrayLike) -> Array:
        r"""The least noise :math:`z_i` each client accepts at aggregate noise :math:`\bar z`.

        .. math::

            \ell_i(\bar z) = \min\{z \in [z_{\min}, z_{\max}] :
            \varepsilon_i(z)^2 \le \lambda_i(\mathrm{err}_i^{0\,2} - \mathrm{err}_i(\bar z)^2)\},

        ``inf`` where no measured noise level suffices (ε_i is non-increasing, so the set is an
        interval ending at :math:`z_{\max}`). Shape (len(common), N).

        References
        ----------
        Tsoy et al. (AISTATS 2024), Definition 3.2 (each client's participation constraint) on
        the measured curve of §7.
        """
        lam_ = self._check_lam(lam)
        s = np.atleast_1d(self._check_noise(common, "common noise"))
        budget = lam_ * (np.asarray(self.error_alone) ** 2 - self.error_federated_at(s) ** 2)
        lo_z, hi_z = self.noise_range
        ones = np.ones_like(budget)
        eps_lo = self.epsilon_at(lo_z * ones) ** 2
        eps_hi = self.epsilon_at(hi_z * ones) ** 2
        a, b = np.full_like(budget, math.log(lo_z)), np.full_like(budget, math.log(hi_z))
        for _ in range(60):  # bisection in ln z: eps^2 <= budget at b, not at a
            mid = 0.5 * (a + b)
            ok = self.epsilon_at(np.exp(mid)) ** 2 <= budget
            a, b = np.where(ok, a, mid), np.where(ok, mid, b)
        out = np.exp(b)
        out = np.where(eps_lo <= budget, lo_z, out)
        return np.where(eps_hi <= budget, out, np.inf)

    def grid(self) -> Array:
        """The aggregate noise levels scanned: the measured ones and a geometric grid between.

        References
        ----------
        Tsoy et al. (AISTATS 2024), §6 (grid search over the protocol scale) and §7.
        """
        lo, hi = self.noise_range
        return np.unique(np.concatenate([np.geomspace(lo, hi, GRID), np.asarray(self.noise)]))

    def fill(self, floor: ArrayLike, common: ArrayLike) -> Array:
        r"""Protocols :math:`z_i = \max(\ell_i, c)` with aggregate :math:`\bar z = ` ``common``.

        ``floor`` holds rows of finite minimal noises, each with aggregate at most its entry of
        ``common`` (itself at most :math:`z_{\max}`); c is found by bisection, for all rows at
        once (the noise of the least constrained clients is raised first).

        References
        ----------
        Tsoy et al. (AISTATS 2024), Definition 3.2 (mutually beneficial protocol) on the
        measured curve of §7.
        """
        f = np.atleast_2d(np.asarray(floor, dtype=np.float64))
        target = np.atleast_1d(np.asarray(common, dtype=np.float64))
        lo, hi = self.noise_range
        a, b = np.full(target.shape, lo), np.full(target.shape, hi)
        for _ in range(100):
            mid = 0.5 * (a + b)
            ok = self.aggregate(np.maximum(f, mid[:, None])) <= target
            a, b = np.where(ok, mid, a), np.where(ok, b, mid)
        return np.maximum(f, a[:, None])

    def to_dict(self) -> dict[str, Any]:
        """The model's measured values, JSON-ready.

        References
        ----------
        Tsoy et al. (AISTATS 2024), §3.3 (utility u_i = -leak_i^2 - lambda_i err_i^2, p = 2),
        Definition 3.2 and §7 (an empirical scaling law for error in place of a theoretical
        bound) (the measured values).
        """
        return plain(
            {
                "model": self.name,
                "noise": self.noise,
                "epsilon": self.epsilon,
                "error_federated": self.error_federated,
                "error_alone": self.error_alone,
                "error_local": self.error_local,
                "weights": self.weights,
            }
        )
