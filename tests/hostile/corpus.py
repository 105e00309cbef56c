"""The hostile inputs of the command line, by kind (:data:`tests.hostile.case.GROUPS`).

``wrong-answer``
    inputs whose natural result is a believable wrong answer: a loss read as a quality, JSON
    booleans as qualities, a duplicate key dropping a firm, a training that diverges, an
    interval from one seed, a seller left with a negative utility, an interrupted run;
``contradiction``
    a flag that has no effect under the others given (``--dp-delta`` without noise,
    ``--dataset-size`` without ``--sampling fixed``, ``--lr paper`` with ``--lr-grid``);
``huge``
    counts of 10**12 and 10**30 on every count flag, and work too large for the machine;
``sweep``
    configurations with invalid points, stored results that are wrong;
``lock``
    a directory in use by another (live) process, and lock files that are not what they seem;
``cluster``
    Ray addresses and Flower ports, and output paths with quotes and newlines;
``file``
    hostile files: nested and mistyped JSON, out-of-range IDX labels, truncated archives,
    pickles that run code, pipes, device files;
``overflow``
    1e400, -1e400, 1e-400 and 1/0 on every number flag;
``spec``
    malformed and extreme specification strings: consumer populations (``beta:``,
    ``beta:a,b``, ``nosuch:1``, parameters of 0, -1, 1e308 and NaN, strings of 100 000
    characters), sampling schemes and privacy accountants.
"""

from __future__ import annotations

import gzip
import io
import json
import pickle
import struct
import zipfile
from collections.abc import Callable
from pathlib import Path

from tests.hostile import case as _case
from tests.hostile.case import Case, Ran, both, fifo, lock_left, locked, writes
from tests.test_cli_bad_inputs import BASE, CONFIG, GARBAGE

#: small invocations of the actions the bad-input table has no base for
EXTRA_BASE: dict[str, list[str]] = {
    "bench bargaining": [
        "bench",
        "bargaining",
        "--points",
        "100",
        "--baseline-points",
        "5",
        "--reference-points",
        "5",
        "--repeats",
        "1",
    ],
    "bench pricing-repeated": [
        "bench",
        "pricing-repeated",
        "--runs",
        "2",
        "--rounds",
        "50",
        "--baseline-runs",
        "1",
        "--baseline-rounds",
        "20",
        "--scale-runs",
        "2",
        "--repeats",
        "1",
    ],
    "bench privacy": [
        *("bench", "privacy", "--clients", "2", "--existence-clients", "10", "--draws", "1")
    ],
    "privacy account epsilon": ["privacy", "account", "--steps", "10", "--delta", "1e-5"],
    "reproduce": ["reproduce", "--out", "rep", "--only", "pricing"],
    "privacy exists dp-sgd": ["privacy", "exists", "--model", "dp-sgd", "--lam", "1", "2"],
    "privacy exists bayes": ["privacy", "exists", "--model", "bayes", "--lam", "1", "2"],
    "flower simulate": ["flower", "simulate", "--dataset", "digits", "--clients", "2"],
    "flower deploy": ["flower", "deploy", "--dataset", "digits", "--clients", "2"],
}
BASES = {**BASE, **EXTRA_BASE}
#: a time-out for a case that trains a little before its good ending
TRAINS_S = 240.0


def _base(name: str) -> list[str]:
    """A small valid invocation; a sweep's configuration is ``{files}/c.toml``."""
    return [CONFIG_PATH if w == "@config" else w for w in BASES[name]]


CONFIG_PATH = "{files}/c.toml"


def case(id: str, group: str, argv: list[str], expect=("refuse",), **kwargs: object) -> Case:
    """A :func:`tests.hostile.case.case` that writes the sweep configuration its argv names."""
    if kwargs.get("prepare") is None and any(CONFIG_PATH in w for w in argv):
        kwargs["prepare"] = writes(("c.toml", CONFIG))
    return _case.case(id, group, argv, expect, **kwargs)


def _tiny_config(**train: object) -> str:
    """A sweep configuration of one tiny run, with ``train`` fields changed."""
    fields = {
        "dataset": "digits",
        "model": "linear",
        "clients": 2,
        "rounds": 1,
        "local_steps": 1,
        **train,
    }
    lines = ["[train]", *(f"{k} = {json.dumps(v)}" for k, v in fields.items())]
    return "\n".join(lines) + "\n"


# ------------------------------------------------------------------------------------------
# checks of a run's result
# ------------------------------------------------------------------------------------------


def _json(ran: Ran) -> dict | None:
    try:
        value = json.loads(ran.out)
    except ValueError:
        return None
    return value if isinstance(value, dict) else None


def _firms(count: int) -> Callable[[Ran], str | None]:
    """A market result must name ``count`` firms (none dropped or merged)."""

    def check(ran: Ran) -> str | None:
        result = _json(ran)
        if ran.code != 0 or result is None:
            return None
        names = result.get("names", [])
        return None if len(names) == count else f"{count} firms given, {len(names)} priced"

    return check


def _seller_not_negative(ran: Ran) -> str | None:
    """An equilibrium with a negative seller utility must be certified and say why it stands.

    In the thesis's game (ch. 4, Definition 4) the seller bears the evasion cost c_S at the
    signalling stage, before it prices, and has no option to stay out: a negative utility is
    no reason to deviate. The flag must then come with every player's deviation gains, none
    positive, and a note on the seller's loss.
    """
    result = _json(ran)
    if ran.code != 0 or result is None:
        return None
    seller = result.get("seller")
    if isinstance(seller, (int, float)) and seller < 0 and result.get("is_equilibrium"):
        gains = result.get("deviation_gains")
        if not isinstance(gains, dict) or not gains:
            return f"an equilibrium whose seller utility is negative ({seller}), uncertified"
        if any(not isinstance(g, (int, float)) or g > 1e-12 for g in gains.values()):
            return f"an equilibrium flagged although a deviation gains: {gains}"
        if not result.get("seller_note"):
            return f"a negative seller utility ({seller}) with nothing saying why it stands"
    return None


def _null_says_why(ran: Ran) -> str | None:
    """A null field of a result must sit beside a ``<field>_why`` (or ``why``) that says why."""
    result = _json(ran)
    if ran.code != 0 or result is None:
        return None

    def walk(value: object, where: str) -> str | None:
        if isinstance(value, dict):
            for key, item in value.items():
                stem = key.split("_")[0]  # epsilon_why speaks for epsilon_min and _max
                if item is None and not any(
                    k in value for k in (f"{key}_why", "why", f"{key}_reason", f"{stem}_why")
                ):
                    return f"{where}.{key} is null and nothing says why"
                found = walk(item, f"{where}.{key}")
                if found:
                    return found
        elif isinstance(value, list):
            for i, item in enumerate(value):
                found = walk(item, f"{where}[{i}]")
                if found:
                    return found
        return None

    return walk(result, "result")


def _no_file(name: str) -> Callable[[Ran], str | None]:
    """The run must not create ``name`` (a pickle's payload) anywhere in its folders."""

    def check(ran: Ran) -> str | None:
        for folder in (ran.files, ran.work):
            if (folder / name).exists():
                return f"loading a file ran the code it carries ({name} was created)"
        return None

    return check


def _wrote(relative: str) -> Callable[[Ran], str | None]:
    """An exit 0 must have written ``relative`` under the files."""

    def check(ran: Ran) -> str | None:
        if ran.code == 0 and not (ran.files / relative).exists():
            return f"exit 0 without writing {relative}"
        return None

    return check


def _interrupted_report(directory: str) -> Callable[[Ran], str | None]:
    """After Ctrl-C the lock is gone and no report claims a finished run."""

    def check(ran: Ran) -> str | None:
        folder = ran.work / directory
        if (folder / ".collabecon.lock").exists():
            return "the lock is left behind after the interrupt"
        report, page = folder / "report.json", folder / "report.md"
        if report.exists() and '"status": "incomplete"' not in report.read_text():
            return "a report written before the run finished does not say it is incomplete"
        if page.exists() and not page.read_text().startswith("INCOMPLETE"):
            return "the report page of an unfinished run does not say so in its first line"
        return None

    return check


# ------------------------------------------------------------------------------------------
# hostile files
# ------------------------------------------------------------------------------------------


class _Payload:
    """A pickle that creates the file ``PWNED`` in the working directory when loaded."""

    def __reduce__(self):
        return (open, ("PWNED", "w"))


PWNED = pickle.dumps({"state": _Payload()})


def _idx(shape: tuple[int, ...], values: bytes, magic: int | None = None) -> bytes:
    ndim = len(shape)
    head = struct.pack(">I", magic if magic is not None else 0x0800 + ndim)
    return head + b"".join(struct.pack(">I", n) for n in shape) + values


def _mnist_files(labels: bytes | None = None, *, gz: bool = False, **broken: bytes) -> Callable:
    """Tiny MNIST IDX files (40 train, 10 test images) under ``files/data/mnist/``."""
    train_labels = labels if labels is not None else bytes(i % 10 for i in range(40))
    parts = {
        "train-images-idx3-ubyte": _idx((40, 28, 28), bytes(40 * 784)),
        "train-labels-idx1-ubyte": _idx((40,), train_labels),
        "t10k-images-idx3-ubyte": _idx((10, 28, 28), bytes(10 * 784)),
        "t10k-labels-idx1-ubyte": _idx((10,), bytes(range(10))),
    }
    parts.update({k.replace("_", "-"): v for k, v in broken.items()})
    out = []
    for name, content in parts.items():
        if gz:
            out.append((f"data/mnist/{name}.gz", gzip.compress(content)))
        else:
            out.append((f"data/mnist/{name}", content))
    return writes(*out)


def _npz(**arrays: object) -> bytes:
    import numpy as np

    buffer = io.BytesIO()
    np.savez(buffer, **arrays)
    return buffer.getvalue()


def _truncated_zip() -> bytes:
    buffer = io.BytesIO()
    with zipfile.ZipFile(buffer, "w") as archive:
        archive.writestr("x_train.npy", b"\x93NUMPY" + bytes(200))
    return buffer.getvalue()[:60]


#: a tiny valid measured curve (one seed, one noise level, two clients)
CURVE = {
    "noise": [1.0],
    "epsilon": [[[1.0, 1.0]]],
    "accuracy_federated": [[[0.8, 0.8]]],
    "accuracy_alone": [[0.6, 0.6]],
}


def _curve(**changes: object) -> str:
    return json.dumps({**CURVE, **changes})


# ------------------------------------------------------------------------------------------
# the groups
# ------------------------------------------------------------------------------------------

TRAIN_TINY = _base("train")  # digits, mlp, 4 clients, 1 round, 1 local step
#: a repeated game that answers (two seeds: a standard error)
PRICING_OK = ["pricing", "repeated", "--rounds", "100", "--seeds", "2"]


