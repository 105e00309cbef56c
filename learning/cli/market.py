"""``collabecon market``: the market that a set of model qualities creates.

Input: ``--qualities 0.2 0.5 0.9`` (one market), or ``--from FILE`` with one round per row:
a CSV with a column per firm (an optional ``t`` column is ignored; a history CSV of
``collabecon defection-free --out`` is read by its ``q_l`` and ``q_h``), a JSON list of
``{name: quality}`` objects or of ``ModelQualities`` dicts (``{"names", "quality", ...}``),
or the JSON that ``collabecon defection-free --out`` writes (its ``rounds`` with ``q_l`` and
``q_h``). Output: equilibrium prices, shares, revenues, consumer surplus and welfare each
round (econ.market); ``--consumers N`` adds a sampled-population check of the last round.
"""

from __future__ import annotations

import argparse
import csv
import json
from pathlib import Path
from typing import Any

import numpy as np

from econ.market import market_history, sampled_market
from econ.qualities import ModelQualities
from learning.cli._lists import float_list, str_list
from learning.cli._output import table


def add_arguments(parser: argparse.ArgumentParser) -> None:
    source = parser.add_mutually_exclusive_group(required=True)
    float_list(source, "--qualities", help="one quality per firm (words or commas)")
    source.add_argument("--from", dest="path", help="CSV or JSON of qualities per round")
    str_list(
        parser, "--names", distinct=True, default=None, help="distinct firm names (--qualities)"
    )
    parser.add_argument(
        "--consumers", type=int, default=0, help="also sample this many consumers (last round)"
    )
    parser.add_argument("--seed", type=int, default=0, help="seed of the sampled consumers")


def _from_json(data: Any) -> list[ModelQualities]:
    if isinstance(data, dict) and "rounds" in data:
        data = [{"low": r["q_l"], "high": r["q_h"]} for r in data["rounds"]]
    if not isinstance(data, list) or not data:
        raise ValueError("a JSON input must be a non-empty list of rounds, or have 'rounds'")
    out = []
    for r in data:
        if isinstance(r, dict) and "names" in r and "quality" in r:
            out.append(
                ModelQualities(
                    names=tuple(r["names"]),
                    quality=np.asarray(r["quality"], dtype=np.float64),
                    metric=r.get("metric", "accuracy"),
                    n_eval=np.asarray(r.get("n_eval", 1), dtype=np.int64),
                )
            )
        elif isinstance(r, dict):
            out.append(ModelQualities.from_mapping({str(k): float(v) for k, v in r.items()}))
        else:
            raise ValueError(f"each round must be an object, got {r!r}")
    return out


def _from_csv(path: Path) -> list[ModelQualities]:
    with path.open(newline="") as fh:
        rows = list(csv.DictReader(fh))
    if not rows:
        raise ValueError(f"{path} has no rows")
    if {"q_l", "q_h"} <= set(rows[0]):  # a history written by `collabecon defection-free`
        return [
            ModelQualities.from_mapping({"low": float(r["q_l"]), "high": float(r["q_h"])})
            for r in rows
        ]
    return [
        ModelQualities.from_mapping({k: float(v) for k, v in r.items() if k != "t"}) for r in rows
    ]


def load_rounds(path: str) -> list[ModelQualities]:
    """Per-round qualities from a CSV or JSON file (module docstring)."""
    p = Path(path)
    if not p.is_file():
        raise ValueError(f"--from: no such file {path!r}")
    if p.suffix.lower() == ".csv":
        return _from_csv(p)
    return _from_json(json.loads(p.read_text()))


def run(args: argparse.Namespace) -> dict[str, Any]:
    if args.qualities is not None:
        names = args.names or [f"firm{i}" for i in range(len(args.qualities))]
        if len(names) != len(args.qualities):
            raise ValueError("--names must give one name per quality")
        rounds = [ModelQualities.from_mapping(dict(zip(names, args.qualities, strict=True)))]
    else:
        rounds = load_rounds(args.path)
    history = market_history(rounds)
    result: dict[str, Any] = history.to_dict()
    if args.consumers:
        sampled = sampled_market(rounds[-1], args.consumers, args.seed)
        result["sampled_last_round"] = {
            **sampled.to_dict(),
            "n_consumers": args.consumers,
            "max_share_error": float(np.max(np.abs(sampled.share - history.share[-1]))),
        }
    return result


def render(result: dict[str, Any]) -> str:
    names = result["names"]
    header = [
        "t",
        *(f"q_{n}" for n in names),
        *(f"p_{n}" for n in names),
        *(f"share_{n}" for n in names),
        *(f"U_{n}" for n in names),
        "CS",
        "welfare",
    ]
    rows = [
        [
            r["t"],
            *(r[f"{f}_{n}"] for f in ("quality", "price", "share", "revenue") for n in names),
            r["consumer_surplus"],
            r["welfare"],
        ]
        for r in result["rounds"]
    ]
    text = table(rows, header)
    if "sampled_last_round" in result:
        s = result["sampled_last_round"]
        text += (
            f"\nsampled {s['n_consumers']} consumers (last round): shares {s['share']}, "
            f"largest share error {s['max_share_error']:.2g}"
        )
    return text
