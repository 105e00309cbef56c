"""The claims of Werner et al. 2023 about Table 1, as a table judged on the measured result.

Table 1 holds the MNIST rotation and private-label tasks (Werner 2024, Table 2.1).
:data:`CLAIMS` is judged on the result of
:func:`collabecon.reproductions.clustered_mnist.measure`, with the paper's accuracies
(:data:`PAPER`) and the notes on methods near chance (:func:`chance_note`).

The claims are the paper's text (§4.2: FC outperforms standalone training and all
personalisation baselines; the methods that keep a global model do poorly on private labels;
a pooled model is at most 25 % right on private labels, each image carrying four equally
frequent labels) and every pairwise ordering of Table 1's published accuracies, 21 pairs per
task, judged on the mean over seeds, with the seed-to-seed spread of each margin. Our loss is
cross-entropy, not the ``-p_y`` of the authors' code, so Table 1's loss column is not
compared.
"""

from __future__ import annotations

import itertools
from typing import Any

import numpy as np

from econ.claims import Claim, ClaimSpec, evaluate

__all__ = [
    "CHANCE",
    "CLAIMS",
    "METHODS",
    "NAMES",
    "NEAR_CHANCE",
    "PAPER",
    "POOLED_CEILING",
    "SOURCE",
    "TABLE_COLUMNS",
    "TABLE_ROWS",
    "TASK_NAMES",
    "chance_note",
    "claims",
]

METHODS = ("local", "global", "ditto", "ifca", "knn", "fc", "oracle")
NAMES = {
    "local": "Local",
    "global": "Global",
    "ditto": "Ditto",
    "ifca": "IFCA",
    "knn": "kNN-Per",
    "fc": "FC",
    "oracle": "Oracle",
}
#: task key -> its name in the text
TASK_NAMES = {"rotation": "rotation", "private_label": "private-label"}
#: task key -> its column of Table 1 (the accuracy column under each task's heading)
TABLE_COLUMNS = {"rotation": "Rotation, Acc.(%)", "private_label": "Private label, Acc.(%)"}
#: method key -> its row of Table 1 as printed, top to bottom (Werner 2024, Table 2.1, the
#: same rows)
TABLE_ROWS = {
    "local": "Local",
    "global": "Global",
    "ditto": "Ditto",
    "ifca": "IFCA",
    "knn": "KNN",
    "fc": "FC (ours)",
    "oracle": "GT (oracle)",
}

#: Werner et al. (2023), Table 1: test accuracy (%) on the two tasks.
PAPER = {
    "rotation": {
        "local": 71.3, "global": 46.6, "ditto": 62.0, "ifca": 54.6, "knn": 52.1, "fc": 75.4,
        "oracle": 84.7,
    },
    "private_label": {
        "local": 75.2, "global": 22.2, "ditto": 61.7, "ifca": 65.4, "knn": 63.2, "fc": 77.0,
        "oracle": 85.1,
    },
}  # fmt: skip

SOURCE = "Werner et al. 2023"
N_CLASSES = 10
CHANCE = 100.0 / N_CLASSES
#: a method within this many points of chance gets a note saying why
NEAR_CHANCE = 5.0
#: private labels: each image carries 4 equally frequent labels, so one model is right on at
#: most a quarter of them (Werner et al. 2023, §4.2)
POOLED_CEILING = 25.0


def _paired_std(a: list[float], b: list[float]) -> float:
    """Seed-to-seed standard deviation (ddof 1) of the paired differences a - b."""
    diff = np.asarray(a) - np.asarray(b)
    return float(diff.std(ddof=1)) if diff.size > 1 else float("nan")


def chance_note(task: str, method: str, accuracy: float) -> str:
    """Why a method sits within :data:`NEAR_CHANCE` points of chance, or empty when it does not.

    Chance is 10 % on 10 classes.
    """
    if accuracy > CHANCE + NEAR_CHANCE:
        return ""
    if task == "private_label" and method == "global":
        return (
            f"{accuracy:.1f} % is near chance by construction: one model for every client is "
            f"right on at most {POOLED_CEILING:.0f} % of private labels (each image carries "
            "four equally frequent labels; the paper's 22.2 %, §4.2)"
        )
    return (
        f"{accuracy:.1f} % is within {NEAR_CHANCE:.0f} points of chance ({CHANCE:.0f} %) at "
        "the learning rate chosen from the grid: the method does not learn in this budget"
    )


def _margin_note(task: dict[str, Any], a: str, b: str) -> str:
    """The margin mean_a - mean_b against the seed-to-seed spread of the paired difference."""
    margin = task[a]["mean"] - task[b]["mean"]
    spread = _paired_std(task[a]["test"], task[b]["test"])
    notes = [task[m]["note"] for m in (a, b) if task[m]["note"]]
    if np.isfinite(spread) and abs(margin) <= spread:
        notes.insert(
            0,
            f"margin {margin:+.1f} points is within the seed-to-seed spread of the difference "
            f"(std {spread:.1f} over {len(task[a]['test'])} seeds)",
        )
    elif not np.isfinite(spread):
        notes.insert(0, "one seed: no spread")
    return "; ".join(notes)


def _means(m: dict[str, Any], task: str) -> dict[str, float]:
    return {method: row["mean"] for method, row in m["tasks"][task].items()}


def _pick(values: dict[str, float], methods: tuple[str, ...]) -> dict[str, float]:
    return {NAMES[m]: round(values[m], 2) for m in methods}