def wrong_answers() -> list[Case]:
    """Inputs whose natural result is a believable wrong answer."""
    g = "wrong-answer"
    mq = "market --from"
    out = [
        case(
            "market-from-metric-loss",
            g,
            ["market", "--from", "{files}/q.json", "--json"],
            silent=f"{mq} a file of losses (metric 'loss') priced the losses as qualities",
            prepare=writes(
                ("q.json", '{"names": ["a", "b"], "quality": [0.3, 0.25], "metric": "loss"}')
            ),
        ),
        case(
            "market-from-metric-loss-above-1",
            g,
            ["market", "--from", "{files}/q.json", "--json"],
            silent="losses above 1 priced as qualities",
            prepare=writes(
                ("q.json", '{"names": ["a", "b"], "quality": [2.3, 1.7], "metric": "loss"}')
            ),
        ),
        case(
            "market-from-metric-error",
            g,
            ["market", "--from", "{files}/q.json", "--json"],
            silent="error rates (lower is better) priced as qualities",
            prepare=writes(
                ("q.json", '{"names": ["a", "b"], "quality": [0.1, 0.4], "metric": "error"}')
            ),
        ),
        case(
            "market-from-rounds-metric-loss",
            g,
            ["market", "--from", "{files}/q.json", "--json"],
            silent="a list of rounds with metric 'loss' priced as qualities",
            prepare=writes(
                (
                    "q.json",
                    '[{"names": ["a", "b"], "quality": [0.3, 0.2], "metric": "loss"}]',
                )
            ),
        ),
        case(
            "market-from-json-booleans",
            g,
            ["market", "--from", "{files}/q.json", "--json"],
            silent="JSON booleans read as qualities 1 and 0",
            prepare=writes(("q.json", '[{"a": true, "b": false}]')),
        ),
        case(
            "market-from-json-booleans-names-quality",
            g,
            ["market", "--from", "{files}/q.json", "--json"],
            silent="a JSON boolean read as quality 1",
            prepare=writes(("q.json", '{"names": ["a", "b"], "quality": [true, 0.5]}')),
        ),
        case(
            "market-from-json-booleans-rounds",
            g,
            ["market", "--from", "{files}/q.json", "--json"],
            silent="JSON booleans in rounds read as qualities",
            prepare=writes(("q.json", '{"rounds": [{"q_a": true, "q_b": 0.5}]}')),
        ),
        case(
            "market-from-duplicate-key-round",
            g,
            ["market", "--from", "{files}/q.json", "--json"],
            silent="a duplicate key silently kept one of the two qualities of firm a",
            prepare=writes(("q.json", '[{"a": 0.3, "a": 0.9, "b": 0.5}]')),
        ),
        case(
            "market-from-duplicate-key-quality",
            g,
            ["market", "--from", "{files}/q.json", "--json"],
            silent="a duplicate 'quality' key silently kept the last list",
            prepare=writes(
                ("q.json", '{"names": ["a", "b"], "quality": [0.1, 0.2], "quality": [0.9, 0.8]}')
            ),
        ),
        case(
            "market-from-duplicate-key-rounds",
            g,
            ["market", "--from", "{files}/q.json", "--json"],
            silent="a duplicate column key in a round silently kept one value",
            prepare=writes(("q.json", '{"rounds": [{"q_a": 0.2, "q_b": 0.5, "q_a": 0.7}]}')),
        ),
        case(
            "market-from-quality-strings",
            g,
            ["market", "--from", "{files}/q.json", "--json"],
            silent="JSON strings read as numbers",
            prepare=writes(("q.json", '{"names": ["a", "b"], "quality": ["0.3", "0.8"]}')),
        ),
        case(
            "market-from-ipfl-percent",
            g,
            ["market", "--from", "{files}/ipfl_result.json", "--json"],
            silent="accuracies in percent (85, 90) priced as qualities",
            prepare=writes(("ipfl_result.json", '{"personalised_accuracy": [85.0, 90.0]}')),
        ),
        case(
            "market-from-train-null-target",
            g,
            ["market", "--from", "{files}/train.json", "--json"],
            silent="a regression run's null target accuracies priced",
            prepare=writes(("train.json", '{"target_accuracy": null, "target_loss": [0.3, 0.4]}')),
        ),
        case(
            "market-from-train-target-nulls",
            g,
            ["market", "--from", "{files}/train.json", "--json"],
            silent="null target accuracies priced",
            prepare=writes(("train.json", '{"target_accuracy": [null, 0.4]}')),
        ),
        case(
            "market-from-csv-bom",
            g,
            ["market", "--from", "{files}/q.csv", "--json"],
            expect=("refuse", "ok"),
            silent="a byte-order mark hid firm a's column: one firm priced as a monopoly",
            check=_firms(2),
            prepare=writes(("q.csv", "\ufeffq_a,q_b\n0.3,0.8\n".encode("utf-8"))),
        ),
        case(
            "market-from-csv-ragged-long-row",
            g,
            ["market", "--from", "{files}/q.csv", "--json"],
            silent="a row longer than the header was read with its extra cell dropped",
            prepare=writes(("q.csv", "q_a,q_b\n0.3,0.8,0.9\n")),
        ),
        case(
            "market-from-csv-loss-columns-prefixed",
            g,
            ["market", "--from", "{files}/q.csv", "--json"],
            silent="a CSV of losses (values above 1) priced",
            prepare=writes(("q.csv", "q_a,q_b\n2.30,1.70\n")),
        ),
        case(
            "market-roundtrip",
            g,
            ["market", "--from", "{files}/m.json", "--json"],
            expect=("ok",),
            check=_firms(2),
            prepare=writes(
                (
                    "m.json",
                    json.dumps(
                        {
                            "names": ["a", "b"],
                            "rounds": [{"t": 0, "quality_a": 0.3, "quality_b": 0.8}],
                        }
                    ),
                )
            ),
        ),
        case(
            "market-three-way-tie",
            g,
            ["market", "--qualities", "0.5", "0.5", "0.5", "--json"],
            expect=("ok",),
        ),
        case(
            "market-tie-at-top",
            g,
            ["market", "--qualities", "0.2", "0.9", "0.9", "--json"],
            expect=("ok",),
        ),
        case("duopoly-both-zero", g, ["duopoly", "--ql", "0", "--qh", "0", "--json"], ("ok",)),
        case("duopoly-both-one", g, ["duopoly", "--ql", "1", "--qh", "1", "--json"], ("ok",)),
        case(
            "duopoly-denormal",
            g,
            ["duopoly", "--ql", "0", "--qh", "1e-320", "--json"],
            ("ok", "refuse"),
        ),
        case(
            "bargain-denormal-qmax",
            g,
            ["bargain", "--ql0", "0", "--qh0", "1e-300", "--qmax", "1e-300", "--json"],
            ("ok", "refuse"),
        ),
        case(
            "pricing-negative-seller-alpha-1",
            g,
            ["pricing", "equilibrium", "--alpha", "1", "--cs", "100", "--json"],
            expect=("ok", "refuse"),
            silent="an equilibrium in which the seller's utility is negative",
            check=_seller_not_negative,
        ),
        case(
            "pricing-negative-seller-alpha-9-10",
            g,
            ["pricing", "equilibrium", "--alpha", "9/10", "--cs", "100", "--json"],
            expect=("ok", "refuse"),
            silent="an equilibrium in which the seller's utility is negative",
            check=_seller_not_negative,
        ),
        case(
            "pricing-negative-seller-thesis",
            g,
            [
                "pricing",
                "equilibrium",
                "--alpha",
                "1",
                "--cs",
                "40",
                "--convention",
                "thesis",
                "--json",
            ],
            expect=("ok", "refuse"),
            check=_seller_not_negative,
        ),
        case(
            "pricing-repeated-one-seed",
            g,
            [*_base("pricing repeated"), "--json"],
            expect=("ok", "refuse"),
            check=_null_says_why,
            silent="a standard error from one seed",
        ),
        case(
            "pricing-repeated-belief-above-1",
            g,
            [*_base("pricing repeated"), "--alpha-hat-init", "5"],
            silent="a belief (a probability) of 5 played",
        ),
        case(
            "pricing-repeated-bias-out-of-unit",
            g,
            [*_base("pricing repeated"), "--bias", "2", "3"],
            silent="a belief pushed outside [0, 1] by the bias played",
        ),
        case(
            "privacy-exists-bound-overflow",
            g,
            ["privacy", "exists", "--model", "dp-mean", "--lam", "1", "2", "--bound", "1e300"],
            expect=("refuse", "ok"),
            silent="an existence verdict computed through an overflow",
        ),
        case(
            "privacy-exists-dp-sgd-lam-overflow",
            g,
            ["privacy", "exists", "--model", "dp-sgd", "--lam", "1e-300", "1e300"],
            expect=("refuse", "ok"),
            silent="an existence verdict computed through an overflow",
        ),
        case(
            "privacy-exists-dp-sgd-mu-tiny",
            g,
            ["privacy", "exists", "--model", "dp-sgd", "--lam", "1", "2", "--mu", "1e-300"],
            expect=("refuse", "ok"),
        ),
        case(
            "privacy-exists-lam-zero",
            g,
            ["privacy", "exists", "--model", "dp-mean", "--lam", "0", "0", "--json"],
            expect=("refuse", "ok"),
        ),
        case(
            "privacy-optimal-lam-zero",
            g,
            ["privacy", "optimal", "--model", "dp-mean", "--lam", "0", "0", "--json"],
            expect=("refuse", "ok"),
            check=_null_says_why,
            silent="a protocol with null fields and no word on why",
        ),
        case(
            "privacy-optimal-bayes-lam-huge",
            g,
            ["privacy", "optimal", "--model", "bayes", "--lam", "1e300", "1", "--json"],
            expect=("refuse", "ok"),
            check=_null_says_why,
        ),
        case(
            "privacy-optimal-inaccurate-solver",
            g,
            ["privacy", "optimal", "--model", "dp-mean", "--lam", "1", "2", "--json"],
            expect=("ok", "fail"),
            silent="a solution the solver marked inaccurate reported as optimal",
            check=lambda ran: (
                "the solver's 'optimal_inaccurate' answer is reported as the optimum"
                if ran.code == 0 and "inaccurate" in ran.out and '"status"' not in ran.out
                else None
            ),
        ),
        case(
            "privacy-account-delta-tiny",
            g,
            [*_base("privacy account")[:-2], "--delta", "1e-300", "--json"],
            expect=("refuse", "ok"),
            check=_null_says_why,
            silent="epsilon printed as null without a reason",
        ),
        case(
            "train-lr-1e30-diverges",
            g,
            [*TRAIN_TINY, "--lr", "1e30"],
            expect=("refuse", "fail"),
            silent="a diverged training reported as a result",
            timeout=TRAINS_S,
            after_work=True,
        ),
        case(
            "train-lr-1e10-momentum",
            g,
            [*TRAIN_TINY, "--lr", "1e10", "--momentum", "0.99", "--json"],
            expect=("refuse", "fail", "ok"),
            timeout=TRAINS_S,
            after_work=True,
        ),
        case(
            "ipfl-lr-1e30-diverges",
            g,
            [*_base("ipfl"), "--lr", "1e30"],
            expect=("refuse", "fail"),
            silent="a diverged training reported as a result",
            timeout=TRAINS_S,
            after_work=True,
        ),
        case(
            "df-lr-1e30-diverges",
            g,
            [*_base("defection-free"), "--lr", "1e30"],
            expect=("refuse", "fail"),
            silent="a diverged training reported as a result",
            timeout=TRAINS_S,
            after_work=True,
        ),
        case(
            "privacy-curve-lr-1e30-diverges",
            g,
            [*_base("privacy curve"), "--lr", "1e30"],
            expect=("refuse", "fail"),
            silent="a diverged training measured as a privacy curve",
            timeout=TRAINS_S,
            after_work=True,
        ),
        case(
            "privacy-curve-one-seed",
            g,
            [*_base("privacy curve"), "--json"],
            expect=("ok", "refuse"),
            silent="an interval from one seed",
            check=_null_says_why,
            timeout=TRAINS_S,
        ),
        case(
            "sweep-run-diverges",
            g,
            ["sweep", "{files}/c.toml", "--json"],
            expect=("fail",),
            silent="a sweep with a diverged run reported as finished",
            prepare=writes(("c.toml", _tiny_config() + "[grid]\nlr = [0.1, 1e30]\n")),
            timeout=TRAINS_S,
            after_work=True,
        ),
        case(
            "reproduce-interrupted",
            g,
            ["reproduce", "--out", "rep", "--only", "cobo"],
            expect=("interrupted",),
            check=_interrupted_report("rep"),
            interrupt_after=25.0,
            timeout=120.0,
        ),
        case(
            "train-interrupted",
            g,
            [*TRAIN_TINY, "--rounds", "100000", "--checkpoint", "ck"],
            expect=("interrupted",),
            check=lambda ran: (
                "the lock is left behind after the interrupt"
                if (ran.work / "ck" / ".collabecon.lock").exists()
                else None
            ),
            interrupt_after=25.0,
            timeout=120.0,
        ),
    ]
    return out


