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
* a JSON ``ModelQualities`` dict (``{"names", "quality", ...}``, with ``low``, ``high`` and
  ``confidence`` when it carries intervals), or a list of rounds, each such a dict or a
  ``{name: quality}`` object;
* a CSV of predictions on a common target set, one market: a ``party`` column (its name), a
  ``label`` column (the true class index of the example) and either a ``prediction`` column
  (the predicted class index) or the class probabilities ``p0, p1, ..., p<C-1>`` (each row
  summing to 1), one row per party and example; other columns (an example id) are ignored.
  Every party lists the same examples in the same order, so their labels agree row by row.
  The qualities, their counts and confidence intervals are those of
  :func:`econ.qualities.qualities_from_predictions`: ``--metric`` (``accuracy``, or
  ``1-loss`` from probabilities) and ``--confidence`` (0.95) apply to such a file only. For
  example::

      party,label,prediction
      logistic,3,3
      logistic,7,1
      tree,3,3
      tree,7,7

A file in none of these layouts is refused with the columns or keys it lacks. Files are read
strictly, and a refusal names the file and the field: JSON with a repeated key (a firm twice),
``NaN``, ``Infinity`` or nesting deeper than :data:`econ.validation.JSON_MAX_DEPTH`
(:func:`econ.validation.read_json`), a CSV row with more or fewer cells than its header, a
quality that is not a number in [0, 1] (a JSON ``true`` is no quality), names that are not
distinct non-empty strings, and a ``metric`` other than those of
:data:`econ.qualities.METRICS` (``accuracy``, ``1-loss``): a raw loss is no quality, and the
file does not hold the baseline loss that ``1-loss`` divides by (``learning/qualities.py``).
A file whose parsed contents or market would not fit in memory is refused before it is
read. Output:
equilibrium prices, shares, revenues, consumer surplus and welfare each round
(:func:`econ.market.market_history`, any qualities in [0, 1]: tied models price at 0,
models below a tie or of quality 0 sell nothing), with each party's count of target
examples and confidence interval when the input has them; ``--consumers N`` adds a
sampled-population check of the last round.

