"""Table 1 of the clustering paper (Werner et al. 2023, Table 1 and §4.2):
:mod:`collabecon.reproductions.clustered_mnist` and ``collabecon table1``.

Fast tests check the machinery: the claims (the text claims and every pairwise ordering of
the published accuracies, ``holds`` computed from the measured means), the learning rate
chosen on validation data and never on test data, the common budget, the JSON and the
rendered table. The slow tests assert each claim of the paper at the paper's threshold on the
small scale over 3 seeds; the ones that do not hold there are strict xfails giving the
measured numbers."""

import itertools
import json

import numpy as np
import pytest

from collabecon.cli import main
from collabecon.reproductions import clustered_mnist, clustered_mnist_claims
from econ.claims import Claim

TASKS = tuple(clustered_mnist.TASKS)


def _measured(values, std=1.0, seeds=3, notes=None):
    """A :func:`clustered_mnist.measure`-shaped result with the given mean accuracies per task and
    method (per-seed values spread by ``std`` around the mean, in opposite directions for
    alternate methods, so paired differences spread too)."""
    offsets = np.linspace(-1, 1, seeds) * std if seeds > 1 else np.zeros(1)
    tasks = {}
    for task, means in values.items():
        rows = {}
        for k, (method, mean) in enumerate(means.items()):
            test = [mean + (-1) ** k * o for o in offsets]
            rows[method] = {
                "test": test,
                "lr": [0.1] * seeds,
                "validation": {str(lr): [50.0] * seeds for lr in clustered_mnist.LR_GRID},
                "paper": clustered_mnist.PAPER[task][method],
                "mean": float(np.mean(test)),
                "std": float(np.std(test, ddof=1)) if seeds > 1 else float("nan"),
                "note": clustered_mnist_claims.chance_note(task, method, float(np.mean(test))),
            }
        tasks[task] = rows
    return {
        "tasks": tasks,
        "seeds": list(range(seeds)),
        "grid": list(clustered_mnist.LR_GRID),
        "tune": "first",
        "steps": 50,
        "sizes": {
            "dataset": "mnist5k",
            "clients": 20,
            "epochs": 10,
            "batches": 5,
            "fc_groups": 1,
            "seeds": seeds,
            "tune": "first",
        },
        "wall_s": 1.0,
    }


def _by_id(claims):
    return {c.id: c for c in claims}


def test_claims_cover_every_published_pair_and_the_text_claims():
    claims = _by_id(clustered_mnist.claims(_measured(clustered_mnist.PAPER)))
    for task in TASKS:
        pairs = [c for c in claims if c.startswith(f"table1.{task}.") and c.count(">") == 1]
        pairs = [c for c in pairs if c.split(".")[-1].split(">")[0] in clustered_mnist.METHODS]
        pairs = [c for c in pairs if c.split(">")[1] in clustered_mnist.METHODS]
        assert len(pairs) == 21
        for a, b in itertools.combinations(clustered_mnist.METHODS, 2):
            hi, lo = (
                (a, b)
                if clustered_mnist.PAPER[task][a] > clustered_mnist.PAPER[task][b]
                else (b, a)
            )
            assert f"table1.{task}.{hi}>{lo}" in claims
        for text in ("fc-outperforms-local", "fc>baselines", "oracle-best", "global<local"):
            assert f"table1.{task}.{text}" in claims
    assert "table1.private_label.global<=25%" in claims
    assert "table1.private_label.global-model-methods<local" in claims
    assert len(claims) == 2 * (21 + 4) + 2


def test_the_published_numbers_satisfy_every_claim():
    """Fed the paper's own accuracies, every claim holds (the claims say what Table 1 shows)."""
    claims = clustered_mnist.claims(_measured(clustered_mnist.PAPER, std=0.0))
    assert all(c.holds for c in claims), [c.id for c in claims if not c.holds]


def test_holds_follows_the_measured_means():
    values = {t: dict(clustered_mnist.PAPER[t]) for t in TASKS}
    values["rotation"]["ifca"] = 80.0  # above Local (71.3) and FC (75.4)
    values["private_label"]["global"] = 26.0  # above the 25 % ceiling
    claims = _by_id(clustered_mnist.claims(_measured(values)))
    assert not claims["table1.rotation.local>ifca"].holds
    assert not claims["table1.rotation.fc>ifca"].holds
    assert not claims["table1.rotation.fc>baselines"].holds
    assert claims["table1.rotation.fc-outperforms-local"].holds
    values["private_label"]["fc"] = values["private_label"]["local"]  # a tie is no lead
    tied = _by_id(clustered_mnist.claims(_measured(values)))
    assert not tied["table1.private_label.fc-outperforms-local"].holds
    assert not claims["table1.private_label.global<=25%"].holds
    assert claims["table1.private_label.global<local"].holds
    assert claims["table1.rotation.local>ifca"].measured == {"Local": 71.3, "IFCA": 80.0}
    assert claims["table1.rotation.local>ifca"].published == {"Local": 71.3, "IFCA": 54.6}
    for task in TASKS:  # every pairwise claim: holds == (measured hi > lo)
        for a, b in itertools.permutations(clustered_mnist.METHODS, 2):
            claim = claims.get(f"table1.{task}.{a}>{b}")
            if claim is not None:
                hi, lo = (
                    claim.measured[clustered_mnist.NAMES[a]],
                    claim.measured[clustered_mnist.NAMES[b]],
                )
                assert claim.holds == (hi > lo), claim.id


