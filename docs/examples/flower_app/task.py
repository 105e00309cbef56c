"""The App's own model, data and training: a small MLP on scikit-learn's 8x8 digits.

Node ``k`` (its ``partition-id``) is firm ``k``: it trains on its own examples
(``examples-firm-<k>``) and measures models on the target set, the same examples on
every node. The run's settings are ``[tool.flwr.app.config]`` of ``pyproject.toml``,
overridden by the run's configuration.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import numpy as np
import tomllib
import torch
from flwr.app import Context
from torch import nn

from learning.data import load_dataset

DEFAULTS: dict[str, Any] = tomllib.loads(
    (Path(__file__).with_name("pyproject.toml")).read_text(encoding="utf-8")
)["tool"]["flwr"]["app"]["config"]


def settings(context: Context) -> dict[str, Any]:
    """``pyproject.toml``'s settings, overridden by the run's configuration."""
    return {**DEFAULTS, **context.run_config}


class Net(nn.Module):
    """64 pixels -> 32 hidden units -> 10 digits."""

    def __init__(self) -> None:
        super().__init__()
        self.layers = nn.Sequential(nn.Flatten(), nn.Linear(64, 32), nn.ReLU(), nn.Linear(32, 10))

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        """Logits of the 10 digits."""
        return self.layers(x)


def initial_model(seed: int) -> Net:
    """The model every firm starts from."""
    torch.manual_seed(seed)
    return Net()


def load_data(
    firm: int, config: dict[str, Any]
) -> tuple[tuple[torch.Tensor, torch.Tensor], tuple[torch.Tensor, torch.Tensor]]:
    """Firm ``firm``'s training examples and the target set, from one shuffle of the digits."""
    data = load_dataset("digits")
    order = np.random.default_rng(int(config["seed"])).permutation(len(data.y))
    n_target = int(config["target-examples"])
    sizes = [int(config[f"examples-firm-{k}"]) for k in range(2)]
    start = n_target + sum(sizes[:firm])
    mine, target = order[start : start + sizes[firm]], order[:n_target]
    x, y = torch.from_numpy(data.x), torch.from_numpy(data.y)
    return (x[mine], y[mine]), (x[target], y[target])


def train(
    model: Net, data: tuple[torch.Tensor, torch.Tensor], config: dict[str, Any], seed: int
) -> float:
    """SGD on ``data`` for ``local-epochs``; the mean training loss of the last epoch."""
    x, y = data
    generator = torch.Generator().manual_seed(seed)
    optimiser = torch.optim.SGD(model.parameters(), lr=float(config["learning-rate"]))
    batch = int(config["batch-size"])
    model.train()
    losses = []
    for _ in range(int(config["local-epochs"])):
        losses = []
        for rows in torch.randperm(len(y), generator=generator).split(batch):
            optimiser.zero_grad()
            loss = nn.functional.cross_entropy(model(x[rows]), y[rows])
            loss.backward()
            optimiser.step()
            losses.append(float(loss.detach()))
    return float(np.mean(losses))


@torch.no_grad()
def evaluate(model: Net, data: tuple[torch.Tensor, torch.Tensor]) -> tuple[float, float]:
    """Mean cross-entropy and accuracy of ``model`` on ``data``."""
    x, y = data
    model.eval()
    logits = model(x)
    loss = float(nn.functional.cross_entropy(logits, y))
    return loss, float((logits.argmax(1) == y).float().mean())


def loss_gradient(model: Net, data: tuple[torch.Tensor, torch.Tensor]) -> dict[str, torch.Tensor]:
    """The gradient of the mean cross-entropy of ``model`` on ``data``, parameter by parameter."""
    x, y = data
    model.eval()
    model.zero_grad()
    nn.functional.cross_entropy(model(x), y).backward()
    return {name: p.grad.detach().clone() for name, p in model.named_parameters()}
