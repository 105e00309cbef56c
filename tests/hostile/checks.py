r"""Checks of a command's printed result: finite numbers, and the economics they must obey.

A result that a command prints with exit code 0 or 1 is judged here by the names of its
fields, wherever they are nested (a market's rounds, a sweep's rows):

* every number is finite (``--json`` prints a NaN or an infinity as null; a text output must
  not print the word nan);
* prices, demands, shares, revenues, consumer surplus, losses, privacy losses ε, noise
  multipliers and times are non-negative, and shares, demands,
  qualities, accuracies, indifferent types and probabilities lie in [0, 1];
* a market round's shares sum to at most 1, each revenue is its price times its share
  (Werner 2024, ch. 3, §3.2, Definition 2: :math:`U_i = p_i D_i`) and welfare is consumer
  surplus plus revenues (so a market's welfare is non-negative; a privacy protocol's welfare,
  a sum of utilities :math:`-\ell_i^2 - \lambda_i \mathrm{err}_i^2`, is not: Tsoy et al.
  2024, §3.3; and a Nash product :math:`(U_l - U_{l,0})(U_h - U_{h,0})` is negative where one
  firm ends below its start: Werner 2024, ch. 3, §3.4);
* a protocol that the privacy command calls optimal leaves every client at least as well off
  as alone (Tsoy et al. 2024, §4: a mutually beneficial protocol).
"""

from __future__ import annotations

import json
import math
import re
from collections.abc import Iterator, Mapping
from typing import Any

#: slack of the equalities and bounds (results are floating point)
TOL = 1e-9

_NON_NEGATIVE = re.compile(
    r"^(p|D|U)_(l|h)(_star)?$|^(price|share|revenue|demand)(_.+)?$|^consumer_surplus$|"
    r"^(mean_|target_)?loss$|^epsilon(_min|_max)?$|"
    r"^noise_multiplier$|^seconds$|^n_consumers$|^max_share_error$|^sampling_rate$"
)
_UNIT = re.compile(
    r"^(share|demand)(_.+)?$|^D_(l|h)$|^quality(_.+)?$|^q_(l|h)(0|_star)?$|^q_max$|"
    r"^theta_(l|h)$|(^|_)accuracy$|^evasion_rate$|^alpha_star$|^delta$|^ci_(low|high)$"
)
_WORDS = re.compile(r"(?<![\w.])-?nan(?!\w)", re.IGNORECASE)


def _numbers(value: Any, where: str = "result") -> Iterator[tuple[str, str, float]]:
    """``(path, key, number)`` for every number in ``value`` (lists: the key of the list)."""
    if isinstance(value, bool) or value is None:
        return
    if isinstance(value, (int, float)):
        yield where, where.rsplit(".", 1)[-1].split("[", 1)[0], float(value)
    elif isinstance(value, Mapping):
        for k, v in value.items():
            yield from _numbers(v, f"{where}.{k}")
    elif isinstance(value, (list, tuple)):
        for i, v in enumerate(value):
            yield from _numbers(v, f"{where}[{i}]")


def _mappings(value: Any) -> Iterator[Mapping[str, Any]]:
    if isinstance(value, Mapping):
        yield value
        for v in value.values():
            yield from _mappings(v)
    elif isinstance(value, (list, tuple)):
        for v in value:
            yield from _mappings(v)


def _number(value: Any) -> float | None:
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        return None
    return float(value)


def _market_faults(record: Mapping[str, Any]) -> list[str]:
    """A market round (``price_<firm>``, ``share_<firm>``, ``revenue_<firm>``) or a duopoly."""
    faults = []
    firms = [k[len("price_") :] for k in record if k.startswith("price_")]
    pairs = [(f"price_{f}", f"share_{f}", f"revenue_{f}") for f in firms]
    if {"p_l", "D_l", "U_l"} <= set(record):
        pairs += [("p_l", "D_l", "U_l"), ("p_h", "D_h", "U_h")]
    shares = []
    revenues = []
    for p, s, u in pairs:
        price, share, revenue = (_number(record.get(k)) for k in (p, s, u))
        if price is None or share is None or revenue is None:
            continue
        shares.append(share)
        revenues.append(revenue)
        if abs(price * share - revenue) > TOL * max(1.0, abs(revenue)):
            faults.append(f"{u} = {revenue!r} is not {p} x {s} = {price * share!r}")
    if shares and sum(shares) > 1 + TOL:
        faults.append(f"the shares sum to {sum(shares)!r} > 1")
    cs, welfare = _number(record.get("consumer_surplus")), _number(record.get("welfare"))
    if revenues and cs is not None and welfare is not None:
        if abs(cs + sum(revenues) - welfare) > TOL * max(1.0, abs(welfare)):
            faults.append(f"welfare {welfare!r} is not consumer surplus + revenues")
    return faults


def _protocol_faults(record: Mapping[str, Any]) -> list[str]:
    """An optimal protocol (``utility``, ``utility_alone``) that leaves a client worse off."""
    utility, alone = record.get("utility"), record.get("utility_alone")
    if record.get("exists") is not True or not isinstance(utility, list):
        return []
    if not isinstance(alone, list) or len(alone) != len(utility):
        return []
    worse = [
        i
        for i, (u, a) in enumerate(zip(utility, alone, strict=True))
        if _number(u) is not None and _number(a) is not None and u < a - 1e-6 * max(1.0, abs(a))
    ]
    return [f"client(s) {worse} lose by the protocol called optimal"] if worse else []


def result_faults(result: Any) -> list[str]:
    """What is wrong with a parsed JSON result (an empty list when nothing is)."""
    faults = []
    for path, key, x in _numbers(result):
        if not math.isfinite(x):
            faults.append(f"{path} = {x!r} is not finite")
        elif _NON_NEGATIVE.search(key) and x < -TOL:
            faults.append(f"{path} = {x!r} is negative")
        elif _UNIT.search(key) and not -TOL <= x <= 1 + TOL:
            faults.append(f"{path} = {x!r} lies outside [0, 1]")
    for record in _mappings(result):
        faults += _market_faults(record)
        faults += _protocol_faults(record)
    return faults


def output_faults(stdout: str, as_json: bool) -> list[str]:
    """What is wrong with a command's stdout: its JSON parsed and checked, or its text searched.

    A text output must not print the word nan: a quantity without a value is printed as a
    word that says why (an infinite ε of a mechanism without noise is a value).
    """
    if as_json:
        try:
            result = json.loads(stdout, parse_constant=_refuse_constant)
        except ValueError as exc:
            return [f"stdout is not one JSON object: {exc}"]
        return result_faults(result)
    words = sorted({m.group(0).lower() for m in _WORDS.finditer(stdout)})
    return [f"the output prints {', '.join(words)}"] if words else []


def _refuse_constant(name: str) -> float:
    raise ValueError(f"{name} is not JSON")
