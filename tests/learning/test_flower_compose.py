"""The defection-free mediator around a Flower App of one's own (Werner 2024, Algorithm 5):
``quality_mod`` on the App's ClientApp, ``DefectionFreeStrategy`` around flwr's FedAvg, and
the example App of ``docs/examples/flower_app`` run on an in-process grid and in Flower's
simulation: no firm's revenue falls in any round (Proposition 3), FedAvg trains the high
firm's model, and each firm evaluates the model delivered to it. IP-FL's token ledger around
flwr's FedAvg (Khan et al., Alg. 1, one cluster): only the payers train, and the balances are
those of ``games.ipfl`` for the same replies, with the tokens conserved."""

from __future__ import annotations

import importlib
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
from flwr.supercore.task_identity import TaskIdentity  # noqa: E402

from games.ipfl import (  # noqa: E402
    IPFLConfig,
    TokenState,
    close_round,
    open_round,
    shapley_first_order,
)
from learning.runtimes.flower.compose import (  # noqa: E402
    PROBE,
    QUALITY,
    QUALITY_EXAMPLES,
    DefectionFreeStrategy,
    quality_mod,
)
from learning.runtimes.flower.compose_ipfl import (  # noqa: E402
    PROFILE,
    TokenLedgerStrategy,
    ledger_mod,
)
from learning.runtimes.flower.simulation import run_apps  # noqa: E402

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
    """Nodes ``0 .. n - 1``, each ``app`` called in this process; ``batches`` the messages sent
    together, call by call."""

    def __init__(self, app, run_config: dict, n: int = 2) -> None:
        self.app = app
        self.contexts = {k: _context(k, run_config) for k in range(n)}
        self.sent: list = []
        self.batches: list = []

    def get_node_ids(self):
        return list(self.contexts)

    def send_and_receive(self, messages, *, timeout=None):
        messages = list(messages)
        self.sent.extend(messages)
        self.batches.append(messages)
        return [self.app(m, self.contexts[m.metadata.dst_node_id]) for m in messages]


class CountingFedAvg(FedAvg):
    """flwr's FedAvg whose aggregates are kept by round (``aggregates``)."""

    def __init__(self, **options) -> None:
        super().__init__(**options)
        self.aggregates: dict = {}

    def aggregate_train(self, server_round, replies):
        arrays, metrics = super().aggregate_train(server_round, replies)
        self.aggregates[server_round] = arrays
        return arrays, metrics


def _counting_fedavg():
    """The two firms' FedAvg: both train and evaluate every round."""
    return CountingFedAvg(fraction_evaluate=1.0, min_train_nodes=2, min_available_nodes=2)


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


def _in_flowers_simulation(inner_strategy, wrap):
    """The example App's server with ``wrap(inner_strategy())`` and two of its SuperNodes in
    Flower's simulation (:func:`run_apps`): the strategy, the inner one and the result."""
    server_app, client_app = _example("server_app"), _example("client_app")
    runs = []
    app = ServerApp()

    @app.main()
    def main(grid, context):
        inner = inner_strategy()
        strategy = wrap(inner)
        runs.append((strategy, inner, server_app.run(grid, context, strategy)))

    run_apps(app, client_app.app, 2, cpus=2, pythonpath=[str(EXAMPLE)])
    assert len(runs) == 1
    return runs[0]


@pytest.mark.slow
def test_the_example_app_under_the_mediator_in_flowers_simulation():
    _check_run(*_in_flowers_simulation(_counting_fedavg, DefectionFreeStrategy))


# --------------------------------------------------------------------------- IP-FL's ledger

TARGETS = np.array([0.2, 0.4, 0.6, 0.8])  # client i's optimum of its loss (w - t_i)^2 / 2


def _ledger_app() -> ClientApp:
    """Four clients of a one-number model ``w``: client ``i`` steps halfway to ``TARGETS[i]``.

    It trains on ``i + 1`` examples, and its validation accuracy and loss gradient are
    ``1 - |w - t_i|`` and ``w - t_i`` on ``i + 1`` examples.
    """

    def accuracy(arrays, context):
        w = float(arrays["w"].numpy()[0])
        return float(np.clip(1.0 - abs(w - TARGETS[context.node_id]), 0.0, 1.0)), 1

    def gradient(arrays, context):
        w = arrays["w"].numpy()
        return ArrayRecord({"w": Array(w - TARGETS[context.node_id])}), context.node_id + 1

    app = ClientApp(mods=[ledger_mod(accuracy, gradient)])

    @app.train()
    def train(message, context):
        w = message.content["arrays"]["w"].numpy()
        content = {
            "arrays": ArrayRecord({"w": Array(w + 0.5 * (TARGETS[context.node_id] - w))}),
            "metrics": MetricRecord({"num-examples": context.node_id + 1}),
        }
        return Message(RecordDict(content), reply_to=message)

    @app.evaluate()
    def evaluate(message, context):
        return Message(RecordDict({"metrics": MetricRecord({"num-examples": 1})}), reply_to=message)

    return app