def contradictions() -> list[Case]:
    """Flags without effect under the others given, and flags that exclude each other."""
    g = "contradiction"
    acc = _base("privacy account")
    rows: list[tuple[str, list[str]]] = [
        ("train-dp-delta-0-no-noise", [*TRAIN_TINY, "--dp-delta", "0"]),
        ("train-dp-delta-no-noise", [*TRAIN_TINY, "--dp-delta", "1e-6"]),
        ("train-dp-clip-no-noise", [*TRAIN_TINY, "--dp-max-grad-norm", "2"]),
        ("train-checkpoint-every-no-checkpoint", [*TRAIN_TINY, "--checkpoint-every", "5"]),
        ("train-partition-arg-iid", [*TRAIN_TINY, "--partition-arg", "alpha=0.5"]),
        (
            "train-algorithm-arg-local",
            [*TRAIN_TINY, "--algorithm", "local", "--algorithm-arg", "k=2"],
        ),
        ("train-eval-every-over-rounds", [*TRAIN_TINY, "--eval-every", "5"]),
        ("train-resume-out-only", [*TRAIN_TINY, "--resume", "--out", "o"]),
        ("privacy-account-dataset-size-poisson", [*acc, "--dataset-size", "100"]),
        ("privacy-account-fixed-pld", [*acc, "--sampling", "fixed", "--dataset-size", "100"]),
        ("privacy-account-rate-zero", [*acc, "--sampling-rate", "0"]),
        ("privacy-account-delta-0", [*acc[:-2], "--delta", "0"]),
        (
            "privacy-optimal-accuracy-nu",
            [*_base("privacy optimal"), "--objective", "accuracy", "--nu", "1", "1"],
        ),
        ("privacy-exists-bayes-bound", [*_base("privacy exists bayes"), "--bound", "3"]),
        ("privacy-exists-dp-mean-tau", [*_base("privacy exists"), "--tau", "2"]),
        ("privacy-exists-integer-rounds-dp-mean", [*_base("privacy exists"), "--integer-rounds"]),
        (
            "privacy-figure1-repetitions-1",
            ["privacy", "figure1", "--out", "f", "--repetitions", "1"],
        ),
        ("cobo-lr-paper-with-grid", [*_base("cobo"), "--lr", "paper", "--lr-grid", "0.1"]),
        ("cobo-lr-grid-empty-item", [*_base("cobo"), "--lr-grid", "0.1,,0.2"]),
        ("cobo-methods-empty", [*_base("cobo")[:-2], "--methods", ""]),
        ("ipfl-lr-grid-without-compare", [*_base("ipfl"), "--lr-grid", "0.1"]),
        ("ipfl-code-bugs-alone", [*_base("ipfl"), "--code-bugs"]),
        ("ipfl-resume-without-checkpoint", [*_base("ipfl"), "--resume"]),
        ("reproduce-out-empty", ["reproduce", "--out", ""]),
        ("reproduce-out-space", ["reproduce", "--out", " "]),
        ("reproduce-experiments-and-out", ["reproduce", "--experiments", "--out", "rep"]),
        ("reproduce-experiments-and-only", ["reproduce", "--experiments", "--only", "pricing"]),
        ("reproduce-experiments-and-seeds", ["reproduce", "--experiments", "--seeds", "2"]),
        ("reproduce-only-repeated", ["reproduce", "--out", "rep", "--only", "pricing,pricing"]),
        ("market-seed-without-consumers", ["market", "--qualities", "0.3", "0.8", "--seed", "5"]),
        ("market-names-with-from", ["market", "--from", "{files}/q.csv", "--names", "a", "b"]),
        ("duopoly-order-and-ordered", ["duopoly", "--ql", "0.9", "--qh", "0.3"]),
        ("bargain-qh0-above-qmax", ["bargain", "--ql0", "0.3", "--qh0", "0.9", "--qmax", "0.5"]),
        (
            "pricing-eta-alpha-pd",
            [*_base("pricing repeated"), "--seller", "alpha-pd", "--eta", "0.1"],
        ),
        ("pricing-theta-equal", ["pricing", "equilibrium", "--alpha", "1/2", "--theta-low", "15"]),
        ("pricing-figures-out-empty", ["pricing", "figures", "--out", "", "--rounds", "100"]),
        ("pricing-repeated-out-empty", [*PRICING_OK, "--out", ""]),
        ("privacy-figure1-out-empty", ["privacy", "figure1", "--out", "", "--repetitions", "5"]),
        ("privacy-curve-out-empty", [*_base("privacy curve"), "--out", ""]),
        ("train-out-empty", [*TRAIN_TINY, "--out", ""]),
        ("train-checkpoint-empty", [*TRAIN_TINY, "--checkpoint", ""]),
        ("df-train-alone-defection-free", [*_base("defection-free"), "--train-alone"]),
        ("df-figures-with-scheme", [*_base("defection-free"), "--figures", "--scheme", "complete"]),
        ("sweep-gpus-per-run-local", ["sweep", "{files}/c.toml", "--gpus-per-run", "0.5"]),
        ("sweep-address-local-engine", ["sweep", "{files}/c.toml", "--address", "127.0.0.1:6379"]),
        ("flower-simulate-port", [*_base("flower simulate"), "--port", "9000"]),
        ("flower-deploy-cpus", [*_base("flower deploy"), "--cpus", "2"]),
        ("flower-prepare-two-algorithms", [*_base("flower"), "--algorithm", "fedavg,ifca"]),
        ("verify-markdown-with-only", ["verify", "--markdown", "--only", "nowhere."]),
        ("verify-only-empty-words", ["verify", "--only", " "]),
        ("table1-seeds-zero", ["table1", "--seeds", "0"]),
    ]
    prepare = writes(("q.csv", "q_a,q_b\n0.3,0.8\n"), ("c.toml", CONFIG))
    return [
        case(name, g, argv, prepare=prepare, timeout=TRAINS_S if "train" in name else 60.0)
        for name, argv in rows
    ]


#: (base, count flag, harmless): a huge value of a harmless flag may also be computed
HUGE: list[tuple[str, str, bool]] = [
    ("market", "--consumers", False),
    ("defection-free", "--rounds", False),
    ("defection-free", "--size", False),
    ("defection-free", "--target-per-class", False),
    ("defection-free", "--batch-size", False),
    ("defection-free", "--init-epochs-high", False),
    ("demo", "--rounds", False),
    ("demo", "--size", False),
    ("demo", "--target-per-class", False),
    ("cobo", "--rounds", False),
    ("cobo", "--seeds", False),
    ("cobo", "--workers", False),
    ("ipfl", "--clients", False),
    ("ipfl", "--clusters", False),
    ("ipfl", "--rounds", False),
    ("ipfl", "--local-steps", False),
    ("train", "--clients", False),
    ("train", "--rounds", False),
    ("train", "--local-steps", False),
    ("train", "--batch-size", False),
    ("train", "--eval-every", False),
    ("sweep", "--workers", False),
    ("sweep", "--retries", True),
    ("bench engine", "--clients", False),
    ("bench engine", "--batch-size", False),
    ("bench engine", "--repeats", False),
    ("bench engine", "--steps", False),
    ("bench all-pairs", "--clients", False),
    ("bench all-pairs", "--batch-size", False),
    ("bench all-pairs", "--repeats", False),
    ("bench dp", "--clients", False),
    ("bench dp", "--steps", False),
    ("bench dp", "--batch-size", False),
    ("bench dp", "--repeats", False),
    ("bench bargaining", "--points", False),
    ("bench bargaining", "--baseline-points", False),
    ("bench bargaining", "--reference-points", False),
    ("bench bargaining", "--repeats", False),
    ("bench pricing-repeated", "--runs", False),
    ("bench pricing-repeated", "--rounds", False),
    ("bench pricing-repeated", "--baseline-runs", False),
    ("bench pricing-repeated", "--baseline-rounds", False),
    ("bench pricing-repeated", "--scale-runs", False),
    ("bench pricing-repeated", "--repeats", False),
    ("bench privacy", "--clients", False),
    ("bench privacy", "--existence-clients", False),
    ("bench privacy", "--draws", False),
    ("privacy figure1", "--repetitions", False),
    ("privacy account", "--steps", True),
    ("privacy curve", "--seeds", False),
    ("privacy curve", "--clients", False),
    ("privacy curve", "--rounds", False),
    ("privacy curve", "--local-steps", False),
    ("privacy curve", "--batch-size", False),
    ("privacy exists", "--n", True),
    ("privacy optimal", "--n", True),
    ("privacy exists dp-sgd", "--dim", True),
    ("pricing repeated", "--rounds", False),
    ("pricing repeated", "--seeds", False),
    ("pricing repeated", "--buyers", False),
    ("pricing figures", "--rounds", False),
    ("pricing figures", "--seeds", False),
    ("pricing equilibrium", "--buyers", True),
    ("table1", "--seeds", False),
    ("reproduce", "--seeds", False),
    ("reproduce", "--workers", True),
    ("flower", "--clients", False),
    ("flower", "--rounds", False),
]


def huge() -> list[Case]:
    """10**12 and 10**30 on every count flag, and work beyond the machine."""
    g = "huge"
    out = []
    for base, flag, harmless in HUGE:
        for power in (12, 30):
            expect = ("refuse", "ok") if harmless else ("refuse",)
            argv = [*_base(base), f"{flag}={10**power}"]
            if "ok" in expect:
                argv.append("--json")
            out.append(case(f"{base.replace(' ', '-')}{flag}-1e{power}", g, argv, expect))
    acc = _base("privacy account")
    out += [
        case(
            "privacy-account-noise-tiny-delta-half",
            g,
            [*acc[:3], "0.001", *acc[4:-2], "--delta", "0.5", "--json"],
            ("refuse", "ok"),
        ),
        case(
            "privacy-account-epsilon-1e6",
            g,
            [
                "privacy",
                "account",
                "--epsilon",
                "1e6",
                "--steps",
                "10",
                "--delta",
                "1e-5",
                "--json",
            ],
            ("refuse", "ok"),
        ),
        case(
            "privacy-account-epsilon-1e-9",
            g,
            [
                "privacy",
                "account",
                "--epsilon",
                "1e-9",
                "--steps",
                "10",
                "--delta",
                "1e-5",
                "--json",
            ],
            ("refuse", "ok"),
        ),
        case(
            "privacy-account-noise-1e-6",
            g,
            [
                "privacy",
                "account",
                "--noise",
                "1e-6",
                "--steps",
                "1000",
                "--delta",
                "1e-5",
                "--json",
            ],
            ("refuse", "ok"),
        ),
        case(
            "privacy-account-dataset-size-1e12",
            g,
            [
                *acc,
                "--sampling",
                "fixed",
                "--accountant",
                "rdp",
                "--sampling-rate",
                "0.5",
                f"--dataset-size={10**12}",
                "--json",
            ],
            ("refuse", "ok"),
        ),
        case(
            "privacy-account-steps-1e12-rate-tiny",
            g,
            [*acc[:5], str(10**12), *acc[6:], "--sampling-rate", "1e-9", "--json"],
            ("refuse", "ok"),
        ),
        case(
            "privacy-exists-2000-clients",
            g,
            ["privacy", "exists", "--model", "dp-mean", "--lam", ",".join(["1"] * 2000), "--json"],
            ("refuse", "ok"),
        ),
        case(
            "privacy-optimal-300-clients",
            g,
            [
                "privacy",
                "optimal",
                "--model",
                "dp-mean",
                "--lam",
                ",".join(["1", "2"] * 150),
                "--json",
            ],
            ("refuse", "ok"),
            timeout=120.0,
        ),
        case(
            "privacy-curve-noise-levels-1000",
            g,
            [*_base("privacy curve"), "--noise", ",".join(["1"] * 1000)],
            ("refuse",),
        ),
        case(
            "market-firms-10000",
            g,
            ["market", "--qualities", ",".join(["0.5"] * 10000), "--json"],
            ("refuse", "ok"),
        ),
        case(
            "market-consumers-1e9",
            g,
            [*_base("market"), "--consumers", "1000000000"],
            ("refuse", "ok"),
        ),
        case("train-batch-over-data", g, [*TRAIN_TINY, "--batch-size", "5000"]),
        case("df-batch-over-data", g, [*_base("defection-free"), "--batch-size", "5000"]),
        case(
            "privacy-curve-batch-over-data", g, [*_base("privacy curve"), "--batch-size", "100000"]
        ),
        case("ipfl-clients-over-data", g, [*_base("ipfl"), "--clients", "5000"]),
        case("train-clients-over-data", g, [*TRAIN_TINY, "--clients", "5000"]),
        case("demo-size-over-data", g, [*_base("demo"), "--size", "100000"]),
        case(
            "sweep-million-points",
            g,
            ["sweep", "{files}/c.toml"],
            prepare=writes(
                (
                    "c.toml",
                    _tiny_config()
                    + "[grid]\nseed = ["
                    + ", ".join(map(str, range(100)))
                    + "]\nlr = ["
                    + ", ".join(f"0.{i + 1:03d}" for i in range(100))
                    + "]\nbatch_size = ["
                    + ", ".join(map(str, range(1, 101)))
                    + "]\n",
                )
            ),
        ),
        case(
            "sweep-rounds-1e12",
            g,
            ["sweep", "{files}/c.toml"],
            prepare=writes(("c.toml", _tiny_config(rounds=10**12))),
        ),
        case(
            "pricing-repeated-rounds-seeds-huge",
            g,
            [*_base("pricing repeated")[:2], "--rounds", str(10**7), "--seeds", str(10**5)],
        ),
        case(
            "bench-all-pairs-reference-clients-1e4",
            g,
            [*_base("bench all-pairs"), "--reference", "--clients", "10000"],
        ),
        case(
            "bench-bargaining-points-1e9",
            g,
            [*EXTRA_BASE["bench bargaining"][:2], "--points", str(10**9)],
        ),
    ]
    return out


def _sweep_case(name: str, content: str | bytes, expect=("refuse",), **kw: object) -> Case:
    return case(
        f"sweep-{name}",
        "sweep",
        ["sweep", "{files}/c.toml", *kw.pop("extra", ())],  # type: ignore[misc]
        expect,
        prepare=writes(("c.toml", content)),
        **kw,
    )


def _stored(measures: dict[str, object]) -> Callable:
    """A sweep whose one run's stored result holds ``measures`` (a resumed sweep reads it)."""

    def prepare(root: Path, work: Path) -> None:
        from learning.runtimes.sweep import plan

        text = _tiny_config() + "[grid]\nseed = [0]\n"
        (root / "c.toml").write_text(text)
        import tomllib

        loaded = tomllib.loads(text)
        (run,) = plan(loaded["train"], loaded["grid"])
        folder = work / "c.runs"
        folder.mkdir()
        record = {"key": run.key, "grid": run.grid, "config": run.config, "measures": measures}
        from econ.outputs import plain

        (folder / f"{run.key}.json").write_text(json.dumps(plain(record)))

    return prepare


