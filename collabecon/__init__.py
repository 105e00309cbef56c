"""collabecon: the economics of collaborative learning, as one import.

``import collabecon`` gives the curated public API of the three layers below it:

- closed forms of :mod:`econ` (the duopoly of Werner 2024, ch. 3, its n-firm market, Nash
  bargaining, the privacy-accuracy utilities of Tsoy et al. 2024), the seam
  :class:`~econ.qualities.ModelQualities`, and :func:`verify`, which checks every registered
  lemma, proposition and theorem;
- games and mechanisms of :mod:`games` (the price-discrimination game of Werner 2024, ch. 4,
  defection-free collaboration of ch. 3 as a decision rule);
- the PyTorch backend of :mod:`learning` (training with any registered algorithm, federations
  of clients, trained models turned into qualities).

``collabecon.__version__`` is the installed distribution's version, the one of
``pyproject.toml`` (``collabecon --version`` prints it too).

Every name is resolved on first use (:pep:`562`), so ``import collabecon`` imports neither
torch nor the modules of names that are not used: torch loads only when a name of the
learning backend is touched. The names listed in :data:`__all__` are the public API; the
packages ``econ``, ``games`` and ``learning`` say in their own ``__all__`` what else each
offers.

Examples
--------
>>> import collabecon
>>> eq = collabecon.duopoly_equilibrium(0.3, 0.8)
>>> round(eq.p_h, 4), round(eq.U_l, 4)
(0.2759, 0.0143)
"""

from __future__ import annotations

import importlib
from importlib.metadata import version as _version
from typing import TYPE_CHECKING, Any

#: The version of the installed ``collabecon`` distribution (``pyproject.toml``'s).
__version__: str = _version("collabecon")

#: Public name -> (module, attribute in that module).
_NAMES: dict[str, tuple[str, str]] = {
    # econ: the duopoly, the market, Nash bargaining (Werner 2024, ch. 3)
    "duopoly_equilibrium": ("econ.duopoly", "equilibrium"),
    "DuopolyEquilibrium": ("econ.duopoly", "DuopolyEquilibrium"),
    "cournot_equilibrium": ("econ.duopoly", "cournot_equilibrium"),
    "oligopoly_equilibrium": ("econ.oligopoly", "oligopoly_equilibrium"),
    "OligopolyEquilibrium": ("econ.oligopoly", "OligopolyEquilibrium"),
    "market_round": ("econ.market", "market_round"),
    "market_history": ("econ.market", "market_history"),
    "sampled_market": ("econ.market", "sampled_market"),
    "MarketRound": ("econ.market", "MarketRound"),
    "MarketHistory": ("econ.market", "MarketHistory"),
    "duopoly_nash_solution": ("econ.bargaining", "duopoly_nash_solution"),
    "DuopolyNashSolution": ("econ.bargaining", "DuopolyNashSolution"),
    "nash_bargaining": ("econ.bargaining", "nash_bargaining"),
    "BargainingSolution": ("econ.bargaining", "BargainingSolution"),
    "ModelQualities": ("econ.qualities", "ModelQualities"),
    # econ.privacy: privacy-accuracy utilities and accounting (Tsoy et al. 2024)
    "DPMean": ("econ.privacy.models", "DPMean"),
    "DPSGD": ("econ.privacy.models", "DPSGD"),
    "Bayes": ("econ.privacy.models", "Bayes"),
    "Empirical": ("econ.privacy.empirical", "Empirical"),
    "privacy_exists": ("econ.privacy.existence", "exists"),
    "Existence": ("econ.privacy.existence", "Existence"),
    "optimal_protocol": ("econ.privacy.optimal", "optimal_protocol"),
    "SharingProtocol": ("econ.privacy.optimal", "SharingProtocol"),
    "accountant_epsilon": ("econ.privacy.accountants", "accountant_epsilon"),
    "accountant_sigma": ("econ.privacy.accountants", "accountant_sigma"),
    # econ: claims of a reproduction, the registry of propositions
    "Claim": ("econ.claims", "Claim"),
    "Reproduction": ("econ.claims", "Reproduction"),
    "verify": ("collabecon._verify", "verify"),
    # games: price discrimination (Werner 2024, ch. 4), defection-free play (ch. 3, Algorithm 5)
    "PDGame": ("games.price_discrimination.game", "PDGame"),
    "pd_equilibrium": ("games.price_discrimination.game", "equilibrium"),
    "defection_free_play": ("games.defection_free", "play"),
    "DefectionFreeConfig": ("games.defection_free", "DefectionFreeConfig"),
    # learning: the PyTorch backend (imports torch)
    "TrainConfig": ("learning.train", "TrainConfig"),
    "TrainResult": ("learning.train", "TrainResult"),
    "train": ("learning.train", "train"),
    "Federation": ("learning.federation", "Federation"),
    "make_federation": ("learning.federation", "make_federation"),
    "ALGORITHMS": ("learning.algorithms", "ALGORITHMS"),
    "build_algorithm": ("learning.algorithms", "build_algorithm"),
    "register_algorithm": ("learning.algorithms", "register"),
    "load_dataset": ("learning.data", "load_dataset"),
    "model_qualities": ("learning.qualities", "model_qualities"),
}

