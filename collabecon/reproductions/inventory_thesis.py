"""The rows of the papers' experiment inventory for Werner (2024), the thesis, ch. 2-4.

Holds :data:`THESIS_EXPERIMENTS`, one :class:`~collabecon.reproductions.inventory.Experiment`
per table or figure of the thesis's experiment sections, and what the reproductions of
chapter 2 compare (the ``COMPARED_*`` texts, shared with the rows of Werner et al. (2023),
whose experiments chapter 2 prints again). :data:`collabecon.reproductions.inventory.EXPERIMENTS`
joins them with the articles' rows of :mod:`collabecon.reproductions.inventory_articles`.

References
----------
Werner (2024), Collaborative Learning: Aligning Goals and Outcomes, PhD thesis, UC Berkeley,
ch. 2 (§2.2, §2.4), ch. 3 and ch. 4.
"""

from __future__ import annotations

from collabecon.reproductions.inventory_records import THESIS, Experiment

__all__ = [
    "COMPARED_FAILURES",
    "COMPARED_FIG2",
    "COMPARED_FIG3",
    "COMPARED_FIG4",
    "COMPARED_TABLE1",
    "THESIS_EXPERIMENTS",
]

_PROOF = (
    "a figure of a proof, not an experiment: its statements are checked by `collabecon "
    "verify`; drawn by `collabecon defection-free --figures --out DIR` (the defection_free "
    "reproduction writes it too, without claims)"
)
_MNIST5K = "LeNet-5 on mnist5k (real MNIST digits; 500 label-skewed examples per firm at the small scale, the thesis's 1000 at the paper scale)"
_PRICING = (
    "Algorithm 6 simulated (mu = 0.5, theta = 5 and 15, c_B = c_S = 5, n = 10), T = 5,000 "
    "rounds at the small scale (the thesis's 20,000 at the paper scale), 3 seeds"
)

#: What the failure-modes reproduction compares (thesis Figure 2.1, Werner et al. 2023, Figure 1).
COMPARED_FAILURES = (
    "the printed losses of the three constructed examples, run exactly: Myopic-Clustering's "
    "printed trace, IFCA (options I and II) and HypCluster stuck, Clustered FL's partitions "
    "over 200 draws, and Federated-Clustering's recovery, each method named in the text"
)

#: What the MNIST reproduction compares (thesis Table 2.1, Werner et al. 2023, Table 1).
COMPARED_TABLE1 = (
    "accuracies of Local, Global, Ditto, IFCA, kNN-Per, FC and the oracle on the rotation and "
    "private-label tasks, analogue on mnist5k (20 clients) at the small scale, the full MNIST "
    "files (from COLLABECON_DATA) at the paper scale; losses not compared: ours is "
    "cross-entropy, the authors' code reports 1 - E p_y"
)

#: What the clustering reproduction compares for A^2 and Delta^2 (thesis Figure 2.2, Werner et al. 2023, Figure 2).
COMPARED_FIG2 = (
    "the largest intra-cluster variance ratio A^2 over time and the smallest separation "
    "Delta^2 (eqs. 7-8) along a ground-truth run, 300 clients in 4 clusters"
)

#: What the clustering reproduction compares for the methods (thesis Figure 2.3, Werner et al. 2023, Figure 3).
COMPARED_FIG3 = (
    "final mean parameter error of FC, ground truth, Local, IFCA-M and Global in each panel "
    "(K, n_i) = (4, 4), (4, 16), (16, 4), over 3 data seeds; the curves are not compared point "
    "by point"
)

#: What the clustering reproduction compares for Threshold-Clustering (thesis Figure 2.5, Werner et al. 2023, Figure 4).
COMPARED_FIG4 = (
    "Threshold-Clustering's mean distance to the centres against l for sigma = 0.5, 1, 2, 4: "
    "each curve decreasing, its elbow growing with sigma"
)

#: Every table and figure of the thesis's experiment sections, in its order.
THESIS_EXPERIMENTS: tuple[Experiment, ...] = (
    # ---------------------------------------------------------------- thesis, ch. 2
    Experiment(
        paper=THESIS,
        label="Figure 2.1",
        where="§2.2 (pp. 7-11)",
        subject="existing clustering methods miscluster on constructed examples",
        reproduction="failure_modes",
        compared=f"{COMPARED_FAILURES} (the examples of Werner et al. 2023, Fig. 1)",
        claims=("fig1a.*", "fig1b.*", "fig1c.*"),
    ),
    Experiment(
        paper=THESIS,
        label="Figure 2.2",
        where="§2.4 (pp. 20-26)",
        subject="A^2 bounded above and Delta^2 below (Assumptions 4-5), synthetic regression",
        reproduction="clustering",
        compared=f"{COMPARED_FIG2} (the experiment of Werner et al. 2023, Fig. 2)",
        claims=("fig2.*",),
    ),
    Experiment(
        paper=THESIS,
        label="Figure 2.3",
        where="§2.4 (pp. 20-26)",
        subject="FC against ground truth, Local, IFCA and Global on the synthetic regression",
        reproduction="clustering",
        compared=f"{COMPARED_FIG3} (the experiment of Werner et al. 2023, Fig. 3)",
        claims=("fig3.*",),
    ),
    Experiment(
        paper=THESIS,
        label="Table 2.1",
        where="§2.4 (pp. 20-26)",
        subject="test accuracy and loss of seven methods on MNIST, rotation and private labels",
        reproduction="table1",
        compared=f"{COMPARED_TABLE1} (the table of Werner et al. 2023, Table 1)",
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
        compared=f"{COMPARED_FIG4} (the experiment of Werner et al. 2023, Fig. 4)",
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
)
