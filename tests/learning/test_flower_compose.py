"""The defection-free mediator around a Flower App of one's own (Werner 2024, Algorithm 5):
``quality_mod`` on the App's ClientApp, ``DefectionFreeStrategy`` around flwr's FedAvg, and
the example App of ``docs/examples/flower_app`` run on an in-process grid and in Flower's
simulation: no firm's revenue falls in any round (Proposition 3), FedAvg trains the high
firm's model, and each firm evaluates the model delivered to it."""

from __future__ import annotations

import importlib
import os
import sys
from pathlib import Path

import numpy as np
import pytest

from games.defection_free import DefectionFreeConfig

pytestmark = pytest.mark.flower
pytest.importorskip("flwr.serverapp.strategy", reason="flwr is not installed")
from flwr.app import (  # noqa: E402
    Array,
    ArrayRecord,
    ConfigRecord,
    Context,
    Message,
    MetricRecord,
    RecordDict,
)
from flwr.clientapp import ClientApp  # noqa: E402
from flwr.serverapp import ServerApp  # noqa: E402
from flwr.serverapp.strategy import FedAvg  # noqa: E402
from flwr.simulation import run_simulation  # noqa: E402
from flwr.supercore.task_identity import TaskIdentity  # noqa: E402

from learning.runtimes.flower.compose import (  # noqa: E402
    PROBE,
    QUALITY,
    QUALITY_EXAMPLES,
    DefectionFreeStrategy,
    quality_mod,
)

ROOT = Path(__file__).resolve().parents[2]
EXAMPLE = ROOT / "docs" / "examples" / "flower_app"


def _example(name: str):
    """A module of the example App, importable as the App's own top-level module."""
    if str(EXAMPLE) not in sys.path:
        sys.path.insert(0, str(EXAMPLE))
    return importlib.import_module(name)


@pytest.fixture(autouse=True)
def _run_identity(monkeypatch):
    """Messages are stamped with the run of the process; a test process has none."""
    monkeypatch.setattr(TaskIdentity, "_run_id", 1)
    monkeypatch.setattr(TaskIdentity, "_node_id", 0)
    monkeypatch.setattr(TaskIdentity, "_task_id", 1)


def _context(node: int, run_config: dict) -> Context:
    return Context(
        run_id=1,
        node_id=node,
        node_config={"partition-id": node},
        state=RecordDict(),
        run_config=dict(run_config),
    )


class InProcessGrid:
    """Nodes 0 and 1, each ``app`` called in this process."""

    def __init__(self, app, run_config: dict) -> None:
        self.app = app
        self.contexts = {k: _context(k, run_config) for k in (0, 1)}
        self.sent: list = []

    def get_node_ids(self):
        return list(self.contexts)

    def send_and_receive(self, messages, *, timeout=None):
        messages = list(messages)
        self.sent.extend(messages)
        return [self.app(m, self.contexts[m.metadata.dst_node_id]) for m in messages]


def _counting_fedavg():
    """flwr's FedAvg whose aggregates are kept by round (``aggregates``)."""

    class CountingFedAvg(FedAvg):
        def __init__(self) -> None:
            super().__init__(fraction_evaluate=1.0, min_train_nodes=2, min_available_nodes=2)
            self.aggregates: dict = {}

        def aggregate_train(self, server_round, replies):
            arrays, metrics = super().aggregate_train(server_round, replies)
            self.aggregates[server_round] = arrays
            return arrays, metrics

    return CountingFedAvg()


def _message(content: dict, kind: str = "train") -> Message:
    return Message(RecordDict(content), dst_node_id=3, message_type=kind)


