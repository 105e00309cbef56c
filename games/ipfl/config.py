"""IP-FL's knobs (:class:`IPFLConfig`) and the array types the mechanism passes around.

Khan et al., "IP-FL: Incentivized and Personalized Federated Learning" (arXiv 2304.07514 v4),
§4.2-4.3 and App. C; the defaults the paper leaves open are ours unless marked RC (the authors'
reference code, see :mod:`games.ipfl`).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import numpy as np
from numpy.typing import NDArray

from econ.outputs import plain
from econ.validation import choice, in_interval, non_negative, positive, positive_int

FloatArray = NDArray[np.float64]


BoolArray = NDArray[np.bool_]


IntArray = NDArray[np.int64]


_REWARD_MODES = ("rank_lex", "code_split")


_TH_MODES = ("raw", "normalized")


@dataclass(frozen=True, slots=True, kw_only=True)
class IPFLConfig:
    r"""Knobs of the mechanism.

    §4.2-4.3 and App. C give no values; the defaults are ours unless marked RC.

    Parameters
    ----------
    tok_init
        Equal starting balance of every client (App. C "opportunity fairness"; RC 100).
    price
        Posted price :math:`\tau_p` per cluster per round (RC 1).
    eta_tok, gamma_acc
        Cap :math:`\eta` of the refund fraction and the relative-improvement threshold
        :math:`\gamma` of Eq. 11.
    th_bid, th_mode
        Bid threshold :math:`Th` of Alg. 2, on raw accuracy (``"raw"``) or on normalised
        importance weights (``"normalized"``).
    incentive
        False gives the "NI" ablation (App. D.1): one uniformly random cluster per client.
    perf_share, rand_high, rand_low
        Total performance budget (share of N, split over clusters) and the exploration
        budget that starts at ``rand_high`` of N and shrinks to the floor ``rand_low`` (§4.3).
    integer_tokens
        Floor every transfer and keep the remainder in the pool (RC).
    reward_mode
        ``"rank_lex"`` (Eq. 13 corrected) or ``"code_split"`` (RC two-pass rewards).
    code_compat
        Reference-code behaviours: step refund with the pool override, paid to
        every client ever associated with the tier, split rewards, integer tokens, fixed
        ``code_perf`` + ``code_rand`` slots per tier (one moves from random to performance at
        round ``code_shift_round``), random extras from bidders, ascending sort after a
        non-improving round, uniform :math:`\lambda` in :math:`\psi`. (The driver adds the
        RC's local optimiser, Adadelta.)
    code_perf, code_rand, code_shift_round
        The RC slot schedule (``iter_avg`` config: 5 + 2 per tier, shift at round 100).
    code_bugs
        Also the RC's bugs: the last selected client pays for
        everyone; ``Acc_max`` reset to 0 after a non-improving round; the reward passes of a
        round stop at the first tier whose pool is empty, skipping every later tier (see
        :func:`settle_cluster`). Only with ``code_compat``.

    References
    ----------
    Khan et al., IP-FL: Incentivized and Personalized Federated Learning, §4.2 (Eq. 9-13), §4.3
    (scheduler), Alg. 1-2, App. C (opportunity fairness), App. D.1 (the NI ablation).
    """

    tok_init: float = 100.0
    price: float = 1.0
    eta_tok: float = 0.5
    gamma_acc: float = 0.05
    th_bid: float = 0.9
    th_mode: str = "raw"
    incentive: bool = True
    perf_share: float = 0.20
    rand_high: float = 0.20
    rand_low: float = 0.05
    integer_tokens: bool = False
    reward_mode: str = "rank_lex"
    code_compat: bool = False
    code_bugs: bool = False
    code_perf: int = 5
    code_rand: int = 2
    code_shift_round: int = 100

    def __post_init__(self) -> None:
        """Check every knob's range and apply ``code_compat``.

        ``code_compat`` forces integer tokens and the ``"code_split"`` rewards; ``code_bugs`` needs
        ``code_compat``.
        """
        non_negative("tok_init", self.tok_init)
        positive("price", self.price)
        in_interval("eta_tok", self.eta_tok, 0.0, 1.0)
        in_interval("gamma_acc", self.gamma_acc, 0.0, 1.0, low_open=True)
        in_interval("th_bid", self.th_bid, 0.0, 1.0)
        choice("th_mode", self.th_mode, _TH_MODES)
        in_interval("perf_share", self.perf_share, 0.0, 1.0)
        in_interval("rand_low", self.rand_low, 0.0, 1.0)
        in_interval("rand_high", self.rand_high, float(self.rand_low), 1.0)
        choice("reward_mode", self.reward_mode, _REWARD_MODES)
        positive_int("code_perf", self.code_perf)
        for name in ("code_rand", "code_shift_round"):
            value = getattr(self, name)
            if isinstance(value, bool) or not isinstance(value, int) or value < 0:
                raise ValueError(f"{name} must be an integer >= 0, got {value!r}")
        if self.code_bugs and not self.code_compat:
            raise ValueError("code_bugs needs code_compat=True")
        if self.code_compat:
            object.__setattr__(self, "integer_tokens", True)
            object.__setattr__(self, "reward_mode", "code_split")

    def to_dict(self) -> dict[str, Any]:
        """JSON-ready copy.

        References
        ----------
        Khan et al., IP-FL: Incentivized and Personalized Federated Learning, §4.2-4.3 (the knobs
        it copies).
        """
        return plain({name: getattr(self, name) for name in self.__slots__})
