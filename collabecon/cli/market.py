"""``collabecon market``: the market that a set of model qualities creates.

Input: ``--qualities 0.2 0.5 0.9`` (one market; ``--names`` names the firms, distinct), or
``--from FILE`` with the qualities of one round per row. The files the toolkit writes are
read as they are:

* a CSV history of ``collabecon defection-free --out`` (columns ``q_l`` and ``q_h``: firms
  ``low`` and ``high``), or any CSV with one ``q_<firm>`` or ``quality_<firm>`` column per
  firm (other columns, such as ``t``, are ignored);
* the JSON of ``collabecon defection-free`` (``--json`` or ``--out``: its ``rounds`` with
  ``q_l`` and ``q_h``); the JSON of ``collabecon market --json`` (its ``rounds`` with
  ``quality_<firm>``); the JSON of ``collabecon train --json`` with a common target set
  (``--target-fraction > 0``: its ``target_accuracy``, firms ``client0, client1, ...``);
  ``ipfl_result.json`` of ``collabecon ipfl --out`` (its ``personalised_accuracy``);
* a JSON ``ModelQualities`` dict (``{"names", "quality", ...}``), or a list of rounds, each
  such a dict or a ``{name: quality}`` object.

A file in none of these layouts is refused with the columns or keys it lacks. Output:
equilibrium prices, shares, revenues, consumer surplus and welfare each round
(:func:`econ.market.market_history`, any qualities in [0, 1]: tied models price at 0,
models below a tie or of quality 0 sell nothing); ``--consumers N`` adds a
sampled-population check of the last round.
"""

from __future__ import annotations

import argparse
import csv
import json
from pathlib import Path
from typing import Any

import numpy as np

from collabecon.cli._lists import float_list, str_list
from collabecon.cli._output import table
from econ.market import market_history, sampled_market
from econ.qualities import ModelQualities

#: Column prefixes of a CSV that name a firm's quality.
_PREFIXES = ("quality_", "q_")
#: The defection-free history's columns and the firms they name.
_DUOPOLY = {"q_l": "low", "q_h": "high"}


def add_arguments(parser: argparse.ArgumentParser) -> None:
    """Declare the flags of ``collabecon market``.

    One of ``--qualities`` (one market) and ``--from FILE`` (one market per round, the
    layouts of the module docstring) is required; ``--names`` names the firms of
    ``--qualities``; ``--consumers`` and ``--seed`` add a sampled population.

    Parameters
    ----------
    parser : argparse.ArgumentParser
        The subcommand's parser (``--json`` is declared on it already).
    """
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


def _number(value: Any, where: str) -> float:
    try:
        return float(value)
    except (TypeError, ValueError):
        raise ValueError(f"--from: {where} must be a number, got {value!r}") from None


def _one_round(names: list[str], quality: list[float], where: str) -> ModelQualities:
    if len(set(names)) != len(names):
        duplicates = sorted({n for n in names if names.count(n) > 1})
        raise ValueError(f"--from: {where} names a firm twice: {', '.join(duplicates)}")
    return ModelQualities(
        names=tuple(names),
        quality=np.array(quality, dtype=np.float64),
        metric="accuracy",
        n_eval=np.ones(len(names), dtype=np.int64),
    )


def _quality_keys(keys: list[str], what: str) -> dict[str, str]:
    """``{key: firm}`` for the keys that hold a firm's quality (module docstring)."""
    if "q_l" in keys or "q_h" in keys:
        missing = [k for k in _DUOPOLY if k not in keys]
        if missing:
            raise ValueError(
                f"--from: {what} is a defection-free history without all of q_l and q_h; "
                f"missing {', '.join(missing)}"
            )
        return dict(_DUOPOLY)
    out = {}
    for key in keys:
        for prefix in _PREFIXES:
            if key.startswith(prefix) and len(key) > len(prefix):
                out[key] = key[len(prefix) :]
                break
    return out


