"""The seam between the learning backend and the economics: model qualities.

The learning backend (``learning/qualities.py``) is the one place that turns trained models
into a :class:`ModelQualities`; markets and mechanisms consume it and never see a tensor.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import numpy as np
from numpy.typing import ArrayLike, NDArray

from econ.outputs import frame, plain
from econ.validation import unit_interval

METRICS = ("accuracy", "1-loss")


@dataclass(frozen=True, slots=True, kw_only=True)
class ModelQualities:
    """Qualities of the models of several parties on a common target set.

    Parameters
    ----------
    names
        One name per party (firm, client, cluster).
    quality
        Quality in [0, 1] of each party's model: accuracy, or 1 - normalised loss.
    metric
        What ``quality`` measures, e.g. ``"accuracy"`` or ``"1-loss"``.
    n_eval
        How many target examples each number rests on (>= 1).

    References
    ----------
    Werner (2024), ch. 3, §3.2 and §3.5: a model's quality is its accuracy on the common
    target set :math:`D_{target}` that consumers care about.

    Examples
    --------
    >>> q = ModelQualities.from_mapping({"low": 0.711, "high": 0.778}, n_eval=1000)
    >>> q["high"], len(q)
    (0.778, 2)
    >>> q.standard_error().round(4).tolist()  # sqrt(q (1 - q) / n_eval)
    [0.0143, 0.0131]
    """

    names: tuple[str, ...]
    quality: NDArray[np.float64]
    metric: str
    n_eval: NDArray[np.int64]

    def __post_init__(self) -> None:
        """Check the fields and store them as read-only arrays.

        Names distinct and at least one; qualities in [0, 1]; ``n_eval`` integers >= 1, a scalar
        broadcast to every party; matching lengths; a non-empty ``metric``.
        """
        names = tuple(str(n) for n in self.names)
        if not names:
            raise ValueError("names must name at least one party, got ()")
        if len(set(names)) != len(names):
            raise ValueError(f"names must be distinct, got {names!r}")
        quality = unit_interval("quality", self.quality).reshape(-1)
        n_eval = np.asarray(self.n_eval)
        if n_eval.ndim == 0:
            n_eval = np.full(len(names), n_eval)
        if n_eval.dtype.kind not in "iu" or (n_eval < 1).any():  # integers (not bool) >= 1
            raise ValueError(f"n_eval must hold integers >= 1, got {n_eval!r}")
        if not (len(names) == quality.shape[0] == n_eval.shape[0]):
            raise ValueError(
                "names, quality and n_eval must have matching lengths, got "
                f"{len(names)}, {quality.shape[0]} and {n_eval.shape[0]}"
            )
        if not isinstance(self.metric, str) or not self.metric:
            raise ValueError(f"metric must be a non-empty string, got {self.metric!r}")
        quality.setflags(write=False)
        n_eval = n_eval.astype(np.int64)
        n_eval.setflags(write=False)
        object.__setattr__(self, "names", names)
        object.__setattr__(self, "quality", quality)
        object.__setattr__(self, "n_eval", n_eval)

    @classmethod
    def from_mapping(
        cls, qualities: dict[str, float], *, metric: str = "accuracy", n_eval: ArrayLike = 1
    ) -> ModelQualities:
        """Build from ``{name: quality}``; ``n_eval`` is broadcast to every party."""
        names = tuple(qualities)
        n = np.broadcast_to(np.asarray(n_eval, dtype=np.int64), (len(names),)).copy()
        return cls(names=names, quality=np.array(list(qualities.values())), metric=metric, n_eval=n)

    def __len__(self) -> int:
        """The number of parties."""
        return len(self.names)

    def __getitem__(self, name: str) -> float:
        """The quality of the party called ``name``."""
        return float(self.quality[self.names.index(name)])

    def standard_error(self) -> NDArray[np.float64]:
        """Binomial standard error ``sqrt(q (1 - q) / n_eval)`` of each accuracy."""
        return np.sqrt(self.quality * (1.0 - self.quality) / self.n_eval)

    def to_dict(self) -> dict[str, Any]:
        """Plain JSON-ready form."""
        return plain(
            {
                "names": self.names,
                "quality": self.quality,
                "metric": self.metric,
                "n_eval": self.n_eval,
            }
        )

    def to_frame(self) -> Any:
        """A pandas DataFrame indexed by name (needs pandas).

        Columns: quality, its standard error and n_eval.
        """
        table = frame(
            {
                "name": list(self.names),
                "quality": self.quality,
                "standard_error": self.standard_error(),
                "n_eval": self.n_eval,
            },
            "ModelQualities",
        )
        return table.set_index("name")