def _one_payer_fedavg(**kwargs):
    """flwr's FedAvg that trains with a single payer, keeping its aggregates by round."""
    return CountingFedAvg(min_train_nodes=1, min_available_nodes=1, **kwargs)


def test_the_ledger_trains_only_its_payers_and_settles_as_games_ipfl():
    config = IPFLConfig(tok_init=1.0, price=1.0)
    grid = InProcessGrid(_ledger_app(), {}, n=4)
    inner = _one_payer_fedavg()
    strategy = TokenLedgerStrategy(inner, n_clients=4, config=config, seed=3)
    rounds = 4
    result = strategy.start(grid, ArrayRecord({"w": Array(np.zeros(1))}), num_rounds=rounds)
    assert result.arrays is inner.aggregates[rounds]  # the inner strategy made every model
    assert sorted(inner.aggregates) == list(range(1, rounds + 1))
    trains = [b for b in grid.batches if b and b[0].metadata.message_type == "train"]
    assert len(trains) == rounds
    state, w, starved = TokenState.start(4, 1, config), 0.0, 0
    for r, played in enumerate(strategy.rounds):
        sent = [int(m.metadata.dst_node_id) for m in trains[r]]
        before = state.ledger.tokens
        opening = open_round(
            state, r, config, np.random.default_rng([3, r]),
            scores=None if r == 0 else np.ones((4, 1)),
        )  # fmt: skip
        payers = opening.payers[0]
        # only the payers the ledger selected are sent train messages, each once
        assert sorted(sent) == sorted(payers.tolist()) == sorted(played.selected)
        assert played.paid == (r > 0) and list(played.trained) == payers.tolist()
        if r > 0:
            broke = np.flatnonzero(before < config.price)
            assert not set(broke) & set(sent)  # a client that cannot pay does not train
            starved += broke.size
        # the same round from the App's own arithmetic and games.ipfl
        n = payers + 1.0
        trained = w + 0.5 * (TARGETS[payers] - w)
        w = float(n @ trained / n.sum())  # FedAvg by num-examples
        g = float(n @ (w - TARGETS[payers]) / n.sum())
        psi = shapley_first_order([g], trained[:, None], [w], n / n.sum())
        acc = float(np.mean(1.0 - np.abs(w - TARGETS[payers])))
        state, refunds = close_round(opening, {0: acc}, {0: psi}, config)
        np.testing.assert_allclose(played.contributions, psi, atol=1e-12)
        np.testing.assert_allclose(played.state.ledger.tokens, state.ledger.tokens, atol=1e-12)
        np.testing.assert_allclose(played.state.ledger.pools, state.ledger.pools, atol=1e-12)
        assert played.refund == pytest.approx(refunds[0])
        assert played.state.ledger.total == pytest.approx(4 * config.tok_init)  # conserved
        metrics = result.train_metrics_clientapp[r + 1]
        assert metrics["ledger-accuracy"] == pytest.approx(acc)
        assert metrics["ledger-payers"] == payers.size
    assert float(result.arrays["w"].numpy()[0]) == pytest.approx(w)
    assert starved > 0  # some client ran out of tokens and sat a round out
    assert strategy.balances() == dict(enumerate(state.ledger.tokens.tolist()))
    profiles = [m for m in grid.sent if PROFILE in m.content.get("config", {})]
    assert len(profiles) == sum(len(p.trained) for p in strategy.rounds)