def _rows_to_rounds(rows: list[dict[str, Any]], keys: list[str], what: str) -> list[ModelQualities]:
    columns = _quality_keys(keys, what)
    if not columns:
        raise ValueError(
            f"--from: {what} lacks the quality columns: q_l and q_h (a defection-free "
            f"history) or one q_<firm> or quality_<firm> column per firm; it has "
            f"{', '.join(keys) or 'none'}"
        )
    names = list(columns.values())
    rounds = []
    for t, row in enumerate(rows):
        missing = [k for k in columns if k not in row or row[k] in ("", None)]
        if missing:
            raise ValueError(f"--from: {what}, round {t} lacks {', '.join(missing)}")
        values = [_number(row[k], f"{what}, round {t}, {k}") for k in columns]
        rounds.append(_one_round(names, values, what))
    return rounds


def _from_csv(path: Path) -> list[ModelQualities]:
    with path.open(newline="") as fh:
        reader = csv.reader(fh)
        header = next(reader, None)
        rows = list(reader)
    if not header:
        raise ValueError(f"--from: {path} is empty")
    header = [h.strip() for h in header]
    twice = sorted({h for h in header if header.count(h) > 1})
    if twice:
        raise ValueError(f"--from: {path} has the column(s) {', '.join(twice)} more than once")
    if not rows:
        raise ValueError(f"--from: {path} has a header but no rows")
    records = [dict(zip(header, r, strict=False)) for r in rows if any(c.strip() for c in r)]
    return _rows_to_rounds(records, header, str(path))


def _accuracies(data: dict[str, Any], key: str, what: str) -> list[ModelQualities]:
    values = data[key]
    if not isinstance(values, list) or not values:
        raise ValueError(f"--from: {what}'s {key} must be a non-empty list, got {values!r}")
    names = [f"client{i}" for i in range(len(values))]
    return [_one_round(names, [_number(v, f"{what}, {key}") for v in values], what)]


def _model_qualities(r: dict[str, Any], what: str) -> ModelQualities:
    names = [str(n) for n in r["names"]]
    quality = r["quality"]
    if not isinstance(quality, list):
        quality = [quality]
    first = _one_round(names, [_number(v, f"{what}, quality") for v in quality], what)
    return ModelQualities(
        names=first.names,
        quality=first.quality,
        metric=str(r.get("metric", "accuracy")),
        n_eval=np.asarray(r.get("n_eval", 1), dtype=np.int64),
    )


def _from_json(data: Any, what: str) -> list[ModelQualities]:
    if isinstance(data, dict):
        if "rounds" in data and isinstance(data["rounds"], list) and data["rounds"]:
            rows = data["rounds"]
            if not all(isinstance(r, dict) for r in rows):
                raise ValueError(f"--from: {what}'s rounds must be objects")
            return _rows_to_rounds(rows, list(rows[0]), what)
        if "target_accuracy" in data:  # `collabecon train --json`
            return _accuracies(data, "target_accuracy", what)
        if "personalised_accuracy" in data:  # ipfl_result.json
            return _accuracies(data, "personalised_accuracy", what)
        if "names" in data and "quality" in data:
            return [_model_qualities(data, what)]
        hint = (
            " (a `collabecon train` run needs --target-fraction > 0 for a common target set)"
            if "accuracy" in data
            else ""
        )
        raise ValueError(
            f"--from: {what} lacks the keys of a run: rounds (defection-free, market), "
            f"target_accuracy (train), personalised_accuracy (ipfl) or names and quality; "
            f"it has {', '.join(map(str, data)) or 'none'}{hint}"
        )
    if not isinstance(data, list) or not data:
        raise ValueError(f"--from: {what} must hold a JSON object or a non-empty list of rounds")
    out = []
    for t, r in enumerate(data):
        if not isinstance(r, dict) or not r:
            raise ValueError(f"--from: {what}, round {t} must be a non-empty object, got {r!r}")
        if "names" in r and "quality" in r:
            out.append(_model_qualities(r, f"{what}, round {t}"))
        else:
            values = [_number(v, f"{what}, round {t}, {k}") for k, v in r.items()]
            out.append(_one_round([str(k) for k in r], values, f"{what}, round {t}"))
    return out


def load_rounds(path: str) -> list[ModelQualities]:
    """Per-round qualities from a CSV or JSON file (module docstring)."""
    p = Path(path)
    if not p.is_file():
        raise ValueError(f"--from: no such file {path!r}")
    if p.suffix.lower() == ".csv":
        return _from_csv(p)
    try:
        data = json.loads(p.read_text())
    except json.JSONDecodeError as exc:
        raise ValueError(f"--from: {path} is neither a .csv file nor JSON ({exc})") from None
    return _from_json(data, str(p))


