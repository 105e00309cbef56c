"""The round loop: determinism, client sampling, and checkpoint / resume."""

import dataclasses
import math
import pickle

import numpy as np
import pytest
import torch

from learning.algorithms import build_algorithm
from learning.loop import (
    CHECKPOINT_FILE,
    DIVERGENCE_FACTOR,
    Checkpointing,
    DivergedError,
    check_run_length,
    divergence,
    divergence_limit,
    run_rounds,
)
from learning.optim import SGDConfig
from tests.learning._tiny_problem import initial_models, tiny_context


def _run(rounds, seed=0, **kw):
    ctx = tiny_context()
    algorithm = build_algorithm("fedavg", ctx, finetune_steps=2)
    return run_rounds(algorithm, initial_models(ctx), rounds, seed, **kw)


def _equal(a, b):
    return all(torch.equal(a[k], b[k]) for k in a)


def test_same_seed_same_run_and_history():
    a, b = _run(3, seed=5, clients_per_round=3), _run(3, seed=5, clients_per_round=3)
    assert _equal(a.models, b.models) and a.history == b.history
    assert [h.round for h in a.history] == [1, 2, 3]
    assert not _equal(a.models, _run(3, seed=6, clients_per_round=3).models)


def test_resume_continues_to_the_uninterrupted_numbers(tmp_path):
    full = _run(4, seed=1, clients_per_round=3)
    fingerprint = {"what": "tiny"}
    half = _run(
        2,
        seed=1,
        clients_per_round=3,
        fingerprint=fingerprint,
        checkpoint=Checkpointing(tmp_path, every=2),
    )
    assert (tmp_path / CHECKPOINT_FILE).exists()
    assert [p.name for p in tmp_path.iterdir()] == [CHECKPOINT_FILE]  # no temporary left
    resumed = _run(
        4,
        seed=None,
        clients_per_round=3,
        fingerprint=fingerprint,
        checkpoint=Checkpointing(tmp_path, every=2, resume=True),
    )
    assert resumed.resumed_from == 2 and half.resumed_from == 0
    assert _equal(resumed.models, full.models)
    np.testing.assert_array_equal(resumed.evaluation.loss, full.evaluation.loss)
    assert resumed.history == full.history


def test_resume_refuses_another_configuration_or_fewer_rounds(tmp_path):
    _run(2, fingerprint={"lr": 0.1}, checkpoint=Checkpointing(tmp_path))
    with pytest.raises(ValueError, match="another configuration"):
        _run(3, fingerprint={"lr": 0.2}, checkpoint=Checkpointing(tmp_path, resume=True))
    with pytest.raises(ValueError, match="past the requested"):
        _run(1, fingerprint={"lr": 0.1}, checkpoint=Checkpointing(tmp_path, resume=True))


def test_bad_loop_arguments():
    with pytest.raises(ValueError, match="clients_per_round"):
        _run(1, clients_per_round=99)
    with pytest.raises(ValueError, match="rounds"):
        _run(0)
    with pytest.raises(ValueError, match="every"):
        Checkpointing("x", every=0)


def test_observe_sees_the_state_at_every_evaluation():
    seen = []
    out = _run(5, seed=2, eval_every=2, observe=lambda done, state: seen.append(done))
    assert seen == [h.round for h in out.history] == [2, 4, 5]


def _diverging(**kw):
    ctx = tiny_context()
    ctx = dataclasses.replace(
        ctx, local=dataclasses.replace(ctx.local, sgd=SGDConfig(1e8, momentum=0.5))
    )
    return run_rounds(build_algorithm("fedavg", ctx), initial_models(ctx), 4, 0, **kw)


def test_a_diverging_run_stops_at_the_round_it_diverged(tmp_path):
    with pytest.raises(DivergedError, match="training diverged at round 1") as raised:
        _diverging()
    found = raised.value.divergence
    assert found is not None and found.round == 1 and found.lr == 1e8
    assert not (math.isfinite(found.loss) and found.loss <= found.limit)
    stopped = _diverging(on_divergence="stop", checkpoint=Checkpointing(tmp_path))
    assert stopped.diverged == found and stopped.history == ()
    assert not (tmp_path / CHECKPOINT_FILE).exists()  # the diverged round is not kept
    assert _run(2).diverged is None
    again = pickle.loads(pickle.dumps(raised.value))
    assert again.divergence == found and str(again) == str(raised.value)
    assert again.record()["failed"] == found.reason
    with pytest.raises(ValueError, match="on_divergence"):
        _diverging(on_divergence="ignore")


def test_the_divergence_limit_is_a_multiple_of_the_initial_loss():
    assert divergence_limit(2.0) == 2 * DIVERGENCE_FACTOR
    assert divergence_limit(1e-9) == DIVERGENCE_FACTOR  # the floor of 1
    assert divergence_limit(float("nan")) == math.inf
    assert divergence("x", 2.0 * DIVERGENCE_FACTOR, 1, 0.1, divergence_limit(2.0)) is None
    over = divergence("x", 3.0 * DIVERGENCE_FACTOR, 1, 0.1, divergence_limit(2.0))
    assert over is not None and "above 2e+04" in over.reason
    assert divergence("x", float("inf"), None, 0.1).reason.startswith("training diverged: x is inf")


def test_a_run_that_cannot_finish_is_refused():
    assert check_run_length({"rounds": 10, "clients": 10}, runs=3) == 300
    with pytest.raises(ValueError, match=r"rounds=1000000 x clients=10000000 asks for 1e\+13"):
        check_run_length({"rounds": 10**6, "clients": 10**7})
    with pytest.raises(ValueError, match="x 2 runs"):
        check_run_length({"rounds": 10**6, "clients": 10**6}, runs=2)