def test_a_margin_within_the_spread_is_noted():
    values = {t: dict(clustered_mnist.PAPER[t]) for t in TASKS}
    values["rotation"]["fc"] = 71.8  # 0.5 above Local
    claims = _by_id(clustered_mnist.claims(_measured(values, std=3.0)))
    note = claims["table1.rotation.fc>local"].note
    assert "within the seed-to-seed spread" in note and "over 3 seeds" in note
    assert "spread" not in claims["table1.rotation.oracle>global"].note  # 38 points apart


def test_paired_spread_is_the_std_of_the_differences():
    # the same seed-to-seed offsets on both methods: the difference does not spread at all
    assert clustered_mnist_claims._paired_std([70.0, 72.0, 74.0], [60.0, 62.0, 64.0]) == 0.0
    assert clustered_mnist_claims._paired_std(
        [70.0, 72.0, 74.0], [64.0, 62.0, 60.0]
    ) == pytest.approx(4.0)


def test_near_chance_methods_get_a_note():
    assert "at most 25 %" in clustered_mnist_claims.chance_note("private_label", "global", 12.0)
    assert "does not learn" in clustered_mnist_claims.chance_note("rotation", "ifca", 14.0)
    assert clustered_mnist_claims.chance_note("rotation", "ifca", 15.5) == ""
    values = {t: dict(clustered_mnist.PAPER[t]) for t in TASKS}
    values["rotation"]["ditto"] = 11.0
    rep = clustered_mnist.report("small", _measured(values))
    assert "does not learn" in _by_id(rep.claims)["table1.rotation.ditto>global"].note
    assert "Near chance" in rep.body


def test_the_learning_rate_is_chosen_on_validation_not_test(monkeypatch):
    """Validation accuracy peaks at 0.03 and test accuracy at 0.3: the choice is 0.03 and the
    test accuracy reported is that run's; with ``tune="first"`` later seeds train only at the
    rate chosen on the first."""
    val = {0.03: 60.0, 0.1: 50.0, 0.3: 40.0}
    test = {0.03: 55.0, 0.1: 65.0, 0.3: 75.0}
    calls = []

    def fake(method, data, scale, lr, seed):
        calls.append((method, lr, seed))
        return val[lr], test[lr] + seed

    monkeypatch.setattr(clustered_mnist, "train_method", fake)
    monkeypatch.setattr(clustered_mnist, "clients", lambda task, scale, seed, data_dir=None: None)
    scale = clustered_mnist.Table1Scale("digits", 8, 1, 1, 1, 3, "first")
    measured = clustered_mnist.measure(scale, [0, 1, 2], methods=("local",), tasks=("rotation",))
    row = measured["tasks"]["rotation"]["local"]
    assert row["lr"] == [0.03, 0.03, 0.03]
    assert row["test"] == [55.0, 56.0, 57.0]
    assert row["validation"]["0.3"] == [40.0, None, None]
    assert [lr for _, lr, seed in calls if seed > 0] == [0.03, 0.03]
    every = clustered_mnist.measure(
        clustered_mnist.Table1Scale("digits", 8, 1, 1, 1, 3, "each"),
        [0, 1],
        methods=("fc",),
        tasks=("rotation",),
    )
    assert every["tasks"]["rotation"]["fc"]["validation"]["0.3"] == [40.0, 40.0]


def test_validation_is_held_out_of_the_training_data():
    scale = clustered_mnist.Table1Scale("digits", 8, 1, 1, 1, 3)
    data = clustered_mnist.clients("rotation", scale, 0)
    train, val = data.ctx.train, data.validation
    assert (val.sizes >= 1).all() and (train.sizes >= 1).all()
    for i in range(scale.clients):
        xt = train.x[int(train.offsets[i]) : int(train.offsets[i] + train.sizes[i])]
        xv = val.x[int(val.offsets[i]) : int(val.offsets[i] + val.sizes[i])]
        # no validation image is among the training images of its client
        same = (xt.flatten(1)[:, None, :] == xv.flatten(1)[None, :, :]).all(-1)
        assert not bool(same.any())
        total = int(train.sizes[i] + val.sizes[i])
        assert int(val.sizes[i]) == round(clustered_mnist.VALIDATION_FRACTION * total)