def _margin_notes(m: dict[str, Any], task: str, a: str, others: tuple[str, ...]) -> str:
    """The margin notes of ``a`` against each of ``others``, joined."""
    rows = m["tasks"][task]
    return "; ".join(n for b in others if (n := _margin_note(rows, a, b)))


def _task_claims(task: str) -> tuple[ClaimSpec, ...]:
    """The claims about one task: the text of §4.2 and Table 1's pairwise orderings."""
    paper, label = PAPER[task], TASK_NAMES[task]
    table = f"Table 1 ({TABLE_COLUMNS[task]})"
    performance = "§4.2, Performance paragraph"

    def spec(
        claim: str, statement: str, where: str, methods: tuple[str, ...], **rest: Any
    ) -> ClaimSpec:
        return ClaimSpec(
            id=f"table1.{task}.{claim}",
            statement=statement,
            where=f"{SOURCE}, {where}",
            published=_pick(paper, methods),
            measured=lambda m: _pick(_means(m, task), methods),
            applies=lambda m: task in m["tasks"],
            **rest,
        )

    baselines = ("global", "ditto", "ifca", "knn")
    pooled = ("global", "ditto", "knn")
    # §4.2, Performance: "FC outperforms standalone training and all personalization
    # baselines"; Table 1 caption: "FC outperforms all non-oracle baselines".
    text = [
        spec(
            "fc-outperforms-local",
            f"FC outperforms standalone training (Local), {label} task",
            f"{performance}; Table 1 caption; {table}",
            ("fc", "local"),
            holds=lambda m: _means(m, task)["fc"] > _means(m, task)["local"],
            note=lambda m: _margin_note(m["tasks"][task], "fc", "local"),
        ),
        spec(
            "fc>baselines",
            f"FC outperforms Global, Ditto, IFCA and kNN-Per, {label} task",
            f"{performance}; Table 1 caption; {table}",
            ("fc", *baselines),
            holds=lambda m: all(_means(m, task)["fc"] > _means(m, task)[b] for b in baselines),
            note=lambda m: _margin_notes(m, task, "fc", baselines),
        ),
        spec(
            "oracle-best",
            f"the ground-truth Oracle is the most accurate method, {label} task",
            table,
            METHODS,
            holds=lambda m: _means(m, task)["oracle"] >= max(_means(m, task).values()),
            note=lambda m: _margin_notes(
                m, task, "oracle", tuple(x for x in METHODS if x != "oracle")
            ),
        ),
        spec(
            "global<local",
            f"Global (FedAvg) is less accurate than Local, {label} task",
            table,
            ("global", "local"),
            holds=lambda m: _means(m, task)["global"] < _means(m, task)["local"],
            note=lambda m: _margin_note(m["tasks"][task], "local", "global"),
        ),
    ]
    if task == "private_label":
        # §4.2: "a model trained over the pool of all datasets only admits inferior
        # performance. Therefore, ... FedAvg, Ditto, and KNN, perform poorly compared to
        # training alone."
        text += [
            spec(
                "global-model-methods<local",
                "the methods that keep a global model (FedAvg, Ditto, kNN-Per) do poorly "
                "compared to training alone on private labels",
                f"{performance}; {table}",
                ("local", *pooled),
                holds=lambda m: all(_means(m, task)[p] < _means(m, task)["local"] for p in pooled),
                note=lambda m: _margin_notes(m, task, "local", pooled),
            ),
            ClaimSpec(
                id="table1.private_label.global<=25%",
                statement="a model trained on the pool of all clients only admits inferior "
                f"performance on private labels: at most {POOLED_CEILING:.0f} % (each image "
                "carries four equally frequent labels)",
                where=f"{SOURCE}, {performance}; {table}, row {TABLE_ROWS['global']}",
                published=paper["global"],
                measured=lambda m: round(_means(m, task)["global"], 2),
                holds=lambda m: _means(m, task)["global"] <= POOLED_CEILING,
                note=lambda m: (
                    f"std {m['tasks'][task]['global']['std']:.1f} over "
                    f"{len(m['tasks'][task]['global']['test'])} seeds"
                ),
                applies=lambda m: task in m["tasks"],
            ),
        ]
    pairs = [
        (a, b) if paper[a] > paper[b] else (b, a) for a, b in itertools.combinations(METHODS, 2)
    ]
    orderings = [
        spec(
            f"{hi}>{lo}",
            f"{NAMES[hi]} above {NAMES[lo]}, {label} task",
            f"{table}, rows {TABLE_ROWS[hi]} and {TABLE_ROWS[lo]}",
            (hi, lo),
            holds=lambda m, hi=hi, lo=lo: _means(m, task)[hi] > _means(m, task)[lo],
            note=lambda m, hi=hi, lo=lo: _margin_note(m["tasks"][task], hi, lo),
        )
        for hi, lo in pairs
    ]
    return (*text, *orderings)


#: The paper's claims about Table 1, on
#: :func:`collabecon.reproductions.clustered_mnist.measure`'s result (every method on the tasks
#: present): the text claims of §4.2 and the 21 pairwise orderings of Table 1's published
#: accuracies per task, ``holds`` on the means over seeds.
CLAIMS: tuple[ClaimSpec, ...] = tuple(spec for task in TASK_NAMES for spec in _task_claims(task))


def claims(measured: dict[str, Any]) -> list[Claim]:
    """The paper's claims about Table 1 (:data:`CLAIMS`) on ``measured``."""
    return evaluate(CLAIMS, measured)
