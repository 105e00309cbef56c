"""``collabecon table1``: output shape, the private-label ceiling (spec ch2 claim U16) and
the Table 1 orderings of claim M1 at small scale (slow)."""

import argparse

import pytest

from learning.cli import table1


def _run(monkeypatch, scale):
    monkeypatch.setitem(table1.SCALES, "small", scale)
    return table1.run(argparse.Namespace(scale="small", data_dir=None, seed=0, out=None))


def test_tiny_table_has_every_method_and_the_ceiling_holds(monkeypatch, tmp_path):
    tiny = table1.Scale("digits", 8, 2, 2, 2, 2, 16)
    result = _run(monkeypatch, tiny)
    for task in ("rotation", "private_label"):
        assert set(result[task]) == set(table1.METHODS)
        assert all(0.0 <= v <= 100.0 for v in result[task].values())
    # one model for everyone: each image carries 4 distinct labels, so at most ~25% (U16)
    assert result["private_label"]["global"] <= 25.0 + 10.0
    assert result["paper"]["rotation"]["fc"] == 75.4
    assert "private_label: global <= 25%" in result["orderings"]
    assert "claim M1" in table1.render(result)


def test_paper_scale_needs_the_data():
    args = argparse.Namespace(scale="paper", data_dir=None, seed=0, out=None)
    with pytest.raises(ValueError, match="data-dir"):
        table1.run(args)


@pytest.mark.slow
def test_m1_orderings_at_small_scale(tmp_path):
    result = table1.run(argparse.Namespace(scale="small", data_dir=None, seed=0, out=str(tmp_path)))
    assert (tmp_path / "table1.json").exists()
    assert all(result["orderings"].values()), result["orderings"]
