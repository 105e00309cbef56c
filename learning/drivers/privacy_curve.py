r"""The measured (ε, accuracy) curve of DP-SGD training, local-only against federated.

For every noise multiplier :math:`z` of a list and every seed, :func:`measure` trains the same
clients twice with DP-SGD (:mod:`learning.dp`: per-example clipping to ``max_grad_norm`` and
Gaussian noise of standard deviation :math:`z \cdot` ``max_grad_norm``, Abadi et al. 2016):

* ``local``     -- every client alone (algorithm ``local``);
* ``federated`` -- FedAvg (McMahan et al. 2017) over the same clients,

with the same data, initial model, rounds, local steps, batch size and clipping, and, once per
seed, both without DP (the non-private references; the local one is the outside option of
Tsoy et al. 2024, section 3: a model trained alone and never released). Each client's ε at
``delta`` comes from RDP accounting of its ``rounds * local_steps`` subsampled Gaussian steps,
fixed-size batches under replace-one adjacency (:attr:`PrivacyCurve.accounting`,
:attr:`learning.train.TrainResult.epsilon`); it depends on the client's data and the noise,
not on the algorithm. Accuracy is each client's final model on its own test set.

:class:`PrivacyCurve` holds every measurement, summarises each noise level by the mean over
seeds and a 95% Student-t confidence interval over seeds of the federation's mean accuracy,
and saves as JSON (the file :meth:`econ.privacy.empirical.Empirical.from_curve` reads).
"""

from __future__ import annotations

import functools
import json
import math
import os
import time
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np
from scipy import stats

from econ.outputs import plain
from econ.validation import read_json
from learning.train import TrainConfig, train

__all__ = ["CURVE_KIND", "PrivacyCurve", "measure", "plot", "t_interval"]

#: The ``kind`` field of a saved curve.
CURVE_KIND = "collabecon.privacy-curve"

#: Settings of :func:`measure`. The default network is softmax regression (``linear``): a convex
#: problem, the setting of Tsoy et al. (2024), section 4.2; the default command (4 noise levels,
#: 3 seeds, 30 runs) takes well under a minute on 2 CPU cores with ``mnist5k``.
DEFAULTS: dict[str, Any] = {
    "dataset": "mnist5k",
    "model": "linear",
    "partition": "iid",
    "clients": 10,
    "rounds": 5,
    "local_steps": 10,
    "batch_size": 32,
    "lr": 0.3,
    "momentum": 0.9,
    "max_grad_norm": 1.0,
    "delta": 1e-5,
}

#: Why a row of :meth:`PrivacyCurve.summary` has no finite ε, or no interval.
NO_DP = "no DP: the non-private reference has no finite epsilon"
ONE_SEED = "one seed gives no interval (a t-interval needs two seeds or more)"

#: Most SGD steps of one client that :func:`measure` runs, over all its trainings: a million
#: times the default command's 1,500, more than a day at ten thousand steps a second.
MAX_STEPS = 10**9

#: The accountant and the sampling of every ε of a curve: DP-SGD's default ones
#: (:class:`learning.train.TrainConfig`).
_ACCOUNTANT, _SAMPLING = "rdp", "fixed"

_ARRAYS = (
    ("epsilon", 3),
    ("accuracy_local", 3),
    ("accuracy_federated", 3),
    ("accuracy_alone", 2),
    ("accuracy_federated_nonprivate", 2),
    ("train_sizes", 2),
)


def t_interval(samples: Sequence[float] | np.ndarray, level: float = 0.95) -> tuple[float, float]:
    r"""Student-t confidence interval of a mean: :math:`\bar x \pm t_{n-1,(1+\ell)/2}\, s/\sqrt n`.

    NaN bounds for fewer than two samples.
    """
    x = np.asarray(samples, dtype=np.float64)
    mean = float(x.mean())
    if x.size < 2:
        return math.nan, math.nan
    half = float(stats.t.ppf(0.5 + level / 2, x.size - 1) * x.std(ddof=1) / math.sqrt(x.size))
    return mean - half, mean + half