def sweeps() -> list[Case]:
    """Sweep configurations with invalid points, and stored results that are wrong."""
    tiny = _tiny_config()
    out = [
        _sweep_case("grid-lr-negative", tiny + "[grid]\nlr = [0.1, -1]\n"),
        _sweep_case("grid-clients-zero", tiny + "[grid]\nclients = [2, 0]\n"),
        _sweep_case("grid-empty-list", tiny + "[grid]\nseed = []\n"),
        _sweep_case("grid-scalar", tiny + "[grid]\nseed = 0\n"),
        _sweep_case("grid-unknown-field", tiny + "[grid]\nzeta = [1]\n"),
        _sweep_case("grid-lr-string", tiny + '[grid]\nlr = ["0.1"]\n'),
        _sweep_case("grid-lr-boolean", tiny + "[grid]\nlr = [true]\n"),
        _sweep_case("grid-clients-boolean", tiny + "[grid]\nclients = [true, 2]\n"),
        _sweep_case("grid-lr-nan", tiny + "[grid]\nlr = [nan]\n"),
        _sweep_case("grid-lr-inf", tiny + "[grid]\nlr = [inf]\n"),
        _sweep_case("grid-rounds-fraction", tiny + "[grid]\nrounds = [1.5]\n"),
        _sweep_case(
            "grid-and-train-same-field", _tiny_config(lr=0.1) + "[grid]\nlr = [0.1, 0.2]\n"
        ),
        _sweep_case("train-dataset-unknown", _tiny_config(dataset="nope")),
        _sweep_case(
            "grid-dirichlet-alpha-negative",
            _tiny_config(partition="dirichlet") + '[grid]\n"partition_params.alpha" = [0.1, -1]\n',
        ),
        _sweep_case("grid-duplicate-points", tiny + "[grid]\nseed = [0, 0]\n"),
        _sweep_case("grid-dotted-into-number", tiny + '[grid]\n"lr.x" = [1]\n'),
        _sweep_case("grid-nested-table", tiny + "[grid]\n[grid.inner]\nseed = [0]\n"),
        _sweep_case("train-batch-over-data", _tiny_config(batch_size=100000)),
        _sweep_case("train-cpr-over-clients", _tiny_config(clients_per_round=5)),
        _sweep_case("train-device-field", _tiny_config(device="cuda")),
        _sweep_case("grid-algorithm-unknown", tiny + '[grid]\nalgorithm = ["fedavg", "nope"]\n'),
        _sweep_case("grid-lr-1e400", tiny + "[grid]\nlr = [1e400]\n"),
        _sweep_case("train-lr-zero", _tiny_config(lr=0)),
        _sweep_case("empty-file", b""),
        _sweep_case("utf16", (tiny + "[grid]\nseed = [0]\n").encode("utf-16")),
        _sweep_case("duplicate-key", tiny + "rounds = 2\n[grid]\nseed = [0]\n"),
        _sweep_case("garbage", GARBAGE),
        _sweep_case("unknown-table", tiny + "[grids]\nseed = [0]\n"),
        _sweep_case("out-empty", tiny + "[grid]\nseed = [0]\n", extra=("--out", "")),
        _sweep_case(
            "retries-huge-failing",
            tiny + "[grid]\nlr = [1e30]\n",
            expect=("fail", "refuse"),
            extra=("--retries", str(10**12)),
            timeout=TRAINS_S,
        ),
        case(
            "sweep-stored-accuracy-out-of-range",
            "sweep",
            ["sweep", "{files}/c.toml", "--out", ".", "--json"],
            expect=("ok", "refuse"),
            silent="a stored result with an accuracy of 3.7 reported as a finished run",
            prepare=_stored(
                {"mean_accuracy": 3.7, "mean_loss": 0.1, "target_accuracy": None, "seconds": 1.0}
            ),
            timeout=TRAINS_S,
        ),
        case(
            "sweep-stored-loss-negative",
            "sweep",
            ["sweep", "{files}/c.toml", "--out", ".", "--json"],
            expect=("ok", "refuse"),
            silent="a stored result with a negative loss reported as a finished run",
            prepare=_stored(
                {"mean_accuracy": 0.5, "mean_loss": -4.0, "target_accuracy": None, "seconds": 1.0}
            ),
            timeout=TRAINS_S,
        ),
        case(
            "sweep-stored-measures-strings",
            "sweep",
            ["sweep", "{files}/c.toml", "--out", ".", "--json"],
            expect=("ok", "refuse"),
            silent="a stored result whose measures are strings reported as a finished run",
            check=lambda ran: (
                "a stored string measure reported"
                if '"loss"' in ran.out and ran.code == 0
                else None
            ),
            prepare=_stored({"mean_accuracy": "0.5", "mean_loss": "loss", "seconds": "x"}),
            timeout=TRAINS_S,
        ),
        case(
            "sweep-config-fifo",
            "sweep",
            ["sweep", "{files}/c.toml"],
            prepare=fifo("c.toml"),
        ),
    ]
    return out


#: (id, argv with ``{files}/o`` as the output directory, directory holding the lock)
LOCKED: list[tuple[str, list[str], str]] = [
    ("table1-out", ["table1", "--out", "{files}/o"], "o"),
    ("df-out", [*_base("defection-free"), "--out", "{files}/o"], "o"),
    ("demo-out", [*_base("demo"), "--out", "{files}/o"], "o"),
    ("cobo-out", [*_base("cobo"), "--out", "{files}/o"], "o"),
    ("ipfl-out", [*_base("ipfl"), "--out", "{files}/o"], "o"),
    ("ipfl-checkpoint", [*_base("ipfl"), "--checkpoint", "{files}/o"], "o"),
    ("train-out", [*TRAIN_TINY, "--out", "{files}/o"], "o"),
    ("train-checkpoint", [*TRAIN_TINY, "--checkpoint", "{files}/o"], "o"),
    ("train-checkpoint-resume", [*TRAIN_TINY, "--checkpoint", "{files}/o", "--resume"], "o"),
    (
        "train-out-free-checkpoint-locked",
        [*TRAIN_TINY, "--out", "{files}/p", "--checkpoint", "{files}/o"],
        "o",
    ),
    ("sweep-out", ["sweep", "{files}/c.toml", "--out", "{files}/o"], "o"),
    ("flower-out", [*_base("flower")[:-2], "--out", "{files}/o"], "o"),
    (
        "privacy-figure1-out",
        ["privacy", "figure1", "--out", "{files}/o", "--repetitions", "5"],
        "o",
    ),
    (
        "privacy-curve-out",
        [*_base("privacy curve")[:2], "--out", "{files}/o", *_base("privacy curve")[4:]],
        "o",
    ),
    ("pricing-repeated-out", [*_base("pricing repeated"), "--out", "{files}/o"], "o"),
    ("pricing-figures-out", ["pricing", "figures", "--out", "{files}/o", "--rounds", "100"], "o"),
    ("reproduce-out", ["reproduce", "--out", "{files}/o", "--only", "pricing"], "o"),
    (
        "flower-ipfl-out",
        ["flower", "simulate", "ipfl", "--clients", "4", "--out", "{files}/o"],
        "o",
    ),
]


def locks() -> list[Case]:
    """Directories in use by a live process, and lock files that are not what they seem."""
    g = "lock"
    out = [
        case(
            f"lock-live-{name}",
            g,
            argv,
            silent="ran in a directory another live process writes into",
            prepare=both(locked(directory), writes(("c.toml", CONFIG))),
            check=lambda ran, d=directory: (
                None
                if (ran.files / d / ".collabecon.lock").exists()
                else "the live owner's lock was removed"
            ),
        )
        for name, argv, directory in LOCKED
    ]
    out.append(
        case(
            "lock-live-demo-default-out",
            g,
            _base("demo"),
            prepare=locked("collabecon-demo", in_work=True),
        )
    )
    out.append(
        case(
            "lock-live-sweep-default-cwd",
            g,
            ["sweep", "{files}/c.toml"],
            prepare=both(locked(".", in_work=True), writes(("c.toml", CONFIG))),
        )
    )
    cheap = [*PRICING_OK, "--out", "{files}/o", "--json"]
    variants: list[tuple[str, object, tuple[str, ...]]] = [
        ("garbage", "\x00\x01 not json", ("ok",)),
        ("json-list", "[1, 2, 3]", ("ok",)),
        ("pid-dead", {"pid": 2**22 + 7, "started": None}, ("ok",)),
        ("pid-string", {"pid": "1234"}, ("ok", "refuse")),
        ("pid-negative", {"pid": -1}, ("ok", "refuse")),
        ("pid-zero", {"pid": 0}, ("ok", "refuse")),
        ("pid-huge", {"pid": 10**30}, ("ok", "refuse")),
        ("pid-float", {"pid": 1.5}, ("ok", "refuse")),
        ("pid-recycled", "RECYCLED", ("ok",)),
        ("empty", "", ("ok",)),
    ]
    for name, owner, expect in variants:
        prepare = locked("o", owner)
        if owner == "RECYCLED":

            def prepare(root: Path, work: Path) -> None:
                import os

                (root / "o").mkdir()
                text = json.dumps({"pid": os.getpid(), "started": "1", "command": ["x"]})
                (root / "o" / ".collabecon.lock").write_text(text)

        out.append(
            case(f"lock-file-{name}", g, cheap, expect, prepare=prepare, check=lock_left("o"))
        )

    def lock_is_directory(root: Path, work: Path) -> None:
        (root / "o" / ".collabecon.lock").mkdir(parents=True)

    def lock_is_symlink(root: Path, work: Path) -> None:
        (root / "o").mkdir()
        (root / "precious.txt").write_text("keep me\n")
        (root / "o" / ".collabecon.lock").symlink_to(root / "precious.txt")

    def precious_kept(ran: Ran) -> str | None:
        target = ran.files / "precious.txt"
        if not target.exists() or target.read_text() != "keep me\n":
            return "taking over a lock that is a link changed the file it points to"
        return None

    out += [
        case("lock-file-is-directory", g, cheap, ("ok", "refuse"), prepare=lock_is_directory),
        case(
            "lock-file-is-symlink",
            g,
            cheap,
            ("ok", "refuse"),
            prepare=lock_is_symlink,
            check=precious_kept,
        ),
        case(
            "lock-same-out-and-checkpoint",
            g,
            [*TRAIN_TINY, "--out", "{files}/o", "--checkpoint", "{files}/o", "--json"],
            ("ok",),
            check=lock_left("o"),
            timeout=TRAINS_S,
        ),
    ]
    return out


def cluster() -> list[Case]:
    """Ray addresses, Flower ports, and output paths with quotes and newlines."""
    g = "cluster"
    sweep = ["sweep", "{files}/c.toml", "--engine", "ray"]
    config = writes(("c.toml", CONFIG))
    out = [
        case(
            f"sweep-ray-address-{name}",
            g,
            [*sweep, "--address", address],
            prepare=config,
            timeout=90.0,
        )
        for name, address in [
            ("port-1", "127.0.0.1:1"),
            ("auto", "auto"),
            ("ipv6", "[::1]:6379"),
            ("port-99999", "127.0.0.1:99999"),
            ("port-0", "127.0.0.1:0"),
            ("empty-host", ":6379"),
            ("url", "ray://127.0.0.1:10001"),
            ("empty", ""),
            ("unresolvable", "no-such-host.invalid:6379"),
        ]
    ]
    out.append(
        case("sweep-ray-local", g, sweep, ("refuse", "ok"), prepare=config, timeout=TRAINS_S)
    )
    out.append(case("sweep-ray-workers-huge", g, [*sweep, "--workers", "100000"], prepare=config))
    for port in ("0", "70000", "-1", "65536", "1", "99999999999999999999"):
        out.append(
            case(f"flower-deploy-port-{port}", g, [*_base("flower deploy"), f"--port={port}"])
        )
        out.append(
            case(
                f"flower-prepare-port-{port}",
                g,
                [*_base("flower")[:-2], "--out", "{files}/p", f"--port={port}"],
            )
        )
    out.append(
        case("flower-prepare-out-apostrophe", g, [*_base("flower")[:-2], "--out", "{files}/it's"])
    )
    out.append(
        case("flower-simulate-cpus-huge", g, [*_base("flower simulate"), "--cpus", str(10**6)])
    )
    odd = {"apostrophe": "it's here", "quote": 'say "x"', "newline": "new\nline", "space": " lead"}
    for name, dirname in odd.items():
        out.append(
            case(
                f"pricing-repeated-out-{name}",
                g,
                [*PRICING_OK, "--out", f"{{files}}/{dirname}", "--json"],
                ("ok",),
                check=_wrote(f"{dirname}/repeated.csv"),
            )
        )
        out.append(
            case(
                f"market-from-missing-{name}",
                g,
                ["market", "--from", f"{{files}}/{dirname}.csv"],
            )
        )
        out.append(
            case(
                f"sweep-config-{name}",
                g,
                ["sweep", f"{{files}}/{dirname}.toml", "--out", "{files}/out", "--json"],
                ("ok",),
                prepare=writes((f"{dirname}.toml", _tiny_config() + "[grid]\nseed = [0]\n")),
                check=_wrote(f"out/{dirname}.csv"),
                timeout=TRAINS_S,
            )
        )
    out.append(
        case(
            "train-out-apostrophe",
            g,
            [*TRAIN_TINY, "--out", "{files}/it's", "--json"],
            ("ok",),
            check=_wrote("it's/learning_curve.csv"),
            timeout=TRAINS_S,
        )
    )
    return out


