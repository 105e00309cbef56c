r"""HypCluster (Mansour et al. 2020): alternate assigning clients and training hypotheses.

Each client is assigned to the hypothesis with the lowest loss on its *whole* training set,

.. math::

    \hat j_i = \arg\min_j \frac{1}{m_i} \sum_{b \in D_i} \ell(h_j; b),

and training each hypothesis on its assigned clients' data (local SGD, then the data-weighted
average per hypothesis). It is the centralised analogue of IFCA's option II (Werner et al. 2023,
§2.1, Example 2 treats them together) and differs from :class:`~learning.algorithms.ifca.IFCA` only
in the assignment, which uses the full local loss rather than one minibatch.
"""

from __future__ import annotations

import numpy as np
import torch

from learning.algorithms.base import Context, register
from learning.algorithms.ifca import IFCA
from learning.engine import Params, select

__all__ = ["HypCluster"]


@register
class HypCluster(IFCA):
    """HypCluster with ``n_clusters`` hypotheses; see the module docstring."""

    name = "hypcluster"
    client_parameters = ("n_clusters",)

    def __init__(self, ctx: Context, n_clusters: int | None = None, init: str = "random") -> None:
        super().__init__(ctx, n_clusters=n_clusters, option="model", init=init)

    def choose(
        self,
        clusters: Params,
        clients: np.ndarray,
        rng: np.random.Generator,
        ctx: Context | None = None,
    ) -> torch.Tensor:
        r"""Each of ``clients`` picks the hypothesis with the lowest loss on its whole training set.

        .. math::

            \hat j_i = \arg\min_j \frac{1}{m_i} \sum_{b \in D_i} \ell(h_j; b),

        evaluated on ``ctx`` (the algorithm's own context when None); unlike IFCA's
        minibatch choice this draws nothing from ``rng``.

        References
        ----------
        Mansour, Mohri, Ro and Suresh (2020), "Three Approaches for Personalization with
        Applications to Federated Learning", HypCluster; Werner et al. (2023), "Provably
        Personalized and Robust Federated Learning", §2.1, Example 2.
        """
        ctx = self.ctx if ctx is None else ctx
        k, n = self.n_clusters, clients.size
        every = select(clusters, np.repeat(np.arange(k), n))
        loss = ctx.engine.evaluate(every, ctx.train, np.tile(clients, k)).loss
        return torch.as_tensor(loss.reshape(k, n).argmin(axis=0), device=ctx.device)