class _Stop(Exception):
    pass


def test_every_method_gets_the_same_budget(monkeypatch):
    """``epochs x batches`` minibatch steps of 32 for everyone: Global, Oracle, IFCA, Ditto and
    FC in one-step rounds with kept momentum, Local and kNN-Per ``batches`` steps per round
    (Local without momentum, the authors' published code); each at the rate it is given."""
    import learning.loop

    seen = {}

    def record(algorithm, start, rounds, seed, eval_every):
        seen[algorithm.name] = (algorithm, rounds)
        raise _Stop

    monkeypatch.setattr(learning.loop, "run_rounds", record)
    scale = clustered_mnist.Table1Scale("digits", 8, 3, 2, 2, 3)
    data = clustered_mnist.clients("rotation", scale, 0)
    for method in clustered_mnist.METHODS:
        with pytest.raises(_Stop):
            clustered_mnist.train_method(method, data, scale, 0.3, 0)
    steps = {name: a.ctx.local.steps * rounds for name, (a, rounds) in seen.items()}
    assert set(steps.values()) == {scale.steps}
    for name in ("fedavg", "oracle", "ifca", "ditto", "federated-clustering"):
        assert seen[name][0].ctx.local.steps == 1 and seen[name][1] == 6
    assert seen["local"][1] == seen["knn-per"][1] == 3
    assert {a.ctx.local.sgd.lr for a, _ in seen.values()} == {0.3}
    assert {a.ctx.local.batch_size for a, _ in seen.values()} == {32}
    assert seen["federated-clustering"][0].batch_size == 32
    assert seen["local"][0].ctx.local.sgd.momentum == 0.0
    assert seen["fedavg"][0].keep_momentum == "client"
    assert seen["oracle"][0].keep_momentum == "group"
    assert seen["ifca"][0].momentum == 0.9 and seen["ifca"][0].option == "gradient"
    assert seen["ditto"][0].variant == "as-run" and seen["ditto"][0].lam == 1.0


def test_tiny_run_end_to_end(tmp_path):
    """The whole pipeline on a tiny instance: every method trains on the private-label task
    for two seeds, the rate tuned on the first; claims and files."""
    scale = clustered_mnist.Table1Scale("digits", 8, 1, 1, 2, 2, "first")
    measured = clustered_mnist.measure(scale, [0, 1], grid=(0.1, 0.3), tasks=("private_label",))
    clustered_mnist.report("small", measured, tmp_path)
    rows = measured["tasks"]["private_label"]
    assert set(rows) == set(clustered_mnist.METHODS)
    for row in rows.values():
        assert len(row["test"]) == 2 and all(0.0 <= v <= 100.0 for v in row["test"])
        assert row["lr"][0] in (0.1, 0.3) and row["lr"][0] == row["lr"][1]
        assert row["mean"] == pytest.approx(np.mean(row["test"]))
    data = json.loads((tmp_path / "table1.json").read_text())
    assert {"name", "title", "claims", "figures", "data"} <= set(data)
    assert len(data["claims"]) == 21 + 4 + 2
    keys = {"paper", "id", "statement", "published", "measured", "holds", "note"}
    assert all(set(claim) == keys for claim in data["claims"])
    assert data["data"]["grid"] == [0.1, 0.3]
    assert "| claim |" in (tmp_path / "table1.md").read_text()


def _fake_training(monkeypatch):
    """Training replaced by fixed numbers: the paper's accuracy, plus the seed, at every rate
    (validation best at 0.1)."""

    def fake(method, data, scale, lr, seed):
        return (50.0 if lr == 0.1 else 40.0), data[method] + seed

    monkeypatch.setattr(
        clustered_mnist,
        "clients",
        lambda task, scale, seed, data_dir=None: clustered_mnist.PAPER[task],
    )
    monkeypatch.setattr(clustered_mnist, "train_method", fake)


def test_cli_prints_methods_and_claims(monkeypatch, capsys, tmp_path):
    _fake_training(monkeypatch)
    assert main(["table1", "--seeds", "3", "--out", str(tmp_path)]) == 0
    text = capsys.readouterr().out
    assert "Oracle" in text and "claims of the paper's Table 1" in text
    assert "52 of 52 claims hold" in text
    assert main(["table1", "--seeds", "3", "--seed", "4", "--json"]) == 0
    data = json.loads(capsys.readouterr().out)
    assert len(data["claims"]) == 52 and data["data"]["seeds"] == [4, 5, 6]
    local = data["data"]["tasks"]["rotation"]["local"]
    assert local["lr"] == [0.1] * 3 and local["test"] == [75.3, 76.3, 77.3]
    assert local["mean"] == pytest.approx(76.3) and local["std"] == pytest.approx(1.0)
    assert json.loads((tmp_path / "table1.json").read_text())["claims"]