@dataclass(frozen=True, eq=False)
class PrivacyCurve:
    """Every measurement of :func:`measure` (arrays indexed [seed, noise level, client]).

    Attributes
    ----------
    settings
        The training settings (:data:`DEFAULTS`' keys).
    noise, seeds
        The noise multipliers (ascending) and the seeds.
    epsilon
        Each client's ε at ``settings["delta"]``, shape (S, K, N).
    accuracy_local, accuracy_federated
        Test accuracy of each client's DP-SGD model trained alone / by FedAvg, shape (S, K, N).
    accuracy_alone, accuracy_federated_nonprivate
        The same without DP, shape (S, N).
    train_sizes
        Each client's number of training examples (FedAvg's weights), shape (S, N).
    seconds
        Wall-clock time of the measurement.
    """

    settings: Mapping[str, Any]
    noise: tuple[float, ...]
    seeds: tuple[int, ...]
    epsilon: np.ndarray
    accuracy_local: np.ndarray
    accuracy_federated: np.ndarray
    accuracy_alone: np.ndarray
    accuracy_federated_nonprivate: np.ndarray
    train_sizes: np.ndarray
    seconds: float = 0.0

    def __post_init__(self) -> None:
        """Check the arrays' shapes and the noise levels; the arrays become float64.

        Raises
        ------
        ValueError
            An array not of shape (seeds, noise levels, clients) or (seeds, clients), no
            clients, or ``noise`` not positive and strictly increasing.
        """
        s, k = len(self.seeds), len(self.noise)
        n = np.asarray(self.accuracy_alone).shape[-1] if np.ndim(self.accuracy_alone) else 0
        for name, ndim in _ARRAYS:
            arr = np.asarray(getattr(self, name), dtype=np.float64)
            want = (s, k, n) if ndim == 3 else (s, n)
            if arr.shape != want or n == 0:
                raise ValueError(
                    f"{name} must have shape {want} (seeds, noise levels, clients), got {arr.shape}"
                )
            object.__setattr__(self, name, arr)
        z = np.asarray(self.noise, dtype=np.float64)
        if k < 1 or not np.all(np.isfinite(z)) or np.any(z <= 0) or np.any(np.diff(z) <= 0):
            raise ValueError(
                f"noise must be positive and strictly increasing, got {list(self.noise)}"
            )

    @property
    def accounting(self) -> dict[str, str]:
        """The accountant, sampling and adjacency of :attr:`epsilon`.

        :func:`econ.privacy.accountants.accounting` at the smallest sampling rate.
        """
        from econ.privacy.accountants import accounting

        rate = min(1.0, float(self.settings["batch_size"]) / float(self.train_sizes.max()))
        return accounting(_ACCOUNTANT, _SAMPLING, rate)

    @property
    def n_clients(self) -> int:
        """The number of clients :math:`N`."""
        return int(self.accuracy_alone.shape[1])

    def summary(self) -> list[dict[str, Any]]:
        """One row per (noise level, training).

        The row holds the means over seeds, a 95% t-interval over seeds of the federation's mean
        accuracy, and each client's mean accuracy and ε.

        The non-private references are the rows with ``noise`` 0 and ``epsilon`` infinite
        (``epsilon_why`` says so). With one seed there is no interval: ``ci_low`` and
        ``ci_high`` are ``None`` beside ``ci_why``.
        """
        rows = []
        for training, private, reference in (
            ("local", self.accuracy_local, self.accuracy_alone),
            ("federated", self.accuracy_federated, self.accuracy_federated_nonprivate),
        ):
            levels = [(0.0, reference, np.full(reference.shape, np.inf))]
            levels += [(z, private[:, j], self.epsilon[:, j]) for j, z in enumerate(self.noise)]
            for z, acc, eps in levels:
                federation = acc.mean(axis=1)  # per seed
                low, high = t_interval(federation)
                per_client_eps = eps.mean(axis=0)
                row: dict[str, Any] = {
                    "training": training,
                    "noise": float(z),
                    "epsilon": float(per_client_eps.mean()),
                    "epsilon_min": float(per_client_eps.min()),
                    "epsilon_max": float(per_client_eps.max()),
                    "accuracy": float(federation.mean()),
                    "ci_low": low,
                    "ci_high": high,
                    "client_accuracy": acc.mean(axis=0).tolist(),
                    "client_epsilon": per_client_eps.tolist(),
                }
                if z == 0:
                    row["epsilon_why"] = NO_DP
                if len(self.seeds) < 2:
                    row |= {"ci_low": None, "ci_high": None, "ci_why": ONE_SEED}
                rows.append(row)
        return rows

    def to_dict(self) -> dict[str, Any]:
        """JSON-ready: settings, measurements, accounting and summary (infinite ε as ``None``)."""
        return plain(
            {
                "kind": CURVE_KIND,
                "settings": dict(self.settings),
                "noise": list(self.noise),
                "seeds": list(self.seeds),
                "clients": self.n_clients,
                **{name: getattr(self, name) for name, _ in _ARRAYS},
                "seconds": self.seconds,
                "accounting": self.accounting,
                "summary": self.summary(),
            }
        )

    def to_frame(self) -> Any:
        """The summary as a pandas DataFrame (needs pandas)."""
        import pandas as pd

        return pd.DataFrame(self.summary())

    def save(self, path: str | os.PathLike[str]) -> Path:
        """Write :meth:`to_dict` as strict JSON to ``path``."""
        out = Path(path)
        out.write_text(json.dumps(self.to_dict(), allow_nan=False, indent=1))
        return out

    @classmethod
    def from_dict(cls, data: Mapping[str, Any], source: str = "curve") -> PrivacyCurve:
        """Inverse of :meth:`to_dict`; a ``ValueError`` naming ``source`` if it is not a curve."""
        if not isinstance(data, Mapping) or data.get("kind") != CURVE_KIND:
            raise ValueError(f"{source} is not a privacy curve (kind {CURVE_KIND!r} expected)")
        missing = [k for k in ("settings", "noise", "seeds", *dict(_ARRAYS)) if k not in data]
        if missing:
            raise ValueError(f"{source} is not a privacy curve: missing {', '.join(missing)}")
        try:
            return cls(
                settings=dict(data["settings"]),
                noise=tuple(float(z) for z in data["noise"]),
                seeds=tuple(int(s) for s in data["seeds"]),
                **{name: np.asarray(data[name], dtype=np.float64) for name, _ in _ARRAYS},
                seconds=float(data.get("seconds", 0.0)),
            )
        except (TypeError, ValueError) as exc:
            raise ValueError(f"{source}: {exc}") from None

    @classmethod
    def load(cls, path: str | os.PathLike[str]) -> PrivacyCurve:
        """Read a curve written by :meth:`save`."""
        return cls.from_dict(read_json(path, "curve file"), str(Path(path)))


