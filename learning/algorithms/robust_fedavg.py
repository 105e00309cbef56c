"""Robust FedAvg: FedAvg whose server combines the submitted models with a robust aggregator.

The aggregator (coordinate-wise median, trimmed mean of Yin et al. 2018, or Krum of Blanchard et al.
2017) replaces the mean; the defence of Werner (2024), §2.4 "Defense against Byzantine attacks",
against the attacks of :mod:`learning.byzantine`.
"""

from __future__ import annotations

import numpy as np

from econ.validation import choice, non_negative
from learning import byzantine
from learning.algorithms.averaging import FedAvg, GroupAveragingState
from learning.algorithms.base import Context, register
from learning.all_pairs import flatten, unflatten
from learning.engine import LocalResult

__all__ = ["RobustFedAvg"]


@register
class RobustFedAvg(FedAvg):
    """FedAvg whose server combines the submitted models with a robust ``aggregator``.

    The ``aggregator`` of :data:`learning.byzantine.AGGREGATORS` replaces the mean; ``n_bad`` is
    the number of values trimmed per side (trimmed mean) or the attackers Krum allows for.
    """

    name = "robust-fedavg"

    def __init__(
        self, ctx: Context, aggregator: str = "median", n_bad: int = 0, finetune_steps: int = 0
    ) -> None:
        super().__init__(ctx, finetune_steps=finetune_steps)
        self.aggregator = choice("aggregator", aggregator, tuple(byzantine.AGGREGATORS))
        self.n_bad = int(non_negative("n_bad", n_bad))

    def aggregate(
        self, state: GroupAveragingState, clients: np.ndarray, trained: LocalResult
    ) -> GroupAveragingState:
        """The global model is the robust aggregate of the participants' trained models.

        The aggregator runs on the flattened models, one row per participant, without the data
        weights of FedAvg's mean.

        References
        ----------
        Yin, Chen, Ramchandran and Bartlett (2018), "Byzantine-Robust Distributed Learning:
        Towards Optimal Statistical Rates" (median, trimmed mean); Blanchard, El Mhamdi,
        Guerraoui and Stainer (2017), "Machine Learning with Adversaries: Byzantine Tolerant
        Gradient Descent" (Krum); Werner (2024), ch. 2, §2.4.
        """
        combined = byzantine.AGGREGATORS[self.aggregator](flatten(trained.params), self.n_bad)
        return {**state, "groups": unflatten(combined[None], state["groups"])}