#: The public API: every name of the table above, sorted.
__all__ = [
    "ALGORITHMS",
    "DPSGD",
    "BargainingSolution",
    "Bayes",
    "Claim",
    "DPMean",
    "DefectionFreeConfig",
    "DuopolyEquilibrium",
    "DuopolyNashSolution",
    "Empirical",
    "Existence",
    "Federation",
    "MarketHistory",
    "MarketRound",
    "ModelQualities",
    "OligopolyEquilibrium",
    "PDGame",
    "Reproduction",
    "SharingProtocol",
    "TrainConfig",
    "TrainResult",
    "accountant_epsilon",
    "accountant_sigma",
    "build_algorithm",
    "cournot_equilibrium",
    "defection_free_play",
    "duopoly_equilibrium",
    "duopoly_nash_solution",
    "load_dataset",
    "make_federation",
    "market_history",
    "market_round",
    "model_qualities",
    "nash_bargaining",
    "oligopoly_equilibrium",
    "optimal_protocol",
    "pd_equilibrium",
    "privacy_exists",
    "register_algorithm",
    "sampled_market",
    "train",
    "verify",
]

if TYPE_CHECKING:  # what a type checker and an IDE see; at run time names resolve lazily
    from collabecon._verify import verify
    from econ.bargaining import (
        BargainingSolution,
        DuopolyNashSolution,
        duopoly_nash_solution,
        nash_bargaining,
    )
    from econ.claims import Claim, Reproduction
    from econ.duopoly import DuopolyEquilibrium, cournot_equilibrium
    from econ.duopoly import equilibrium as duopoly_equilibrium
    from econ.market import MarketHistory, MarketRound, market_history, market_round, sampled_market
    from econ.oligopoly import OligopolyEquilibrium, oligopoly_equilibrium
    from econ.privacy.accountants import accountant_epsilon, accountant_sigma
    from econ.privacy.empirical import Empirical
    from econ.privacy.existence import Existence
    from econ.privacy.existence import exists as privacy_exists
    from econ.privacy.models import DPSGD, Bayes, DPMean
    from econ.privacy.optimal import SharingProtocol, optimal_protocol
    from econ.qualities import ModelQualities
    from games.defection_free import DefectionFreeConfig
    from games.defection_free import play as defection_free_play
    from games.price_discrimination.game import PDGame
    from games.price_discrimination.game import equilibrium as pd_equilibrium
    from learning.algorithms import ALGORITHMS, build_algorithm
    from learning.algorithms import register as register_algorithm
    from learning.data import load_dataset
    from learning.federation import Federation, make_federation
    from learning.qualities import model_qualities
    from learning.train import TrainConfig, TrainResult, train


def __getattr__(name: str) -> Any:
    """Import the module that defines ``name`` on first use and cache the attribute."""
    try:
        module, attribute = _NAMES[name]
    except KeyError:
        raise AttributeError(f"module 'collabecon' has no attribute {name!r}") from None
    value = getattr(importlib.import_module(module), attribute)
    globals()[name] = value
    return value


def __dir__() -> list[str]:
    return sorted(set(globals()) | set(__all__))
