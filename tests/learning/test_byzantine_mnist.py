"""Fig. 2.6 of Werner 2024 (§2.4, Byzantine attacks on the MNIST private-label task):
the reproduction's structure on a tiny federation, and the small scale."""

import json

import numpy as np
import pytest

from collabecon.reproductions import REPRODUCTIONS, byzantine_mnist
from collabecon.reproductions.byzantine_mnist import ByzantineScale, attackers
from collabecon.reproductions.byzantine_mnist_claims import ATTACKS, CLAIMS


def _check_report(rep, out):
    assert [c.id for c in rep.claims] == [spec.id for spec in CLAIMS]
    assert all("Fig. 2.6" in c.paper for c in rep.claims)
    assert {c.id.split(".")[1] for c in rep.claims} == set(ATTACKS)
    assert rep.figures == (byzantine_mnist.FIGURE,)
    assert (out / byzantine_mnist.FIGURE).stat().st_size > 10_000
    saved = json.loads((out / "byzantine.json").read_text())
    assert [c["id"] for c in saved["claims"]] == [c.id for c in rep.claims]


def test_tiny_federation_reports_every_claim_and_writes_the_figure(tmp_path):
    assert REPRODUCTIONS["byzantine"] == byzantine_mnist.__name__
    tiny = ByzantineScale("mnist5k", 1, 1, 4, 2, 1, "linear", 1)
    measured = byzantine_mnist.measure(tiny, [0])
    assert measured["rounds"] == [2, 4]
    for setting in byzantine_mnist.SETTINGS:
        for method in ("fc", "global"):
            (curve,) = measured["curves"][setting][method]
            assert len(curve) == 2 and all(0.0 <= a <= 100.0 for a in curve)
    _check_report(byzantine_mnist.report("small", measured, tmp_path), tmp_path)


def test_attackers_are_drawn_in_every_cluster():
    clusters = np.repeat(np.arange(4), 6)
    bad = attackers(clusters, 3, np.random.default_rng(0))
    assert [int(bad[clusters == k].sum()) for k in range(4)] == [3, 3, 3, 3]
    with pytest.raises(ValueError, match="leave none"):
        attackers(clusters, 6, np.random.default_rng(0))


@pytest.mark.slow
def test_small_scale(tmp_path):
    rep = byzantine_mnist.reproduce("small", tmp_path)
    _check_report(rep, tmp_path)
