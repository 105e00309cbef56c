"""The claim record every reproduction reports (econ.claims)."""

import json

import pytest

from econ.claims import Claim, ClaimSpec, claims_markdown, claims_text, count_held, evaluate


def _claims():
    return [
        Claim(paper="Werner et al. 2023, Table 1", id="rot.fc>local", statement="FC beats Local",
              published="75.4 > 71.3", measured="74.0 > 72.1", holds=True),
        Claim(paper="Werner et al. 2023, Table 1", id="rot.global", statement="Global at 46.6 %",
              published=46.6, measured=31.25, holds=False, note="20 clients, 3 seeds"),
    ]  # fmt: skip


def test_json_round_trip_has_every_field():
    data = json.loads(json.dumps([c.to_dict() for c in _claims()], allow_nan=False))
    assert set(data[0]) == {"paper", "id", "statement", "published", "measured", "holds", "note"}
    assert data[1]["holds"] is False and data[1]["published"] == 46.6


def test_tables_report_claims_that_fail():
    md = claims_markdown(_claims())
    assert "| `rot.global` | Global at 46.6 % | 46.6 | 31.25 | **no** |" in md
    assert "1 of 2 claims hold." in md
    text = claims_text(_claims())
    assert "[--] rot.global" in text and "[ok] rot.fc>local" in text
    assert count_held(_claims()) == (1, 2)


def test_bad_claims_are_refused():
    with pytest.raises(ValueError, match="share the id"):
        claims_markdown(_claims() + _claims())
    with pytest.raises(TypeError, match="holds must be a bool"):
        Claim(paper="p", id="i", statement="s", published=1.0, measured=1.0, holds=1)  # type: ignore[arg-type]
    with pytest.raises(ValueError, match="needs a paper"):
        Claim(paper="p", id="", statement="s", published=1.0, measured=1.0, holds=True)


def test_specs_are_evaluated_in_table_order_and_left_out_where_they_do_not_apply():
    specs = (
        ClaimSpec(
            id="a.rises",
            statement="a rises",
            where="Paper A, Fig. 1",
            published=lambda r: r["bound"],
            measured=lambda r: r["a"],
            holds=lambda r: r["a"] > r["bound"],
            note=lambda r: f"{r['seeds']} seeds",
        ),
        ClaimSpec(
            id="b.falls",
            statement="b falls",
            where="Paper A, Fig. 2",
            measured=lambda r: r["b"],
            holds=lambda r: r["b"] < 0,
            applies=lambda r: "b" in r,
        ),
    )
    (only,) = evaluate(specs, {"a": 2.0, "bound": 1.0, "seeds": 3})
    assert only == Claim(
        paper="Paper A, Fig. 1", id="a.rises", statement="a rises", published=1.0,
        measured=2.0, holds=True, note="3 seeds",
    )  # fmt: skip
    both = evaluate(specs, {"a": 0.0, "b": 1.0, "bound": 1.0, "seeds": 1})
    assert [(c.id, c.holds, c.published) for c in both] == [
        ("a.rises", False, 1.0),
        ("b.falls", False, None),
    ]
    with pytest.raises(TypeError, match="callables"):
        ClaimSpec(id="c", statement="s", where="p", measured=1.0, holds=lambda r: True)
