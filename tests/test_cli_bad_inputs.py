"""Every subcommand refuses bad input with one line on stderr and exit code 2, before any work.

The README promises a one-line error and exit code 2 for bad input. Table-driven over the
flags of every subcommand: each numeric flag gets the values outside its domain (negative,
zero where a count or a scale must be positive, NaN, infinities, overflowing literals,
fractions for integer counts, words), each file flag gets a missing file, a directory,
garbage bytes and a truncated file, and the contradictory or
impossible combinations get their own rows. Each case runs ``collabecon.cli.main`` in-process
in an empty working directory under a guard on the CPU time it spends (not on the wall
clock, which a loaded machine stretches): a refusal must come before any training, leave no
file behind, and be a single line without a traceback.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from collabecon.cli import COMMANDS, main
from tests.cli_guard import PROGRESS, TooSlow, cpu_guard

#: CPU seconds (this process, all its threads) a refusal may cost: far above any refusal,
#: far below any training run
GUARD_CPU_S = 20
#: wall seconds after which a case that spends no CPU (a wait that never ends) counts as hung
HANG_S = 300

#: a small valid invocation of every subcommand; a bad flag is appended to it
BASE: dict[str, list[str]] = {
    "verify": ["verify", "--only", "thesis.ch3.lemma2"],
    "table1": ["table1"],
    "defection-free": [
        "defection-free",
        "--dataset",
        "digits",
        "--size",
        "150",
        "--target-per-class",
        "20",
        "--rounds",
        "1",
        "--lr",
        "0.1",
        "--init-epochs-high",
        "30",
    ],
    "market": ["market", "--qualities", "0.3", "0.8"],
    "demo": ["demo", "--rounds", "1", "--size", "150", "--target-per-class", "20"],
    "cobo": ["cobo", "--rounds", "2", "--seeds", "1", "--methods", "cobo,local"],
    "ipfl": [
        "ipfl",
        "--dataset",
        "digits",
        "--model",
        "linear",
        "--clients",
        "8",
        "--rounds",
        "1",
        "--local-steps",
        "1",
    ],
    "train": [
        "train",
        "--dataset",
        "digits",
        "--model",
        "mlp",
        "--clients",
        "4",
        "--rounds",
        "1",
        "--local-steps",
        "1",
        "--no-progress",
    ],
    "sweep": ["sweep", "@config"],
    "flower": [
        "flower",
        "prepare",
        "--dataset",
        "digits",
        "--model",
        "mlp",
        "--clients",
        "4",
        "--rounds",
        "1",
        "--out",
        "flower-run",
    ],
    "bench engine": ["bench", "engine", "--clients", "2", "--repeats", "1", "--steps", "1"],
    "bench all-pairs": ["bench", "all-pairs", "--clients", "2", "--repeats", "1"],
    "bench dp": ["bench", "dp", "--clients", "2", "--repeats", "1", "--steps", "1"],
    "bench bargaining": [
        *("bench", "bargaining", "--points", "40", "--baseline-points", "8"),
        *("--reference-points", "8", "--repeats", "1"),
    ],
    "bench pricing-repeated": [
        *("bench", "pricing-repeated", "--runs", "2", "--rounds", "30", "--baseline-runs", "2"),
        *("--baseline-rounds", "10", "--single-rounds", "30", "--scale-runs", "2"),
        "--repeats",
        "1",
    ],
    "bench privacy": [
        *("bench", "privacy", "--clients", "30", "--existence-clients", "50", "--draws", "1")
    ],
    "bench market": ["bench", "market", "--firms", "50", "--repeats", "1"],
    "bench verify": ["bench", "verify", "--only", "tsoy.thm4.2", "--repeats", "1"],
    "reproduce": ["reproduce", "--out", "rep", "--only", "pricing"],
    "privacy exists": ["privacy", "exists", "--model", "dp-mean", "--lam", "1", "2"],
    "privacy optimal": ["privacy", "optimal", "--model", "dp-mean", "--lam", "1", "2"],
    "privacy figure1": ["privacy", "figure1", "--out", "fig", "--repetitions", "5"],
    "privacy account": ["privacy", "account", "--noise", "1", "--steps", "10", "--delta", "1e-5"],
    "privacy curve": [
        "privacy",
        "curve",
        "--out",
        "curve",
        "--noise",
        "1",
        "--seeds",
        "1",
        "--dataset",
        "digits",
        "--clients",
        "2",
        "--rounds",
        "1",
        "--local-steps",
        "1",
    ],
    "pricing equilibrium": ["pricing", "equilibrium", "--alpha", "1/2"],
    "pricing repeated": ["pricing", "repeated", "--rounds", "100", "--seeds", "1"],
    "pricing figures": ["pricing", "figures", "--out", "figs", "--rounds", "100"],
    "duopoly": ["duopoly", "--ql", "0.3", "--qh", "0.8"],
    "bargain": ["bargain", "--ql0", "0.3", "--qh0", "0.6"],
}

#: bad values by domain
COUNT = ["-1", "0", "1.5", "nan", "inf", "1e400", "abc"]  # integer >= 1
COUNT0 = ["-1", "1.5", "nan", "abc"]  # integer >= 0
SEED = ["-1", "1.5", "abc"]
SEED_HUGE = "18446744073709551616"  # 2**64: no numpy or torch seed
POS = ["-1", "0", "nan", "inf", "-inf", "1e400", "abc"]  # finite > 0
NONNEG = ["-1", "nan", "inf", "-inf", "1e400", "abc"]  # finite >= 0
UNIT = ["-0.1", "1.5", "nan", "inf", "-inf", "abc"]  # [0, 1]
OPEN_UNIT = ["0", "1", "-0.1", "1.5", "nan", "inf", "abc"]  # (0, 1)
FRACTION_POS = ["-1", "0", "nan", "inf", "abc"]
#: exact numbers (fractions) that are no finite float, or would take minutes to build
EXACT_OVERFLOW = ["1e400", "1/0", "1e99999999", "1e-99999999"]

#: (subcommand, flag, domain)
NUMERIC: list[tuple[str, str, list[str]]] = [
    ("table1", "--seed", SEED),
    ("defection-free", "--rounds", COUNT),
    ("defection-free", "--seed", SEED),
    ("defection-free", "--size", COUNT),
    ("defection-free", "--target-per-class", COUNT),
    ("defection-free", "--lr", [*POS, "1e308"]),  # 1e308 overflows float32
    ("defection-free", "--batch-size", COUNT),
    ("defection-free", "--init-epochs-high", COUNT0),
    ("defection-free", "--q-max", ["-1", "0", "nan", "inf", "1.5", "abc"]),
    ("defection-free", "--tolerance", NONNEG),
    ("market", "--qualities", [*UNIT, "1e400"]),
    ("market", "--consumers", COUNT0),
    ("market", "--seed", SEED),
    ("demo", "--rounds", COUNT),
    ("demo", "--seed", SEED),
    ("demo", "--size", COUNT),
    ("demo", "--target-per-class", COUNT),
    ("cobo", "--rounds", COUNT),
    ("cobo", "--seed", SEED),
    ("ipfl", "--clients", COUNT),
    ("ipfl", "--clusters", COUNT),
    ("ipfl", "--rounds", COUNT),
    ("ipfl", "--local-steps", COUNT),
    ("ipfl", "--lr", [*POS, "1e308"]),  # 1e308 overflows float32
    ("ipfl", "--tok-init", NONNEG),
    ("ipfl", "--price", NONNEG),
    ("ipfl", "--perf-share", UNIT),
    ("ipfl", "--th-bid", UNIT),
    ("ipfl", "--seed", SEED),
    ("train", "--clients", COUNT),
    ("train", "--rounds", COUNT),
    ("train", "--local-steps", COUNT),
    ("train", "--lr", [*POS, "1e308"]),  # 1e308 overflows float32
    ("train", "--momentum", ["-0.1", "nan", "inf", "abc"]),
    ("train", "--weight-decay", NONNEG),
    ("train", "--batch-size", COUNT),
    ("train", "--clients-per-round", COUNT),
    ("train", "--test-fraction", ["-0.1", "1", "1.5", "nan", "inf", "abc"]),
    ("train", "--target-fraction", ["-0.1", "1.5", "nan", "inf", "abc"]),
    ("train", "--eval-every", COUNT),
    ("train", "--seed", SEED),
    ("train", "--checkpoint-every", COUNT),
    ("sweep", "--workers", [*COUNT, "100000"]),  # more workers than CPUs
    ("sweep", "--retries", ["-1", "11", "1000000000", "1.5", "nan", "abc"]),
    ("bench engine", "--clients", COUNT),
    ("bench engine", "--batch-size", COUNT),
    ("bench engine", "--repeats", COUNT),
    ("bench engine", "--steps", COUNT),
    ("bench engine", "--seed", SEED),
    ("bench engine", "--matmul-size", [*COUNT, "100000"]),
    ("bench all-pairs", "--clients", COUNT),
    ("bench all-pairs", "--batch-size", COUNT),
    ("bench all-pairs", "--repeats", COUNT),
    ("bench engine", "--seed", [*SEED, SEED_HUGE]),
    ("bench all-pairs", "--seed", [*SEED, SEED_HUGE]),
    ("bench dp", "--clients", COUNT),
    ("bench dp", "--batch-size", COUNT),
    ("bench dp", "--repeats", [*COUNT, "1001"]),
    ("bench dp", "--steps", COUNT),
    ("bench dp", "--seed", [*SEED, SEED_HUGE]),
    ("bench dp", "--noise", [*POS, "1e308"]),  # 1e308 x the clipping norm overflows float32
    ("bench dp", "--max-grad-norm", [*POS, "1e308"]),
    ("bench bargaining", "--points", COUNT),
    ("bench bargaining", "--baseline-points", COUNT),
    ("bench bargaining", "--reference-points", COUNT),
    ("bench bargaining", "--repeats", [*COUNT, "1001"]),
    ("bench bargaining", "--seed", SEED),
    ("bench bargaining", "--scalar-calls", [*COUNT0, "41"]),  # at most --points
    ("bench market", "--firms", [*COUNT, "100000000000"]),
    ("bench market", "--repeats", [*COUNT, "1001"]),
    ("bench market", "--seed", [*SEED, SEED_HUGE]),
    ("bench verify", "--repeats", [*COUNT, "21"]),
    ("bench verify", "--only", ["no.such.statement"]),
    ("bench verify", "--against", ["@DIR"]),
    ("bench pricing-repeated", "--runs", [*COUNT, "1"]),  # 1 run has no standard error
    ("bench pricing-repeated", "--rounds", COUNT),
    ("bench pricing-repeated", "--baseline-runs", [*COUNT, "1"]),
    ("bench pricing-repeated", "--baseline-rounds", COUNT),
    ("bench pricing-repeated", "--single-rounds", COUNT0),
    ("bench pricing-repeated", "--scale-runs", COUNT0),
    ("bench pricing-repeated", "--repeats", [*COUNT, "1001"]),
    ("bench privacy", "--clients", COUNT),
    ("bench privacy", "--existence-clients", COUNT),
    ("bench privacy", "--draws", COUNT),
    ("reproduce", "--seeds", [*COUNT, "1001", "99999999999999999999"]),
    ("reproduce", "--workers", COUNT),
    ("privacy exists", "--lam", ["-1", "nan", "inf", "abc"]),
    ("privacy exists", "--n", ["-1", "0", "1.5", "nan", "inf", "abc"]),
    ("privacy exists", "--sigma", ["-1", "0", "nan", "inf", "abc"]),
    ("privacy exists", "--bound", POS),
    ("privacy optimal", "--lam", ["-1", "nan", "inf", "abc"]),
    ("privacy optimal", "--n", ["-1", "0", "1.5", "nan", "abc"]),
    ("privacy optimal", "--nu", ["-1", "nan", "inf", "abc"]),
    ("privacy figure1", "--repetitions", COUNT),
    ("privacy figure1", "--seed", SEED),
    ("privacy account", "--noise", POS),
    ("privacy account", "--steps", COUNT),
    ("privacy account", "--sampling-rate", ["0", "-0.1", "1.5", "nan", "inf", "abc"]),
    ("privacy account", "--delta", OPEN_UNIT),
    ("privacy account", "--dataset-size", COUNT),
    ("privacy curve", "--noise", ["-1", "nan", "inf", "abc"]),
    ("privacy curve", "--seeds", COUNT),
    ("privacy curve", "--clients", COUNT),
    ("privacy curve", "--rounds", COUNT),
    ("privacy curve", "--local-steps", COUNT),
    ("privacy curve", "--batch-size", COUNT),
    ("privacy curve", "--lr", [*POS, "1e308"]),  # 1e308 overflows float32
    ("privacy curve", "--clip", POS),
    ("privacy curve", "--delta", OPEN_UNIT),
    ("privacy curve", "--momentum", ["-0.1", "1", "nan", "inf", "1e400", "abc"]),
    ("pricing equilibrium", "--mu", ["0", "1", "-1", "3/2", "nan", "abc", *EXACT_OVERFLOW]),
    ("pricing equilibrium", "--theta-low", ["-1", "nan", "inf", "abc", *EXACT_OVERFLOW]),
    ("pricing equilibrium", "--theta-high", [*FRACTION_POS, *EXACT_OVERFLOW]),
    ("pricing equilibrium", "--cb", ["-1", "nan", "abc", *EXACT_OVERFLOW]),
    ("pricing equilibrium", "--cs", ["-1", "nan", "abc", *EXACT_OVERFLOW]),
    ("pricing equilibrium", "--buyers", COUNT),
    ("pricing equilibrium", "--alpha", ["-1", "3/2", "nan", "abc", *EXACT_OVERFLOW]),
    ("pricing repeated", "--rounds", COUNT),
    ("pricing repeated", "--seeds", COUNT),
    ("pricing repeated", "--seed", SEED),
    ("pricing repeated", "--buyers", [*COUNT, "1", "1001", "100000000000"]),  # 2 to 1000
    ("pricing repeated", "--eta", [*POS, "1/0"]),
    ("pricing repeated", "--gamma", ["-0.1", "nan", "inf", "1e400", "abc"]),
    ("pricing repeated", "--alpha", ["-0.1", "1.5", "nan", "inf", "1e400", "abc"]),
    ("pricing repeated", "--alpha-hat-init", UNIT),
    ("pricing figures", "--rounds", COUNT),
    ("pricing figures", "--seeds", COUNT),
    ("duopoly", "--ql", [*UNIT, "1e400", "1/0"]),
    ("duopoly", "--qh", [*UNIT, "1e400"]),
    ("bargain", "--ql0", [*UNIT, "1e400"]),
    ("bargain", "--qh0", [*UNIT, "1e400"]),
    ("bargain", "--qmax", ["-1", "0", "nan", "inf", "1e400", "abc"]),
]

#: file contents for the bad-file rows
GARBAGE = bytes(range(256)) * 4
BAD_FILES = {
    "missing": None,
    "directory": "dir",
    "garbage": GARBAGE,
    "truncated": b"PK\x03\x04\x14\x00\x00\x00",
    "empty": b"",
    "json-repeated-key": b'{"names": ["a"], "names": ["b"], "quality": [0.5]}',
    "json-nan": b'{"names": ["a", "b"], "quality": [0.5, NaN]}',
    "json-deep": b"[" * 100_000 + b"]" * 100_000,
}

#: (subcommand, argv tail with @FILE for the bad file)
FILE_FLAGS: list[tuple[str, list[str]]] = [
    ("market", ["--from", "@FILE"]),
    ("sweep", []),  # the TOML configuration itself
    ("privacy exists", ["--curve", "@FILE"]),
    ("privacy optimal", ["--curve", "@FILE"]),
    ("train", ["--checkpoint", "@FILE", "--resume"]),
    ("ipfl", ["--checkpoint", "@FILE", "--resume"]),
]
#: ``--resume`` from a checkpoint directory that is missing or empty starts afresh
#: (learning/loop.py): only plain files are bad there
NOT_BAD = {("train", "missing"), ("train", "directory"), ("ipfl", "missing"), ("ipfl", "directory")}

#: sweep configurations with a grid point the sweep refuses: (name) -> what replaces
#: ``CONFIG``'s grid line ``seed = [0]`` (and its [train] line ``clients = 2`` where the grid
#: lists the clients)
SWEEP_GRIDS = {
    "seed-negative": "seed = [0, -1]",
    "partition-param-unknown": '"partition_params.zeta" = [1]',
    "dataset-param-unknown": '"dataset_params.n" = [1]',
    "clients-over-examples": "clients = [2, 5000]",
    "duplicate-point": "seed = [0, 0]",
    "in-train-too": "rounds = [1, 2]",
    "dotted-key-outside-a-mapping": '"seed.x" = [1]',
    "engine-unknown": 'engine = ["nope"]',
    "size-overflows": "\n".join(f"a{i} = [{', '.join(map(str, range(100)))}]" for i in range(12)),
    "size-over-the-ceiling": "seed = [0, 1]\nlr = [" + ", ".join(["0.1"] * 5001) + "]",
    "empty-list": "seed = []",
    "not-a-list": "seed = 3",
    "mnist": 'dataset = ["mnist"]',
}


def _sweep_config(grid: str) -> str:
    text = CONFIG.replace("seed = [0]", grid)
    return text.replace("clients = 2\n", "") if grid.startswith("clients") else text


#: (id, argv) with @DIR for an existing directory and @FILE for an existing plain file
CONTRADICTIONS: list[tuple[str, list[str]]] = [
    ("verify-bad-only", ["verify", "--only", "nowhere."]),
    ("table1-bad-scale", ["table1", "--scale", "huge"]),
    ("table1-data-dir-missing", ["table1", "--data-dir", "missing"]),
    ("table1-out-file", ["table1", "--out", "@FILE"]),
    ("table1-data-dir-at-small-scale", ["table1", "--data-dir", "."]),
    ("table1-seeds-huge", ["table1", "--seeds", "1000000000"]),
    ("df-q-max-below-quality", [*BASE["defection-free"], "--q-max", "0.01"]),
    ("df-dataset-unknown", ["defection-free", "--dataset", "nope", "--rounds", "1"]),
    ("df-device-banana", [*BASE["defection-free"], "--device", "banana"]),
    ("df-out-file", [*BASE["defection-free"], "--out", "@FILE"]),
    ("market-names-duplicate", ["market", "--qualities", "0.3", "0.8", "--names", "a", "a"]),
    ("market-names-count", ["market", "--qualities", "0.3", "0.8", "--names", "a"]),
    ("market-no-qualities", ["market"]),
    ("market-consumers-huge", ["market", "--qualities", "0.3", "0.8", "--consumers", "1e11"]),
    ("market-consumers-huge-int", [*BASE["market"], "--consumers", "100000000000"]),
    ("market-qualities-and-from", [*BASE["market"], "--from", "@FILE"]),
    ("market-seed-without-consumers", [*BASE["market"], "--seed", "3"]),
    ("market-seed-with-consumers-0", [*BASE["market"], "--seed", "3", "--consumers", "0"]),
    ("demo-out-file", [*BASE["demo"], "--out", "@FILE"]),
    ("demo-device-banana", [*BASE["demo"], "--device", "banana"]),
    ("cobo-methods-unknown", ["cobo", "--methods", "cobo,magic"]),
    ("cobo-methods-duplicate", ["cobo", "--rounds", "2", "--methods", "cobo", "cobo"]),
    ("cobo-out-file", [*BASE["cobo"], "--out", "@FILE"]),
    ("ipfl-clusters-over-clients", [*BASE["ipfl"], "--clusters", "9"]),
    ("ipfl-clusters-5-clients-4", [*BASE["ipfl"], "--clusters", "5", "--clients", "4"]),
    ("ipfl-resume-no-checkpoint", [*BASE["ipfl"], "--resume"]),
    ("ipfl-device-banana", [*BASE["ipfl"], "--device", "banana"]),
    ("ipfl-dataset-unknown", [*BASE["ipfl"], "--dataset", "nope"]),
    ("ipfl-model-unknown", [*BASE["ipfl"], "--model", "nope"]),
    ("ipfl-rc-bugs-alone", [*BASE["ipfl"], "--code-bugs"]),
    ("ipfl-out-file", [*BASE["ipfl"], "--out", "@FILE"]),
    ("ipfl-checkpoint-file", [*BASE["ipfl"], "--checkpoint", "@FILE"]),
    ("train-resume-no-checkpoint", [*BASE["train"], "--resume"]),
    ("train-device-banana", [*BASE["train"], "--device", "banana"]),
    ("train-algorithm-unknown", [*BASE["train"], "--algorithm", "nope"]),
    ("train-dataset-unknown", [*BASE["train"], "--dataset", "nope"]),
    ("train-model-unknown", [*BASE["train"], "--model", "nope"]),
    ("train-partition-unknown", [*BASE["train"], "--partition", "nope"]),
    ("train-engine-unknown", [*BASE["train"], "--engine", "nope"]),
    ("train-cpr-over-clients", [*BASE["train"], "--clients-per-round", "5"]),
    ("train-partition-arg-bad", [*BASE["train"], "--partition-arg", "novalue"]),
    ("train-algorithm-arg-unknown", [*BASE["train"], "--algorithm-arg", "zeta=1"]),
    ("train-dataset-arg-unknown", [*BASE["train"], "--dataset-arg", "zeta=1"]),
    ("train-out-file", [*BASE["train"], "--out", "@FILE"]),
    ("train-checkpoint-file", [*BASE["train"], "--checkpoint", "@FILE"]),
    ("train-fractions-sum", [*BASE["train"], "--test-fraction", "0.6", "--target-fraction", "0.6"]),
    ("sweep-address-bad", ["sweep", "@config", "--engine", "ray", "--address", "nohost"]),
    ("sweep-address-without-ray", ["sweep", "@config", "--address", "auto"]),
    ("sweep-gpus-per-run-zero", ["sweep", "@config", "--gpus-per-run", "0"]),
    ("sweep-retries-negative", ["sweep", "@config", "--retries", "-1"]),
    ("sweep-out-file", ["sweep", "@config", "--out", "@FILE"]),
    ("sweep-device-banana", ["sweep", "@config", "--device", "banana"]),
    ("sweep-address-port-99999", ["sweep", "@config", "--engine", "ray", "--address", "h:99999"]),
    (
        "sweep-ray-nothing-listens",
        ["sweep", "@config", "--engine", "ray", "--address", "127.0.0.1:1"],
    ),
    (
        "sweep-workers-with-address",
        ["sweep", "@config", "--engine", "ray", "--address", "auto", "--workers", "2"],
    ),
    ("sweep-connect-timeout-without-address", ["sweep", "@config", "--connect-timeout", "3"]),
    (
        "sweep-connect-timeout-zero",
        ["sweep", "@config", "--engine", "ray", "--address", "auto", "--connect-timeout", "0"],
    ),
    ("sweep-gpus-per-run-without-ray", ["sweep", "@config", "--gpus-per-run", "0.5"]),
    (
        "sweep-gpus-per-run-cpu",
        ["sweep", "@config", "--engine", "ray", "--device", "cpu", "--gpus-per-run", "1"],
    ),
    ("sweep-gpus-per-run-1.5", ["sweep", "@config", "--gpus-per-run", "1.5"]),
    *((f"sweep-grid-{name}", ["sweep", f"@config:{name}"]) for name in SWEEP_GRIDS),
    ("sweep-data-missing", ["sweep", "@config:mnist", "--data-dir", "@DIR"]),
    ("sweep-data-corrupt", ["sweep", "@config:mnist", "--data-dir", "@corrupt-data"]),
    ("bench-no-action", ["bench"]),
    ("bench-engine-model-unknown", [*BASE["bench engine"], "--model", "nope"]),
    ("bench-engine-device-banana", [*BASE["bench engine"], "--device", "banana"]),
    ("bench-dp-device-banana", [*BASE["bench dp"], "--device", "banana"]),
    ("bench-engine-clients-huge", [*BASE["bench engine"], "--clients", "100000000000"]),
    ("bench-engine-steps-huge", [*BASE["bench engine"], "--steps", "1000000000"]),
    ("bench-engine-batch-huge", [*BASE["bench engine"], "--batch-size", "100000000000"]),
    ("bench-engine-repeats-huge", [*BASE["bench engine"], "--repeats", "1001"]),
    ("bench-engine-clients-over-data", [*BASE["bench engine"], "--clients", "6000"]),
    ("bench-dp-batch-over-client", [*BASE["bench dp"], "--batch-size", "3000"]),
    (
        "bench-all-pairs-memory",
        [*BASE["bench all-pairs"], "--clients", "20000", "--batch-size", "1"],
    ),
    (
        "bench-all-pairs-reference-huge",
        [*BASE["bench all-pairs"], "--clients", "3000", "--reference"],
    ),
    ("bench-dp-memory", [*BASE["bench dp"], "--steps", "100000000", "--batch-size", "1"]),
    ("bench-dp-noise-overflow", [*BASE["bench dp"], "--noise", "1e30", "--max-grad-norm", "1e30"]),
    ("bench-bargaining-points-huge", [*BASE["bench bargaining"], "--points", "100000000000"]),
    (
        "bench-bargaining-baseline-over-points",
        [*BASE["bench bargaining"], "--baseline-points", "41"],
    ),
    (
        "bench-bargaining-reference-over-points",
        [*BASE["bench bargaining"], "--reference-points", "41"],
    ),
    (
        "bench-bargaining-reference-huge",
        ["bench", "bargaining", "--points", "10000000", "--reference-points", "2000000"],
    ),
    (
        "bench-pricing-repeated-scale-huge",
        [*BASE["bench pricing-repeated"], "--scale-runs", "10000000000"],
    ),
    (
        "bench-pricing-repeated-loop-huge",
        [*BASE["bench pricing-repeated"], "--baseline-rounds", "100000000"],
    ),
    ("bench-privacy-clients-huge", [*BASE["bench privacy"], "--clients", "10000000"]),
    (
        "bench-privacy-existence-huge",
        [*BASE["bench privacy"], "--existence-clients", "1000000000000"],
    ),
    ("bench-privacy-draws-huge", [*BASE["bench privacy"], "--draws", "100000"]),
    ("privacy-no-action", ["privacy"]),
    (
        "privacy-exists-n-fraction",
        ["privacy", "exists", "--model", "dp-sgd", "--lam", "1", "2", "--n", "1.5", "3"],
    ),
    (
        "privacy-exists-n-count",
        ["privacy", "exists", "--model", "dp-mean", "--lam", "1", "2", "--n", "5", "6", "7"],
    ),
    (
        "privacy-exists-model-and-curve",
        ["privacy", "exists", "--model", "dp-mean", "--curve", "@FILE", "--lam", "1"],
    ),
    (
        "privacy-optimal-nu-count",
        ["privacy", "optimal", "--model", "dp-mean", "--lam", "1", "2", "--nu", "1"],
    ),
    (
        "privacy-account-noise-and-epsilon",
        ["privacy", "account", "--noise", "1", "--epsilon", "1", "--steps", "1", "--delta", "1e-5"],
    ),
    (
        "privacy-account-fixed-no-size",
        [
            "privacy",
            "account",
            "--noise",
            "1",
            "--steps",
            "1",
            "--delta",
            "1e-5",
            "--sampling",
            "fixed",
            "--sampling-rate",
            "0.1",
            "--accountant",
            "rdp",
        ],
    ),
    (
        "privacy-account-epsilon-negative",
        ["privacy", "account", "--epsilon", "-1", "--steps", "1", "--delta", "1e-5"],
    ),
    ("privacy-figure1-out-file", ["privacy", "figure1", "--out", "@FILE", "--repetitions", "5"]),
    *[
        (
            f"privacy-account-epsilon-{bad}",
            ["privacy", "account", "--epsilon", bad, "--steps", "1", "--delta", "1e-5"],
        )
        for bad in ("nan", "inf", "1e400", "0", "1/0")
    ],
    # the PLD grid: 10^8 points at its widest interval (noise 0.001; the root of epsilon 1e6;
    # 10^9 subsampled steps): refused before dp-accounting allocates
    (
        "privacy-account-pld-grid-noise",
        [*BASE["privacy account"][:2], "--noise", "0.001", "--steps", "1", "--delta", "0.5"],
    ),
    (
        "privacy-account-pld-grid-epsilon",
        ["privacy", "account", "--epsilon", "1e6", "--steps", "1", "--delta", "1e-5"],
    ),
    (
        "privacy-account-pld-grid-steps",
        [
            *BASE["privacy account"][:2],
            "--noise",
            "0.5",
            "--steps",
            "1000000000",
            "--sampling-rate",
            "0.5",
            "--delta",
            "1e-5",
        ],
    ),
    (
        "privacy-account-rdp-noise-underflow",
        [*BASE["privacy account"], "--noise", "1e-200", "--accountant", "rdp"],
    ),
    ("privacy-account-dataset-size-poisson", [*BASE["privacy account"], "--dataset-size", "100"]),
    (
        "privacy-account-fixed-at-rate-1",
        [
            *BASE["privacy account"],
            "--sampling",
            "fixed",
            "--dataset-size",
            "100",
            "--accountant",
            "rdp",
        ],
    ),
    (
        "privacy-exists-bound-underflow",
        ["privacy", "exists", "--model", "dp-mean", "--lam", "0", "0", "--bound", "1e-300"],
    ),
    (
        "privacy-exists-sgd-lam-overflow",
        ["privacy", "exists", "--model", "dp-sgd", "--lam", "1e308", "1", "--bound", "1e-150"],
    ),
    (
        "privacy-exists-sgd-y0-overflow",
        [
            "privacy",
            "exists",
            "--model",
            "dp-sgd",
            "--lam",
            "1",
            "2",
            "--L",
            "1e300",
            "--diam",
            "1e300",
        ],
    ),
    ("privacy-exists-integer-rounds-dp-mean", [*BASE["privacy exists"], "--integer-rounds"]),
    (
        "privacy-optimal-lam-overflow",
        ["privacy", "optimal", "--model", "dp-mean", "--lam", "1e308", "1e308", "--n", "1"],
    ),
    (
        "privacy-optimal-nu-accuracy",
        [*BASE["privacy optimal"], "--objective", "accuracy", "--nu", "1", "1"],
    ),
    (
        "privacy-figure1-repetitions-memory",
        ["privacy", "figure1", "--out", "fig", "--repetitions", "10000000000000"],
    ),
    ("privacy-curve-batch-over-data", [*BASE["privacy curve"], "--batch-size", "1000000000"]),
    ("privacy-curve-batch-over-client", [*BASE["privacy curve"], "--batch-size", "899"]),
    ("privacy-curve-clients-over-data", [*BASE["privacy curve"], "--clients", "5000"]),
    ("privacy-curve-seeds-run-length", [*BASE["privacy curve"], "--seeds", "1000000000000"]),
    ("privacy-curve-rounds-run-length", [*BASE["privacy curve"], "--rounds", "1000000000"]),
    ("privacy-curve-local-steps-memory", [*BASE["privacy curve"], "--local-steps", "100000000"]),
    ("privacy-curve-out-file", [*BASE["privacy curve"], "--out", "@FILE"]),
    ("privacy-curve-device-banana", [*BASE["privacy curve"], "--device", "banana"]),
    (
        "pricing-theta-order",
        ["pricing", "equilibrium", "--alpha", "1/2", "--theta-low", "15", "--theta-high", "5"],
    ),
    (
        "pricing-repeated-huge",
        ["pricing", "repeated", "--rounds", "100000000000", "--seeds", "100000"],
    ),
    ("pricing-repeated-huge-exp", ["pricing", "repeated", "--rounds", "1e11", "--seeds", "1e5"]),
    ("pricing-repeated-plays", ["pricing", "repeated", "--rounds", "1000000", "--seeds", "10000"]),
    (
        "pricing-repeated-policy-regret-memory",
        ["pricing", "repeated", "--rounds", "10000000", "--seeds", "100", "--policy-regret"],
    ),
    (
        "pricing-figures-memory",
        ["pricing", "figures", "--out", "figs", "--rounds", "100000000", "--seeds", "10"],
    ),
    (
        "pricing-repeated-bias-count",
        ["pricing", "repeated", "--rounds", "100", "--seeds", "1", "--bias", "nan"],
    ),
    ("pricing-repeated-out-file", [*BASE["pricing repeated"], "--out", "@FILE"]),
    ("pricing-figures-out-file", ["pricing", "figures", "--out", "@FILE", "--rounds", "100"]),
    ("duopoly-missing-qh", ["duopoly", "--ql", "0.3"]),
    ("bargain-qh0-above-qmax", ["bargain", "--ql0", "0.3", "--qh0", "0.9", "--qmax", "0.8"]),
    ("bargain-ql0-above-qh0", ["bargain", "--ql0", "0.9", "--qh0", "0.3"]),
    ("train-dp-delta-without-noise", [*BASE["train"], "--dp-delta", "0"]),
    ("train-dp-clip-without-noise", [*BASE["train"], "--dp-max-grad-norm", "2"]),
    ("train-checkpoint-every-without-checkpoint", [*BASE["train"], "--checkpoint-every", "3"]),
    ("train-data-dir-embedded", [*BASE["train"], "--data-dir", "."]),
    ("train-batch-over-every-client", [*BASE["train"], "--batch-size", "5000"]),
    ("train-rounds-huge", [*BASE["train"], "--rounds", "1000000000000"]),
    ("train-local-steps-huge", [*BASE["train"], "--local-steps", "1000000000000"]),
    ("train-batch-huge", [*BASE["train"], "--batch-size", "1000000000000"]),
    ("train-indices-over-memory", [*BASE["train"], "--local-steps", "1000000000"]),
    ("train-clients-huge", [*BASE["train"], "--clients", "1000000000000"]),
    ("defection-free-target-over-data", [*BASE["defection-free"], "--target-per-class", "10000"]),
    ("defection-free-size-over-data", [*BASE["defection-free"], "--size", "100000"]),
    ("demo-target-over-data", ["demo", "--rounds", "1", "--target-per-class", "10000"]),
    ("demo-size-over-data", ["demo", "--rounds", "1", "--size", "100000"]),
    ("market-from-name-too-long", ["market", "--from", "x" * 300]),
    ("ipfl-compare-lr", [*BASE["ipfl"], "--compare", "--lr", "0.1"]),
    ("ipfl-compare-out", [*BASE["ipfl"], "--compare", "--out", "out"]),
    ("ipfl-compare-checkpoint", [*BASE["ipfl"], "--compare", "--checkpoint", "ck"]),
    ("ipfl-compare-code-compat", [*BASE["ipfl"], "--compare", "--code-compat"]),
    ("ipfl-th-bid-no-incentive", [*BASE["ipfl"], "--no-incentive", "--th-bid", "0.5"]),
    ("ipfl-th-bid-code-compat", [*BASE["ipfl"], "--code-compat", "--th-bid", "0.5"]),
    ("ipfl-data-dir-embedded", [*BASE["ipfl"], "--data-dir", "."]),
    ("ipfl-rounds-huge", [*BASE["ipfl"], "--rounds", "1000000000000"]),
    ("ipfl-local-steps-huge", [*BASE["ipfl"], "--local-steps", "1000000000000"]),
    ("ipfl-compare-huge", [*BASE["ipfl"], "--compare", "--rounds", "1000000000"]),
    ("cobo-lr-paper-with-grid", [*BASE["cobo"], "--lr", "paper", "--lr-grid", "0.1"]),
    (
        "cobo-schedule-without-cobo",
        ["cobo", "--rounds", "2", "--methods", "local", "--schedule", "time"],
    ),
    (
        "cobo-momentum-without-method",
        ["cobo", "--rounds", "2", "--methods", "fc", "--momentum", "code"],
    ),
    ("cobo-workers-one-method", ["cobo", "--rounds", "2", "--methods", "local", "--workers", "2"]),
    ("cobo-rounds-huge", [*BASE["cobo"], "--rounds", "1000000000000"]),
    ("cobo-seeds-huge", [*BASE["cobo"], "--seeds", "1000000000000"]),
    (
        "df-figures-with-scheme",
        [*BASE["defection-free"], "--figures", "--out", "f", "--scheme", "complete"],
    ),
    ("df-train-alone-not-one-sided", [*BASE["defection-free"], "--train-alone"]),
    (
        "df-gating-without-rule",
        [*BASE["defection-free"], "--scheme", "complete", "--gating", "code"],
    ),
    (
        "df-inner-without-rule",
        [*BASE["defection-free"], "--scheme", "one-sided-low", "--inner", "while"],
    ),
    ("df-data-dir-embedded", [*BASE["defection-free"], "--data-dir", "."]),
    ("df-batch-over-size", [*BASE["defection-free"], "--batch-size", "1000"]),
    ("df-rounds-huge", [*BASE["defection-free"], "--rounds", "1000000000000"]),
    ("df-init-epochs-huge", [*BASE["defection-free"], "--init-epochs-high", "1000000000000"]),
    ("demo-rounds-huge", [*BASE["demo"], "--rounds", "1000000000000"]),
    ("demo-size-below-batch", [*BASE["demo"], "--size", "10"]),
    ("train-huge-weight-decay", [*BASE["train"], "--weight-decay", "1e300"]),
    ("train-checkpoint-every-no-checkpoint", [*BASE["train"], "--checkpoint-every", "0"]),
    ("reproduce-seeds-0", ["reproduce", "--out", "rep", "--seeds", "0"]),
    ("reproduce-seeds-abc", ["reproduce", "--out", "rep", "--seeds", "abc"]),
    ("reproduce-unknown-only", ["reproduce", "--out", "rep", "--only", "nope"]),
    ("reproduce-bad-scale", ["reproduce", "--out", "rep", "--scale", "huge"]),
    ("reproduce-out-file", ["reproduce", "--out", "@FILE"]),
    ("reproduce-out-empty", ["reproduce", "--out", ""]),  # not the working directory
    ("reproduce-out-blank", ["reproduce", "--out", " "]),
    (
        "reproduce-data-dir-empty",
        ["reproduce", "--out", "rep", "--only", "table1", "--data-dir", ""],
    ),
    (
        "reproduce-data-dir-missing",
        ["reproduce", "--out", "rep", "--only", "table1", "--data-dir", "missing"],
    ),
    (
        "reproduce-data-dir-file",
        ["reproduce", "--out", "rep", "--only", "table1", "--data-dir", "@FILE"],
    ),
    ("reproduce-data-dir-read-by-none", [*BASE["reproduce"], "--data-dir", "@DIR"]),
    ("reproduce-workers-one-reproduction", [*BASE["reproduce"], "--workers", "2"]),
    ("reproduce-experiments-and-out", ["reproduce", "--experiments", "--out", "rep"]),
    ("reproduce-experiments-and-only", ["reproduce", "--experiments", "--only", "pricing"]),
    ("reproduce-experiments-and-seeds", ["reproduce", "--experiments", "--seeds", "2"]),
    ("reproduce-experiments-and-scale", ["reproduce", "--experiments", "--scale", "paper"]),
    ("reproduce-experiments-and-workers", ["reproduce", "--experiments", "--workers", "2"]),
    ("reproduce-experiments-and-data-dir", ["reproduce", "--experiments", "--data-dir", "@DIR"]),
    ("table1-data-dir-empty", ["table1", "--data-dir", ""]),
    ("flower-action-unknown", ["flower", "nope"]),
    ("flower-algorithm-unknown", [*BASE["flower"], "--algorithm", "nope"]),
    ("flower-cpus-zero", [*BASE["flower"], "--cpus", "0"]),
    ("flower-out-file", [*BASE["flower"], "--out", "@FILE"]),
    ("flower-port-zero", [*BASE["flower"], "--port", "0"]),
    ("flower-port-above-65535", [*BASE["flower"], "--port", "70000"]),
    ("flower-port-word", [*BASE["flower"], "--port", "abc"]),
    ("flower-node-ports-above-65535", [*BASE["flower"], "--port", "65500"]),
    ("flower-deploy-port-zero", ["flower", "deploy", *BASE["flower"][2:], "--port", "0"]),
    ("flower-deploy-port-huge", ["flower", "deploy", *BASE["flower"][2:], "--port", "70000"]),
    ("flower-simulate-port", ["flower", "simulate", *BASE["flower"][2:], "--port", "9000"]),
    ("flower-simulate-insecure", ["flower", "simulate", *BASE["flower"][2:], "--insecure"]),
    ("flower-deploy-cpus", ["flower", "deploy", *BASE["flower"][2:], "--cpus", "2"]),
    ("flower-deploy-host", ["flower", "deploy", *BASE["flower"][2:], "--host", "10.0.0.1"]),
    ("flower-prepare-timeout", [*BASE["flower"], "--timeout", "60"]),
    ("flower-deploy-timeout-nan", ["flower", "deploy", *BASE["flower"][2:], "--timeout", "nan"]),
    ("flower-deploy-timeout-zero", ["flower", "deploy", *BASE["flower"][2:], "--timeout", "0"]),
    ("flower-host-wildcard", [*BASE["flower"], "--host", "0.0.0.0"]),
    ("flower-host-garbage", [*BASE["flower"], "--host", "no host!"]),
    ("flower-out-not-utf8", [*BASE["flower"], "--out", "flower-\udcff-run"]),
    ("flower-rounds-huge", [*BASE["flower"], "--rounds", "1000000000000"]),
    (
        "flower-ipfl-port-huge",
        ["flower", "deploy", "ipfl", *BASE["ipfl"][1:], "--port", "70000"],
    ),
    ("unknown-subcommand", ["nope"]),
    ("unknown-flag", ["duopoly", "--ql", "0.3", "--qh", "0.8", "--nope"]),
]

#: cases that fail today, with what happens: (id) -> reason
XFAIL: dict[str, str] = {}
#: refusals that need work first (a quality measured after pre-training): the command's
#: progress lines come before its one-line error
AFTER_WORK = {"df-q-max-below-quality"}


def _cases():
    cases = []
    for sub, flag, values in NUMERIC:
        for value in values:
            cases.append((f"{sub}:{flag}={value}", [*BASE[sub], flag, value], None))
    for sub, tail in FILE_FLAGS:
        for kind in BAD_FILES:
            if (sub, kind) in NOT_BAD:
                continue
            cases.append((f"{sub}:file-{kind}:{' '.join(tail)}", [*BASE[sub], *tail], kind))
    for name, argv in CONTRADICTIONS:
        cases.append((name, argv, None))
    params = []
    for case_id, argv, bad in cases:
        marks = []
        if case_id in XFAIL:
            marks = [pytest.mark.xfail(strict=True, reason=XFAIL[case_id])]
        params.append(pytest.param(argv, bad, id=case_id, marks=marks))
    return params


CASES = _cases()

CONFIG = """[train]
dataset = "digits"
model = "linear"
clients = 2
rounds = 1
local_steps = 1

