"""PMA, opt-outs and the seam to the market: :class:`TokenQualities`.

Khan et al., "IP-FL: Incentivized and Personalized Federated Learning" (arXiv 2304.07514 v4), §3,
Eq. 1-2 (Eq. 2 corrected: ``docs/errata.md``, ``ipfl.eq2``).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import numpy as np
from numpy.typing import ArrayLike

from econ.outputs import frame, plain, scalar_or_array
from econ.qualities import ModelQualities
from econ.validation import in_interval, non_negative
from games.ipfl.config import BoolArray, FloatArray, IntArray


def pma(personalised: ArrayLike, reference: ArrayLike) -> FloatArray:
    r"""Eq. 1: :math:`PMA_i = f_i - \rho_i`, in percentage points (accuracies in [0, 1]).

    A float for scalars.

    References
    ----------
    Khan et al., IP-FL: Incentivized and Personalized Federated Learning, §3, Eq. 1.

    Examples
    --------
    >>> round(pma(0.8, 0.75), 6)
    5.0
    >>> pma([0.7, 0.9], [0.75, 0.8]).round(6).tolist()
    [-5.0, 10.0]
    """
    f = in_interval("personalised", personalised, 0.0, 1.0)
    rho = in_interval("reference", reference, 0.0, 1.0)
    points = 100.0 * (np.asarray(f, dtype=np.float64) - np.asarray(rho, dtype=np.float64))
    return scalar_or_array(points, personalised, reference)


def opt_outs(pma_pp: ArrayLike) -> BoolArray:
    r"""Eq. 2 corrected: client :math:`i` opts out iff :math:`PMA_i \le 0`.

    The printed :math:`H(x) = 1[x > 0]` counts the satisfied clients (``docs/errata.md``,
    ``ipfl.eq2``).

    References
    ----------
    Khan et al., IP-FL: Incentivized and Personalized Federated Learning, §3, Eq. 2 (corrected:
    docs/errata.md, ``ipfl.eq2``).

    Examples
    --------
    >>> opt_outs([-5.0, 0.0, 10.0]).tolist()
    [True, True, False]
    """
    return scalar_or_array(np.asarray(pma_pp, dtype=np.float64) <= 0.0, pma_pp)


@dataclass(frozen=True, slots=True, kw_only=True)
class TokenQualities:
    """A client's incentives in IP-FL, for the market and bargaining modules.

    Parameters
    ----------
    names
        One name per client.
    net_tokens
        Tokens at the end minus tokens at the start (the net flow from the mechanism).
    pma
        Personalised-model appeal in percentage points (Eq. 1).
    personalised_accuracy
        Accuracy in [0, 1] of the client's personalised model on its own test set.
    n_eval
        Test examples behind each accuracy.

    References
    ----------
    Khan et al., IP-FL: Incentivized and Personalized Federated Learning, §3, Eq. 1 (PMA) and §4.2,
    Eq. 9-13 (the token flows).
    """

    names: tuple[str, ...]
    net_tokens: FloatArray
    pma: FloatArray
    personalised_accuracy: FloatArray
    n_eval: IntArray

    def __post_init__(self) -> None:
        """Store the fields as read-only arrays, one entry per name; accuracies lie in [0, 1]."""
        names = tuple(str(n) for n in self.names)
        arrays = {
            "net_tokens": np.array(self.net_tokens, dtype=np.float64).reshape(-1),
            "pma": np.array(self.pma, dtype=np.float64).reshape(-1),
            "personalised_accuracy": np.array(
                in_interval("personalised_accuracy", self.personalised_accuracy, 0.0, 1.0),
                dtype=np.float64,
            ).reshape(-1),
            "n_eval": np.array(self.n_eval, dtype=np.int64).reshape(-1),
        }
        for key, arr in arrays.items():
            if arr.shape != (len(names),):
                raise ValueError(
                    f"{key} must have one entry per name ({len(names)}), got {arr.shape}"
                )
            arr.setflags(write=False)
            object.__setattr__(self, key, arr)
        object.__setattr__(self, "names", names)

    def utility(self, price_per_token: float, value_per_point: float = 1.0) -> FloatArray:
        r"""Money-metric gain of participating.

        :math:`v \cdot PMA_i + p_{tok} \cdot \mathrm{net}_i`, with value ``v`` per point of PMA.

        References
        ----------
        Khan et al., IP-FL: Incentivized and Personalized Federated Learning, §3, Eq. 1 and §4.2,
        Eq. 9-13; the money-metric utility is collabecon's own.

        Examples
        --------
        >>> tq = TokenQualities(names=('a', 'b'), net_tokens=[-10.0, 10.0], pma=[5.0, 2.0],
        ...                    personalised_accuracy=[0.8, 0.9], n_eval=[100, 100])
        >>> tq.utility(0.1).tolist()
        [4.0, 3.0]
        """
        p = float(non_negative("price_per_token", price_per_token))
        v = float(non_negative("value_per_point", value_per_point))
        return v * self.pma + p * self.net_tokens

    def individually_rational(self, price_per_token: float, value_per_point: float = 1.0) -> bool:
        r"""True iff participation is individually rational for every client.

        That is, :math:`v \cdot PMA_i + p_{tok}\, \mathrm{net}_i \ge 0` for all :math:`i`.

        References
        ----------
        Khan et al., IP-FL: Incentivized and Personalized Federated Learning, §3, Eq. 1-2 and §4.2,
        Eq. 9-13; the participation condition is collabecon's own.

        Examples
        --------
        >>> tq = TokenQualities(names=('a', 'b'), net_tokens=[-10.0, 10.0], pma=[5.0, 2.0],
        ...                    personalised_accuracy=[0.8, 0.9], n_eval=[100, 100])
        >>> tq.individually_rational(0.1), tq.individually_rational(1.0)
        (True, False)
        """
        return bool(np.all(self.utility(price_per_token, value_per_point) >= 0.0))

    def max_token_price(self, value_per_point: float = 1.0) -> float:
        """The largest token price at which participation stays individually rational for all.

        ``inf`` when no client loses tokens; ``nan`` when IR fails even at price 0.

        References
        ----------
        Khan et al., IP-FL: Incentivized and Personalized Federated Learning, §3, Eq. 1 and §4.2,
        Eq. 9-13; derived here from :meth:`utility`.

        Examples
        --------
        >>> tq = TokenQualities(names=('a', 'b'), net_tokens=[-10.0, 10.0], pma=[5.0, 2.0],
        ...                    personalised_accuracy=[0.8, 0.9], n_eval=[100, 100])
        >>> tq.max_token_price()
        0.5
        """
        base = value_per_point * self.pma
        if np.any(base < 0):
            return float("nan")
        losing = self.net_tokens < 0
        if not np.any(losing):
            return float("inf")
        return float(np.min(base[losing] / -self.net_tokens[losing]))

    def model_qualities(self) -> ModelQualities:
        """The personalised accuracies as :class:`econ.qualities.ModelQualities`.

        References
        ----------
        Khan et al., IP-FL: Incentivized and Personalized Federated Learning, §3, Eq. 1
        (:math:`f_i`, the personalised accuracy).
        """
        return ModelQualities(
            names=self.names,
            quality=self.personalised_accuracy,
            metric="accuracy",
            n_eval=self.n_eval,
        )

    def to_dict(self) -> dict[str, Any]:
        """Plain JSON-ready form.

        References
        ----------
        Khan et al., IP-FL: Incentivized and Personalized Federated Learning, §3, Eq. 1 (the
        quantities it copies).
        """
        return plain(
            {
                "names": self.names,
                "net_tokens": self.net_tokens,
                "pma": self.pma,
                "personalised_accuracy": self.personalised_accuracy,
                "n_eval": self.n_eval,
            }
        )

    def to_frame(self) -> Any:
        """A pandas DataFrame, one row per client indexed by name (needs pandas).

        References
        ----------
        Khan et al., IP-FL: Incentivized and Personalized Federated Learning, §3, Eq. 1 (the
        quantities it tabulates).
        """
        table = frame(
            {
                "name": list(self.names),
                "net_tokens": self.net_tokens,
                "pma": self.pma,
                "personalised_accuracy": self.personalised_accuracy,
                "n_eval": self.n_eval,
            },
            "TokenQualities",
        )
        return table.set_index("name")
