"""A node's share of a round's random stream.

In process, the client half of a round
(:meth:`learning.algorithms.base.SplitAlgorithm.client_update`) draws for all :math:`K`
participants at once, in blocks of uniform keys with one row per participant:
:func:`learning.engine.sample_batches` takes one block ``rng.random((K, W))``, DP-SGD
(:mod:`learning.dp`) blocks ``rng.random((K, L, W))`` (a line of :math:`W` keys per step),
:math:`W` the largest training set among the participants, and participant :math:`i` reads row
:math:`i` (the first :math:`n_i` keys of each line; the rest is padding). A Flower node holds
only its own data, so it draws only its own row: :class:`RowStream` starts from the round
generator's state, skips the blocks before and the :math:`i` rows before its own
(:meth:`numpy.random.PCG64.advance`) and returns its :math:`n_i` keys of each line. The node's
minibatches and noise seeds are then exactly those of the batched run. A client half that
splits the round's stream (``rng.spawn``, Ditto's two trainings) gets row streams of the same
children (:meth:`RowStream.spawn`: the children of the round's
:class:`numpy.random.SeedSequence`).
"""

from __future__ import annotations

import json
from typing import Any

import numpy as np

__all__ = ["RowStream", "stream_from_state", "stream_state"]


def stream_state(rng: np.random.Generator) -> str:
    """The state of ``rng`` and of its seed sequence, as a JSON string a message can carry.

    ``rng`` is a PCG64 generator.
    """
    state = rng.bit_generator.state
    if state.get("bit_generator") != "PCG64":
        raise ValueError(f"rng must be a PCG64 generator, got {state.get('bit_generator')}")
    seq = rng.bit_generator.seed_seq
    seed = None
    if isinstance(seq, np.random.SeedSequence):
        seed = {
            "entropy": seq.entropy,
            "spawn_key": list(seq.spawn_key),
            "pool_size": seq.pool_size,
            "spawned": seq.n_children_spawned,
        }
    return json.dumps({"state": state, "seed": seed})


def stream_from_state(state: str) -> np.random.Generator:
    """The generator whose state :func:`stream_state` wrote."""
    return np.random.Generator(_bits_from_state(state))


def _bits_from_state(state: str) -> np.random.PCG64:
    """The PCG64 bit generator whose state :func:`stream_state` wrote."""
    bits = np.random.PCG64()
    bits.state = json.loads(state)["state"]
    return bits


class RowStream:
    r"""Row ``row`` of every block of uniform draws from ``state``.

    The blocks are ``(rows, width)`` or ``(rows, lines, width)``.

    Parameters
    ----------
    state : str
        The round generator's state (:func:`stream_state`) where the first block begins.
    row : int
        This participant's position among the round's ``rows`` participants.
    rows : int
        Participants of the round, :math:`K`.
    width : int
        Width of every block, :math:`W`: the largest training set among the participants.

    The only draws it serves are ``random((1, n))`` and ``random((1, lines, n))`` with
    ``n <= width`` (one client's keys, the first ``n`` of each line of its row); every call
    takes the next block. ``block`` counts the ``(rows, width)`` blocks before it, a
    ``(rows, lines, width)`` block counting as ``lines`` of them.
    """

    def __init__(self, state: str, row: int, rows: int, width: int) -> None:
        if not 0 <= row < rows:
            raise ValueError(f"row must be in [0, rows={rows}), got {row}")
        if width < 1:
            raise ValueError(f"width must be at least 1, got {width}")
        self.state, self.row, self.rows, self.width = state, int(row), int(rows), int(width)
        self.block = 0

    def random(self, size: Any) -> np.ndarray:
        """The first ``n`` keys of this row on each line of the next block, shaped ``size``."""
        shape = () if size is None else tuple(int(s) for s in np.atleast_1d(size))
        if len(shape) not in (2, 3) or shape[0] != 1 or min(shape) < 1 or shape[-1] > self.width:
            raise ValueError(
                f"a node draws one row of a (rows, width) or (rows, lines, width) block, at "
                f"most width={self.width} keys a line, asked for {shape}"
            )
        lines = shape[1] if len(shape) == 3 else 1
        bits = _bits_from_state(self.state)
        bits.advance((self.block * self.rows + self.row * lines) * self.width)
        self.block += lines
        keys = np.random.Generator(bits).random((lines, self.width))
        return keys[:, : shape[-1]].reshape(shape)

    def spawn(self, n: int) -> list[RowStream]:
        """The same row of each of ``n`` child streams, as ``Generator.spawn`` makes them."""
        seed = json.loads(self.state)["seed"]
        if seed is None:
            raise ValueError("the round's stream has no seed sequence to spawn from")
        children = []
        for i in range(int(n)):
            key = (*seed["spawn_key"], seed["spawned"] + i)
            sequence = np.random.SeedSequence(
                seed["entropy"], spawn_key=key, pool_size=seed["pool_size"]
            )
            child = np.random.default_rng(sequence)
            children.append(RowStream(stream_state(child), self.row, self.rows, self.width))
        seed["spawned"] += int(n)
        raw = json.loads(self.state)
        raw["seed"] = seed
        self.state = json.dumps(raw)
        return children

    def __getattr__(self, name: str) -> Any:
        """Refuse every other generator method: a node draws only minibatch keys.

        Raises
        ------
        TypeError
            Always, naming the attribute asked for.
        """
        raise TypeError(
            f"a node's client half draws only minibatch keys (random); it asked for {name!r}"
        )