def _given_rounds(args: argparse.Namespace) -> list[ModelQualities]:
    if args.qualities is None:
        if args.names is not None:
            raise ValueError("--names names the firms of --qualities; --from files name theirs")
        return load_rounds(args.path)
    names = args.names or [f"firm{i}" for i in range(len(args.qualities))]
    if len(names) != len(args.qualities):
        raise ValueError(
            f"--names must give one name per quality ({len(args.qualities)}), got {len(names)}"
        )
    if len(set(names)) != len(names):
        duplicates = sorted({n for n in names if names.count(n) > 1})
        raise ValueError(f"--names must be distinct, got {', '.join(duplicates)} more than once")
    q = np.asarray(args.qualities, dtype=np.float64)
    bad = q[~((q >= 0.0) & (q <= 1.0))]
    if bad.size:
        raise ValueError(f"--qualities must lie in [0, 1], got {bad[0]!r}")
    n_eval = np.ones(q.size, dtype=np.int64)
    return [ModelQualities(names=tuple(names), quality=q, metric="accuracy", n_eval=n_eval)]


def run(args: argparse.Namespace) -> dict[str, Any]:
    """The market of every round of the given qualities (:func:`econ.market.market_history`).

    Parameters
    ----------
    args : argparse.Namespace
        The flags of :func:`add_arguments`.

    Returns
    -------
    dict
        ``names`` (the firms) and ``rounds``, one record per round: ``t``, then
        ``quality_<firm>``, ``price_<firm>``, ``share_<firm>``, ``revenue_<firm>`` for every
        firm, ``consumer_surplus`` and ``welfare``. With ``--consumers N``,
        ``sampled_last_round``: the last round acted out by N sampled consumers
        (:func:`econ.market.sampled_market`: ``names``, ``quality``, ``price``, ``share``,
        ``revenue``, ``consumer_surplus``, ``welfare``), ``n_consumers`` and
        ``max_share_error`` against the closed form. The command exits with 0.

    Raises
    ------
    ValueError
        A negative ``--consumers`` or ``--seed``, a quality outside [0, 1], names that do not
        match the qualities, a ``--from`` file in none of the layouts, or a sample that
        would not fit in memory; the command exits with code 2.

    References
    ----------
    Werner (2024), ch. 3, §3.2, Definition 2 and Lemmas 21-23, in each round.
    """
    if args.consumers < 0:
        raise ValueError(f"--consumers must be >= 0, got {args.consumers}")
    if args.seed < 0:
        raise ValueError(f"--seed must be an integer >= 0, got {args.seed}")
    rounds = _given_rounds(args)
    if args.consumers:
        from collabecon.cli._checks import fits_in_memory

        # per consumer: a type, a utility and a tie-break draw per firm, a choice (float64)
        firms = max(r.quality.size for r in rounds)
        fits_in_memory(f"--consumers {args.consumers}", 8.0 * args.consumers * (3 * firms + 4))
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


def _sampled_line(result: dict[str, Any]) -> str:
    if "sampled_last_round" not in result:
        return ""
    s = result["sampled_last_round"]
    return (
        f"\nsampled {s['n_consumers']} consumers (last round): largest share error "
        f"{s['max_share_error']:.2g}"
    )


def render(result: dict[str, Any]) -> str:
    """The human table of :func:`run`'s result.

    One market is a row per firm (quality, price, share, revenue) with the consumer surplus
    and welfare below; several rounds are a row per round. The sampled population's largest
    share error follows when there is one.
    """
    names = result["names"]
    fields = ("quality", "price", "share", "revenue")
    if len(result["rounds"]) == 1:  # one market: a row per firm
        r = result["rounds"][0]
        rows = [[n, *(r[f"{f}_{n}"] for f in fields)] for n in names]
        text = table(rows, ["firm", *fields])
        text += f"\nconsumer surplus {r['consumer_surplus']:.6g}, welfare {r['welfare']:.6g}"
        return text + _sampled_line(result)
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
            *(r[f"{f}_{n}"] for f in fields for n in names),
            r["consumer_surplus"],
            r["welfare"],
        ]
        for r in result["rounds"]
    ]
    return table(rows, header) + _sampled_line(result)
