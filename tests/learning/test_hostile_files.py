"""Loading a file never runs code: crafted CIFAR batches, .npz archives and checkpoints
are refused.

Each hostile file holds an object whose ``__reduce__`` makes an unrestricted unpickler call
a function (``os.system`` or ``exec``) that creates a marker file. The loaders must refuse it
with one :class:`ValueError` naming the file, and the marker must not exist afterwards. A
control test shows that :func:`pickle.load` does run each payload, so the marker is a real
witness.
"""

from __future__ import annotations

import os
import pickle
import shlex
import warnings
from pathlib import Path

import numpy as np
import pytest
import torch

from learning.algorithms import build_algorithm
from learning.data import load_dataset
from learning.drivers.ipfl import IPFLRun, run_ipfl
from learning.loop import CHECKPOINT_FILE, Checkpointing, read_checkpoint, run_rounds
from tests.learning._tiny_problem import initial_models, tiny_context


class _System:
    """Unpickling calls ``os.system("touch MARKER")``."""

    def __init__(self, marker: Path) -> None:
        self.marker = marker

    def __reduce__(self):  # type: ignore[no-untyped-def]
        return os.system, (f"touch {shlex.quote(str(self.marker))}",)


class _Exec:
    """Unpickling calls ``exec`` on code that writes MARKER."""

    def __init__(self, marker: Path) -> None:
        self.marker = marker

    def __reduce__(self):  # type: ignore[no-untyped-def]
        return exec, (f"open({str(self.marker)!r}, 'w').close()",)


PAYLOADS = {"os.system": _System, "exec": _Exec}
#: What the refusal names: the global the file asks for.
REFUSED = {"os.system": "system", "exec": "exec"}


def _one_line(message: str) -> bool:
    return "\n" not in message.strip()


@pytest.mark.parametrize("kind", PAYLOADS)
def test_each_payload_runs_under_an_unrestricted_unpickler(tmp_path, kind):
    marker = tmp_path / "ran"
    pickle.loads(pickle.dumps(PAYLOADS[kind](marker)))
    assert marker.exists()


def _cifar10_test_batch(tmp_path: Path, batch: object) -> Path:
    folder = tmp_path / "cifar-10-batches-py"
    folder.mkdir()
    path = folder / "test_batch"
    path.write_bytes(pickle.dumps(batch))
    return path


@pytest.mark.parametrize("kind", PAYLOADS)
@pytest.mark.parametrize("where", ["whole file", "data array", "label list"])
def test_cifar_batch_that_would_run_code_is_refused(tmp_path, kind, where):
    marker = tmp_path / "ran"
    evil = PAYLOADS[kind](marker)
    good = {b"data": np.zeros((2, 3072), dtype=np.uint8), b"labels": [0, 1]}
    batch = {
        "whole file": evil,
        "data array": {**good, b"data": evil},
        "label list": {**good, b"labels": [0, evil]},
    }[where]
    path = _cifar10_test_batch(tmp_path, batch)
    with pytest.raises(ValueError) as info:
        load_dataset("cifar10", data_dir=tmp_path, part="test")
    assert not marker.exists()
    message = str(info.value)
    assert _one_line(message)
    assert str(path) in message and REFUSED[kind] in message


@pytest.mark.parametrize("kind", PAYLOADS)
def test_npz_archive_that_would_run_code_is_refused(tmp_path, kind):
    marker = tmp_path / "ran"
    evil = np.empty((1, 28, 28), dtype=object)
    evil[0, 0, 0] = PAYLOADS[kind](marker)
    path = tmp_path / "mnist.npz"
    np.savez(path, x_train=evil, y_train=np.zeros(1))
    with pytest.raises(ValueError) as info:
        load_dataset("mnist", data_dir=tmp_path, part="train")
    assert not marker.exists()
    assert _one_line(str(info.value)) and str(path) in str(info.value)


def _checkpoint_with(tmp_path: Path, payload: dict) -> Path:
    path = tmp_path / CHECKPOINT_FILE
    torch.save(payload, path)
    return path


@pytest.mark.parametrize("kind", PAYLOADS)
def test_round_loop_checkpoint_that_would_run_code_is_refused(tmp_path, kind):
    marker = tmp_path / "ran"
    path = _checkpoint_with(
        tmp_path,
        {
            "format": 1,
            "fingerprint": "{}",
            "entropy": 0,
            "round": 1,
            "state": PAYLOADS[kind](marker),
        },
    )
    ctx = tiny_context()
    algorithm = build_algorithm("fedavg", ctx, finetune_steps=2)
    with pytest.raises(ValueError) as info:
        run_rounds(
            algorithm,
            initial_models(ctx),
            2,
            0,
            checkpoint=Checkpointing(tmp_path, resume=True),
        )
    assert not marker.exists()
    message = str(info.value)
    assert _one_line(message)
    assert str(path) in message and REFUSED[kind] in message


