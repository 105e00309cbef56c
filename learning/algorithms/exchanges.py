"""The messages and exchanges of the split protocol (:mod:`learning.algorithms.base`).

A :class:`Dispatch` is what the server sends the participants of a round. A round may take
several exchanges (:class:`MultiExchange`: CoBo's midpoint gradients, then one exchange per
local step): ``next_dispatch`` makes the next dispatch from the replies to
the last, and ``server_update`` takes the replies of the round's last exchange.

Two optional exchanges surround the round. A :class:`Survey` asks the participants something
before the server dispatches (FedSoft's importance weights: ``survey`` -> ``client_survey`` ->
``server_survey``, with no random draw), and a :class:`FinishExchange` is every client's work
after the last round on its own data (fine-tuning, Per-FedAvg's personalisation step:
``final_dispatch`` -> ``client_finish`` -> ``server_finish``;
:meth:`learning.algorithms.base.SplitAlgorithm.finish` runs it in process).

On Flower the server's ``rng`` is not advanced by the nodes' draws, so ``server_update`` may
draw from it only where the in-process round draws nothing after the clients (the attacks of
:mod:`learning.byzantine`, which a federation does not simulate); a server draw that follows
the clients' work takes a seed drawn in ``dispatch`` and handed over in the ``plan``
(:func:`plan_seed`, :func:`planned`).
"""

from __future__ import annotations

from abc import ABC, abstractmethod
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, Generic, TypeVar

import numpy as np
import torch

if TYPE_CHECKING:
    from learning.algorithms.base import Context

__all__ = [
    "Dispatch",
    "FinishExchange",
    "MultiExchange",
    "State",
    "Survey",
    "plan_seed",
    "planned",
]

#: Algorithm state: tensors, or dicts of tensors (stacked parameters), by name.
State = dict[str, Any]

#: The state type of one algorithm: a ``TypedDict`` naming its entries (``FedAvg``'s
#: :class:`~learning.algorithms.averaging.GroupAveragingState`, ...), at run time a plain
#: :data:`State`. Its optional entries are those some settings never fill and the round's
#: ``plan`` entries that ``next_dispatch`` and ``server_update`` read from their ``state``.
S = TypeVar("S", bound=Mapping[str, Any])


@dataclass(frozen=True, slots=True)
class Dispatch:
    """What the server sends the participants of a round.

    Attributes
    ----------
    each : State
        Tensors (or dicts of them) stacked one row per receiver: row ``i`` goes to receiver
        ``i`` only.
    common : State
        Tensors (or dicts of them) every receiver gets whole.
    config : dict
        Scalar settings (numbers, strings, booleans).
    receivers : ndarray of int64, optional
        Positions, among the round's participants, of those that work this round (sorted);
        None: all of them.
    plan : State
        The server's memo of the round (FedSoft's selection):
        :meth:`learning.algorithms.base.SplitAlgorithm.round` hands these entries to
        ``server_update`` inside its ``state``; never sent.
    """

    each: State
    common: State
    config: dict[str, Any]
    receivers: np.ndarray | None = None
    plan: State = field(default_factory=dict)

    def working(self, clients: np.ndarray) -> np.ndarray:
        """The receivers among the participants ``clients``."""
        clients = np.asarray(clients, dtype=np.int64)
        return clients if self.receivers is None else clients[self.receivers]


class Survey(ABC, Generic[S]):
    """A split algorithm that asks the participants something before it dispatches.

    A :class:`~learning.algorithms.base.SplitAlgorithm` with a survey before the dispatch
    (FedSoft's importance weights): ``survey`` -> ``client_survey`` -> ``server_survey``.
    """

    @abstractmethod
    def survey(self, state: S, clients: np.ndarray) -> Dispatch | None:
        """What the server asks the participants this round; None: nothing."""

    @abstractmethod
    def client_survey(self, ctx: Context, sent: Dispatch, clients: np.ndarray) -> State:
        """The participants' answers, stacked one row each (no random draw)."""

    @abstractmethod
    def server_survey(self, state: S, clients: np.ndarray, replies: State) -> S:
        """The state with the participants' answers."""


class MultiExchange(ABC, Generic[S]):
    """A split algorithm whose round is several exchanges with its participants.

    A :class:`~learning.algorithms.base.SplitAlgorithm` with several exchanges per round
    (CoBo: the gradients at the pairs' midpoints, then one gradient per local step, the server
    stepping every participant's model in between): ``dispatch`` opens the round,
    ``next_dispatch`` turns the replies of each exchange but the last into the next dispatch,
    and ``server_update`` takes the last replies. The round's working memo goes from exchange
    to exchange in each dispatch's ``plan``.

    Its client halves draw nothing from the round's stream: ``dispatch`` draws everything
    the round needs (CoBo: every exchange's minibatch positions, sent to their owners), so
    that a node, which sees the stream's state as the server left it, reproduces the batched
    round in every exchange.
    """

    @abstractmethod
    def next_dispatch(self, state: S, clients: np.ndarray, replies: State) -> Dispatch | None:
        """The dispatch of the round's next exchange from the ``replies`` to the last one.

        ``state`` carries that dispatch's ``plan``; ``clients`` are all the round's
        participants. None: these replies are the round's last, for ``server_update``. No
        random draw.
        """


class FinishExchange(ABC, Generic[S]):
    """A split algorithm whose clients work after the last round on their own data.

    A :class:`~learning.algorithms.base.SplitAlgorithm` with a finish exchange (fine-tuning,
    Per-FedAvg's personalisation): ``final_dispatch`` -> ``client_finish`` ->
    ``server_finish``; :meth:`learning.algorithms.base.SplitAlgorithm.finish` runs it in
    process.
    """

    @abstractmethod
    def final_dispatch(self, state: S) -> Dispatch | None:
        """What every client receives for its final work (with its client-held rows).

        None: no such work in this run.
        """

    @abstractmethod
    def client_finish(
        self, ctx: Context, sent: Dispatch, clients: np.ndarray, rng: np.random.Generator
    ) -> State:
        """Every client's final work, one row each.

        Its random draws are minibatch keys only, as in ``client_update``; client-held entries
        of the reply go back to the clients.
        """

    @abstractmethod
    def server_finish(self, state: S, replies: State) -> S:
        """The state after the clients' final work."""


def plan_seed(rng: np.random.Generator) -> State:
    """A seed drawn from the round's ``rng`` in ``dispatch``, kept in the server's plan.

    The plan entry is ``{"seed": int64 tensor}``: on Flower the nodes' minibatch draws do not
    advance the server's generator, so a server draw after the clients' work takes its own
    stream (module docstring).
    """
    return {"seed": torch.tensor(int(rng.integers(2**63)), dtype=torch.int64)}


def planned(state: Mapping[str, Any]) -> np.random.Generator:
    """The generator of the seed that :func:`plan_seed` put in the round's ``state``."""
    return np.random.default_rng(int(state["seed"]))