def _market_file(name: str, content: str | bytes, expect=("refuse",), **kw: object) -> Case:
    suffix = kw.pop("suffix", ".json")
    return case(
        f"market-from-{name}",
        "file",
        ["market", "--from", f"{{files}}/q{suffix}", "--json"],
        expect,
        prepare=writes((f"q{suffix}", content)),
        **kw,
    )


def _curve_file(
    name: str, content: str | bytes, expect=("refuse",), action: str = "exists"
) -> Case:
    return case(
        f"privacy-{action}-curve-{name}",
        "file",
        ["privacy", action, "--curve", "{files}/curve.json", "--lam", "1", "2", "--json"],
        expect,
        prepare=writes(("curve.json", content)),
    )


def files() -> list[Case]:
    """Hostile files: market sources, curves, checkpoints, datasets, pipes and devices."""
    g = "file"
    deep = "[" * 100_000 + "]" * 100_000
    out = [
        _market_file("nested-object", '{"rounds": [{"q_a": {"x": 1}, "q_b": 0.5}]}'),
        _market_file("rounds-string", '{"rounds": "abc"}'),
        _market_file("rounds-empty", '{"rounds": []}'),
        _market_file("rounds-numbers", '{"rounds": [1, 2]}'),
        _market_file("rounds-empty-object", '{"rounds": [{}]}'),
        _market_file("nan-literal", '[{"a": NaN, "b": 0.5}]'),
        _market_file("infinity-literal", '[{"a": Infinity, "b": 0.5}]'),
        _market_file("exponent-overflow", '[{"a": 1e400, "b": 0.5}]'),
        _market_file("integer-overflow", '[{"a": 1' + "0" * 400 + ', "b": 0.5}]'),
        _market_file("null-quality", '[{"a": null, "b": 0.5}]'),
        _market_file("names-not-list", '{"names": "ab", "quality": [0.3, 0.8]}'),
        _market_file("names-quality-count", '{"names": ["a", "b", "c"], "quality": [0.3, 0.8]}'),
        _market_file("names-quality-scalar", '{"names": ["a", "b"], "quality": 0.5}'),
        _market_file(
            "n-eval-negative", '{"names": ["a", "b"], "quality": [0.3, 0.8], "n_eval": [-5, 3]}'
        ),
        _market_file(
            "n-eval-huge", '{"names": ["a", "b"], "quality": [0.3, 0.8], "n_eval": [1e30, 3]}'
        ),
        _market_file("deep-nesting", deep),
        _market_file("top-level-number", "3.5"),
        _market_file("top-level-string", '"0.5"'),
        _market_file("empty-list", "[]"),
        _market_file("truncated", '{"names": ["a", "b"], "quality": [0.3,'),
        _market_file("pickle", pickle.dumps({"a": 0.5}), suffix=".json"),
        _market_file("latin1", "q_a,q_b\n0.3,0.8\n\xe9\n".encode("latin-1"), suffix=".csv"),
        _market_file("nul-bytes", b"q_a,q_b\n0.3,0\x008\n", suffix=".csv"),
        _market_file("csv-nan", "q_a,q_b\nnan,0.8\n", suffix=".csv"),
        _market_file("csv-inf", "q_a,q_b\ninf,0.8\n", suffix=".csv"),
        _market_file("csv-1e400", "q_a,q_b\n1e400,0.8\n", suffix=".csv"),
        _market_file("csv-negative", "q_a,q_b\n-0.3,0.8\n", suffix=".csv"),
        _market_file("csv-above-one", "q_a,q_b\n1.5,0.8\n", suffix=".csv"),
        _market_file("csv-header-only", "q_a,q_b\n", suffix=".csv"),
        _market_file("csv-blank-rows-only", "q_a,q_b\n,\n \n", suffix=".csv"),
        _market_file("csv-duplicate-columns", "q_a,q_a\n0.3,0.8\n", suffix=".csv"),
        _market_file("csv-is-json", '{"names": ["a"], "quality": [0.5]}', suffix=".csv"),
        _market_file(
            "csv-quoted-newline", 'q_a,q_b\n"0.3\n",0.8\n', ("refuse", "ok"), suffix=".csv"
        ),
        _market_file("csv-huge-field", "q_a,q_b\n" + "1" * 200_000 + ",0.8\n", suffix=".csv"),
        _market_file("csv-q-and-quality-same-firm", "q_a,quality_a\n0.3,0.8\n", suffix=".csv"),
        _market_file("json-is-csv", "q_a,q_b\n0.3,0.8\n", suffix=".json"),
        case("market-from-directory", g, ["market", "--from", "{files}"]),
        case("market-from-fifo", g, ["market", "--from", "{files}/q.json"], prepare=fifo("q.json")),
        case("market-from-dev-zero", g, ["market", "--from", "/dev/zero"]),
        case("market-from-dev-null", g, ["market", "--from", "/dev/null"]),
        case(
            "market-from-name-too-long", g, ["market", "--from", "{files}/" + "x" * 300 + ".json"]
        ),
        case(
            "market-from-path-too-long",
            g,
            ["market", "--from", "{files}/" + "/".join(["d" * 200] * 30)],
        ),
        case(
            "market-from-symlink-loop",
            g,
            ["market", "--from", "{files}/loop.json"],
            prepare=_symlink_loop,
        ),
        _curve_file("garbage", GARBAGE),
        _curve_file("list", "[1, 2, 3]"),
        _curve_file("missing-keys", '{"noise": [1.0]}'),
        _curve_file(
            "nan-accuracy", _curve(accuracy_federated=[[["NaN", 0.8]]]).replace('"NaN"', "NaN")
        ),
        _curve_file("negative-epsilon", _curve(epsilon=[[[-1.0, 1.0]]])),
        _curve_file(
            "percent-accuracy",
            _curve(accuracy_federated=[[[80.0, 80.0]]], accuracy_alone=[[60.0, 60.0]]),
        ),
        _curve_file("ragged", _curve(epsilon=[[[1.0], [1.0, 2.0]]])),
        _curve_file(
            "empty-arrays", _curve(noise=[], epsilon=[], accuracy_federated=[], accuracy_alone=[])
        ),
        _curve_file("noise-zero", _curve(noise=[0.0])),
        _curve_file("noise-negative", _curve(noise=[-1.0])),
        _curve_file("strings", _curve(noise=["a"])),
        _curve_file("booleans", _curve(accuracy_alone=[[True, False]])),
        _curve_file(
            "one-client-two-lams",
            _curve(epsilon=[[[1.0]]], accuracy_federated=[[[0.8]]], accuracy_alone=[[0.6]]),
        ),
        _curve_file("pickle", PWNED),
        _curve_file("deep-nesting", deep),
        _curve_file("valid", json.dumps(CURVE), expect=("ok", "refuse")),
        _curve_file("valid", json.dumps(CURVE), expect=("ok", "refuse"), action="optimal"),
        _curve_file(
            "nan-accuracy",
            _curve(accuracy_alone=[["NaN", 0.6]]).replace('"NaN"', "NaN"),
            action="optimal",
        ),
        _curve_file(
            "accuracy-above-one", _curve(accuracy_federated=[[[1.5, 0.8]]]), action="optimal"
        ),
    ]
    # the checkpoint files of learning/loop.py and learning/drivers/ipfl/checkpoint.py
    for cmd, base, checkpoint in (
        ("train", TRAIN_TINY, "checkpoint.pt"),
        ("ipfl", _base("ipfl"), "ipfl_checkpoint.pt"),
    ):
        for name, content, expect in (
            ("garbage", GARBAGE, ("refuse",)),
            ("truncated-zip", _truncated_zip(), ("refuse",)),
            ("pickle-runs-code", PWNED, ("refuse",)),
            ("empty", b"", ("refuse",)),
        ):
            out.append(
                case(
                    f"{cmd}-resume-checkpoint-{name}",
                    g,
                    [*base, "--checkpoint", "{files}/ck", "--resume"],
                    expect,
                    prepare=writes((f"ck/{checkpoint}", content)),
                    check=_no_file("PWNED"),
                    silent="resumed from a checkpoint that is not one",
                    timeout=TRAINS_S,
                )
            )
    mnist = [
        *TRAIN_TINY[:2],
        "mnist",
        *TRAIN_TINY[3:4],
        "linear",
        "--clients",
        "2",
        "--rounds",
        "1",
        "--local-steps",
        "1",
        "--batch-size",
        "4",
        "--data-dir",
        "{files}/data",
        "--no-progress",
    ]
    out += [
        case(
            "train-mnist-labels-out-of-range",
            g,
            mnist,
            silent="trained on labels outside the 10 classes",
            prepare=_mnist_files(bytes([200] * 40)),
            timeout=TRAINS_S,
        ),
        case(
            "train-mnist-labels-11",
            g,
            mnist,
            prepare=_mnist_files(bytes([11] * 40)),
            timeout=TRAINS_S,
        ),
        case(
            "train-mnist-gz-labels-out-of-range",
            g,
            mnist,
            prepare=_mnist_files(bytes([255] * 40), gz=True),
            timeout=TRAINS_S,
        ),
        case(
            "train-mnist-count-mismatch",
            g,
            mnist,
            prepare=_mnist_files(train_labels_idx1_ubyte=_idx((41,), bytes(40))),
            timeout=TRAINS_S,
        ),
        case(
            "train-mnist-wrong-magic",
            g,
            mnist,
            prepare=_mnist_files(
                train_images_idx3_ubyte=_idx((40, 28, 28), bytes(40 * 784), magic=0x0D03)
            ),
            timeout=TRAINS_S,
        ),
        case(
            "train-mnist-image-shape",
            g,
            mnist,
            prepare=_mnist_files(train_images_idx3_ubyte=_idx((40, 8, 8), bytes(40 * 64))),
            timeout=TRAINS_S,
        ),
        case(
            "train-mnist-header-huge",
            g,
            mnist,
            prepare=_mnist_files(train_images_idx3_ubyte=_idx((2**31, 28, 28), bytes(784))),
            timeout=TRAINS_S,
        ),
        case(
            "train-mnist-truncated-gz",
            g,
            mnist,
            prepare=writes(
                *[
                    (f"data/mnist/{n}.gz", gzip.compress(_idx((10,), bytes(10)))[:15])
                    for n in (
                        "train-images-idx3-ubyte",
                        "train-labels-idx1-ubyte",
                        "t10k-images-idx3-ubyte",
                        "t10k-labels-idx1-ubyte",
                    )
                ]
            ),
            timeout=TRAINS_S,
        ),
        case(
            "train-mnist-npz-truncated",
            g,
            mnist,
            prepare=writes(("data/mnist.npz", _truncated_zip())),
            timeout=TRAINS_S,
        ),
        case(
            "train-mnist-npz-object-arrays",
            g,
            mnist,
            prepare=writes(("data/mnist.npz", _npz_objects())),
            check=_no_file("PWNED"),
            timeout=TRAINS_S,
        ),
        case(
            "train-mnist-npz-labels-negative",
            g,
            mnist,
            prepare=writes(("data/mnist.npz", _npz_int8_labels())),
            timeout=TRAINS_S,
        ),
        case(
            "train-mnist-npz-missing-member",
            g,
            mnist,
            prepare=writes(("data/mnist.npz", _npz_missing_member())),
            timeout=TRAINS_S,
        ),
        case(
            "train-cifar-pickle-runs-code",
            g,
            [*mnist[:2], "cifar10", *mnist[3:]],
            check=_no_file("PWNED"),
            prepare=writes(
                *[
                    (f"data/cifar-10-batches-py/{n}", PWNED)
                    for n in (
                        "data_batch_1",
                        "data_batch_2",
                        "data_batch_3",
                        "data_batch_4",
                        "data_batch_5",
                        "test_batch",
                    )
                ]
            ),
            timeout=TRAINS_S,
        ),
        case(
            "train-cifar-labels-out-of-range",
            g,
            [*mnist[:2], "cifar10", *mnist[3:]],
            prepare=_cifar_files(label=10),
            timeout=TRAINS_S,
        ),
        case(
            "train-data-dir-is-file",
            g,
            [*mnist[:-2], "{files}/f", "--no-progress"],
            prepare=writes(("f", "x")),
        ),
        case(
            "df-mnist-labels-out-of-range",
            g,
            [
                *_base("defection-free")[:2],
                "mnist",
                *_base("defection-free")[3:],
                "--data-dir",
                "{files}/data",
            ],
            prepare=_mnist_files(bytes([200] * 40)),
            timeout=TRAINS_S,
        ),
        case(
            "table1-data-dir-garbage",
            g,
            ["table1", "--data-dir", "{files}/data", "--seeds", "1"],
            prepare=_mnist_files(bytes([200] * 40)),
            timeout=TRAINS_S,
        ),
    ]
    return out


def _symlink_loop(root: Path, work: Path) -> None:
    (root / "loop.json").symlink_to(root / "loop2.json")
    (root / "loop2.json").symlink_to(root / "loop.json")


def _npz_objects() -> bytes:
    import numpy as np

    return _npz(
        x_train=np.array([_Payload()], dtype=object),
        y_train=np.zeros(1),
        x_test=np.zeros((1, 28, 28), dtype=np.uint8),
        y_test=np.zeros(1, dtype=np.uint8),
    )


