"""A firm's node half of defection-free collaboration on Flower (Werner 2024, ch. 3, Algorithm 5).

:func:`register_duopoly` registers on a ClientApp what a firm's node answers to the mediator
of two firms (:mod:`learning.runtimes.flower.duopoly`) and of n firms
(:mod:`learning.runtimes.flower.n_firms`): its partition and size (``query.duopoly``), and
the gradients of the mean loss of each sent model (a stack of them, one per firm that
learns from this firm's data) on the sent rows of its examples (``train.duopoly``). This half imports neither the game nor the in-process driver, so a
node that never plays it does not pay for them.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import numpy as np
import torch
from flwr.app import ArrayRecord, Context, Message, MetricRecord
from flwr.clientapp import ClientApp

from learning.engine import BatchedEngine, Task
from learning.models import build_model
from learning.runtimes.flower.records import pack, record_of, unpack
from learning.runtimes.flower.requests import answer, partition_of

__all__ = ["register_duopoly"]

_FIRMS: dict[tuple[str, int], tuple[BatchedEngine, torch.Tensor, torch.Tensor]] = {}


def _firm(data_dir: str, partition: int) -> tuple[BatchedEngine, torch.Tensor, torch.Tensor]:
    """The firm's engine and its examples, cached per process."""
    key = (str(data_dir), int(partition))
    if key not in _FIRMS:
        meta = json.loads((Path(data_dir) / "meta.json").read_text())
        path = Path(data_dir) / f"partition-{int(partition)}.npz"
        if not path.exists():
            raise ValueError(f"partition {partition}: {path} does not exist")
        with np.load(path, allow_pickle=False) as d:
            x, y = torch.from_numpy(d["x"]), torch.from_numpy(d["y"])
        model = build_model(
            str(meta["setup"]["model"]),
            tuple(meta["input_shape"]),
            int(meta["n_classes"]),
            generator=torch.Generator().manual_seed(0),
        )
        engine = BatchedEngine(model, Task.for_classes(int(meta["n_classes"])), torch.device("cpu"))
        _FIRMS[key] = (engine, x, y)
    return _FIRMS[key]


def register_duopoly(app: ClientApp) -> None:
    """Register a firm's node half on ``app``: ``query.duopoly`` and ``train.duopoly``.

    ``query.duopoly`` answers its partition and size; ``train.duopoly`` the stacked gradients
    of the mean loss of every sent model on the sent rows, with the losses (``losses``).
    """

    @app.query("duopoly")
    def _query(message: Message, context: Context) -> Message:
        data_dir, partition = partition_of(message, context)
        metrics: dict[str, Any] = {"partition-id": partition, "num-examples": -1}
        try:
            metrics["num-examples"] = int(_firm(data_dir, partition)[2].shape[0])
        except ValueError:  # a node beyond the two firms has no partition
            pass
        return answer(message, {"metrics": MetricRecord(metrics)})

    @app.train("duopoly")
    def _gradient(message: Message, context: Context) -> Message:
        engine, x, y = _firm(*partition_of(message, context))
        model = unpack(
            record_of(message.content, "arrays", ArrayRecord).to_torch_state_dict(), "model"
        )
        idx = torch.as_tensor(
            np.asarray(message.content["config"]["rows"], dtype=np.int64), dtype=torch.long
        )
        models = next(iter(model.values())).shape[0]
        xb, yb = x[idx], y[idx]
        grads, loss = engine.gradients(
            model, xb.unsqueeze(0).expand(models, *xb.shape), yb.unsqueeze(0).expand(models, -1)
        )
        return answer(
            message,
            {
                "arrays": ArrayRecord(pack(grads, "gradient")),
                "metrics": MetricRecord(
                    {"losses": [float(v) for v in loss], "rows": int(idx.numel())}
                ),
            },
        )