@functools.lru_cache(maxsize=4096)
def _epsilon(noise: float, steps: int, batch: int, n_train: int, delta: float) -> float:
    """ε of one client, as :attr:`learning.train.TrainResult.epsilon` accounts it."""
    from econ.privacy.accountants import accountant_epsilon

    return accountant_epsilon(
        noise,
        delta,
        1.0,
        compositions=steps,
        accountant=_ACCOUNTANT,
        sampling_rate=batch / n_train,
        sampling=_SAMPLING,
        dataset_size=n_train,
    )


def _check_noise(noise: Sequence[float]) -> tuple[float, ...]:
    z = sorted(float(x) for x in noise)
    if not z or any(not (math.isfinite(x) and x > 0) for x in z) or len(set(z)) != len(z):
        raise ValueError(
            f"noise must be distinct positive finite noise multipliers, got {list(noise)}"
        )
    return tuple(z)


def _check_sizes(n_seeds: int, n_levels: int, cfg: Mapping[str, Any]) -> None:
    """Refuse a run longer than :data:`MAX_STEPS` or results beyond memory, before any work."""
    from econ.validation import fits_in_memory

    for name in ("clients", "rounds", "local_steps", "batch_size"):
        if (
            isinstance(cfg[name], bool)
            or not isinstance(cfg[name], (int, np.integer))
            or cfg[name] < 1
        ):
            raise ValueError(f"{name} must be an integer >= 1, got {cfg[name]!r}")
    trainings = 2 + 2 * n_levels  # local and federated, at every noise level and without DP
    steps = n_seeds * trainings * cfg["rounds"] * cfg["local_steps"]
    if steps > MAX_STEPS:
        raise ValueError(
            f"seeds={n_seeds} x {trainings} trainings ({n_levels} noise level(s), local and "
            f"federated, and both without DP) x rounds={cfg['rounds']} x "
            f"local_steps={cfg['local_steps']} is {steps:.3g} SGD steps per client, more than "
            f"{MAX_STEPS:.0e}"
        )
    fits_in_memory(
        f"seeds={n_seeds} with {n_levels} noise level(s) and clients={cfg['clients']}",
        8.0 * n_seeds * cfg["clients"] * (3 * n_levels + 3) + 64.0 * n_seeds,
    )