def _npz_int8_labels() -> bytes:
    import numpy as np

    return _npz(
        x_train=np.zeros((40, 28, 28), dtype=np.uint8),
        y_train=-np.ones(40, dtype=np.int8),
        x_test=np.zeros((10, 28, 28), dtype=np.uint8),
        y_test=np.zeros(10, dtype=np.uint8),
    )


def _npz_missing_member() -> bytes:
    import numpy as np

    return _npz(x_train=np.zeros((40, 28, 28), dtype=np.uint8), y_train=np.zeros(40, np.uint8))


def _cifar_files(label: int) -> Callable:
    import numpy as np

    batch = {
        b"data": np.zeros((20, 3072), dtype=np.uint8),
        b"labels": [label] * 20,
    }
    content = pickle.dumps(batch)
    names = (
        "data_batch_1",
        "data_batch_2",
        "data_batch_3",
        "data_batch_4",
        "data_batch_5",
        "test_batch",
    )
    return writes(*[(f"data/cifar-10-batches-py/{n}", content) for n in names])


#: (base, float flag, domain): pos (finite > 0), nonneg, unit ([0, 1]), open ((0, 1)),
#: any (finite), frac-* (an exact fraction of the same domain)
FLOATS: list[tuple[str, str, str]] = [
    ("defection-free", "--lr", "pos"),
    ("defection-free", "--q-max", "pos"),
    ("defection-free", "--tolerance", "nonneg"),
    ("market", "--qualities", "unit"),
    ("ipfl", "--lr", "pos"),
    ("ipfl", "--tok-init", "nonneg"),
    ("ipfl", "--price", "nonneg"),
    ("ipfl", "--perf-share", "unit"),
    ("ipfl", "--th-bid", "unit"),
    ("ipfl", "--lr-grid", "pos"),
    ("train", "--lr", "pos"),
    ("train", "--momentum", "unit"),
    ("train", "--weight-decay", "nonneg"),
    ("train", "--test-fraction", "unit"),
    ("train", "--target-fraction", "unit"),
    ("train", "--dp-noise-multiplier", "pos"),
    ("train", "--dp-max-grad-norm", "pos"),
    ("train", "--dp-delta", "open"),
    ("sweep", "--gpus-per-run", "pos"),
    ("cobo", "--lr-grid", "pos"),
    ("bench dp", "--noise", "pos"),
    ("bench dp", "--max-grad-norm", "pos"),
    ("privacy exists", "--lam", "nonneg"),
    ("privacy exists", "--sigma", "pos"),
    ("privacy exists", "--bound", "pos"),
    ("privacy exists", "--n", "pos"),
    ("privacy exists bayes", "--tau", "pos"),
    ("privacy exists dp-sgd", "--L", "pos"),
    ("privacy exists dp-sgd", "--mu", "pos"),
    ("privacy exists dp-sgd", "--diam", "pos"),
    ("privacy optimal", "--lam", "nonneg"),
    ("privacy optimal", "--nu", "nonneg"),
    ("privacy account", "--noise", "pos"),
    ("privacy account epsilon", "--epsilon", "pos"),
    ("privacy account", "--sampling-rate", "pos"),
    ("privacy account", "--delta", "open"),
    ("privacy curve", "--noise", "pos"),
    ("privacy curve", "--lr", "pos"),
    ("privacy curve", "--clip", "pos"),
    ("privacy curve", "--delta", "open"),
    ("privacy curve", "--momentum", "unit"),
    ("pricing equilibrium", "--mu", "frac-open"),
    ("pricing equilibrium", "--theta-low", "frac-nonneg"),
    ("pricing equilibrium", "--theta-high", "frac-pos"),
    ("pricing equilibrium", "--cb", "frac-nonneg"),
    ("pricing equilibrium", "--cs", "frac-nonneg"),
    ("pricing equilibrium", "--alpha", "frac-unit"),
    ("pricing repeated", "--mu", "frac-open"),
    ("pricing repeated", "--eta", "pos"),
    ("pricing repeated", "--gamma", "nonneg"),
    ("pricing repeated", "--alpha-hat-init", "unit"),
    ("pricing repeated", "--bias", "any"),
    ("duopoly", "--ql", "unit"),
    ("duopoly", "--qh", "unit"),
    ("bargain", "--ql0", "unit"),
    ("bargain", "--qh0", "unit"),
    ("bargain", "--qmax", "pos"),
]


#: the float flags that take lists
LISTS = {"--qualities", "--lr-grid", "--lam", "--nu", "--noise", "--bias", "--n", "--sigma"}


def overflows() -> list[Case]:
    """1e400 and -1e400 on every number flag, 1/0 on fractions and lists, 1e-400 off zero."""
    g = "overflow"
    out = []
    for base, flag, domain in FLOATS:
        fraction = domain.startswith("frac-")
        values = ["1e400", "-1e400"]
        if fraction or flag in LISTS:  # float("1/0") is a plain argparse refusal elsewhere
            values.append("1/0")
        if domain.removeprefix("frac-") in ("pos", "open"):
            values.append("1e-400")
        for value in values:
            expect: tuple[str, ...] = ("refuse",)
            if fraction and value == "1e400" and domain in ("frac-pos", "frac-nonneg"):
                expect = ("refuse", "ok")  # 10**400 is an exact, finite fraction
            if fraction and value == "1e-400" and domain == "frac-open":
                expect = ("refuse", "ok")  # an exact, positive fraction
            words = [*_base(base), f"{flag}={value}"]
            if flag == "--bias":
                words = [*_base(base), f"{flag}=0,{value}"]
            if "ok" in expect:
                words.append("--json")
            slug = value.replace("/", "over").replace("-", "minus")
            out.append(case(f"{base.replace(' ', '-')}{flag}-{slug}", g, words, expect))
    out += [
        case(
            "pricing-equilibrium-mu-10e30-words",
            g,
            ["pricing", "equilibrium", "--alpha", "1/2", "--mu", "10**30"],
        ),
        case("pricing-equilibrium-alpha-1e309", g, ["pricing", "equilibrium", "--alpha", "1e309"]),
        case(
            "pricing-equilibrium-mu-1e309",
            g,
            ["pricing", "equilibrium", "--alpha", "0", "--mu", "1e309"],
        ),
        case("duopoly-ql-1e308-qh-1e308", g, ["duopoly", "--ql", "1e308", "--qh", "1e308"]),
        case("train-lr-1e308", g, [*TRAIN_TINY, "--lr", "1e308"]),
        # a seed of any size is a seed (numpy's SeedSequence takes them all): an answer is good
        case(
            "train-seed-1e30",
            g,
            [*TRAIN_TINY, "--seed", str(10**30), "--json"],
            ("ok", "refuse"),
            timeout=TRAINS_S,
        ),
        case(
            "train-seed-2e63",
            g,
            [*TRAIN_TINY, "--seed", str(2**63), "--json"],
            ("ok", "refuse"),
            timeout=TRAINS_S,
        ),
        case(
            "market-seed-2e64",
            g,
            [*_base("market"), "--consumers", "10", "--seed", str(2**64), "--json"],
            ("ok", "refuse"),
        ),
        case(
            "pricing-repeated-seed-1e30",
            g,
            [*PRICING_OK, "--seed", str(10**30), "--json"],
            ("ok", "refuse"),
        ),
        case(
            "privacy-figure1-seed-2e32",
            g,
            [
                "privacy",
                "figure1",
                "--out",
                "f",
                "--repetitions",
                "5",
                "--seed",
                str(2**32),
                "--json",
            ],
            ("refuse", "ok"),
        ),
        case(
            "cobo-seed-1e30",
            g,
            [*_base("cobo"), "--seed", str(10**30), "--json"],
            ("ok", "refuse"),
            timeout=TRAINS_S,
        ),
        case(
            "ipfl-seed-1e30",
            g,
            [*_base("ipfl"), "--seed", str(10**30), "--json"],
            ("ok", "refuse"),
            timeout=TRAINS_S,
        ),
        case(
            "table1-seed-1e30",
            g,
            ["table1", "--seed", str(10**30), "--seeds", "1"],
            expect=("interrupted",),
            silent="a seed of any size seeds the run: it starts, shows progress and stops on Ctrl-C",
            check=lambda ran: None if "[1/" in ran.err else "no progress line before Ctrl-C",
            interrupt_after=25.0,
            timeout=120.0,
        ),
        case(
            "train-algorithm-arg-1e400",
            g,
            [*TRAIN_TINY, "--algorithm", "fedprox", "--algorithm-arg", "mu=1e400"],
        ),
        case(
            "train-partition-arg-nan",
            g,
            [*TRAIN_TINY, "--partition", "dirichlet", "--partition-arg", "alpha=NaN"],
        ),
        case(
            "train-partition-arg-1e400",
            g,
            [*TRAIN_TINY, "--partition", "dirichlet", "--partition-arg", "alpha=1e400"],
        ),
    ]
    return out


# ------------------------------------------------------------------------------------------
# consumer populations, predictions files, n firms, privacy accountants and the log flags
# ------------------------------------------------------------------------------------------

#: a market of two firms under a population (``--population SPEC`` is appended)
POPULATION = ["market", "--qualities", "0.3", "0.8", "--population"]
#: a bargain of three firms (``--population SPEC`` and more may be appended)
FIRMS = ["bargain", "--firms", "0.2", "0.5", "0.7"]
#: the endings of an extreme but valid population: priced and certified, refused, or priced
#: with a certificate that says the prices fail (exit 1)
EXTREME = ("refuse", "ok", "fail")

#: (id, spec, endings): population specs of ``econ.population.parse_population``
SPECS: list[tuple[str, str, tuple[str, ...]]] = [
    ("empty", "", ("refuse",)),
    ("blank", " ", ("refuse",)),
    ("colon", ":", ("refuse",)),
    ("beta-no-parameters", "beta:", ("refuse",)),
    ("beta-one-parameter", "beta:2", ("refuse",)),
    ("beta-three-parameters", "beta:2,5,7", ("refuse",)),
    ("beta-words", "beta:a,b", ("refuse",)),
    ("beta-empty-items", "beta:,", ("refuse",)),
    ("beta-empty-middle", "beta:2,,5", ("refuse",)),
    ("beta-semicolon", "beta:2;5", ("refuse",)),
    ("beta-newline", "beta:2,\n5", ("refuse", "ok")),
    ("beta-zero", "beta:0,2", ("refuse",)),
    ("beta-negative", "beta:-1,2", ("refuse",)),
    ("beta-nan", "beta:nan,2", ("refuse",)),
    ("beta-inf", "beta:inf,2", ("refuse",)),
    ("beta-1e400", "beta:1e400,2", ("refuse",)),
    ("beta-1e308", "beta:1e308,1e308", EXTREME),
    ("beta-1e308-2", "beta:1e308,2", EXTREME),
    ("beta-1e-300", "beta:1e-300,1e-300", EXTREME),
    ("beta-denormal", "beta:5e-324,1", EXTREME),
    ("beta-fraction", "beta:1/2,2", ("refuse",)),
    ("nosuch", "nosuch:1", ("refuse",)),
    ("upper-case", "BETA:2,5", ("refuse", "ok")),
    ("uniform-parameter", "uniform:1", ("refuse",)),
    ("uniform-colon", "uniform:", ("refuse", "ok")),
    ("lognorm-zero", "lognorm:0", ("refuse",)),
    ("lognorm-negative", "lognorm:-1", ("refuse",)),
    ("lognorm-1e308", "lognorm:1e308", EXTREME),
    ("lognorm-tiny", "lognorm:1e-300", EXTREME),
    ("lognorm-scale-zero", "lognorm:1,0", ("refuse",)),
    ("lognorm-scale-1e308", "lognorm:1,1e308", EXTREME),
    ("truncnorm-sigma-zero", "truncnorm:0,0", ("refuse",)),
    ("truncnorm-nan", "truncnorm:nan,1", ("refuse",)),
    ("truncnorm-mu-far-below", "truncnorm:-1e308,1", EXTREME),
    ("truncnorm-mu-far-above", "truncnorm:1e308,1", EXTREME),
    ("truncnorm-sigma-tiny", "truncnorm:0.5,1e-300", EXTREME),
    ("truncnorm-sigma-1e308", "truncnorm:0,1e308", EXTREME),
    ("truncnorm-high-zero", "truncnorm:0,1,0", ("refuse",)),
    ("truncnorm-high-negative", "truncnorm:0,1,-1", ("refuse",)),
    ("truncnorm-high-1e308", "truncnorm:0,1,1e308", EXTREME),
    ("long-family", "x" * 100_000, ("refuse",)),
    ("long-parameters", "beta:" + ",".join(["1"] * 50_000), ("refuse",)),
    ("long-number", "beta:" + "1" * 100_000 + ",2", EXTREME),
]


def _words(items: list[str], size: int = 100_000) -> list[str]:
    """Comma-joined words of ``items``, each under ``size`` characters (the kernel's limit of
    one argument is 128 KiB)."""
    words, word = [], ""
    for item in items:
        if word and len(word) + len(item) + 1 > size:
            words.append(word)
            word = ""
        word = f"{word},{item}" if word else item
    return [*words, word]


