"""The outcome of an IP-FL run: accuracies, PMA, the token flows, the final state; its files."""

from __future__ import annotations

import csv
import json
import os
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np

from econ.qualities import METRICS, ModelQualities
from econ.validation import choice
from games.ipfl import Ledger, TokenQualities, opt_outs
from learning.drivers.ipfl.config import IPFLRun
from learning.drivers.ipfl.evaluation import mixture_accuracy, personalise
from learning.engine import Engine, Params, ShardedData
from learning.federation import Federation
from learning.qualities import model_qualities

__all__ = ["IPFLResult"]


@dataclass(frozen=True, slots=True)
class IPFLResult:
    """Outcome of :func:`run_ipfl`.

    ``cluster_accuracy[k][d]`` is the accuracy of cluster model ``k`` on source test
    distribution ``d`` (θ0 upright, θ1 rotated; or class group ``d``). ``history`` holds one
    JSON-ready record per round (balances, selections, contributions, refunds, and every
    ``eval_every`` rounds the cluster accuracies).

    The mechanism's final state is kept: ``models`` are the K cluster models :math:`M_k`
    (stacked), ``weights`` each client's :math:`w_{ik}` (Eq. 8), ``ledger`` the token
    balances and pools, and ``state`` the rest (``"bids"`` (N, K) and ``"selected"`` (one
    array of participants per cluster) of the last round, the contributions ``"psi"`` and
    participation counts ``"omega"`` (K, N), ``"tracker"`` (:math:`Acc_{max}` per cluster,
    Eq. 11), ``"explored"``, ``"improved"``, ``"best"``). ``engine`` and ``federation`` are
    what the models were trained with; :meth:`qualities` turns the clients' personalised
    models into the parties of a market in one call.
    """

    run: IPFLRun
    tokens_start: np.ndarray
    tokens_end: np.ndarray
    cluster_accuracy: np.ndarray
    personalised_accuracy: np.ndarray
    reference_accuracy: np.ndarray
    weights: np.ndarray
    pma: np.ndarray
    never_selected: np.ndarray
    history: tuple[dict[str, Any], ...]
    models: Params
    ledger: Ledger
    state: dict[str, Any]
    engine: Engine
    federation: Federation

    @property
    def opt_out_rate(self) -> float:
        r"""Share of the clients that opt out, :math:`PMA_i \le 0`.

        :func:`games.ipfl.opt_outs` of ``pma`` (Khan et al., §3, Eq. 2 as corrected in
        ``docs/errata.md``, ``ipfl.eq2``).
        """
        return float(opt_outs(self.pma).mean())

    @property
    def personalised_models(self) -> Params:
        r"""Eq. 8's :math:`P_i = \sum_k w_{ik} M_k`, one row per client.

        Only for ``personalize`` ``"param_avg"``; the output mixture has no single parameter
        vector.
        """
        if self.run.personalize != "param_avg":
            raise ValueError(
                f"personalize={self.run.personalize!r} predicts with the output mixture, "
                "which has no parameters of its own; personalised_models needs 'param_avg'"
            )
        return personalise(self.models, self.weights)

    def token_qualities(self, n_eval: Sequence[int] | None = None) -> TokenQualities:
        """Per-client net token flow and PMA, for the econ modules."""
        n = len(self.pma)
        return TokenQualities(
            names=tuple(f"client{i}" for i in range(n)),
            net_tokens=self.tokens_end - self.tokens_start,
            pma=self.pma,
            personalised_accuracy=self.personalised_accuracy,
            n_eval=np.ones(n, dtype=np.int64) if n_eval is None else np.asarray(n_eval),
        )

    def qualities(
        self,
        target: tuple[np.ndarray, np.ndarray] | None = None,
        *,
        metric: str = "accuracy",
    ) -> ModelQualities:
        """Every client's personalised model as a party of a market: its quality on ``target``.

        Parameters
        ----------
        target : (x, y), optional
            The common target set the consumers care about; by default the federation's
            (``target_fraction`` of the data, balanced over the sources).
        metric : {"accuracy", "1-loss"}
            See :mod:`learning.qualities`; the output mixture (``personalize=
            "output_mixture"``) is measured by accuracy only.

        Examples
        --------
        ``econ.market.market_round(result.qualities())`` is the market the run creates.
        """
        choice("metric", metric, METRICS)
        if target is None:
            if self.federation.target is None:
                raise ValueError("this run's federation has no common target set: pass target")
            target = self.federation.target
        x, y = target
        if len(x) == 0 or len(x) != len(y):
            raise ValueError(
                f"target must be (x, y) of equal non-zero lengths, got {len(x)} and {len(y)}"
            )
        n = len(self.pma)
        names = [f"client{i}" for i in range(n)]
        if self.run.personalize == "param_avg":
            return model_qualities(
                self.engine,
                self.personalised_models,
                (np.asarray(x), np.asarray(y)),
                n_classes=self.federation.n_classes,
                names=names,
                metric=metric,
            )
        if metric != "accuracy":
            raise ValueError(
                f"metric must be 'accuracy' for the output mixture's predictions, got {metric!r}"
            )
        device = next(iter(self.models.values())).device
        data = ShardedData.from_arrays([np.asarray(x)] * n, [np.asarray(y)] * n, device)
        accuracy = mixture_accuracy(self.engine, self.models, self.weights, data)
        return ModelQualities(
            names=tuple(names),
            quality=accuracy,
            metric="accuracy",
            n_eval=np.full(n, len(x), dtype=np.int64),
        )

    def summary(self) -> dict[str, Any]:
        """The command line's result object."""
        return {
            "tokens_start": self.tokens_start.tolist(),
            "tokens_end": self.tokens_end.tolist(),
            "cluster_accuracy": self.cluster_accuracy.tolist(),
            "pma_mean": float(self.pma.mean()),
            "pma_positive_share": float(np.mean(self.pma > 0)),
            "opt_out_rate": self.opt_out_rate,
            "personalised_accuracy_mean": float(self.personalised_accuracy.mean()),
        }

    def save(self, directory: str | os.PathLike[str]) -> list[Path]:
        """Write ``ipfl_rounds.csv`` (one row per round) and ``ipfl_result.json``."""
        out = Path(directory)
        out.mkdir(parents=True, exist_ok=True)
        rows = [
            {
                "round": h["round"],
                "paid": h["paid"],
                "tokens_mean": float(np.mean(h["tokens"])),
                "tokens_min": float(np.min(h["tokens"])),
                "tokens_max": float(np.max(h["tokens"])),
                "pool_total": float(np.sum(h["pools"])),
                "selected": ";".join(" ".join(map(str, s)) for s in h["selected"]),
                "refund": " ".join(f"{u:.4g}" for u in h["refund"]),
                "bidder_purity": h["bidder_purity"],
                "cluster_accuracy": json.dumps(h.get("cluster_accuracy")),
            }
            for h in self.history
        ]
        csv_path = out / "ipfl_rounds.csv"
        with csv_path.open("w", newline="") as fh:
            writer = csv.DictWriter(fh, fieldnames=list(rows[0]))
            writer.writeheader()
            writer.writerows(rows)
        json_path = out / "ipfl_result.json"
        payload = {
            "run": self.run.to_dict(),
            **self.summary(),
            "personalised_accuracy": self.personalised_accuracy.tolist(),
            "reference_accuracy": self.reference_accuracy.tolist(),
            "pma": self.pma.tolist(),
            "history": list(self.history),
        }
        json_path.write_text(json.dumps(payload))
        return [csv_path, json_path]
