r"""IP-FL's driver: K cluster models on the batched engine, steered by the token mechanism.

The mechanism (bids, scheduler, ledger, contributions, PMA) lives in :mod:`games.ipfl`; this
module trains and evaluates. One round (Khan et al., §4 and Alg. 1):

1. every client evaluates the K cluster models on its validation data (importance weights,
   Eq. 7) and bids (Alg. 2); round 0 is a random bootstrap without token flows;
2. the scheduler picks the participants of each cluster; they pay the price into its pool;
3. each participant trains its cluster's model (all pairs at once on the engine); each
   cluster model becomes the FedAvg of its participants;
4. the profiler scores each participant by the first-order Shapley value (Eq. 16) with the
   gradient of the loss on a hold-out drawn from the participants' validation data;
5. the pool pays the refund (Eq. 11-12) and the rank rewards (Eq. 13).

At the end every client builds its personalised model :math:`P_i = \sum_k w_{ik} M_k`
(Eq. 8) and PMA is measured against FedAvg trained with the same budget (Eq. 1).

Options beyond the paper's defaults: FedSoft's importance weights (share of a client's
validation points on which :math:`M_k` has the smallest loss), the output-mixture
personalisation :math:`p_i(y|x) = \sum_k w_{ik} p_k(y|x)` (not IP-FL's Eq. 8; report it
separately), the per-class-F1 cold start of App. B, and the reference code's Adadelta.

The package: :mod:`~learning.drivers.ipfl.config` (the run's settings), :mod:`~learning.drivers.ipfl.setup`
(the federation on the device), :mod:`~learning.drivers.ipfl.driver` (the round loop, one for
the in-process driver and the Flower federation), :mod:`~learning.drivers.ipfl.clients` (the
clients' work in a round), :mod:`~learning.drivers.ipfl.training`, :mod:`~learning.drivers.ipfl.evaluation`,
:mod:`~learning.drivers.ipfl.checkpoint`, :mod:`~learning.drivers.ipfl.result`.
"""

from __future__ import annotations

from learning.drivers.ipfl.config import PARTITIONS, IPFLRun
from learning.drivers.ipfl.driver import run_ipfl
from learning.drivers.ipfl.evaluation import personalise
from learning.drivers.ipfl.result import IPFLResult
from learning.drivers.ipfl.setup import Setup, build_setup

__all__ = ["PARTITIONS", "IPFLResult", "IPFLRun", "Setup", "build_setup", "personalise", "run_ipfl"]
