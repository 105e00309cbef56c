"""The round loop: determinism, client sampling, and checkpoint / resume."""

import numpy as np
import pytest
import torch

from learning.algorithms import build_algorithm
from learning.loop import CHECKPOINT_FILE, Checkpointing, run_rounds
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