[grid]
seed = [0]
"""


def _materialise(argv, bad, root: Path):
    """Put the files the row names under ``root`` (kept outside the checked directory)."""
    plain = root / "plain.txt"
    plain.write_text("a plain file\n")
    bad_path = root / "bad.file"
    if bad == "directory":
        bad_path.mkdir()
    elif bad is not None and BAD_FILES[bad] is not None:
        bad_path.write_bytes(BAD_FILES[bad])
    config = root / "config.toml"
    if argv[0] == "sweep" and bad is not None:
        config = bad_path
    else:
        config.write_text(CONFIG)
    corrupt = root / "corrupt"
    corrupt.mkdir()
    (corrupt / "mnist.npz").write_bytes(BAD_FILES["truncated"])
    swap = {
        "@FILE": str(bad_path if bad is not None else plain),
        "@config": str(config),
        "@DIR": str(root),
        "@corrupt-data": str(corrupt),
    }
    for name, grid in SWEEP_GRIDS.items():
        swap[f"@config:{name}"] = str(root / f"{name}.toml")
        (root / f"{name}.toml").write_text(_sweep_config(grid))
    return [swap.get(a, a) for a in argv]


@pytest.mark.parametrize(("argv", "bad"), CASES)
def test_bad_input_is_one_line_and_exit_2(argv, bad, tmp_path, monkeypatch, capsys, request):
    files = tmp_path / "files"
    work = tmp_path / "work"
    files.mkdir()
    work.mkdir()
    argv = _materialise(argv, bad, files)
    monkeypatch.chdir(work)
    monkeypatch.delenv("COLLABECON_DATA", raising=False)
    try:
        with cpu_guard(GUARD_CPU_S, HANG_S):
            try:
                code = main(argv)
            except SystemExit as stop:
                code = stop.code
    except TooSlow:
        pytest.fail(f"still working after {GUARD_CPU_S} s of CPU: not refused up front")
    err = capsys.readouterr().err
    assert "Traceback" not in err
    assert code == 2, f"exit {code}: {err!r}"
    if request.node.callspec.id in AFTER_WORK:
        *progress, err = err.split("\n")[:-1]
        drawn = [part for line in progress for part in line.split("\r") if part.strip()]
        assert drawn and all(PROGRESS.match(part) for part in drawn), progress
        err += "\n"
    assert err.count("\n") == 1 and err.endswith("\n"), err
    assert err.startswith("collabecon"), err  # nothing (a progress bar) before the message
    left = [str(p.relative_to(work)) for p in work.rglob("*")]
    assert not left, f"files left behind: {left}"


def test_a_diverging_curve_run_stops_naming_the_round_and_the_learning_rate(
    tmp_path, monkeypatch, capsys
):
    # privacy curve reports each run as it starts, so the error is the last of two lines
    monkeypatch.chdir(tmp_path)
    assert main([*BASE["privacy curve"], "--lr", "1e37"]) == 2
    err = capsys.readouterr().err
    last = err.splitlines()[-1]
    assert "Traceback" not in err
    assert "diverged at round 1" in last and "learning rate 1e+37 (--lr)" in last
    assert not list(tmp_path.iterdir())


@pytest.mark.parametrize(
    ("argv", "reason"),
    [
        ([*BASE["train"], "--lr", "1e37"], "training diverged at round 1: the "),
        ([*BASE["ipfl"], "--lr", "1e37"], "training diverged at round 1: the "),
        ([*BASE["defection-free"], "--lr", "1e37"], "the minibatch loss of the high firm is"),
    ],
    ids=["train", "ipfl", "defection-free"],
)
def test_a_diverging_run_is_reported_failed_and_exits_1(
    argv, reason, tmp_path, monkeypatch, capsys
):
    monkeypatch.chdir(tmp_path)
    assert main([*argv, "--json"]) == 1
    captured = capsys.readouterr()
    out = json.loads(captured.out)
    assert out["status"] == "failed" and reason in out["failed"], out["failed"]
    assert "learning rate 1e+37 (--lr)" in out["failed"] and captured.err == ""


def test_a_pre_training_that_leaves_no_high_firm_is_a_failed_run(tmp_path, monkeypatch, capsys):
    # at --lr 1 the high firm's 30 epochs alone end at the uniform guess, where the low firm is
    monkeypatch.chdir(tmp_path)
    argv = [*BASE["defection-free"], "--lr", "1", "--quality", "accuracy", "--json"]
    assert main(argv) == 1
    out = json.loads(capsys.readouterr().out)
    assert out["status"] == "failed" and "needs q_l0 < q_h0" in out["failed"]
    assert out["start"]["high"] <= out["start"]["low"]


def test_a_diverging_cobo_run_names_the_grid_and_exits_1(tmp_path, monkeypatch, capsys):
    import collabecon.reproductions.cobo as experiment
    from learning.loop import DivergedError, Divergence

    found = Divergence(3, "the test loss of client 2", float("inf"), 2e4, 10.0)

    def train(*args, **kwargs):
        raise DivergedError(found)

    monkeypatch.setattr(experiment, "_federation", lambda setting, seed, device: None)
    monkeypatch.setattr(experiment, "_train", train)
    monkeypatch.chdir(tmp_path)
    assert main([*BASE["cobo"], "--lr-grid", "10"]) == 1
    last = capsys.readouterr().out.splitlines()[-1]
    assert last == (
        "FAILED: training diverged at round 3: the test loss of client 2 is inf with learning "
        "rate 10 (--lr-grid); try a smaller learning rate"
    )


def test_the_table_covers_every_subcommand_and_350_inputs():
    named = {argv[0] for argv, _ in (p.values for p in CASES)}
    assert set(COMMANDS) <= named
    assert len(CASES) >= 350


@pytest.mark.parametrize(
    ("argv", "named", "keyword"),
    [
        (["duopoly", "--ql", "0.8", "--qh", "0.3"], "pass --order", "order=True"),
        (["duopoly", "--ql", "0.8", "--qh", "0.3"], "--ql must not exceed --qh", "q_l "),
        (["bargain", "--ql0", "0.3", "--qh0", "0.9", "--qmax", "0.8"], "--qh0", "q_max"),
        (["pricing", "repeated", "--eta", "-1"], "--eta must", "eta must"),
        ([*BASE["ipfl"], "--clients", "0"], "--clients must", "clients must"),
        ([*BASE["train"], "--clients-per-round", "9"], "--clients-per-round", "clients_per"),
        (
            [*BASE["privacy account"], "--sampling", "fixed", "--sampling-rate", "0.1"],
            "--dataset-size",
            "dataset_size",
        ),
    ],
)
def test_messages_name_the_flag_not_the_keyword(
    argv, named, keyword, tmp_path, monkeypatch, capsys
):
    monkeypatch.chdir(tmp_path)
    assert main(argv) == 2
    err = capsys.readouterr().err
    assert named.lower() in err.lower() and keyword not in err.replace(f"-{keyword}", ""), err