def test_a_payer_the_inner_strategy_leaves_out_pays_and_gets_nothing_back():
    config = IPFLConfig(tok_init=5.0, price=1.0)
    grid = InProcessGrid(_ledger_app(), {}, n=4)
    strategy = TokenLedgerStrategy(
        _one_payer_fedavg(fraction_train=0.5), n_clients=4, config=config
    )
    strategy.start(grid, ArrayRecord({"w": Array(np.zeros(1))}), num_rounds=3)
    for played in strategy.rounds:
        assert len(played.trained) == 1 < len(played.selected)  # FedAvg sampled one of two
        assert played.state.ledger.total == pytest.approx(4 * config.tok_init)
    paid = strategy.rounds[1]
    left_out = set(paid.selected) - set(paid.trained)
    before = strategy.rounds[0].state.ledger.tokens
    for node in left_out:  # paid the price, got nothing back
        assert paid.state.ledger.tokens[node] == pytest.approx(before[node] - config.price)


def test_the_ledger_refuses_a_client_app_without_its_mod():
    with pytest.raises(ValueError, match="n_clients"):
        TokenLedgerStrategy(FedAvg(), n_clients=0)
    app = ClientApp()

    @app.train()
    def train(message, context):
        content = {
            "arrays": message.content["arrays"],
            "metrics": MetricRecord({"num-examples": 1}),
        }
        return Message(RecordDict(content), reply_to=message)

    @app.evaluate()
    def evaluate(message, context):
        return Message(RecordDict({"metrics": MetricRecord({"num-examples": 1})}), reply_to=message)

    strategy = TokenLedgerStrategy(_one_payer_fedavg(), n_clients=2)
    with pytest.raises(ValueError, match="ledger_mod"):
        strategy.start(InProcessGrid(app, {}), ArrayRecord({"w": Array(np.zeros(1))}), 1)


def test_the_ledger_refuses_an_inner_strategy_waiting_for_more_nodes_than_payers():
    """flwr's FedAvg waits for ``min_available_nodes`` (2 by default) forever; under the ledger
    a round of fewer payers is refused instead of hanging."""
    config = IPFLConfig(tok_init=1.0, price=1.0)
    grid = InProcessGrid(_ledger_app(), {}, n=4)
    strategy = TokenLedgerStrategy(FedAvg(min_available_nodes=5), n_clients=4, config=config)
    with pytest.raises(ValueError, match="min_available_nodes=5 exceeds"):
        strategy.start(grid, ArrayRecord({"w": Array(np.zeros(1))}), num_rounds=1)


def _check_ledger(strategy, inner, result) -> None:
    """The example App's two firms under the ledger: both pay and train every round, the
    Shapley values sum to 0 under FedAvg, and the balances are those of ``games.ipfl`` for
    the recorded accuracies and contributions, with the tokens conserved."""
    assert result.arrays is inner.aggregates[2]
    config, state = strategy.config, TokenState.start(2, 1, strategy.config)
    for r, played in enumerate(strategy.rounds):
        # two firms: one performance slot and one explorer, so both pay and train
        assert sorted(played.trained) == sorted(strategy.clients)
        assert 0.0 < played.accuracy <= 1.0
        # FedAvg's aggregate: the first-order Shapley values sum to 0 (ipfl.shapley.zero_sum)
        assert abs(played.contributions.sum()) < 1e-6 * np.abs(played.contributions).max()
        opening = open_round(
            state, r, config, np.random.default_rng([0, r]),
            scores=None if r == 0 else np.ones((2, 1)),
        )  # fmt: skip
        assert [strategy.clients[i] for i in opening.payers[0]] == list(played.trained)
        state, _ = close_round(opening, {0: played.accuracy}, {0: played.contributions}, config)
        np.testing.assert_allclose(played.state.ledger.tokens, state.ledger.tokens)
        assert played.state.ledger.total == pytest.approx(2 * config.tok_init)
    assert strategy.rounds[1].paid and np.ptp(strategy.rounds[1].state.ledger.tokens) > 0


@pytest.mark.slow
def test_the_example_app_under_the_ledger_on_an_in_process_grid():
    server_app = _example("server_app")
    grid = InProcessGrid(_example("client_app").app, {"mechanism": "ledger"})
    inner = _one_payer_fedavg()
    strategy = TokenLedgerStrategy(inner, n_clients=2)
    result = server_app.run(grid, _context(0, {"mechanism": "ledger"}), strategy)
    _check_ledger(strategy, inner, result)


@pytest.mark.slow
def test_the_example_app_under_the_ledger_in_flowers_simulation():
    ledger = _in_flowers_simulation(
        _one_payer_fedavg, lambda inner: TokenLedgerStrategy(inner, n_clients=2)
    )
    _check_ledger(*ledger)
