"""The rows of the papers' experiment inventory for the four articles.

Holds :data:`ARTICLE_EXPERIMENTS`, one :class:`~collabecon.reproductions.inventory.Experiment`
per table or figure of the experiment sections of Werner et al. (2023), Hashemi, He and Jaggi
(2024, CoBo), Tsoy et al. (2024) and Khan et al. (IP-FL), in that order.
:data:`collabecon.reproductions.inventory.EXPERIMENTS` puts the thesis's rows of
:mod:`collabecon.reproductions.inventory_thesis` before them.

References
----------
Werner, He, Jordan, Jaggi, Karimireddy (TMLR 2023), Provably Personalized and Robust Federated
Learning, §2.1 and §6; Hashemi, He and Jaggi (NeurIPS 2024), CoBo: Collaborative Learning via
Bilevel Optimization, §4; Tsoy et al. (AISTATS 2024), Provable Mutual Benefits from Federated
Learning in Privacy-Sensitive Domains; Khan et al., IP-FL: Incentivized and Personalized
Federated Learning, §5 and the appendices.
"""

from __future__ import annotations

from collabecon.reproductions.inventory_records import CLUSTERING, COBO, IPFL, TSOY, Experiment
from collabecon.reproductions.inventory_thesis import (
    COMPARED_FAILURES,
    COMPARED_FIG2,
    COMPARED_FIG3,
    COMPARED_FIG4,
    COMPARED_TABLE1,
)

__all__ = ["ARTICLE_EXPERIMENTS"]

_NO_CIFAR100 = "CIFAR-100 is in no installed package and nothing downloads at run time"
_EMNIST_RUN = (
    "with --data-dir holding EMNIST's official byclass files, on its 52 letter classes, D_B "
    "rotated by 90 degrees (one seed; not run without --data-dir)"
)
_DIAGRAM = "a diagram, not an experiment"
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

#: Every table and figure of the four articles' experiment sections, paper by paper.
ARTICLE_EXPERIMENTS: tuple[Experiment, ...] = (
    # ---------------------------------------------------------------- Werner et al. 2023
    Experiment(
        paper=CLUSTERING,
        label="Figure 1",
        where="§2.1",
        subject="existing clustering methods miscluster on constructed examples",
        reproduction="failure_modes",
        compared=COMPARED_FAILURES,
        claims=("fig1a.*", "fig1b.*", "fig1c.*"),
    ),
    Experiment(
        paper=CLUSTERING,
        label="Figure 2",
        where="§4.1",
        subject="A^2 bounded above and Delta^2 below (Assumptions 4-5), synthetic regression",
        reproduction="clustering",
        compared=COMPARED_FIG2,
        claims=("fig2.*",),
    ),
    Experiment(
        paper=CLUSTERING,
        label="Figure 3",
        where="§4.1",
        subject="FC against ground truth, Local, IFCA and Global on the synthetic regression",
        reproduction="clustering",
        compared=COMPARED_FIG3,
        claims=("fig3.*",),
    ),
    Experiment(
        paper=CLUSTERING,
        label="Table 1",
        where="§4.1 (printed), discussed in §4.2",
        subject="test accuracy and loss of seven methods on MNIST, rotation and private labels",
        reproduction="table1",
        compared=COMPARED_TABLE1,
        claims=("table1.*",),
    ),
    Experiment(
        paper=CLUSTERING,
        label="Figure 4",
        where="§4.3 (printed after §5)",
        subject="mean distance to the cluster centres against the clipping iterations l",
        reproduction="clustering",
        compared=COMPARED_FIG4,
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
        where="§4 (printed after §4.3), discussed in §4.1-4.3",
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
