"""Nested dicts of tensors as the flat name -> tensor maps that Flower's records carry.

A :data:`learning.algorithms.base.State` (tensors, or dicts of tensors) becomes one flat
dict whose keys join the nested names with ``/`` (parameter names use ``.``), under a
prefix; :func:`unpack` reverses it. :func:`rows` cuts the stacked entries of a
:class:`~learning.algorithms.base.Dispatch` down to one participant, :func:`stack` joins the
participants' one-row replies in the order of the participants. :func:`record_of`,
:func:`scalar` and :func:`scalars` read a message's records and their entries as the types
the sender wrote (a record dict holds arrays, metrics and configs under one mapping).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any, TypeVar

import torch

__all__ = ["pack", "record_of", "rows", "scalar", "scalars", "stack", "unpack"]

RecordT = TypeVar("RecordT")

_SEP = "/"


def pack(state: Mapping[str, Any], prefix: str) -> dict[str, torch.Tensor]:
    """Flat ``{prefix/name[/inner]: tensor}`` on the CPU, contiguous."""
    out: dict[str, torch.Tensor] = {}
    for name, value in state.items():
        if _SEP in name:
            raise ValueError(f"state names may not contain {_SEP!r}, got {name!r}")
        key = f"{prefix}{_SEP}{name}"
        if isinstance(value, Mapping):
            out.update(pack(value, key))
        elif isinstance(value, torch.Tensor):
            out[key] = value.detach().cpu().contiguous()
        else:
            raise TypeError(f"{key} must be a tensor or a dict of tensors, got {type(value)}")
    return out


def unpack(
    flat: Mapping[str, torch.Tensor], prefix: str, device: torch.device | str = "cpu"
) -> dict[str, Any]:
    """The nested dict under ``prefix`` of a :func:`pack` output, moved to ``device``."""
    head = f"{prefix}{_SEP}"
    out: dict[str, Any] = {}
    for key, value in flat.items():
        if not key.startswith(head):
            continue
        *outer, leaf = key[len(head) :].split(_SEP)
        node = out
        for part in outer:
            node = node.setdefault(part, {})
        node[leaf] = value.to(device)
    return out


def rows(state: Mapping[str, Any], index: int) -> dict[str, Any]:
    """Row ``index`` (kept as a leading axis of one) of every stacked tensor in ``state``."""
    return {
        name: rows(value, index) if isinstance(value, Mapping) else value[index : index + 1]
        for name, value in state.items()
    }


def stack(replies: Sequence[Mapping[str, Any]]) -> dict[str, Any]:
    """Concatenate one-row ``replies`` (same keys) along the leading axis, in order."""
    first = replies[0]
    return {
        name: stack([r[name] for r in replies])
        if isinstance(value, Mapping)
        else torch.cat([r[name] for r in replies])
        for name, value in first.items()
    }


def record_of(content: Mapping[str, object], key: str, kind: type[RecordT]) -> RecordT:
    """The record ``content[key]``, checked to be a ``kind``.

    ``kind`` is an ``ArrayRecord``, a ``MetricRecord`` or a ``ConfigRecord``.

    Raises
    ------
    KeyError
        ``content`` has no record ``key``.
    TypeError
        The record ``key`` is not a ``kind``.
    """
    value = content[key]
    if not isinstance(value, kind):
        raise TypeError(f"record {key!r} must be a {kind.__name__}, got {type(value).__name__}")
    return value


def scalar(value: object) -> int | float | str | bytes:
    """One entry of a metric or config record that holds a single value (``bool`` included).

    Raises
    ------
    TypeError
        ``value`` is a list or not a record value.
    """
    if isinstance(value, int | float | str | bytes):
        return value
    raise TypeError(f"expected a single value, got {type(value).__name__} {value!r}")


def scalars(value: object) -> list[Any]:
    """One entry of a metric or config record that holds a list of values.

    Raises
    ------
    TypeError
        ``value`` is not a list.
    """
    if isinstance(value, list):
        return value
    raise TypeError(f"expected a list of values, got {type(value).__name__} {value!r}")