def _check_data(cfg: Mapping[str, Any], data_dir: str | os.PathLike[str] | None) -> None:
    r"""Refuse clients or batches the data set cannot fill, and batches beyond memory.

    With :math:`N` examples and :math:`K` clients the smallest client holds at most
    :math:`\lfloor N/K\rfloor`, and DP-SGD draws ``batch_size`` distinct examples of it a
    step (:func:`learning.dp.sample_subsets`, whose keys take
    :math:`8 \cdot` ``local_steps`` :math:`\cdot N` bytes a round).
    """
    from econ.validation import fits_in_memory
    from learning.data import load_dataset

    n = len(load_dataset(cfg["dataset"], data_dir=data_dir, seed=0))
    clients, batch = cfg["clients"], cfg["batch_size"]
    if clients > n:
        raise ValueError(
            f"clients={clients} is more than the {n} examples of dataset {cfg['dataset']!r}"
        )
    if batch > n // clients:
        raise ValueError(
            f"batch_size={batch} is more than the {n // clients} examples the smallest of "
            f"clients={clients} clients holds at most ({n} examples of dataset "
            f"{cfg['dataset']!r}); DP-SGD draws a batch of distinct examples"
        )
    fits_in_memory(
        f"local_steps={cfg['local_steps']} with clients={clients} and batch_size={batch} on "
        f"{n} examples",
        8.0 * cfg["local_steps"] * (n + 2 * clients * batch),
    )


def measure(
    noise: Sequence[float],
    seeds: Sequence[int] | int = 3,
    *,
    device: str | None = None,
    data_dir: str | os.PathLike[str] | None = None,
    progress: Callable[[str], None] | None = None,
    **settings: Any,
) -> PrivacyCurve:
    """Measure the (ε, accuracy) curve of local-only and federated DP-SGD training.

    Parameters
    ----------
    noise
        Noise multipliers z > 0 (sorted on return).
    seeds
        The seeds, or their number (then 0, 1, ...). Each seed fixes the clients' data split,
        the initial model and the training randomness, shared by every run of that seed.
    settings
        Overrides of :data:`DEFAULTS` (``dataset``, ``model``, ``partition``, ``clients``,
        ``rounds``, ``local_steps``, ``batch_size``, ``lr``, ``momentum``, ``max_grad_norm``,
        ``delta``).
    progress
        Called with a short description before every training run.

    Raises
    ------
    ValueError
        Before any training, for a bad noise list, seed list or setting, a run of more than
        :data:`MAX_STEPS` SGD steps, more clients than examples, a batch larger than the
        smallest client can hold, or arrays beyond memory.
    """
    unknown = sorted(set(settings) - set(DEFAULTS))
    if unknown:
        raise ValueError(f"unknown settings {unknown}; allowed: {sorted(DEFAULTS)}")
    cfg = {**DEFAULTS, **settings}
    levels = _check_noise(noise)
    if isinstance(seeds, int) and seeds < 1:
        raise ValueError(f"seeds must be at least 1, got {seeds}")
    n_seeds = seeds if isinstance(seeds, int) else len(seeds)
    _check_sizes(n_seeds, len(levels), cfg)
    seed_list = tuple(range(seeds)) if isinstance(seeds, int) else tuple(int(s) for s in seeds)
    if not seed_list or len(set(seed_list)) != len(seed_list):
        raise ValueError(f"seeds must be distinct integers, got {list(seed_list)}")

    def config(algorithm: str, seed: int, z: float | None) -> TrainConfig:
        return TrainConfig(
            algorithm=algorithm,
            dataset=cfg["dataset"],
            partition=cfg["partition"],
            model=cfg["model"],
            clients=cfg["clients"],
            rounds=cfg["rounds"],
            local_steps=cfg["local_steps"],
            batch_size=cfg["batch_size"],
            lr=cfg["lr"],
            momentum=cfg["momentum"],
            eval_every=cfg["rounds"],
            seed=seed,
            dp_noise_multiplier=z,
            dp_max_grad_norm=cfg["max_grad_norm"],
            dp_delta=cfg["delta"],
        )

    for z in (None, levels[0]):  # every setting checked before the first run
        for algorithm in ("local", "fedavg"):
            config(algorithm, seed_list[0], z)
    _check_data(cfg, data_dir)
    started = time.perf_counter()
    s, k, n = len(seed_list), len(levels), int(cfg["clients"])
    eps, acc_local, acc_fed = np.zeros((s, k, n)), np.zeros((s, k, n)), np.zeros((s, k, n))
    alone, fed0, sizes = np.zeros((s, n)), np.zeros((s, n)), np.zeros((s, n))

    def run(algorithm: str, seed: int, z: float | None) -> Any:
        if progress is not None:
            noise_text = "no DP" if z is None else f"noise {z:g}"
            progress(f"seed {seed}, {algorithm}, {noise_text}")
        result = train(config(algorithm, seed, z), device=device, data_dir=data_dir)
        if result.accuracy is None:
            raise ValueError(f"dataset {cfg['dataset']!r} is not a classification task")
        return result

    for a, seed in enumerate(seed_list):
        # a private run first: it refuses clients smaller than a batch before its first step
        for j, z in enumerate(levels):
            local = run("local", seed, z)
            acc_local[a, j] = local.accuracy
            sizes[a] = [c.n_train for c in local.federation.clients]
            steps = cfg["rounds"] * cfg["local_steps"]
            eps[a, j] = [
                _epsilon(z, steps, cfg["batch_size"], int(m), cfg["delta"]) for m in sizes[a]
            ]
            acc_fed[a, j] = run("fedavg", seed, z).accuracy
        alone[a] = run("local", seed, None).accuracy
        fed0[a] = run("fedavg", seed, None).accuracy
    return PrivacyCurve(
        settings=cfg,
        noise=levels,
        seeds=seed_list,
        epsilon=eps,
        accuracy_local=acc_local,
        accuracy_federated=acc_fed,
        accuracy_alone=alone,
        accuracy_federated_nonprivate=fed0,
        train_sizes=sizes,
        seconds=time.perf_counter() - started,
    )


