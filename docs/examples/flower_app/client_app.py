"""The firms' ClientApp: the App's own training and evaluation, with collabecon's mods.

``quality_mod(quality)`` adds each model's accuracy on the target set to the replies, and
answers the mediator's quality probes, so that ``DefectionFreeStrategy`` can apply its rule;
``ledger_mod(quality, gradient)`` answers the profiling requests of ``TokenLedgerStrategy``
(the accuracy and the loss gradient of the round's model on the target set, here the
node's validation data).
"""

from __future__ import annotations

import torch
from flwr.app import ArrayRecord, Context, Message, MetricRecord, RecordDict
from flwr.clientapp import ClientApp
from task import Net, evaluate, load_data, loss_gradient, settings, train

from learning.runtimes.flower.compose import quality_mod
from learning.runtimes.flower.compose_ipfl import ledger_mod

Examples = tuple[torch.Tensor, torch.Tensor]


def firm_data(context: Context) -> tuple[Examples, Examples]:
    """The node's own examples and the target set."""
    return load_data(int(context.node_config["partition-id"]), settings(context))


def model_of(arrays: ArrayRecord) -> Net:
    """The model ``arrays`` holds."""
    model = Net()
    model.load_state_dict(arrays.to_torch_state_dict())
    return model


def quality(arrays: ArrayRecord, context: Context) -> tuple[float, int]:
    """Accuracy on the target set, and its size."""
    _, target = firm_data(context)
    return evaluate(model_of(arrays), target)[1], len(target[1])


def gradient(arrays: ArrayRecord, context: Context) -> tuple[ArrayRecord, int]:
    """The gradient of the mean loss on the target set, and its size."""
    _, target = firm_data(context)
    return ArrayRecord(loss_gradient(model_of(arrays), target)), len(target[1])


# ledger_mod first: it answers the ledger's profiling requests before quality_mod sees them
app = ClientApp(mods=[ledger_mod(quality, gradient), quality_mod(quality)])


@app.train()
def train_model(message: Message, context: Context) -> Message:
    """Local SGD from the model sent; the trained model, its loss and the examples used."""
    config = settings(context)
    own, _ = firm_data(context)
    model = model_of(message.content["arrays"])
    seed = int(config["seed"]) + 1000 * int(message.content["config"]["server-round"])
    loss = train(model, own, config, seed + int(context.node_config["partition-id"]))
    metrics = MetricRecord({"train-loss": loss, "num-examples": len(own[1])})
    return Message(
        RecordDict({"arrays": ArrayRecord(model.state_dict()), "metrics": metrics}),
        reply_to=message,
    )


@app.evaluate()
def evaluate_model(message: Message, context: Context) -> Message:
    """Loss and accuracy of the model sent (this firm's own) on the target set."""
    _, target = firm_data(context)
    loss, accuracy = evaluate(model_of(message.content["arrays"]), target)
    metrics = MetricRecord({"loss": loss, "accuracy": accuracy, "num-examples": len(target[1])})
    return Message(RecordDict({"metrics": metrics}), reply_to=message)