``--population SPEC`` (with ``--qualities``) draws the consumer types from ``uniform``,
``beta:a,b``, ``lognorm:s[,scale]`` or ``truncnorm:mu,sigma[,high]`` instead of
:math:`U[0, 1]` (:func:`econ.population_market.population_equilibrium`) and adds how the prices were
found and their best-response certificate; ``--consumers N`` then draws N consumers from that
population.
"""

from __future__ import annotations

import argparse
import csv
import json
import re
from collections import Counter
from pathlib import Path
from typing import Any

import numpy as np

from collabecon.cli._checks import fits_in_memory
from collabecon.cli._lists import float_list, str_list
from collabecon.cli._output import table
from econ.market import market_history, sampled_market
from econ.outputs import plain
from econ.population import parse_population
from econ.population_market import population_demands, population_equilibrium
from econ.qualities import METRICS, ModelQualities, qualities_from_predictions
from econ.validation import file_fits_in_memory, read_json

#: Column prefixes of a CSV that name a firm's quality.
_PREFIXES = ("quality_", "q_")
#: The defection-free history's columns and the firms they name.
_DUOPOLY = {"q_l": "low", "q_h": "high"}
#: Bytes per round and firm of a market history and its output, an upper estimate.
_CELL_BYTES = 640
#: The columns that make a CSV a file of predictions (module docstring).
_PREDICTION_KEYS = ("party", "label")
#: The help text of ``--from``: the layouts it reads, in short.
_FROM_HELP = (
    "CSV or JSON of qualities per round (a q_<firm> column per firm, a run's JSON), or a CSV "
    "of predictions on a common target set: columns party, label and prediction (a class "
    "index) or p0, p1, ... (class probabilities), one row per party and example"
)


def add_arguments(parser: argparse.ArgumentParser) -> None:
    """Declare the flags of ``collabecon market``.

    One of ``--qualities`` (one market) and ``--from FILE`` (one market per round, the
    layouts of the module docstring) is required; ``--names`` names the firms of
    ``--qualities``; ``--metric`` and ``--confidence`` score a predictions file;
    ``--consumers`` and ``--seed`` add a sampled population; ``--population`` draws the
    consumer types from another population.

    Parameters
    ----------
    parser : argparse.ArgumentParser
        The subcommand's parser (``--json`` is declared on it already).
    """
    source = parser.add_mutually_exclusive_group(required=True)
    float_list(source, "--qualities", help="one quality per firm (words or commas)")
    source.add_argument("--from", dest="path", help=_FROM_HELP)
    str_list(
        parser, "--names", distinct=True, default=None, help="distinct firm names (--qualities)"
    )
    parser.add_argument(
        "--metric",
        choices=METRICS,
        default=None,
        help="what a predictions file's qualities measure (accuracy)",
    )
    parser.add_argument(
        "--confidence",
        type=float,
        default=None,
        help="level of a predictions file's confidence intervals, in (0, 1) (0.95)",
    )
    parser.add_argument(
        "--consumers", type=int, default=0, help="also sample this many consumers (last round)"
    )
    parser.add_argument(
        "--seed", type=int, default=None, help="seed of the sampled consumers (0; --consumers)"
    )
    parser.add_argument(
        "--population",
        default=None,
        help="consumer types (--qualities): uniform, beta:a,b, lognorm:s[,scale] or "
        "truncnorm:mu,sigma[,high]; prints the equilibrium and its best-response certificate",
    )


def _shown(value: Any) -> str:
    """A value for a message: its JSON text, clipped to one short line."""
    text = json.dumps(value) if not isinstance(value, str) else repr(value)
    return text if len(text) <= 40 else text[:37] + "..."


def _kind(value: Any) -> str:
    """What a JSON value is, for a message: ``a boolean true``, ``an array [0.5]``."""
    kinds = {bool: "a boolean", str: "a string", list: "an array", dict: "an object"}
    if value is None:
        return "null"
    return f"{kinds.get(type(value), 'a number')} {_shown(value)}"


def _quality(value: Any, where: str) -> float:
    """A quality from a JSON value: a number (not a boolean) in [0, 1]."""
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        raise ValueError(
            f"--from: {where} must be a number in [0, 1] (a quality), got {_kind(value)}"
        )
    if not 0 <= value <= 1:  # compared before float(): an integer may have hundreds of digits
        raise ValueError(f"--from: {where} must be a quality in [0, 1], got {_shown(value)}")
    return float(value)


def _cell(text: str, where: str) -> float:
    """A quality from a CSV cell: a finite number in [0, 1] (``nan``, ``inf``, words refused)."""
    try:
        value = float(text)
    except ValueError:
        raise ValueError(
            f"--from: {where} must be a number in [0, 1] (a quality), got {_shown(text)}"
        ) from None
    if not 0 <= value <= 1:
        raise ValueError(f"--from: {where} must be a quality in [0, 1], got {_shown(text)}")
    return value


def _name(value: Any, where: str) -> str:
    if not isinstance(value, str) or not value:
        raise ValueError(f"--from: {where} must be a non-empty string, got {_shown(value)}")
    return value


def _metric(value: Any, where: str) -> str:
    """The ``metric`` of a file: one that measures a quality (:data:`econ.qualities.METRICS`).

    A loss is no quality: ``1-loss`` needs the loss of the best constant prediction on the
    same target set (``learning/qualities.py``), which a file of losses does not hold.
    """
    if not isinstance(value, str) or value not in METRICS:
        hint = (
            ": a loss is no quality in [0, 1]; give 1 - loss/L0 with L0 the loss of the best "
            "constant prediction on the target set as metric '1-loss'"
            if isinstance(value, str) and "loss" in value
            else ""
        )
        raise ValueError(
            f"--from: {where} must be one of {', '.join(map(repr, METRICS))}, "
            f"got {_shown(value)}{hint}"
        )
    return value


def _one_round(
    names: list[str], quality: list[float], where: str, metric: str = "accuracy", n_eval: Any = 1
) -> ModelQualities:
    if len(set(names)) != len(names):
        duplicates = sorted(n for n, k in Counter(names).items() if k > 1)
        raise ValueError(f"--from: {where} names a firm twice: {', '.join(duplicates)}")
    return ModelQualities(
        names=tuple(names),
        quality=np.array(quality, dtype=np.float64),
        metric=metric,
        n_eval=np.broadcast_to(np.asarray(n_eval, dtype=np.int64), (len(names),)),
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


def _rows_to_rounds(
    rows: list[dict[str, Any]], keys: list[str], what: str, metric: str, csv_cells: bool
) -> list[ModelQualities]:
    columns = _quality_keys(keys, what)
    if not columns:
        raise ValueError(
            f"--from: {what} lacks the quality columns: q_l and q_h (a defection-free "
            f"history) or one q_<firm> or quality_<firm> column per firm; it has "
            f"{', '.join(keys) or 'none'}"
        )
    names = list(columns.values())
    number = _cell if csv_cells else _quality
    rounds = []
    for t, row in enumerate(rows):
        missing = [k for k in columns if k not in row or row[k] in ("", None)]
        if missing:
            raise ValueError(f"--from: {what}, round {t} lacks {', '.join(missing)}")
        values = [number(row[k], f"{what}, round {t}, {k!r}") for k in columns]
        rounds.append(_one_round(names, values, what, metric))
    return rounds


def _class_index(text: str, where: str) -> int:
    """A class index from a CSV cell: an integer >= 0 (``3`` or ``3.0``)."""
    try:
        value = float(text)
    except ValueError:
        value = -1.0
    if not (value >= 0 and value.is_integer()):
        raise ValueError(
            f"--from: {where} must be a class index (an integer >= 0), got {_shown(text)}"
        )
    return int(value)


def _probability(text: str, where: str) -> float:
    """A class probability from a CSV cell: a number (its range is checked with its row's)."""
    try:
        return float(text)
    except ValueError:
        raise ValueError(
            f"--from: {where} must be a probability in [0, 1], got {_shown(text)}"
        ) from None


def _from_predictions(
    records: list[dict[str, str]], header: list[str], what: str, metric: str, confidence: float
) -> list[ModelQualities]:
    """One market from a CSV of predictions (module docstring)."""
    columns = sorted((h for h in header if re.fullmatch(r"p\d+", h)), key=lambda h: int(h[1:]))
    if "prediction" in header and columns:
        raise ValueError(
            f"--from: {what} has a prediction column and probability columns "
            f"{', '.join(columns)}; give one of them"
        )
    if "prediction" not in header and not columns:
        raise ValueError(
            f"--from: {what} has party and label columns (predictions) but neither a "
            "prediction column nor the class probabilities p0, p1, ..."
        )
    if columns and columns != [f"p{k}" for k in range(len(columns))]:
        raise ValueError(
            f"--from: {what} must have the probability columns p0 .. p{len(columns) - 1}, one "
            f"per class, got {', '.join(columns)}"
        )
    labels: dict[str, list[int]] = {}
    predictions: dict[str, list[Any]] = {}
    for t, row in enumerate(records):
        where = f"{what}, row {t}"
        name = row["party"].strip()
        if not name:
            raise ValueError(f"--from: {where} has an empty party")
        labels.setdefault(name, []).append(_class_index(row["label"], f"{where}, 'label'"))
        predictions.setdefault(name, []).append(
            [_probability(row[c], f"{where}, {c!r}") for c in columns]
            if columns
            else _class_index(row["prediction"], f"{where}, 'prediction'")
        )
    first, *others = labels
    for name in others:
        if len(labels[name]) != len(labels[first]):
            raise ValueError(
                f"--from: {what}: party {name!r} has {len(labels[name])} rows, {first!r} "
                f"{len(labels[first])}; every party lists the same examples"
            )
        if labels[name] != labels[first]:
            i = next(
                i
                for i, (a, b) in enumerate(zip(labels[name], labels[first], strict=True))
                if a != b
            )
            raise ValueError(
                f"--from: {what}: example {i} of party {name!r} has label {labels[name][i]}, "
                f"of {first!r} {labels[first][i]}; every party lists the same examples in the "
                "same order"
            )
    try:
        scored = qualities_from_predictions(
            {name: np.array(values) for name, values in predictions.items()},
            np.array(labels[first]),
            metric=metric,
            confidence=confidence,
        )
    except ValueError as exc:
        raise ValueError(f"--from: {what}: {exc}") from None
    return [scored]


def _from_csv(path: Path, metric: str | None, confidence: float | None) -> list[ModelQualities]:
    file_fits_in_memory(path, "file")
    try:
        with path.open(newline="", encoding="utf-8-sig") as fh:
            reader = csv.reader(fh)
            header = next(reader, None)
            rows = list(reader)
    except UnicodeDecodeError as exc:
        raise ValueError(f"--from: {path} is not UTF-8 text: {exc}") from None
    except csv.Error as exc:
        raise ValueError(f"--from: {path} is not a CSV file: {exc}") from None
    if not header:
        raise ValueError(f"--from: {path} is empty")
    header = [h.strip() for h in header]
    twice = sorted(h for h, n in Counter(header).items() if n > 1)
    if twice:
        raise ValueError(f"--from: {path} has the column(s) {', '.join(twice)} more than once")
    rows = [r for r in rows if any(c.strip() for c in r)]
    if not rows:
        raise ValueError(f"--from: {path} has a header but no rows")
    for t, row in enumerate(rows):
        if len(row) != len(header):
            raise ValueError(
                f"--from: {path}, round {t} has {len(row)} cells for the {len(header)} columns "
                "of the header"
            )
    records = [dict(zip(header, r, strict=True)) for r in rows]
    if all(k in header for k in _PREDICTION_KEYS):
        return _from_predictions(
            records,
            header,
            str(path),
            "accuracy" if metric is None else metric,
            0.95 if confidence is None else confidence,
        )
    _scores_predictions_only(metric, confidence, str(path))
    return _rows_to_rounds(records, header, str(path), "accuracy", csv_cells=True)


def _scores_predictions_only(metric: str | None, confidence: float | None, what: str) -> None:
    """Refuse ``--metric`` and ``--confidence`` for a file of qualities (they score predictions)."""
    for flag, value in (("--metric", metric), ("--confidence", confidence)):
        if value is not None:
            raise ValueError(
                f"{flag} scores a CSV of predictions (columns party, label, ...); {what} holds "
                "qualities, which carry their own metric"
            )


def _accuracies(data: dict[str, Any], key: str, what: str) -> list[ModelQualities]:
    values = data[key]
    if not isinstance(values, list) or not values:
        raise ValueError(f"--from: {what}, {key!r} must be a non-empty list, got {_shown(values)}")
    names = [f"client{i}" for i in range(len(values))]
    return [
        _one_round(
            names, [_quality(v, f"{what}, {key!r}[{i}]") for i, v in enumerate(values)], what
        )
    ]


#: The fields of a ``ModelQualities`` object in a file (:meth:`ModelQualities.to_dict`).
_FIELDS = ("names", "quality", "metric", "n_eval", "low", "high", "confidence")
#: The fields of an interval, which come together.
_INTERVAL = ("low", "high", "confidence")


def _n_eval(value: Any, size: int, where: str) -> Any:
    """``n_eval``: an integer >= 1, or a list of one per firm."""
    items = value if isinstance(value, list) else [value]
    for i, v in enumerate(items):
        if isinstance(v, bool) or not isinstance(v, int) or not 1 <= v < 2**63:
            at = f"{where}[{i}]" if isinstance(value, list) else where
            raise ValueError(f"--from: {at} must be an integer >= 1, got {_shown(v)}")
    if isinstance(value, list) and len(value) != size:
        raise ValueError(f"--from: {where} must hold one count per name ({size}), got {len(value)}")
    return value


def _model_qualities(r: dict[str, Any], what: str) -> ModelQualities:
    unknown = [k for k in r if k not in _FIELDS]
    if unknown:
        raise ValueError(
            f"--from: {what} has the field(s) {', '.join(unknown)}; a ModelQualities object "
            f"has {', '.join(_FIELDS)}"
        )
    names, quality = r["names"], r["quality"]
    if not isinstance(names, list) or not names:
        raise ValueError(f"--from: {what}, 'names' must be a non-empty list, got {_shown(names)}")
    names = [_name(n, f"{what}, 'names'[{i}]") for i, n in enumerate(names)]
    if not isinstance(quality, list):
        quality = [_quality(quality, f"{what}, 'quality'")]
    if len(quality) != len(names):
        raise ValueError(
            f"--from: {what}, 'quality' must hold one number per name ({len(names)}), "
            f"got {len(quality)}"
        )
    values = [_quality(v, f"{what}, 'quality'[{i}]") for i, v in enumerate(quality)]
    metric = _metric(r.get("metric", "accuracy"), f"{what}, 'metric'")
    n_eval = _n_eval(r.get("n_eval", 1), len(names), f"{what}, 'n_eval'")
    given = [k for k in _INTERVAL if k in r]
    if not given:
        return _one_round(names, values, what, metric, n_eval)
    if len(given) != len(_INTERVAL):
        missing = ", ".join(k for k in _INTERVAL if k not in r)
        raise ValueError(f"--from: {what} has {', '.join(given)} without {missing}")
    ends = {}
    for key in ("low", "high"):
        if not isinstance(r[key], list) or len(r[key]) != len(names):
            raise ValueError(
                f"--from: {what}, {key!r} must hold one number per name ({len(names)}), got "
                f"{_shown(r[key])}"
            )
        ends[key] = [_quality(v, f"{what}, {key!r}[{i}]") for i, v in enumerate(r[key])]
    confidence = r["confidence"]
    if isinstance(confidence, bool) or not isinstance(confidence, (int, float)):
        raise ValueError(f"--from: {what}, 'confidence' must be a number, got {_kind(confidence)}")
    try:
        return ModelQualities(
            names=tuple(_one_round(names, values, what).names),
            quality=np.array(values),
            metric=metric,
            n_eval=np.broadcast_to(np.asarray(n_eval, dtype=np.int64), (len(names),)),
            low=np.array(ends["low"]),
            high=np.array(ends["high"]),
            confidence=float(confidence),
        )
    except ValueError as exc:
        raise ValueError(f"--from: {what}: {exc}") from None


def _from_json(data: Any, what: str) -> list[ModelQualities]:
    if isinstance(data, dict):
        if "names" in data and "quality" in data:
            return [_model_qualities(data, what)]
        metric = _metric(data.get("metric", "accuracy"), f"{what}, 'metric'")
        if isinstance(data.get("rounds"), list):  # a run's rounds (`train` counts them)
            rows = data["rounds"]
            if not rows or not all(isinstance(r, dict) for r in rows):
                raise ValueError(
                    f"--from: {what}, 'rounds' must be a non-empty list of objects, "
                    f"got {_shown(rows)}"
                )
            return _rows_to_rounds(rows, list(rows[0]), what, metric, csv_cells=False)
        if "target_accuracy" in data:  # `collabecon train --json`
            return _accuracies(data, "target_accuracy", what)
        if "personalised_accuracy" in data:  # ipfl_result.json
            return _accuracies(data, "personalised_accuracy", what)
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
        where = f"{what}, round {t}"
        if not isinstance(r, dict) or not r:
            raise ValueError(f"--from: {where} must be a non-empty object, got {_shown(r)}")
        if "names" in r and "quality" in r:
            out.append(_model_qualities(r, where))
        else:
            values = [_quality(v, f"{where}, {k!r}") for k, v in r.items()]
            out.append(_one_round([_name(k, f"{where}, a key") for k in r], values, where))
        if out[-1].names != out[0].names:
            raise ValueError(
                f"--from: {where} names the firms {', '.join(out[-1].names)}; round 0 names "
                f"{', '.join(out[0].names)}"
            )
        if out[-1].metric != out[0].metric:
            raise ValueError(
                f"--from: {where} measures {out[-1].metric!r}; round 0 measures {out[0].metric!r}"
            )
    return out


def load_rounds(
    path: str, *, metric: str | None = None, confidence: float | None = None
) -> list[ModelQualities]:
    """Per-round qualities from a CSV or JSON file (module docstring).

    JSON is read strictly (:func:`econ.validation.read_json`: no repeated key, no NaN or
    Infinity, bounded nesting); every field is checked for its type and range, and a
    refusal names the file and the field. ``metric`` and ``confidence`` score a CSV of
    predictions (``accuracy`` and 0.95 when None) and are refused for a file of qualities.
    """
    p = Path(path)
    if not p.is_file():
        if p.exists():
            raise ValueError(
                f"--from: {path!r} is not a regular file (a directory, pipe or device)"
            )
        raise ValueError(f"--from: no such file {path!r}")
    if p.suffix.lower() == ".csv":
        return _from_csv(p, metric, confidence)
    _scores_predictions_only(metric, confidence, str(p))
    try:
        data = read_json(p, "file")
    except ValueError as exc:
        raise ValueError(f"--from: {exc}") from None
    return _from_json(data, str(p))


def _given_rounds(args: argparse.Namespace) -> list[ModelQualities]:
    if args.confidence is not None and not 0 < args.confidence < 1:
        raise ValueError(f"--confidence must lie in (0, 1), got {args.confidence!r}")
    if args.qualities is None:
        if args.names is not None:
            raise ValueError("--names names the firms of --qualities; --from files name theirs")
        return load_rounds(args.path, metric=args.metric, confidence=args.confidence)
    _scores_predictions_only(args.metric, args.confidence, "--qualities")
    names = args.names or [f"firm{i}" for i in range(len(args.qualities))]
    if len(names) != len(args.qualities):
        raise ValueError(
            f"--names must give one name per quality ({len(args.qualities)}), got {len(names)}"
        )
    if len(set(names)) != len(names):
        duplicates = sorted(n for n, k in Counter(names).items() if k > 1)
        raise ValueError(f"--names must be distinct, got {', '.join(duplicates)} more than once")
    q = np.asarray(args.qualities, dtype=np.float64)
    bad = q[~((q >= 0.0) & (q <= 1.0))]
    if bad.size:
        raise ValueError(f"--qualities must lie in [0, 1], got {float(bad[0])!r}")
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
        firm, ``consumer_surplus`` and ``welfare``. When the input carries counts or
        intervals (a predictions file, a ``ModelQualities`` file with ``n_eval`` or
        ``low``, ``high`` and ``confidence``), ``qualities``: each round's
        :meth:`econ.qualities.ModelQualities.to_dict` (``names``, ``quality``, ``metric``,
        ``n_eval``, and ``low``, ``high``, ``confidence`` where known). With ``--consumers N``,
        ``sampled_last_round``: the last round acted out by N sampled consumers
        (:func:`econ.market.sampled_market`: ``names``, ``quality``, ``price``, ``share``,
        ``revenue``, ``consumer_surplus``, ``welfare``), ``n_consumers`` and
        ``max_share_error`` against the closed form. With ``--population``, also
        ``population``, ``method`` and ``certificate`` (:func:`_population_market`). The
        command exits with 0, or with 1 when the certificate fails (:func:`exit_status`).

    Raises
    ------
    ValueError
        A negative ``--consumers`` or ``--seed``, ``--seed`` without ``--consumers``,
        ``--metric`` or ``--confidence`` without a predictions file, a ``--confidence``
        outside (0, 1), a
        quality outside [0, 1], names that do not match the qualities, a ``--from`` file in
        none of the layouts or with a field of the wrong type or range (module docstring),
        or a market or a sample that would not fit in memory; the command exits with code 2.

    References
    ----------
    Werner (2024), ch. 3, §3.2, Definition 2 and Lemmas 21-23, in each round.
    """
    if args.consumers < 0:
        raise ValueError(f"--consumers must be >= 0, got {args.consumers}")
    if args.seed is not None and not args.consumers:
        raise ValueError(
            f"--seed {args.seed} seeds the sampled consumers: it has no effect without "
            "--consumers N (N >= 1)"
        )
    seed = 0 if args.seed is None else args.seed
    if seed < 0:
        raise ValueError(f"--seed must be an integer >= 0, got {seed}")
    if args.population is not None and args.qualities is None:
        raise ValueError("--population solves one market: give it --qualities, not --from")
    rounds = _given_rounds(args)
    if args.population is not None:
        return _population_market(args, rounds[0], seed)
    firms = rounds[0].quality.size
    # per round and firm: four arrays of the history and four fields of the output (a key,
    # a float and a number's JSON text each)
    fits_in_memory(f"{len(rounds)} rounds of {firms} firms", _CELL_BYTES * len(rounds) * firms)
    if args.consumers:
        # per consumer: a type, a utility and a tie-break draw per firm, a choice (float64)
        fits_in_memory(f"--consumers {args.consumers}", 8.0 * args.consumers * (3 * firms + 4))
    history = market_history(rounds)
    result: dict[str, Any] = history.to_dict()
    if any(r.confidence is not None or (r.n_eval > 1).any() for r in rounds):
        result["qualities"] = [r.to_dict() for r in rounds]
    if args.consumers:
        sampled = sampled_market(rounds[-1], args.consumers, seed)
        result["sampled_last_round"] = {
            **sampled.to_dict(),
            "n_consumers": args.consumers,
            "max_share_error": float(np.max(np.abs(sampled.share - history.share[-1]))),
        }
    return result


def _population_market(
    args: argparse.Namespace, given: ModelQualities, seed: int
) -> dict[str, Any]:
    """``--population``: the one market of ``--qualities`` under those consumer types.

    The record of :func:`run` for one round, with ``population``, ``method`` and
    ``certificate`` (:func:`econ.population_market.population_equilibrium`); with ``--consumers N``,
    ``sampled_last_round`` holds the shares and revenues of N consumers drawn from the
    population at the equilibrium prices, their largest share error and the bound of four
    standard errors.
    """
    population = parse_population(args.population)
    n = given.quality.size
    # the certificate's price range (econ.population_market._price_range) weighs every kink
    # of the other firms' upper envelope, up to n^2 of them, against n firms: two float64
    # arrays of n^3 cells
    fits_in_memory(f"--population with {n} firms", 16.0 * n**3)
    if args.consumers:
        fits_in_memory(f"--consumers {args.consumers}", 8.0 * args.consumers * 6)
    eq = population_equilibrium(given.quality, population)
    names = list(given.names)
    row: dict[str, Any] = {"t": 0}
    for field, values in (
        ("quality", eq.quality),
        ("price", eq.price),
        ("share", eq.demand),
        ("revenue", eq.revenue),
    ):
        row.update({f"{field}_{n}": float(v) for n, v in zip(names, values, strict=True)})
    row.update(consumer_surplus=eq.consumer_surplus, welfare=eq.welfare)
    result: dict[str, Any] = {
        "names": names,
        "rounds": [row],
        "population": eq.population,
        "method": eq.method,
        "certificate": eq.certificate.to_dict(),
    }
    if args.consumers:
        sample = population.sample(args.consumers, seed)
        share = population_demands(eq.quality, eq.price, sample)
        bound = 4 * np.sqrt(eq.demand * (1 - eq.demand) / args.consumers)
        result["sampled_last_round"] = {
            "names": names,
            "share": share.tolist(),
            "revenue": (eq.price * share).tolist(),
            "n_consumers": args.consumers,
            "max_share_error": float(np.max(np.abs(share - eq.demand))),
            "four_standard_errors": bound.tolist(),
            "within": bool(np.all(np.abs(share - eq.demand) <= bound + 1e-12)),
        }
    return plain(result)


def exit_status(result: dict[str, Any]) -> int:
    """1 when ``--population``'s prices failed their best-response certificate, else 0.

    Such prices are printed with the certificate that says so, and are no equilibrium.
    """
    certificate = result.get("certificate")
    return 1 if certificate is not None and not certificate["holds"] else 0


def _population_lines(result: dict[str, Any]) -> str:
    if "certificate" not in result:
        return ""
    c = result["certificate"]
    verdict = "holds" if c["holds"] else "FAILS"
    return (
        f"\npopulation {result['population']} ({result['method']}); best-response certificate "
        f"{verdict}: largest gain {c['max_gain']:.3g}, relative {max(c['relative_gain']):.3g} "
        f"(tolerance {c['tolerance']:g})"
    )


def _sampled_line(result: dict[str, Any]) -> str:
    if "sampled_last_round" not in result:
        return ""
    s = result["sampled_last_round"]
    within = (
        f", {'within' if s['within'] else 'NOT within'} four standard errors"
        if "within" in s
        else ""
    )
    return (
        f"\nsampled {s['n_consumers']} consumers (last round): largest share error "
        f"{s['max_share_error']:.2g}{within}"
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
        header = ["firm", *fields]
        scored = result.get("qualities", [{}])[0]
        if "n_eval" in scored:
            header.append("n")
            for row, n in zip(rows, scored["n_eval"], strict=True):
                row.append(n)
        if "confidence" in scored:
            header.append(f"{scored['confidence']:.0%} interval")
            for row, low, high in zip(rows, scored["low"], scored["high"], strict=True):
                row.append(f"[{low:.4g}, {high:.4g}]")
        text = table(rows, header)
        text += f"\nconsumer surplus {r['consumer_surplus']:.6g}, welfare {r['welfare']:.6g}"
        return text + _population_lines(result) + _sampled_line(result)
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