def test_quality_mod_adds_the_quality_of_the_trained_model_to_a_train_reply():

    seen = []

    def quality(arrays, context):
        seen.append(float(arrays["w"].numpy()[0]))
        return 0.25, 40

    def train(message, context):
        trained = ArrayRecord({"w": Array(np.array([2.0]))})
        return Message(
            RecordDict({"arrays": trained, "metrics": MetricRecord({"num-examples": 7})}),
            reply_to=message,
        )

    request = _message(
        {"arrays": ArrayRecord({"w": Array(np.array([1.0]))}), "config": ConfigRecord({})}
    )
    reply = quality_mod(quality)(request, _context(3, {}), train)
    assert seen == [2.0]  # the model the node sends back
    assert dict(reply.content["metrics"]) == {
        "num-examples": 7,
        QUALITY: 0.25,
        QUALITY_EXAMPLES: 40,
    }


def test_quality_mod_measures_the_model_sent_for_evaluation_and_answers_a_probe_alone():

    calls = []

    def evaluate(message, context):
        calls.append(message)
        return Message(RecordDict({"metrics": MetricRecord({"loss": 1.5})}), reply_to=message)

    mod = quality_mod(lambda arrays, context: (float(arrays["w"].numpy()[0]), 10))
    model = ArrayRecord({"w": Array(np.array([0.75]))})
    evaluated = mod(
        _message({"arrays": model, "config": ConfigRecord({})}, "evaluate"),
        _context(3, {}),
        evaluate,
    )
    assert evaluated.content["metrics"][QUALITY] == 0.75 and len(calls) == 1
    probe = _message({"arrays": model, "config": ConfigRecord({PROBE: True})}, "evaluate")
    answered = mod(probe, _context(3, {}), evaluate)
    assert answered.content["metrics"][QUALITY] == 0.75 and len(calls) == 1
    with pytest.raises(ValueError, match=r"\[0, 1\]"):
        quality_mod(lambda arrays, context: (1.5, 10))(probe, _context(3, {}), evaluate)


def test_the_mediator_refuses_a_paced_schedule_and_a_reply_without_a_quality():

    with pytest.raises(ValueError, match="paced"):
        DefectionFreeStrategy(FedAvg(), config=DefectionFreeConfig(schedule="paced"))

    class Bare:
        """Two nodes whose ClientApp lacks quality_mod."""

        def get_node_ids(self):
            return [0, 1]

        def send_and_receive(self, messages, *, timeout=None):
            return [
                Message(
                    RecordDict({"arrays": ArrayRecord(), "metrics": MetricRecord({"n": 1})}),
                    reply_to=m,
                )
                for m in messages
            ]

    with pytest.raises(ValueError, match="quality_mod"):
        DefectionFreeStrategy(FedAvg()).configure_train(1, ArrayRecord(), ConfigRecord(), Bare())


def _scalar_app(received: dict) -> ClientApp:
    """Two firms whose model is one number ``w`` and whose quality is ``w`` itself.

    Training adds 0.1 (node 0) or 0.4 (node 1) to ``w``, and takes 0.1 off in round 2;
    ``received`` keeps the ``w`` each node was last sent for evaluation.
    """

    def quality(arrays, context):
        return float(np.clip(arrays["w"].numpy()[0], 0.0, 1.0)), 1

    app = ClientApp(mods=[quality_mod(quality)])

    @app.train()
    def train(message, context):
        w = message.content["arrays"]["w"].numpy()
        step = (
            -0.1 if message.content["config"]["server-round"] == 2 else (0.1, 0.4)[context.node_id]
        )
        content = {
            "arrays": ArrayRecord({"w": Array(w + step)}),
            "metrics": MetricRecord({"num-examples": 1}),
        }
        return Message(RecordDict(content), reply_to=message)

    @app.evaluate()
    def evaluate(message, context):
        received[context.node_id] = float(message.content["arrays"]["w"].numpy()[0])
        return Message(RecordDict({"metrics": MetricRecord({"num-examples": 1})}), reply_to=message)

    return app


