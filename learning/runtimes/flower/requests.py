"""Requests of a server that speaks to its nodes directly.

Such servers run IP-FL's rounds and mediate between two firms. Each request carries its
position (``slot``) among those sent together, so that a node asked twice at once (an IP-FL
payer of two clusters) answers twice and the replies come back in the order of the requests.
"""

from __future__ import annotations

import time
from collections.abc import Iterable
from typing import Any

import numpy as np
import torch
from flwr.app import ArrayRecord, ConfigRecord, Context, Message, MetricRecord, RecordDict
from flwr.serverapp import Grid

from learning.runtimes.flower.records import record_of, scalar, scalars


def source_node(message: Message) -> int:
    """The id of the node that sent ``message``."""
    return int(message.metadata.src_node_id)


def checked_replies(replies: Iterable[Message], expected: int, what: str) -> list[Message]:
    """The replies of one request, each without error and ``expected`` of them.

    Raises
    ------
    RuntimeError
        When a node replied with an error, or fewer than ``expected`` nodes replied in time;
        ``what`` names the request in the message.
    """
    out = list(replies)
    for reply in out:
        if reply.has_error():
            raise RuntimeError(f"a node failed in {what}: {reply.error.reason}")
    if len(out) != expected:
        raise RuntimeError(f"{what}: {len(out)} of {expected} nodes replied in time")
    return out


def wait_for_nodes(grid: Grid, n: int, timeout: float) -> list[int]:
    """The sorted ids of the grid's nodes, once at least ``n`` are connected.

    Raises
    ------
    RuntimeError
        When fewer than ``n`` nodes connected within ``timeout`` seconds.
    """
    end = time.monotonic() + timeout
    while True:
        nodes = sorted(int(x) for x in grid.get_node_ids())
        if len(nodes) >= n:
            return nodes
        if time.monotonic() > end:
            raise RuntimeError(f"{len(nodes)} of the {n} nodes connected within {timeout} s")
        time.sleep(0.2)


__all__ = ["Requests", "answer", "discover", "losses", "metric", "partition_of"]


def answer(message: Message, content: dict[str, Any]) -> Message:
    """The reply to ``message``: ``content`` with the request's ``slot`` in its metrics."""
    config = record_of(message.content, "config", ConfigRecord)
    if "slot" in config:
        content.setdefault("metrics", MetricRecord({}))["slot"] = int(scalar(config["slot"]))
    return Message(RecordDict(content), reply_to=message)


def metric(message: Message, name: str) -> int | float:
    """The single-valued metric ``name`` of the reply ``message``.

    Raises
    ------
    KeyError
        The reply has no ``metrics`` record, or no metric ``name``.
    TypeError
        The reply's ``metrics`` is not a ``MetricRecord``, or its metric ``name`` is a list.
    """
    value = record_of(message.content, "metrics", MetricRecord)[name]
    if isinstance(value, list):
        raise TypeError(f"metric {name!r} must be a single value, got the list {value!r}")
    return value


def losses(message: Message) -> list[float]:
    """The per-model losses (metric ``losses``) of a firm's gradient reply.

    Raises
    ------
    KeyError
        The reply has no ``metrics`` record, or no metric ``losses``.
    TypeError
        The metric ``losses`` is not a list.
    """
    return [
        float(v) for v in scalars(record_of(message.content, "metrics", MetricRecord)["losses"])
    ]


def partition_of(message: Message, context: Context) -> tuple[str, int]:
    """The node's data directory and its partition number.

    The directory is the one the server sent, else the node's ``data-dir`` setting.
    """
    sent = str(message.content["config"]["data-dir"])
    return sent or str(context.node_config["data-dir"]), int(context.node_config["partition-id"])


class Requests:
    """Requests to client ``k``'s node (``nodes[k]``), every one with the settings ``base``."""

    def __init__(self, grid: Grid, nodes: list[int], base: dict[str, Any], timeout: float) -> None:
        self.grid, self.nodes, self.base, self.timeout = grid, nodes, base, timeout

    def ask(
        self,
        kind: str,
        clients: np.ndarray | list[int],
        arrays: list[dict[str, torch.Tensor]],
        configs: list[dict[str, Any]] | None = None,
    ) -> list[Message]:
        """Send request ``i`` of type ``kind`` to the node of ``clients[i]``; the replies in order.

        Request ``i`` is ``arrays[i]`` with ``configs[i]``.

        Raises
        ------
        RuntimeError
            A node failed or did not answer within the timeout.
        """
        out = [
            Message(
                RecordDict(
                    {
                        "arrays": ArrayRecord(arrays[i]),
                        "config": ConfigRecord(
                            {**self.base, **(configs[i] if configs else {}), "slot": i}
                        ),
                    }
                ),
                dst_node_id=self.nodes[int(k)],
                message_type=kind,
            )
            for i, k in enumerate(clients)
        ]
        got = checked_replies(self.grid.send_and_receive(out, timeout=self.timeout), len(out), kind)
        by_slot = {int(metric(m, "slot")): m for m in got}
        return [by_slot[i] for i in range(len(out))]


def discover(
    grid: Grid, n: int, kind: str, base: dict[str, Any], timeout: float
) -> tuple[list[int], list[MetricRecord]]:
    """The node of each of clients ``0 .. n-1``, and each one's answer.

    Nodes are found by the ``partition-id`` a ``kind`` query answers; a node whose
    ``num-examples`` is not positive holds no partition of the run.
    """
    every = wait_for_nodes(grid, n, timeout)
    query = [
        Message(RecordDict({"config": ConfigRecord(base)}), dst_node_id=x, message_type=kind)
        for x in every
    ]
    answers = checked_replies(grid.send_and_receive(query, timeout=timeout), len(every), "query")
    nodes: dict[int, int] = {}
    metrics: dict[int, MetricRecord] = {}
    for reply in answers:
        m = record_of(reply.content, "metrics", MetricRecord)
        k = int(scalar(m["partition-id"]))
        if 0 <= k < n and int(scalar(m["num-examples"])) > 0:
            nodes[k], metrics[k] = source_node(reply), m
    missing = sorted(set(range(n)) - set(nodes))
    if missing:
        raise RuntimeError(f"no node holds partitions {missing}")
    return [nodes[k] for k in range(n)], [metrics[k] for k in range(n)]
