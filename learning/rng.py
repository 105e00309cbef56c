"""Random streams of the learning backend, all derived from one numpy generator.

Library code never seeds torch globally. Model initialisation draws from a
:class:`torch.Generator` seeded from a numpy stream (:func:`torch_generator`); minibatch
indices are drawn with numpy and moved to the device, so they are the same on every device.
The round loop gives ``init``, round ``r`` and ``finish`` their own streams
(:func:`init_rng`, :func:`round_rng`, :func:`finish_rng`), pure functions of one integer
(:func:`draw_entropy`) drawn once and kept in every checkpoint, so a run resumed from a
checkpoint draws exactly what the uninterrupted run would have drawn.
"""

from __future__ import annotations

import numpy as np
import torch

__all__ = ["draw_entropy", "finish_rng", "init_rng", "round_rng", "torch_generator"]

# spawn-key prefixes of a run's streams
_INIT_STREAM, _ROUND_STREAM, _FINISH_STREAM = 0, 1, 2


def torch_generator(
    rng: np.random.Generator, device: str | torch.device = "cpu"
) -> torch.Generator:
    """A :class:`torch.Generator` on ``device`` seeded by one draw from ``rng``."""
    generator = torch.Generator(device=device)
    generator.manual_seed(int(rng.integers(2**63)))
    return generator


def draw_entropy(rng: np.random.Generator) -> int:
    """One 63-bit integer from ``rng``: the root of a run's per-round streams."""
    return int(rng.integers(2**63))


def round_rng(entropy: int, round_index: int) -> np.random.Generator:
    """The stream of round ``round_index`` of the run whose root is ``entropy``.

    Child ``(1, round_index)`` of ``SeedSequence(entropy)``: independent across rounds and
    reproducible without replaying the rounds before it.
    """
    return _child(entropy, _ROUND_STREAM, int(round_index))


def init_rng(entropy: int) -> np.random.Generator:
    """The stream of the algorithm's ``init`` in the run whose root is ``entropy``."""
    return _child(entropy, _INIT_STREAM)


def finish_rng(entropy: int) -> np.random.Generator:
    """The stream of the algorithm's ``finish`` (e.g. final fine-tuning)."""
    return _child(entropy, _FINISH_STREAM)


def _child(entropy: int, *key: int) -> np.random.Generator:
    return np.random.default_rng(np.random.SeedSequence(entropy, spawn_key=key))