def populations() -> list[Case]:
    """``--population`` specs on ``market`` and ``bargain --firms``, and its flags' sizes."""
    out = []
    for name, spec, expect in SPECS:
        ok = ["--json"] if "ok" in expect else []
        out.append(case(f"market-population-{name}", "spec", [*POPULATION, spec, *ok], expect))
        out.append(
            case(
                f"bargain-firms-population-{name}",
                "spec",
                [*FIRMS, "--population", spec, *ok],
                expect,
            )
        )
    beta = [*POPULATION, "beta:2,5"]
    out += [
        case("market-population-consumers-1e9", "huge", [*beta, "--consumers", str(10**9)]),
        case("market-population-consumers-1e30", "huge", [*beta, f"--consumers={10**30}"]),
        case("market-population-consumers-negative", "huge", [*beta, "--consumers=-1"]),
        case("market-population-consumers-nan", "huge", [*beta, "--consumers", "nan"]),
        case(
            "market-population-firms-1000",
            "huge",
            ["market", "--qualities", ",".join(["0.5"] * 1000), "--population", "beta:2,5"],
            ("refuse", "ok", "fail"),
        ),
        case(
            "market-population-firms-30000",
            "huge",
            [
                "market",
                "--qualities",
                *_words([f"{(i + 1) / 30001:.6f}" for i in range(30_000)]),
                "--population",
                "lognorm:1",
                "--json",
            ],
            ("refuse", "ok", "fail"),
        ),
        case(
            "market-population-seed-2e64",
            "overflow",
            [*beta, "--consumers", "10", "--seed", str(2**64), "--json"],
            ("refuse", "ok"),
        ),
        case(
            "market-population-seed-negative", "overflow", [*beta, "--consumers", "10", "--seed=-1"]
        ),
        case(
            "market-population-quality-nan",
            "overflow",
            [*POPULATION[:2], "nan", "0.5", *POPULATION[4:], "beta:2,5"],
        ),
        case(
            "market-population-quality-inf",
            "overflow",
            [*POPULATION[:2], "inf", "0.5", *POPULATION[4:], "beta:2,5"],
        ),
        case(
            "market-population-quality-denormal",
            "overflow",
            [*POPULATION[:2], "0", "5e-324", *POPULATION[4:], "beta:2,5", "--json"],
            EXTREME,
        ),
        case(
            "market-population-qualities-tied",
            "wrong-answer",
            [*POPULATION[:2], "0.5", "0.5", *POPULATION[4:], "lognorm:1", "--json"],
            EXTREME,
        ),
        case(
            "market-population-qualities-zero",
            "wrong-answer",
            [*POPULATION[:2], "0", "0", *POPULATION[4:], "beta:2,5", "--json"],
            EXTREME,
        ),
        case(
            "market-population-with-from",
            "contradiction",
            ["market", "--from", "{files}/q.csv", "--population", "beta:2,5"],
            prepare=writes(("q.csv", "q_a,q_b\n0.3,0.8\n")),
        ),
        case("market-population-seed-without-consumers", "contradiction", [*beta, "--seed", "3"]),
        case("market-population-with-metric", "contradiction", [*beta, "--metric", "1-loss"]),
        case("market-population-with-confidence", "contradiction", [*beta, "--confidence", "0.9"]),
    ]
    return out


def bargains() -> list[Case]:
    """``bargain --firms``: hostile counts and qualities, ``--path``, and the flags it excludes."""
    many = 30_000  # one word of 30 000 items stays under the kernel's 128 KiB per word
    out = [
        case("bargain-firms-13", "huge", ["bargain", "--firms", ",".join(["0.5"] * 13)]),
        case("bargain-firms-30000", "huge", ["bargain", "--firms", ",".join(["0.5"] * many)]),
        # 10**6 firms do not fit in the kernel's 2 MiB of arguments: half a million do
        case("bargain-firms-5e5", "huge", ["bargain", "--firms", *_words(["0"] * 500_000)]),
        case(
            "bargain-firms-12-path",
            "huge",
            [*FIRMS[:2], ",".join(f"{i / 13:.4f}" for i in range(1, 13)), "--path", "--json"],
            ("refuse", "ok"),
            timeout=120.0,
        ),
        # under a population each market the bargain scores is a solved equilibrium: four
        # firms take seconds (twelve take minutes of CPU, beyond a cheap case)
        case(
            "bargain-firms-4-path-population",
            "huge",
            [*FIRMS[:2], "0.2,0.4,0.6,0.8", "--path", "--population", "beta:2,5", "--json"],
            ("refuse", "ok", "fail"),
            timeout=120.0,
        ),
        case("bargain-firms-empty", "contradiction", ["bargain", "--firms", ""]),
        case("bargain-firms-with-ql0", "contradiction", [*FIRMS, "--ql0", "0.1"]),
        case("bargain-firms-with-allow-lower", "contradiction", [*FIRMS, "--allow-lower"]),
        case(
            "bargain-firms-path-without",
            "contradiction",
            ["bargain", "--ql0", "0.3", "--qh0", "0.6", "--path"],
        ),
        case(
            "bargain-firms-population-without",
            "contradiction",
            ["bargain", "--ql0", "0.3", "--qh0", "0.6", "--population", "beta:2,5"],
        ),
        case("bargain-firms-above-qmax", "contradiction", [*FIRMS, "--qmax", "0.3"]),
        case(
            "bargain-firms-one",
            "wrong-answer",
            ["bargain", "--firms", "0.5", "--json"],
            ("refuse", "ok"),
        ),
        case(
            "bargain-firms-one-path",
            "wrong-answer",
            ["bargain", "--firms", "0.5", "--path", "--json"],
            ("refuse", "ok"),
        ),
        case(
            "bargain-firms-all-zero",
            "wrong-answer",
            ["bargain", "--firms", "0,0,0", "--json"],
            ("refuse", "ok"),
        ),
        case(
            "bargain-firms-all-one",
            "wrong-answer",
            ["bargain", "--firms", "1,1", "--path", "--json"],
            ("refuse", "ok"),
        ),
        case(
            "bargain-firms-tied",
            "wrong-answer",
            ["bargain", "--firms", "0.5,0.5", "--path", "--json"],
            ("refuse", "ok"),
        ),
    ]
    for name, value in [
        ("nan", "nan"),
        ("inf", "inf"),
        ("minus-inf", "-inf"),
        ("1e400", "1e400"),
        ("negative", "-0.1"),
        ("above-one", "1.5"),
        ("1e308", "1e308"),
        ("words", "abc"),
        ("fraction", "1/2"),
    ]:
        out.append(case(f"bargain-firms-{name}", "overflow", ["bargain", f"--firms=0.2,{value}"]))
    out += [
        case(
            "bargain-firms-denormal",
            "overflow",
            ["bargain", "--firms", "0,5e-324", "--path", "--json"],
            ("refuse", "ok"),
        ),
        case(
            "bargain-firms-qmax-denormal",
            "overflow",
            ["bargain", "--firms", "0,1e-320", "--qmax", "1e-300", "--path", "--json"],
            ("refuse", "ok"),
        ),
        case("bargain-firms-qmax-zero", "overflow", [*FIRMS, "--qmax", "0"]),
        case("bargain-firms-qmax-nan", "overflow", [*FIRMS, "--qmax", "nan"]),
        case("bargain-firms-qmax-above-one", "overflow", [*FIRMS, "--qmax", "2"]),
    ]
    return out


#: a predictions file: ``party,label,prediction`` rows of two parties on three examples
PREDICTIONS = "party,label,prediction\na,0,0\na,1,1\na,2,0\nb,0,0\nb,1,0\nb,2,0\n"
#: the same with class probabilities
PROBABILITIES = "party,label,p0,p1\na,0,0.9,0.1\na,1,0.2,0.8\nb,0,0.6,0.4\nb,1,0.5,0.5\n"


def _predictions(
    name: str,
    content: str | bytes,
    expect: tuple[str, ...] = ("refuse",),
    *extra: str,
    **kw: object,
) -> Case:
    """A predictions CSV ``p.csv`` for ``market --from``, with ``extra`` flags."""
    return case(
        f"market-predictions-{name}",
        "file",
        ["market", "--from", "{files}/p.csv", *extra, "--json"],
        expect,
        prepare=writes(("p.csv", content)),
        **kw,
    )


def _wide(columns: int) -> str:
    header = ["party", "label", *(f"p{k}" for k in range(columns))]
    row = ["0"] * columns
    row[0] = "1"
    return "\n".join([",".join(header), ",".join(["a", "0", *row]), ",".join(["b", "0", *row])])


def predictions() -> list[Case]:
    """``market --from`` a CSV of predictions: hostile files, labels, probabilities and flags."""
    many = "party,label,prediction\n" + "".join(
        f"{p},{i % 10},{(i * 7) % 10}\n" for p in ("a", "b") for i in range(500_000)
    )
    out = [
        _predictions("valid", PREDICTIONS, ("ok",), check=_firms(2)),
        _predictions("valid-probabilities", PROBABILITIES, ("ok",), "--metric", "1-loss"),
        _predictions("empty", b""),
        _predictions("garbage", GARBAGE),
        _predictions("header-only", "party,label,prediction\n"),
        _predictions("header-only-probabilities", "party,label,p0,p1\n"),
        _predictions("columns-1e6", _wide(1_000_000), ("refuse", "ok"), timeout=120.0),
        _predictions(
            "other-columns-1e6",
            "party,label,prediction," + ",".join(f"x{k}" for k in range(1_000_000)) + "\n",
        ),
        _predictions("rows-1e6", many, ("refuse", "ok"), timeout=120.0),
        _predictions(
            "parties-1e5",
            "party,label,prediction\n" + "".join(f"p{i},0,0\n" for i in range(100_000)),
            ("refuse", "ok"),
            timeout=120.0,
        ),
        _predictions("label-nan", "party,label,prediction\na,nan,1\nb,nan,0\n"),
        _predictions("label-inf", "party,label,prediction\na,inf,1\nb,inf,0\n"),
        _predictions("label-negative", "party,label,prediction\na,-1,1\nb,-1,0\n"),
        _predictions("label-fraction", "party,label,prediction\na,1.5,1\nb,1.5,0\n"),
        _predictions("label-empty", "party,label,prediction\na,,1\nb,,0\n"),
        _predictions(
            # class indices are only compared with a prediction column: any integer is one
            "label-1e12",
            "party,label,prediction\na,1000000000000,0\nb,1000000000000,0\n",
            ("refuse", "ok"),
            check=_firms(2),
        ),
        _predictions("label-1e400", "party,label,prediction\na,1e400,0\nb,1e400,0\n"),
        _predictions("label-2e63", f"party,label,prediction\na,{2**63},0\nb,{2**63},0\n"),
        _predictions(
            "prediction-1e12",
            "party,label,prediction\na,0,1000000000000\nb,0,0\n",
            ("refuse", "ok"),
            check=_firms(2),
        ),
        _predictions("prediction-negative", "party,label,prediction\na,0,-1\nb,0,0\n"),
        _predictions("prediction-nan", "party,label,prediction\na,0,nan\nb,0,0\n"),
        _predictions("probability-nan", "party,label,p0,p1\na,0,nan,0.5\nb,0,0.5,0.5\n"),
        _predictions("probability-negative", "party,label,p0,p1\na,0,-0.5,1.5\nb,0,0.5,0.5\n"),
        _predictions("probability-sum-2", "party,label,p0,p1\na,0,1,1\nb,0,0.5,0.5\n"),
        _predictions("probability-1e400", "party,label,p0,p1\na,0,1e400,0\nb,0,0.5,0.5\n"),
        _predictions("probability-label-beyond", "party,label,p0,p1\na,5,0.5,0.5\nb,5,0.5,0.5\n"),
        _predictions("probability-gap", "party,label,p0,p2\na,0,0.5,0.5\nb,0,0.5,0.5\n"),
        _predictions("probability-and-prediction", "party,label,prediction,p0,p1\na,0,0,1,0\n"),
        _predictions("no-prediction", "party,label\na,0\nb,1\n"),
        _predictions("party-empty", "party,label,prediction\n,0,0\nb,0,0\n"),
        _predictions("rows-differ", "party,label,prediction\na,0,0\na,1,1\nb,0,0\n"),
        _predictions("labels-differ", "party,label,prediction\na,0,0\nb,1,1\n"),
        _predictions("one-party", "party,label,prediction\na,0,0\na,1,1\n", ("refuse", "ok")),
        _predictions("latin1", "party,label,prediction\n\xe9,0,0\nb,0,0\n".encode("latin-1")),
        _predictions("utf16", PREDICTIONS.encode("utf-16")),
        _predictions("nul-bytes", b"party,label,prediction\na,0,0\x00\nb,0,0\n"),
        _predictions("ragged", "party,label,prediction\na,0,0,9\nb,0,0\n"),
        _predictions(
            "log-loss-infinite",
            "party,label,p0,p1\na,0,0,1\nb,0,1,0\n",
            ("refuse", "ok"),
            "--metric",
            "1-loss",
        ),
        _predictions("metric-1-loss-classes", PREDICTIONS, ("refuse",), "--metric", "1-loss"),
        _predictions("metric-unknown", PREDICTIONS, ("refuse",), "--metric", "loss"),
        _predictions("confidence-zero", PREDICTIONS, ("refuse",), "--confidence", "0"),
        _predictions("confidence-one", PREDICTIONS, ("refuse",), "--confidence", "1"),
        _predictions("confidence-nan", PREDICTIONS, ("refuse",), "--confidence", "nan"),
        _predictions("confidence-inf", PREDICTIONS, ("refuse",), "--confidence", "inf"),
        _predictions("confidence-negative", PREDICTIONS, ("refuse",), "--confidence=-0.5"),
        _predictions("confidence-1e-400", PREDICTIONS, ("refuse",), "--confidence", "1e-400"),
        _predictions(
            "confidence-near-one",
            PREDICTIONS,
            ("refuse", "ok"),
            "--confidence",
            "0.9999999999999999",
        ),
        _predictions("confidence-tiny", PREDICTIONS, ("refuse", "ok"), "--confidence", "1e-300"),
        _predictions("consumers-1e9", PREDICTIONS, ("refuse",), "--consumers", str(10**9)),
        _predictions("with-names", PREDICTIONS, ("refuse",), "--names", "x", "y"),
        case(
            "market-predictions-directory",
            "file",
            ["market", "--from", "{files}/d.csv"],
            prepare=lambda root, work: (root / "d.csv").mkdir(),
        ),
        case(
            "market-predictions-missing",
            "file",
            ["market", "--from", "{files}/none.csv", "--metric", "accuracy"],
        ),
        case(
            "market-predictions-fifo",
            "file",
            ["market", "--from", "{files}/p.csv"],
            prepare=fifo("p.csv"),
        ),
        case(
            "market-predictions-metric-with-qualities",
            "contradiction",
            ["market", "--qualities", "0.3", "0.8", "--metric", "accuracy"],
        ),
        case(
            "market-predictions-confidence-with-qualities",
            "contradiction",
            ["market", "--qualities", "0.3", "0.8", "--confidence", "0.9"],
        ),
        case(
            "market-predictions-metric-with-quality-file",
            "contradiction",
            ["market", "--from", "{files}/q.csv", "--confidence", "0.9"],
            prepare=writes(("q.csv", "q_a,q_b\n0.3,0.8\n")),
        ),
    ]
    return out