@pytest.mark.parametrize(
    ("argv", "named"),
    [
        (["table1", "--seeds", "0"], "--seeds"),
        (["table1", "--seed", "-1"], "--seed"),
        (["table1", "--scale", "paper"], "--data-dir"),
    ],
)
def test_bad_flags_exit_2(argv, named, capsys):
    assert main(argv) == 2
    err = capsys.readouterr().err
    assert named in err and len(err.strip().splitlines()) == 1


def test_reproduce_refuses_bad_arguments(tmp_path):
    with pytest.raises(ValueError, match="scale"):
        clustered_mnist.reproduce("huge", tmp_path)
    with pytest.raises(ValueError, match="seeds"):
        clustered_mnist.reproduce("small", tmp_path, seeds=0)
    with pytest.raises(ValueError, match="data_dir"):
        clustered_mnist.reproduce("paper", tmp_path)


# ------------------------------------------------------------------ the paper's claims (slow)

#: claims that do not hold at small scale (20 clients of mnist5k, 50 steps, seeds 0-2):
#: id -> the measured numbers.
SMALL_SCALE_MISSES: dict[str, str] = {
    "table1.rotation.fc>baselines": "measured FC 85.0, Global 78.5, Ditto 77.2, IFCA 85.3, kNN-Per 75.1 (mean over seeds 0-2); the margin is within the seed-to-seed spread",
    "table1.rotation.local>ifca": "measured Local 78.6, IFCA 85.3 (mean over seeds 0-2)",
    "table1.rotation.ditto>global": "measured Ditto 77.2, Global 78.5 (mean over seeds 0-2); the margin is within the seed-to-seed spread",
    "table1.rotation.knn>global": "measured kNN-Per 75.1, Global 78.5 (mean over seeds 0-2)",
    "table1.rotation.ditto>ifca": "measured Ditto 77.2, IFCA 85.3 (mean over seeds 0-2)",
    "table1.rotation.fc>ifca": "measured FC 85.0, IFCA 85.3 (mean over seeds 0-2); the margin is within the seed-to-seed spread",
    "table1.private_label.global-model-methods<local": "measured Local 78.4, Global 24.1, Ditto 79.7, kNN-Per 81.5 (mean over seeds 0-2); the margin is within the seed-to-seed spread",
    "table1.private_label.local>ditto": "measured Local 78.4, Ditto 79.7 (mean over seeds 0-2); the margin is within the seed-to-seed spread",
    "table1.private_label.local>knn": "measured Local 78.4, kNN-Per 81.5 (mean over seeds 0-2)",
    "table1.private_label.ifca>ditto": "measured IFCA 72.4, Ditto 79.7 (mean over seeds 0-2); the margin is within the seed-to-seed spread",
    "table1.private_label.ifca>knn": "measured IFCA 72.4, kNN-Per 81.5 (mean over seeds 0-2); the margin is within the seed-to-seed spread",
}


def _claim_ids():
    return [c.id for c in clustered_mnist.claims(_measured(clustered_mnist.PAPER))]


@pytest.fixture(scope="module")
def small_run(tmp_path_factory):
    return clustered_mnist.reproduce("small", tmp_path_factory.mktemp("table1"), seeds=3)


@pytest.mark.slow
@pytest.mark.parametrize(
    "claim_id",
    [
        pytest.param(
            i,
            marks=pytest.mark.xfail(strict=True, reason=SMALL_SCALE_MISSES[i])
            if i in SMALL_SCALE_MISSES
            else (),
        )
        for i in _claim_ids()
    ],
)
def test_paper_claim_at_small_scale(small_run, claim_id):
    claim: Claim = _by_id(small_run.claims)[claim_id]
    assert claim.holds, (claim.measured, claim.published, claim.note)


def test_the_transcribed_table_has_table_1s_rows_and_columns():
    """PAPER is Table 1's accuracy columns: the two task columns, each with the seven rows in
    the printed order; every claim's place names the column, and an ordering its two rows."""
    claims_module = clustered_mnist_claims
    assert list(claims_module.PAPER) == list(claims_module.TABLE_COLUMNS)
    for column in claims_module.PAPER.values():
        assert list(column) == list(claims_module.TABLE_ROWS) == list(claims_module.METHODS)
    for spec in claims_module.CLAIMS:
        task = spec.id.split(".")[1]
        assert claims_module.TABLE_COLUMNS[task] in spec.where, spec.id
        pair = spec.id.split(".")[-1].split(">")
        if len(pair) == 2 and set(pair) <= set(claims_module.METHODS):
            for method in pair:
                assert claims_module.TABLE_ROWS[method] in spec.where, spec.id
