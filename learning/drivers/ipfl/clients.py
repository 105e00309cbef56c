"""The clients' work in an IP-FL round (Khan et al., Alg. 1).

What the round loop of :mod:`learning.drivers.ipfl.driver` asks of them, and its in-process
implementation on the batched engine (:class:`InProcessClients`). The Flower federation
implements the same protocol with the data on the nodes (:mod:`learning.runtimes.flower.ipfl`).
"""

from __future__ import annotations

from abc import ABC, abstractmethod
from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np

from games.ipfl import Opening
from learning.drivers.ipfl.config import IPFLRun
from learning.drivers.ipfl.evaluation import (
    cluster_accuracy,
    holdout_gradient,
    importance,
    personalised_accuracy,
)
from learning.drivers.ipfl.setup import Setup
from learning.drivers.ipfl.training import local_train
from learning.engine import Engine, LocalResult, Params, select

__all__ = ["IPFLClients", "InProcessClients"]


@dataclass
class IPFLClients(ABC):
    """The :math:`N` clients of an IP-FL federation as the round loop sees them.

    Attributes
    ----------
    engine : Engine
        Evaluates the cluster models where the loop runs.
    sizes : ndarray of float64
        Every client's training-set size :math:`n_i` (FedAvg and profiler weights).
    sources : tuple of (x, y)
        The source test distributions the cluster models are scored on.
    unseen : ndarray of int64
        Clients never scheduled.
    majority : ndarray of int64 or None
        Each client's majority source, where the loop knows it (the purity of the bids);
        None where the clients keep it.
    """

    engine: Engine
    sizes: np.ndarray
    sources: Sequence[tuple[np.ndarray, np.ndarray]]
    unseen: np.ndarray
    majority: np.ndarray | None

    @property
    def available(self) -> np.ndarray:
        """(N,) bool: the clients the scheduler may pick."""
        out = np.ones(self.sizes.size, dtype=bool)
        out[self.unseen] = False
        return out

    def cluster_accuracy(self, models: Params) -> np.ndarray:
        """(K, D): accuracy of every cluster model on every source distribution."""
        return cluster_accuracy(self.engine, models, self.sources)

    @abstractmethod
    def scores(self, models: Params) -> np.ndarray:
        r"""(N, K): every client's importance :math:`\upsilon_{ik}` of every cluster model.

        Each importance is measured on the client's validation data (Eq. 7) and is the input
        of its bids (Alg. 2).
        """

    @abstractmethod
    def train(self, start: Params, cs: np.ndarray, rng: np.random.Generator) -> LocalResult:
        """Local training of payer ``cs[j]`` from row ``j`` of ``start`` (its cluster's model).

        Minibatches come from ``rng`` as :meth:`learning.algorithms.Context.fit` draws them;
        ``loss`` holds one mean loss per payer.
        """

    @abstractmethod
    def profile(
        self, new: Params, opening: Opening, rng: np.random.Generator
    ) -> tuple[np.ndarray, dict[int, np.ndarray]]:
        """The profiler's input (§4.2) after aggregation into ``new``.

        Every payer's accuracy of its cluster's model on its validation data (in the order of
        :meth:`games.ipfl.Opening.participations`), and for every cluster that trained the
        flat gradient of the loss of its model on a hold-out from its payers' validation data
        (``holdout_per_client`` rows each, drawn from ``rng`` cluster by cluster, payer by
        payer).
        """

    @abstractmethod
    def personalised(self, models: Params) -> tuple[np.ndarray, np.ndarray]:
        """Every client's personalised accuracy :math:`f_i` on its test data and its weights.

        The weights are :math:`w_{ik}` (Eq. 8).
        """


@dataclass
class InProcessClients(IPFLClients):
    """All clients in this process, on the batched engine of ``setup``."""

    run: IPFLRun
    setup: Setup

    @classmethod
    def of(cls, run: IPFLRun, setup: Setup) -> InProcessClients:
        """The clients of ``run`` on the federation ``setup``: its engine, sizes and sources."""
        return cls(
            engine=setup.ctx.engine,
            sizes=setup.ctx.train.sizes_numpy().astype(np.float64),
            sources=setup.sources,
            unseen=setup.unseen,
            majority=setup.majority,
            run=run,
            setup=setup,
        )

    def scores(self, models: Params) -> np.ndarray:
        r"""(N, K): every client's importance :math:`\upsilon_{ik}` on its validation data.

        :func:`learning.drivers.ipfl.evaluation.importance` with the run's ``importance``
        (Eq. 7, or FedSoft's argmin-loss shares).
        """
        return importance(self.engine, models, self.setup.val, self.run.importance)

    def train(self, start: Params, cs: np.ndarray, rng: np.random.Generator) -> LocalResult:
        """Local training of the payers ``cs`` from ``start`` on the engine.

        :func:`learning.drivers.ipfl.training.local_train` with the run's local optimiser.
        """
        return local_train(self.run, self.setup.ctx, start, cs, rng)

    def profile(
        self, new: Params, opening: Opening, rng: np.random.Generator
    ) -> tuple[np.ndarray, dict[int, np.ndarray]]:
        """The profiler's input (§4.2), computed on the engine.

        The payers' accuracies come from one evaluation of their cluster models on their
        validation data; each cluster's hold-out gradient from
        :func:`learning.drivers.ipfl.evaluation.holdout_gradient`, cluster by cluster in the
        order of :meth:`games.ipfl.Opening.by_cluster`.
        """
        ks, cs = opening.participations()
        accuracy = self.engine.evaluate(select(new, ks), self.setup.val, cs).accuracy
        assert accuracy is not None
        gradients = {
            c: holdout_gradient(
                self.engine,
                select(new, np.array([c])),
                self.setup.val,
                members,
                self.run.holdout_per_client,
                rng,
            )
            for c, _, members in opening.by_cluster()
        }
        return accuracy, gradients

    def personalised(self, models: Params) -> tuple[np.ndarray, np.ndarray]:
        """Personalised accuracies :math:`f_i` and weights :math:`w_{ik}` (Eq. 8) on the engine.

        :func:`learning.drivers.ipfl.evaluation.personalised_accuracy` with the run's
        ``importance`` and ``personalize``.
        """
        return personalised_accuracy(self.engine, models, self.setup, self.run)