def n_firm_runs() -> list[Case]:
    """``defection-free --firms N`` and the measured-accuracy flags: refused before training."""
    base = _base("defection-free")
    out = [
        case(f"df-firms-{name}", "huge", [*base, f"--firms={value}"])
        for name, value in [
            ("0", "0"),
            ("1", "1"),
            ("13", "13"),
            ("1e6", str(10**6)),
            ("1e30", str(10**30)),
            ("negative", "-1"),
            ("nan", "nan"),
            ("fraction", "2.5"),
            ("words", "abc"),
            ("empty", ""),
        ]
    ]
    # the n-firm run reads no --init-epochs-high (a two-firm flag): its own --init-epochs
    i = base.index("--init-epochs-high")
    firms = [*base[:i], *base[i + 2 :], "--firms", "3"]
    out += [
        case("df-firms-size-1e12", "huge", [*firms, f"--size={10**12}"]),
        case("df-firms-rounds-1e12", "huge", [*firms, f"--rounds={10**12}"]),
        case("df-firms-init-epochs-1e12", "huge", [*firms, f"--init-epochs={10**12}"]),
        case("df-firms-init-epochs-negative", "overflow", [*firms, "--init-epochs=-1"]),
        case("df-firms-alpha-zero", "overflow", [*firms, "--alpha", "0"]),
        case("df-firms-alpha-negative", "overflow", [*firms, "--alpha=-1"]),
        case("df-firms-alpha-nan", "overflow", [*firms, "--alpha", "nan"]),
        case("df-firms-alpha-inf", "overflow", [*firms, "--alpha", "inf"]),
        case("df-firms-alpha-1e400", "overflow", [*firms, "--alpha", "1e400"]),
        case("df-firms-pace-one", "overflow", [*firms, "--pace", "1"]),
        case("df-firms-pace-nan", "overflow", [*firms, "--pace", "nan"]),
        case("df-firms-pace-inf", "overflow", [*firms, "--pace", "inf"]),
        case("df-firms-q-max-zero", "overflow", [*firms, "--q-max", "0"]),
        case("df-firms-scheme-one-sided", "contradiction", [*firms, "--scheme", "one-sided-low"]),
        case("df-firms-alpha-without", "contradiction", [*base, "--alpha", "0.5"]),
        case("df-firms-pace-without", "contradiction", [*base, "--pace", "2"]),
        case("df-firms-model-without", "contradiction", [*base, "--model", "mlp"]),
        case("df-firms-init-epochs-without", "contradiction", [*base, "--init-epochs", "2"]),
        case("df-firms-train-alone", "contradiction", [*firms, "--train-alone"]),
        case("df-firms-figures", "contradiction", [*firms, "--figures", "--out", "{files}/o"]),
        case("df-firms-dataset-unknown", "contradiction", [*firms, "--dataset", "nope"]),
        case("df-confidence-zero", "overflow", [*base, "--confidence", "0"]),
        case("df-confidence-one", "overflow", [*base, "--confidence", "1"]),
        case("df-confidence-nan", "overflow", [*base, "--confidence", "nan"]),
        case("df-confidence-inf", "overflow", [*base, "--confidence", "inf"]),
        case("df-confidence-negative", "overflow", [*base, "--confidence=-0.5"]),
        case("df-confidence-1e-400", "overflow", [*base, "--confidence", "1e-400"]),
        case("df-bound-point-without-confidence", "contradiction", [*base, "--bound", "point"]),
        case("df-bound-unknown", "contradiction", [*base, "--confidence", "0.9", "--bound", "x"]),
        case("df-firms-confidence-zero", "overflow", [*firms, "--confidence", "0"]),
        case("df-firms-confidence-nan", "overflow", [*firms, "--confidence", "nan"]),
        case(
            "df-firms-bound-point-without-confidence", "contradiction", [*firms, "--bound", "point"]
        ),
    ]
    return out


def accountants() -> list[Case]:
    """``train --dp-sampling/--dp-accountant`` and ``privacy account --accountant``."""
    dp = [*TRAIN_TINY, "--dp-noise-multiplier", "1"]
    poisson = [*dp, "--dp-sampling", "poisson"]
    acc = _base("privacy account")
    out = [
        case(
            "train-dp-sampling-poisson-no-noise",
            "contradiction",
            [*TRAIN_TINY, "--dp-sampling", "poisson"],
        ),
        case(
            "train-dp-accountant-pld-no-noise",
            "contradiction",
            [*TRAIN_TINY, "--dp-accountant", "pld"],
        ),
        case("train-dp-accountant-pld-fixed", "contradiction", [*dp, "--dp-accountant", "pld"]),
        case("train-dp-sampling-unknown", "spec", [*dp, "--dp-sampling", "bernoulli"]),
        case("train-dp-sampling-empty", "spec", [*dp, "--dp-sampling", ""]),
        case("train-dp-sampling-upper-case", "spec", [*dp, "--dp-sampling", "POISSON"]),
        case("train-dp-sampling-long", "spec", [*dp, "--dp-sampling", "p" * 100_000]),
        case("train-dp-accountant-unknown", "spec", [*poisson, "--dp-accountant", "gdp"]),
        case("train-dp-accountant-empty", "spec", [*poisson, "--dp-accountant", ""]),
        case(
            "train-dp-sampling-poisson-batch-over-data", "huge", [*poisson, "--batch-size", "5000"]
        ),
        *(
            case(
                f"train-dp-sampling-poisson-pld-{name}",
                "overflow",
                [*poisson, "--dp-accountant", "pld", flag, value, "--json"],
                ("refuse", "ok", "fail"),
                check=_null_says_why,
                timeout=TRAINS_S,
            )
            for name, flag, value in (
                ("noise-tiny", "--dp-noise-multiplier", "1e-300"),
                ("noise-huge", "--dp-noise-multiplier", "1e300"),
                ("delta-tiny", "--dp-delta", "1e-300"),
            )
        ),
        case(
            "train-dp-sampling-poisson-rdp-batch-1",
            "wrong-answer",
            [*poisson, "--batch-size", "1", "--json"],
            ("refuse", "ok"),
            check=_null_says_why,
            timeout=TRAINS_S,
        ),
        case("privacy-account-accountant-unknown", "spec", [*acc, "--accountant", "gdp"]),
        case("privacy-account-accountant-empty", "spec", [*acc, "--accountant", ""]),
        case(
            "privacy-account-accountant-sampling-unknown", "spec", [*acc, "--sampling", "bernoulli"]
        ),
    ]
    for accountant in ("pld", "rdp"):
        a = [*acc, "--accountant", accountant]
        epsilon = ["privacy", "account", "--epsilon", "1", "--steps", "1000000"]
        table = [
            ("noise-tiny", "overflow", [*a[:3], "1e-300", *a[4:]]),
            ("noise-huge", "overflow", [*a[:3], "1e300", *a[4:]]),
            ("rate-tiny", "overflow", [*a, "--sampling-rate", "1e-300"]),
            ("steps-1e12", "huge", [*a[:5], str(10**12), *a[6:], "--sampling-rate", "0.01"]),
            (
                "epsilon-tiny-rate",
                "huge",
                [
                    *epsilon,
                    "--delta",
                    "1e-5",
                    "--accountant",
                    accountant,
                    "--sampling-rate",
                    "1e-9",
                ],
            ),
        ]
        out += [
            case(
                f"privacy-account-accountant-{accountant}-{name}",
                group,
                [*argv, "--json"],
                ("refuse", "ok"),
                check=_null_says_why,
            )
            for name, group, argv in table
        ]
    out += [
        case(
            "privacy-account-accountant-rdp-fixed-size-1",
            "huge",
            [
                *acc,
                "--accountant",
                "rdp",
                "--sampling",
                "fixed",
                "--dataset-size",
                "1",
                "--sampling-rate",
                "0.5",
                "--json",
            ],
            ("refuse", "ok"),
        ),
        case(
            "privacy-account-accountant-rdp-fixed-size-0",
            "huge",
            [
                *acc,
                "--accountant",
                "rdp",
                "--sampling",
                "fixed",
                "--dataset-size",
                "0",
                "--sampling-rate",
                "0.5",
            ],
        ),
        case(
            "privacy-account-accountant-rdp-fixed-size-1e30",
            "huge",
            [
                *acc,
                "--accountant",
                "rdp",
                "--sampling",
                "fixed",
                f"--dataset-size={10**30}",
                "--sampling-rate",
                "0.5",
                "--json",
            ],
            ("refuse", "ok"),
        ),
    ]
    return out


def log_flags() -> list[Case]:
    """The global ``--quiet`` and ``--verbose``: their conflict, and refusals under each."""
    market = ["market", "--qualities", "0.3", "0.8"]
    out = [
        case("log-quiet-and-verbose", "contradiction", ["--quiet", "--verbose", *market]),
        case("log-quiet-and-verbose-after", "contradiction", [*market, "--quiet", "--verbose"]),
        case("log-quiet-and-verbose-split", "contradiction", ["--quiet", *market, "--verbose"]),
        case("log-quiet-value", "contradiction", [*market, "--quiet=yes"]),
        case("log-verbose-value", "contradiction", [*market, "--verbose=1"]),
        case(
            "log-quiet-twice", "contradiction", ["--quiet", *market, "--quiet", "--json"], ("ok",)
        ),
        case("log-verbose-json", "contradiction", ["--verbose", *market, "--json"], ("ok",)),
        case(
            "log-verbose-refusal-quality", "overflow", ["--verbose", "market", "--qualities", "2"]
        ),
        case("log-verbose-refusal-population", "spec", ["--verbose", *POPULATION, "beta:"]),
        case("log-verbose-refusal-firms", "overflow", ["--verbose", "bargain", "--firms", "nan"]),
        case(
            "log-verbose-refusal-file",
            "file",
            ["--verbose", "market", "--from", "{files}/p.csv"],
            prepare=writes(("p.csv", GARBAGE)),
        ),
        case(
            "log-quiet-refusal-df-firms",
            "huge",
            ["--quiet", *_base("defection-free"), "--firms", "13"],
        ),
        case(
            "log-quiet-refusal-accountant",
            "contradiction",
            ["--quiet", *TRAIN_TINY, "--dp-accountant", "pld"],
        ),
    ]
    return out


def all_cases() -> list[Case]:
    """Every case of the corpus, group by group."""
    cases = [
        *wrong_answers(),
        *contradictions(),
        *huge(),
        *sweeps(),
        *locks(),
        *cluster(),
        *files(),
        *overflows(),
        *populations(),
        *bargains(),
        *predictions(),
        *n_firm_runs(),
        *accountants(),
        *log_flags(),
    ]
    seen: set[str] = set()
    for c in cases:
        if c.id in seen:
            raise ValueError(f"two cases are called {c.id!r}")
        seen.add(c.id)
    return cases
