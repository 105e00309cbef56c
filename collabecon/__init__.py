"""collabecon: the economics of collaborative learning, as one import.

``import collabecon`` gives the curated public API of the three layers below it and of the
application, grouped by layer in :data:`_NAMES`:

- closed forms of :mod:`econ` (the duopoly of Werner 2024, ch. 3, its n-firm market, Nash
  bargaining, the caps of Algorithm 5, the privacy-accuracy utilities and protocols of Tsoy et
  al. 2024), the seam :class:`~econ.qualities.ModelQualities`, and :func:`verify`, which
  checks every registered lemma, proposition and theorem;
- games and mechanisms of :mod:`games` (the price-discrimination game of Werner 2024, ch. 4,
  and its figures, defection-free collaboration of ch. 3 as a decision rule, IP-FL's token
  economy);
- the PyTorch backend of :mod:`learning` (training with any registered algorithm, federations
  of clients, trained models turned into qualities, models trained elsewhere (torch modules,
  scikit-learn estimators, their predictions) turned into qualities with confidence intervals
  by :func:`qualities_of`, Threshold-Clustering, CoBo's quadratic toy, and the drivers that
  train real models for the economics);
- the application's CoBo reproduction, and :mod:`collabecon.graphs`: the graphs the toolkit
  computes (the threshold graph, CoBo's collaboration weights, IP-FL's bids) as
  :mod:`networkx` graphs.

Names that would be ambiguous on their own carry their model's prefix (``pd_equilibrium`` is
``equilibrium`` of :mod:`games.price_discrimination.equilibrium`, ``CoBoPairSchedule`` is
``PairSchedule`` of :mod:`learning.algorithms.cobo_steps`).

``collabecon.__version__`` is the installed distribution's version, the one of
``pyproject.toml`` (``collabecon --version`` prints it too).

Every name is resolved on first use (:pep:`562`), so ``import collabecon`` imports neither
torch nor the modules of names that are not used: torch loads only when a name of the
learning backend, ``threshold_graph`` or ``run_cobo_setting`` is touched (``qualities_of``
loads it only for a torch model). The names listed in :data:`__all__` are the public API; the
packages ``econ``, ``games`` and ``learning`` say in their own ``__all__`` what else each
offers.

The toolkit reports through one logger, ``collabecon`` (every module of the four packages
logs under it, :mod:`econ._log`), and configures no handler: nothing is printed unless the
program configures logging, and ``logging.getLogger("collabecon").setLevel(logging.WARNING)``
silences its progress and diagnostics in one call.

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

#: Public name -> (module, attribute in that module), grouped by layer.
_NAMES: dict[str, tuple[str, str]] = {
    # econ: the duopoly, the market, Nash bargaining, the caps of Algorithm 5 (Werner 2024, ch. 3)
    "duopoly_equilibrium": ("econ.duopoly", "equilibrium"),
    "DuopolyEquilibrium": ("econ.duopoly", "DuopolyEquilibrium"),
    "duopoly_revenues": ("econ.duopoly", "revenues"),
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
    "nash_bargaining": ("econ.nash_bargaining", "nash_bargaining"),
    "BargainingSolution": ("econ.nash_bargaining", "BargainingSolution"),
    "cap_ratio": ("econ.quality_caps", "cap_ratio"),
    "ModelQualities": ("econ.qualities", "ModelQualities"),
    # econ: beyond the duopoly: consumer populations, the n-firm bargain over qualities
    "Population": ("econ.population", "Population"),
    "parse_population": ("econ.population", "parse_population"),
    "population_equilibrium": ("econ.population_market", "population_equilibrium"),
    "PopulationEquilibrium": ("econ.population_market", "PopulationEquilibrium"),
    "population_revenues": ("econ.population_market", "population_revenues"),
    "best_response_certificate": ("econ.population_market", "best_response_certificate"),
    "quality_bargaining": ("econ.quality_bargaining", "quality_bargaining"),
    "QualityBargain": ("econ.quality_bargaining", "QualityBargain"),
    # econ.privacy: privacy-accuracy utilities, protocols and accounting (Tsoy et al. 2024)
    "DPMean": ("econ.privacy.models", "DPMean"),
    "DPSGD": ("econ.privacy.models", "DPSGD"),
    "Bayes": ("econ.privacy.models", "Bayes"),
    "Empirical": ("econ.privacy.empirical", "Empirical"),
    "privacy_exists": ("econ.privacy.existence", "exists"),
    "Existence": ("econ.privacy.existence", "Existence"),
    "optimal_protocol": ("econ.privacy.optimal", "optimal_protocol"),
    "family_protocol": ("econ.privacy.optimal", "family_protocol"),
    "SharingProtocol": ("econ.privacy.optimal", "SharingProtocol"),
    "dp_mean_symmetric_optimum": ("econ.privacy.symmetric", "dp_mean_symmetric_optimum"),
    "bayes_symmetric_optimum": ("econ.privacy.symmetric", "bayes_symmetric_optimum"),
    "bayes_symmetric_gain": ("econ.privacy.symmetric", "bayes_symmetric_gain"),
    "effectiveness_panels": ("econ.privacy.effectiveness", "effectiveness_panels"),
    "EFFECTIVENESS_DP_GRID": ("econ.privacy.effectiveness", "DP_GRID"),
    "EFFECTIVENESS_BAYES_GRID": ("econ.privacy.effectiveness", "BAYES_GRID"),
    "accountant_epsilon": ("econ.privacy.accountants", "accountant_epsilon"),
    "accountant_sigma": ("econ.privacy.accountants", "accountant_sigma"),
    # econ: claims of a reproduction, the registry of propositions
    "Claim": ("econ.claims", "Claim"),
    "Reproduction": ("econ.claims", "Reproduction"),
    "verify": ("collabecon._verify", "verify"),
    # games: price discrimination (Werner 2024, ch. 4)
    "PDGame": ("games.price_discrimination.game", "PDGame"),
    "PD_THESIS_GAME": ("games.price_discrimination.game", "THESIS_GAME"),
    "pd_equilibrium": ("games.price_discrimination.equilibrium", "equilibrium"),
    "pd_equilibrium_profile": ("games.price_discrimination.equilibrium", "equilibrium_profile"),
    "pd_certify": ("games.price_discrimination.certificate", "certify"),
    "PD_FIGURE_SELLERS": ("games.price_discrimination.figures", "FIGURE_SELLERS"),
    "pd_run_sellers": ("games.price_discrimination.figures", "run_sellers"),
    "fig4_1_data": ("games.price_discrimination.figures", "fig4_1_data"),
    "fig4_2_data": ("games.price_discrimination.figures", "fig4_2_data"),
    "fig4_3_data": ("games.price_discrimination.figures", "fig4_3_data"),
    "fig4_4_data": ("games.price_discrimination.figures", "fig4_4_data"),
    "fig4_5_data": ("games.price_discrimination.figures", "fig4_5_data"),
    # games: defection-free collaboration (ch. 3, Algorithm 5) and its convex toy firms
    "DEFECTION_FREE_SCHEMES": ("games.defection_free", "SCHEMES"),
    "DefectionFreeConfig": ("games.defection_free", "DefectionFreeConfig"),
    "defection_free_scheme": ("games.defection_free", "build_scheme"),
    "defection_free_play": ("games.defection_free", "play"),
    "defection_free_report": ("games.defection_free", "report"),
    "defection_free_claims": ("games.defection_free", "scheme_claims"),
    "quadratic_firms_toy": ("games.quadratic_firms", "thesis_toy"),
    # games: the rule for n firms and on measured qualities
    "n_firm_step": ("games.defection_free.n_firms", "n_firm_step"),
    "n_firm_path": ("games.defection_free.n_firms", "n_firm_path"),
    "DefectionFreeNoisyRule": ("games.defection_free", "NoisyRule"),
    "defection_free_play_noisy": ("games.defection_free", "play_noisy"),
    # games: IP-FL's token economy (Khan et al.)
    "IPFLConfig": ("games.ipfl", "IPFLConfig"),
    "ipfl_net_token_change": ("games.ipfl", "net_token_change"),
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
    "select_models": ("learning.engine", "select"),
    "model_qualities": ("learning.qualities", "model_qualities"),
    "qualities_of": ("learning.qualities", "qualities_of"),
    # learning: Threshold-Clustering (Werner et al. 2023) and CoBo (Hashemi et al. 2024)
    "threshold_clustering": ("learning.algorithms.threshold_clustering", "threshold_clustering"),
    "QuantileRadius": ("learning.algorithms.threshold_clustering", "QuantileRadius"),
    "CoBoPairSchedule": ("learning.algorithms.cobo_steps", "PairSchedule"),
    "CoBoQuadraticToy": ("learning.algorithms.cobo_quadratic", "QuadraticToy"),
    "simulate_cobo_quadratic": ("learning.algorithms.cobo_quadratic", "simulate_quadratic"),
    "cobo_oracle_weights": ("learning.algorithms.cobo_steps", "oracle_weights"),
    # learning: the drivers that train real models for the economics
    "measure_privacy_curve": ("learning.drivers.privacy_curve", "measure"),
    "DuopolySetup": ("learning.drivers.defection_free", "DuopolySetup"),
    "TorchFirms": ("learning.drivers.defection_free", "TorchFirms"),
    "run_defection_free_schemes": ("learning.drivers.defection_free_schemes", "run_schemes"),
    "NFirmSetup": ("learning.drivers.defection_free_n", "NFirmSetup"),
    "TorchNFirms": ("learning.drivers.defection_free_n", "TorchNFirms"),
    "run_n_firms": ("learning.drivers.defection_free_n", "run_n_firms"),
    "IPFLRun": ("learning.drivers.ipfl", "IPFLRun"),
    "run_ipfl": ("learning.drivers.ipfl", "run_ipfl"),
    # the application: one setting of the CoBo reproduction
    "run_cobo_setting": ("collabecon.reproductions.cobo", "run_setting"),
    # graphs of what the toolkit computes, as networkx graphs
    "threshold_graph": ("collabecon.graphs", "threshold_graph"),
    "collaboration_graph": ("collabecon.graphs", "collaboration_graph"),
    "bid_graph": ("collabecon.graphs", "bid_graph"),
    "component_labels": ("collabecon.graphs", "component_labels"),
}

#: The public API: every name of the table above, sorted.
__all__ = [
    "ALGORITHMS",
    "DEFECTION_FREE_SCHEMES",
    "DPSGD",
    "EFFECTIVENESS_BAYES_GRID",
    "EFFECTIVENESS_DP_GRID",
    "PD_FIGURE_SELLERS",
    "PD_THESIS_GAME",
    "BargainingSolution",
    "Bayes",
    "Claim",
    "CoBoPairSchedule",
    "CoBoQuadraticToy",
    "DPMean",
    "DefectionFreeConfig",
    "DefectionFreeNoisyRule",
    "DuopolyEquilibrium",
    "DuopolyNashSolution",
    "DuopolySetup",
    "Empirical",
    "Existence",
    "Federation",
    "IPFLConfig",
    "IPFLRun",
    "MarketHistory",
    "MarketRound",
    "ModelQualities",
    "NFirmSetup",
    "OligopolyEquilibrium",
    "PDGame",
    "Population",
    "PopulationEquilibrium",
    "QualityBargain",
    "QuantileRadius",
    "Reproduction",
    "SharingProtocol",
    "TorchFirms",
    "TorchNFirms",
    "TrainConfig",
    "TrainResult",
    "accountant_epsilon",
    "accountant_sigma",
    "bayes_symmetric_gain",
    "bayes_symmetric_optimum",
    "best_response_certificate",
    "bid_graph",
    "build_algorithm",
    "cap_ratio",
    "cobo_oracle_weights",
    "collaboration_graph",
    "component_labels",
    "cournot_equilibrium",
    "defection_free_claims",
    "defection_free_play",
    "defection_free_play_noisy",
    "defection_free_report",
    "defection_free_scheme",
    "dp_mean_symmetric_optimum",
    "duopoly_equilibrium",
    "duopoly_nash_solution",
    "duopoly_revenues",
    "effectiveness_panels",
    "family_protocol",
    "fig4_1_data",
    "fig4_2_data",
    "fig4_3_data",
    "fig4_4_data",
    "fig4_5_data",
    "ipfl_net_token_change",
    "load_dataset",
    "make_federation",
    "market_history",
    "market_round",
    "measure_privacy_curve",
    "model_qualities",
    "n_firm_path",
    "n_firm_step",
    "nash_bargaining",
    "oligopoly_equilibrium",
    "optimal_protocol",
    "parse_population",
    "pd_certify",
    "pd_equilibrium",
    "pd_equilibrium_profile",
    "pd_run_sellers",
    "population_equilibrium",
    "population_revenues",
    "privacy_exists",
    "quadratic_firms_toy",
    "qualities_of",
    "quality_bargaining",
    "register_algorithm",
    "run_cobo_setting",
    "run_defection_free_schemes",
    "run_ipfl",
    "run_n_firms",
    "sampled_market",
    "select_models",
    "simulate_cobo_quadratic",
    "threshold_clustering",
    "threshold_graph",
    "train",
    "verify",
]


if TYPE_CHECKING:  # what a type checker and an IDE see; at run time names resolve lazily
    from collabecon._verify import verify
    from collabecon.graphs import bid_graph, collaboration_graph, component_labels, threshold_graph
    from collabecon.reproductions.cobo import run_setting as run_cobo_setting
    from econ.bargaining import DuopolyNashSolution, duopoly_nash_solution
    from econ.claims import Claim, Reproduction
    from econ.duopoly import DuopolyEquilibrium, cournot_equilibrium
    from econ.duopoly import equilibrium as duopoly_equilibrium
    from econ.duopoly import revenues as duopoly_revenues
    from econ.market import MarketHistory, MarketRound, market_history, market_round, sampled_market
    from econ.nash_bargaining import BargainingSolution, nash_bargaining
    from econ.oligopoly import OligopolyEquilibrium, oligopoly_equilibrium
    from econ.population import Population, parse_population
    from econ.population_market import (
        PopulationEquilibrium,
        best_response_certificate,
        population_equilibrium,
        population_revenues,
    )
    from econ.privacy.accountants import accountant_epsilon, accountant_sigma
    from econ.privacy.effectiveness import BAYES_GRID as EFFECTIVENESS_BAYES_GRID
    from econ.privacy.effectiveness import DP_GRID as EFFECTIVENESS_DP_GRID
    from econ.privacy.effectiveness import effectiveness_panels
    from econ.privacy.empirical import Empirical
    from econ.privacy.existence import Existence
    from econ.privacy.existence import exists as privacy_exists
    from econ.privacy.models import DPSGD, Bayes, DPMean
    from econ.privacy.optimal import SharingProtocol, family_protocol, optimal_protocol
    from econ.privacy.symmetric import (
        bayes_symmetric_gain,
        bayes_symmetric_optimum,
        dp_mean_symmetric_optimum,
    )
    from econ.qualities import ModelQualities
    from econ.quality_bargaining import QualityBargain, quality_bargaining
    from econ.quality_caps import cap_ratio
    from games.defection_free import SCHEMES as DEFECTION_FREE_SCHEMES
    from games.defection_free import DefectionFreeConfig
    from games.defection_free import NoisyRule as DefectionFreeNoisyRule
    from games.defection_free import build_scheme as defection_free_scheme
    from games.defection_free import play as defection_free_play
    from games.defection_free import play_noisy as defection_free_play_noisy
    from games.defection_free import report as defection_free_report
    from games.defection_free import scheme_claims as defection_free_claims
    from games.defection_free.n_firms import n_firm_path, n_firm_step
    from games.ipfl import IPFLConfig
    from games.ipfl import net_token_change as ipfl_net_token_change
    from games.price_discrimination.certificate import certify as pd_certify
    from games.price_discrimination.equilibrium import equilibrium as pd_equilibrium
    from games.price_discrimination.equilibrium import equilibrium_profile as pd_equilibrium_profile
    from games.price_discrimination.figures import FIGURE_SELLERS as PD_FIGURE_SELLERS
    from games.price_discrimination.figures import (
        fig4_1_data,
        fig4_2_data,
        fig4_3_data,
        fig4_4_data,
        fig4_5_data,
    )
    from games.price_discrimination.figures import run_sellers as pd_run_sellers
    from games.price_discrimination.game import THESIS_GAME as PD_THESIS_GAME
    from games.price_discrimination.game import PDGame
    from games.quadratic_firms import thesis_toy as quadratic_firms_toy
    from learning.algorithms import ALGORITHMS, build_algorithm
    from learning.algorithms import register as register_algorithm
    from learning.algorithms.cobo_quadratic import QuadraticToy as CoBoQuadraticToy
    from learning.algorithms.cobo_quadratic import simulate_quadratic as simulate_cobo_quadratic
    from learning.algorithms.cobo_steps import PairSchedule as CoBoPairSchedule
    from learning.algorithms.cobo_steps import oracle_weights as cobo_oracle_weights
    from learning.algorithms.threshold_clustering import QuantileRadius, threshold_clustering
    from learning.data import load_dataset
    from learning.drivers.defection_free import DuopolySetup, TorchFirms
    from learning.drivers.defection_free_n import NFirmSetup, TorchNFirms, run_n_firms
    from learning.drivers.defection_free_schemes import run_schemes as run_defection_free_schemes
    from learning.drivers.ipfl import IPFLRun, run_ipfl
    from learning.drivers.privacy_curve import measure as measure_privacy_curve
    from learning.engine import select as select_models
    from learning.federation import Federation, make_federation
    from learning.qualities import model_qualities, qualities_of
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