@pytest.mark.parametrize("kind", PAYLOADS)
def test_ipfl_checkpoint_that_would_run_code_is_refused(tmp_path, kind):
    marker = tmp_path / "ran"
    run = IPFLRun(dataset="digits", model="linear", clients=8, rounds=3, local_steps=2)
    path = tmp_path / "ipfl_checkpoint.pt"
    torch.save({"format": 2, "run": run.fingerprint(), "state": PAYLOADS[kind](marker)}, path)
    with pytest.raises(ValueError) as info:
        run_ipfl(run, checkpoint_dir=tmp_path, resume=True)
    assert not marker.exists()
    message = str(info.value)
    assert _one_line(message)
    assert str(path) in message and REFUSED[kind] in message


def test_ipfl_checkpoint_holds_only_what_a_weights_only_load_reads(tmp_path):
    run = IPFLRun(dataset="digits", model="linear", clients=8, rounds=1, local_steps=1)
    run_ipfl(run, checkpoint_dir=tmp_path)
    saved = torch.load(tmp_path / "ipfl_checkpoint.pt", weights_only=True)
    assert saved["state"]["round"] == 1
    assert saved["run"] == run.fingerprint()


@pytest.mark.parametrize(
    "content",
    [b"", b"not a checkpoint at all", b"PK\x03\x04truncated zip"],
    ids=["empty", "garbage", "truncated zip"],
)
def test_corrupt_checkpoint_is_one_line_naming_the_file(tmp_path, content):
    path = tmp_path / CHECKPOINT_FILE
    path.write_bytes(content)
    with pytest.raises(ValueError) as info:
        read_checkpoint(path)
    assert _one_line(str(info.value)) and str(path) in str(info.value)


def test_truncated_checkpoint_is_one_line_naming_the_file(tmp_path):
    path = tmp_path / CHECKPOINT_FILE
    torch.save({"format": 1, "state": {"w": torch.zeros(100)}}, path)
    path.write_bytes(path.read_bytes()[:-200])
    with pytest.raises(ValueError) as info:
        read_checkpoint(path)
    assert _one_line(str(info.value)) and str(path) in str(info.value)


@pytest.mark.parametrize(
    "payload",
    [torch.zeros(3), [1, 2], {"format": 1}],
    ids=["a tensor", "a list", "no fingerprint or state"],
)
def test_checkpoint_of_another_layout_is_refused_before_training(tmp_path, payload):
    torch.save(payload, tmp_path / CHECKPOINT_FILE)
    ctx = tiny_context()
    algorithm = build_algorithm("fedavg", ctx, finetune_steps=2)
    with pytest.raises(ValueError, match=CHECKPOINT_FILE) as info:
        run_rounds(
            algorithm, initial_models(ctx), 2, 0, checkpoint=Checkpointing(tmp_path, resume=True)
        )
    assert _one_line(str(info.value))


@pytest.mark.parametrize("kind", PAYLOADS)
def test_ipfl_command_refuses_a_hostile_checkpoint_in_one_line(tmp_path, capsys, kind):
    from collabecon.cli import main

    marker = tmp_path / "ran"
    torch.save({"state": PAYLOADS[kind](marker)}, tmp_path / "ipfl_checkpoint.pt")
    code = main(["ipfl", "--rounds", "1", "--checkpoint", str(tmp_path), "--resume"])
    err = capsys.readouterr().err
    assert code == 2 and not marker.exists()
    assert len(err.strip().splitlines()) == 1 and "ipfl_checkpoint.pt" in err


def test_a_plain_pickle_checkpoint_is_refused_without_torchs_warning(tmp_path):
    # a file written by pickle, not torch.save: torch warns of its protocol before refusing
    marker = tmp_path / "ran"
    path = tmp_path / CHECKPOINT_FILE
    path.write_bytes(pickle.dumps({"state": PAYLOADS["os.system"](marker)}, protocol=4))
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        with pytest.raises(ValueError) as info:
            read_checkpoint(path)
    assert not marker.exists() and _one_line(str(info.value)) and str(path) in str(info.value)