def plot(curve: PrivacyCurve, path: str | os.PathLike[str]) -> Path:
    """Accuracy against ε (log scale), local-only and federated, with 95% t-intervals over seeds.

    The non-private accuracies are drawn as horizontal lines.
    """
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    from matplotlib.ticker import NullFormatter

    rows = curve.summary()
    fig, ax = plt.subplots(figsize=(6.5, 4.5))
    for training, colour, marker in (("local", "C0", "o"), ("federated", "C3", "s")):
        private = [r for r in rows if r["training"] == training and r["noise"] > 0]
        x = np.array([r["epsilon"] for r in private])
        y = np.array([r["accuracy"] for r in private])
        err = (
            None
            if any(r["ci_low"] is None for r in private)
            else np.vstack(
                [y - [r["ci_low"] for r in private], [r["ci_high"] for r in private] - y]
            )
        )
        ax.errorbar(
            x, y, yerr=err, fmt=f"-{marker}", color=colour, capsize=3, label=f"{training} DP-SGD"
        )
        for r in private:
            ax.annotate(
                f"z={r['noise']:g}",
                (r["epsilon"], r["accuracy"]),
                fontsize=7,
                textcoords="offset points",
                xytext=(4, 4),
            )
        reference = next(r for r in rows if r["training"] == training and r["noise"] == 0)
        ax.axhline(reference["accuracy"], color=colour, ls=":", lw=1, label=f"{training}, no DP")
    ax.set_xscale("log")
    ticks = sorted({r["epsilon"] for r in rows if r["noise"] > 0})
    ax.xaxis.set_minor_formatter(NullFormatter())
    ax.set_xticks(ticks, [f"{t:.3g}" for t in ticks])
    ax.set_xlabel(
        rf"$\varepsilon$ per client (mean over clients, $\delta$ = {curve.settings['delta']:g})"
    )
    ax.set_ylabel("test accuracy (federation mean)")
    ax.set_title(
        f"{curve.settings['dataset']}, {curve.n_clients} clients, {curve.settings['model']}, "
        f"{len(curve.seeds)} seed(s)" + (" (95% t-intervals)" if len(curve.seeds) > 1 else ""),
        fontsize=9,
    )
    ax.grid(alpha=0.3, which="both")
    ax.legend(fontsize=8)
    fig.tight_layout()
    out = Path(path)
    fig.savefig(out, dpi=120)
    plt.close(fig)
    return out
