"""The configuration of one IP-FL run (:class:`IPFLRun`) and its command-line partitions."""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass, field
from typing import Any

from econ.outputs import plain
from econ.validation import choice, in_interval, positive_int
from games.ipfl import IPFLConfig
from learning.optim import SGDConfig, float32_step

__all__ = ["LABEL_SHIFT", "PARTITIONS", "SHIFTS", "IPFLRun"]

#: Partitions of the command line: the mixtures of §6.1 and the class-group split.
PARTITIONS = ("10:90", "30:70", "40:60", "linear", "random", "pathological")
#: What distinguishes the mixtures' :math:`D_B` from :math:`D_A`: ``"rotation"`` (the images
#: turned by 90 degrees, as in §6.1 following FedSoft) or ``"labels"`` (a concept shift: the
#: same images with labels :math:`y \to (y + 5) \bmod 10`, which one model cannot serve).
SHIFTS = ("rotation", "labels")
#: The label offset of the ``"labels"`` shift (half the classes of a 10-class problem).
LABEL_SHIFT = 5


@dataclass(frozen=True, slots=True, kw_only=True)
class IPFLRun:
    """Every choice of one IP-FL run (data, model, training, mechanism).

    Defaults are a CPU-sized version of the paper's setting (§6.1): 20 clients of
    ``mnist5k`` holding upright and rotated digits 10:90, two clusters, an MLP. ``shift`` is
    what makes :math:`D_B` differ from :math:`D_A` in the mixtures (:data:`SHIFTS`).

    ``dataset_params`` are the dataset's parameters as ``(name, value)`` pairs (EMNIST's
    ``split``, ``drop_digits``).

    ``importance`` is ``"accuracy"`` (Eq. 7) or ``"fedsoft"`` (argmin-loss shares);
    ``personalize`` is ``"param_avg"`` (Eq. 8) or ``"output_mixture"``; ``cold_start`` is
    ``"random"`` (round-0 bootstrap) or ``"f1_kmeans"`` (App. B: ``pretrain_rounds`` of
    FedAvg with every client, KMeans on the ``f1_classes`` most varied per-class F1 scores of
    the clients' local models on a server test set of ``server_test_size`` examples drawn
    from the source distributions). ``optimizer`` is ``"sgd"`` or ``"adadelta"`` (RC,
    PyTorch defaults with ``lr``; the RC uses lr 1.0); None picks Adadelta under
    ``mechanism.code_compat`` and SGD otherwise.
    """

    dataset: str = "mnist5k"
    dataset_params: tuple[tuple[str, Any], ...] = ()
    partition: str = "10:90"
    shift: str = "rotation"
    clients: int = 20
    clusters: int = 2
    rounds: int = 30
    model: str = "mlp"
    local_steps: int = 10
    batch_size: int = 32
    lr: float = 0.05
    momentum: float = 0.0
    size: int | None = None
    classes_per_client: int = 2
    test_fraction: float = 0.2
    val_fraction: float = 0.1
    target_fraction: float = 0.2
    flip_test_view: bool = False
    holdout_per_client: int = 32
    noisy_share: float = 0.0
    noise_rate: float = 0.5
    unseen_share: float = 0.0
    rho: str = "fedavg"
    importance: str = "accuracy"
    personalize: str = "param_avg"
    cold_start: str = "random"
    pretrain_rounds: int = 5
    f1_classes: int = 10
    server_test_size: int = 1000
    optimizer: str | None = None
    eval_every: int = 5
    engine: str = "batched"
    seed: int = 0
    mechanism: IPFLConfig = field(default_factory=IPFLConfig)

    def __post_init__(self) -> None:
        """Check every choice and range of the run, and that the options go together.

        Raises
        ------
        ValueError
            An unknown choice, a count that is not positive, a share or fraction outside its
            interval, more clusters than clients, an optimiser setting out of range, or
            options that exclude each other (the label shift or ``flip_test_view`` with the
            pathological partition, ``flip_test_view`` without the rotation shift, the
            ``f1_kmeans`` cold start with unseen clients).
        """
        choice("partition", self.partition, PARTITIONS)
        choice("shift", self.shift, SHIFTS)
        if self.shift != "rotation" and self.partition == "pathological":
            raise ValueError("shift applies to the mixture partitions only, not 'pathological'")
        if self.shift != "rotation" and self.flip_test_view:
            raise ValueError("flip_test_view applies to the rotation shift only")
        choice("rho", self.rho, ("fedavg", "local"))
        for name in ("clients", "clusters", "rounds", "local_steps", "batch_size", "eval_every"):
            positive_int(name, getattr(self, name))
        positive_int("holdout_per_client", self.holdout_per_client)
        if self.clusters > self.clients:
            raise ValueError(
                f"clusters must not exceed clients (each cluster model needs a client), got "
                f"clusters={self.clusters} > clients={self.clients}"
            )
        for name in ("noisy_share", "noise_rate"):
            in_interval(name, getattr(self, name), 0.0, 1.0)
        in_interval("unseen_share", self.unseen_share, 0.0, 1.0, high_open=True)
        in_interval("val_fraction", self.val_fraction, 0.0, 1.0, low_open=True, high_open=True)
        in_interval(
            "target_fraction", self.target_fraction, 0.0, 1.0, low_open=True, high_open=True
        )
        if self.flip_test_view and self.partition == "pathological":
            raise ValueError("flip_test_view applies to the mixture partitions only")
        choice("importance", self.importance, ("accuracy", "fedsoft"))
        choice("personalize", self.personalize, ("param_avg", "output_mixture"))
        choice("cold_start", self.cold_start, ("random", "f1_kmeans"))
        for name in ("pretrain_rounds", "f1_classes", "server_test_size"):
            positive_int(name, getattr(self, name))
        if self.cold_start == "f1_kmeans" and self.unseen_share > 0:
            raise ValueError(
                "the f1_kmeans cold start pre-trains with every client: unseen_share must be 0"
            )
        if self.optimizer is not None:
            choice("optimizer", self.optimizer, ("sgd", "adadelta"))
        SGDConfig(self.lr, self.momentum)
        float32_step("lr", self.lr)

    @property
    def local_optimizer(self) -> str:
        """The optimiser of local training.

        ``optimizer``, else Adadelta under ``mechanism.code_compat`` and SGD otherwise.
        """
        if self.optimizer is not None:
            return self.optimizer
        return "adadelta" if self.mechanism.code_compat else "sgd"

    def to_dict(self) -> dict[str, Any]:
        """JSON-ready copy."""
        out = {f.name: getattr(self, f.name) for f in dataclasses.fields(self)}
        out["mechanism"] = self.mechanism.to_dict()
        return plain(out)

    def fingerprint(self) -> dict[str, Any]:
        """What a checkpoint must agree on: everything but the rounds and evaluation period."""
        out = self.to_dict()
        for key in ("rounds", "eval_every"):
            out.pop(key)
        return out
