"""The ServerApp: the App's own FedAvg, wrapped by one of collabecon's mechanisms.

``mechanism = "mediator"`` (the default): the defection-free mediator. Each round FedAvg
trains the high firm's model on both firms' data; the mediator keeps the step only if it
does not lower the high firm's quality and lets the low firm move towards it only up to the
cap of Werner (2024), Algorithm 5, so that neither firm's revenue falls.
``mechanism = "ledger"``: IP-FL's token ledger (Khan et al., Alg. 1, one cluster). Each
round the nodes the ledger selects pay the price and FedAvg trains on them only; the ledger
refunds and rewards them by their first-order Shapley contributions.
"""

from __future__ import annotations

from flwr.app import ArrayRecord, Context
from flwr.serverapp import Grid, ServerApp
from flwr.serverapp.strategy import FedAvg, Result, Strategy
from task import initial_model, settings

from learning.runtimes.flower.compose import DefectionFreeStrategy
from learning.runtimes.flower.compose_ipfl import TokenLedgerStrategy


def user_strategy(min_nodes: int = 2) -> FedAvg:
    """The App's own strategy: plain FedAvg over (at least ``min_nodes`` of) the two firms."""
    return FedAvg(fraction_evaluate=1.0, min_train_nodes=min_nodes, min_available_nodes=min_nodes)


def run(grid: Grid, context: Context, strategy: Strategy) -> Result:
    """``strategy`` from the initial model for ``num-server-rounds`` rounds."""
    config = settings(context)
    model = initial_model(int(config["seed"]))
    return strategy.start(
        grid,
        ArrayRecord(model.state_dict()),
        num_rounds=int(config["num-server-rounds"]),
    )


app = ServerApp()


@app.main()
def main(grid: Grid, context: Context) -> None:
    """FedAvg under the chosen mechanism; print what it recorded each round."""
    if settings(context)["mechanism"] == "ledger":
        ledger = TokenLedgerStrategy(user_strategy(min_nodes=1), n_clients=2)
        run(grid, context, ledger)
        for row in ledger.history():
            print(
                f"round {row['round']}: {len(row['trained'])} trained, "
                f"tokens {[round(t, 3) for t in row['tokens']]} pool {row['pool']:.3f} "
                f"accuracy {row['accuracy']:.3f}"
            )
        return
    strategy = DefectionFreeStrategy(user_strategy())
    run(grid, context, strategy)
    market = strategy.market_report()
    for row in market.rows:
        print(
            f"round {row['t']}: q_l {row['q_l']:.3f} q_h {row['q_h']:.3f} "
            f"U_l {row['U_l']:.5f} U_h {row['U_h']:.5f}"
        )
    print(f"no revenue fell: {market.audit.never_decreased}")
