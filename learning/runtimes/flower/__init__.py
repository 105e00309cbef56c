"""collabecon's algorithms on Flower (Beutel et al. 2020): ServerApp strategy and ClientApp.

Every algorithm with a client half (:class:`learning.algorithms.base.SplitAlgorithm`) runs
as a Flower federation: the nodes run its ``client_update`` on their own partition, the
server its ``server_update`` on the replies (:mod:`learning.runtimes.flower.apps`). For a given seed
the models equal those of the in-process engine (:mod:`learning.runtimes.flower.streams` explains how
a node draws its own row of the batched minibatch draw). :mod:`learning.runtimes.flower.simulation`
runs experiments in Flower's simulation engine; ``docs/flower.md`` gives the commands, the
deployment on separate processes and machines, and where conventions differ from Flower's.
A round of several exchanges (CoBo: the pair gradients at midpoints, then one gradient per
local step) runs through the same strategy
(:class:`learning.algorithms.base.MultiExchange`). The mechanisms run with their own server
loop on the same ClientApp: IP-FL's token economy with the ledger on the server
(:mod:`learning.runtimes.flower.ipfl`) and defection-free collaboration between two firms with
the mediator on the server (:mod:`learning.runtimes.flower.duopoly`), and among n firms
under any of their schemes (:mod:`learning.runtimes.flower.n_firms`).
:mod:`learning.runtimes.flower.compose` puts that mediator around a Flower App of one's own:
a strategy wrapper around any inner Flower strategy and a ClientApp mod that reports each
model's quality; :mod:`learning.runtimes.flower.compose_ipfl` puts IP-FL's token ledger (one
cluster) around any inner Flower strategy, with a ClientApp mod that profiles the round's
model.

The Flower modules import ``flwr`` (``pip install -e ".[flower]"``);
:func:`require_flower` says so in one line when it is missing.
"""

from __future__ import annotations

import importlib.util

__all__ = ["require_flower"]


def require_flower() -> None:
    """Raise ``ValueError`` when ``flwr`` is not installed."""
    if importlib.util.find_spec("flwr") is None:
        raise ValueError(
            'Flower is not installed: pip install -e ".[flower]" (flwr[simulation]>=1.42)'
        )