def test_the_mediator_caps_the_low_firm_undoes_a_falling_step_and_delivers_each_model():
    received: dict = {}
    grid = InProcessGrid(_scalar_app(received), {})
    inner = _counting_fedavg()
    strategy = DefectionFreeStrategy(inner)
    start = ArrayRecord({"w": Array(np.zeros(1))})
    result = strategy.start(grid, start, num_rounds=2)
    record, market = strategy.play_record(), strategy.market_report()
    assert strategy.nodes == {"low": 0, "high": 1}
    np.testing.assert_allclose(record.q_h, [0.4, 0.65, 0.65])  # FedAvg's 0.65, then undone
    assert 0.1 < record.q_l[1] <= record.cap[1] + 1e-12  # moved, up to the cap
    assert record.q_l[2] == record.q_l[1]  # the high firm did not rise: the low firm waits
    assert market.audit.never_decreased
    assert result.arrays is inner.aggregates[1] is strategy.models["high"]
    assert received == {0: pytest.approx(record.q_l[2]), 1: pytest.approx(0.65)}
    assert result.train_metrics_clientapp[2]["q-high"] == pytest.approx(0.65)


def _check_run(strategy, inner, result) -> None:
    """Proposition 3 on the run, FedAvg's aggregates as the high firm's models, and each firm's
    evaluation on its own model."""
    record = strategy.play_record()
    market = strategy.market_report()
    assert record.q_l.size == 3  # the disagreement point and two rounds
    assert market.audit.never_decreased
    assert min(market.audit.min_change_low, market.audit.min_change_high) >= 0.0
    assert record.q_l[-1] > record.q_l[0]  # the low firm gained
    assert sorted(inner.aggregates) == [1, 2]
    assert np.all(np.diff(record.q_h) > 0)  # each FedAvg step raised the high firm's quality
    assert result.arrays is inner.aggregates[2] is strategy.models["high"]
    for t in (1, 2):
        train = result.train_metrics_clientapp[t]
        assert "train-loss" in train  # FedAvg's mean of the App's own metric
        assert train["q-low"] == pytest.approx(record.q_l[t])
        assert train["revenue-high"] == pytest.approx(market.rows[t]["U_h"])
        # both firms evaluated on 200 or 400 target examples each: equal weights
        evaluation = result.evaluate_metrics_clientapp[t]
        assert evaluation["accuracy"] == pytest.approx((record.q_l[t] + record.q_h[t]) / 2)


@pytest.mark.slow
def test_the_example_app_under_the_mediator_on_an_in_process_grid():

    server_app = _example("server_app")
    grid = InProcessGrid(_example("client_app").app, {})
    inner = _counting_fedavg()
    strategy = DefectionFreeStrategy(inner)
    result = server_app.run(grid, _context(0, {}), strategy)
    _check_run(strategy, inner, result)
    # every probe went to one of the two firms; each firm evaluated only its own model
    probes = [m for m in grid.sent if PROBE in m.content.get("config", {})]
    assert probes and {m.metadata.dst_node_id for m in probes} <= set(strategy.nodes.values())
    delivered = [m for m in grid.sent if m.metadata.message_type == "evaluate" and m not in probes]
    owner = {node: firm for firm, node in strategy.nodes.items()}
    last = {owner[m.metadata.dst_node_id]: m.content["arrays"] for m in delivered[-2:]}
    assert last["low"] is strategy.models["low"] and last["high"] is strategy.models["high"]


@pytest.mark.slow
def test_the_example_app_under_the_mediator_in_flowers_simulation(monkeypatch):

    server_app, client_app = _example("server_app"), _example("client_app")
    path = os.pathsep.join([str(EXAMPLE), str(ROOT), os.environ.get("PYTHONPATH", "")])
    monkeypatch.setenv("PYTHONPATH", path)  # the Ray workers import the App's modules
    monkeypatch.setenv("FLWR_TELEMETRY_ENABLED", "0")
    runs = []
    app = ServerApp()

    @app.main()
    def main(grid, context):
        inner = _counting_fedavg()
        strategy = DefectionFreeStrategy(inner)
        runs.append((strategy, inner, server_app.run(grid, context, strategy)))

    run_simulation(
        app,
        client_app.app,
        num_supernodes=2,
        backend_config={
            "client_resources": {"num_cpus": 1, "num_gpus": 0.0},
            "init_args": {"include_dashboard": False, "num_cpus": 2},
        },
    )
    assert len(runs) == 1
    _check_run(*runs[0])
