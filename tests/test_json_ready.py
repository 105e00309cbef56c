"""Outputs a notebook takes as they are: JSON-ready ``to_dict``, pandas tables, Python scalars.

Every result type of econ/, games/ and learning/ (the privacy results have their own tests)
is built on a small input; its ``to_dict()`` must be plain data (dicts, lists, str, bool,
int, finite float, None), pass ``json.dumps(..., allow_nan=False)`` and survive a round trip.
"""

import json
import sys
from fractions import Fraction

import numpy as np
import pytest

import econ.duopoly_propositions  # noqa: F401  (registers thesis.ch3.lemma21)
from econ import bargaining, duopoly, nash_bargaining, quality_caps
from econ.market import market_history, market_round, sampled_market
from econ.oligopoly import demands, oligopoly_equilibrium
from econ.outputs import frame, plain, scalar_or_array, write_atomically
from econ.propositions import registered
from econ.propositions import run as run_proposition
from econ.qualities import ModelQualities
from games import defection_free as dfree
from games import ipfl
from games.ipfl import IPFLConfig, TokenQualities
from games.price_discrimination.certificate import certify
from games.price_discrimination.equilibrium import equilibrium as pd_equilibrium
from games.price_discrimination.equilibrium import equilibrium_profile
from games.price_discrimination.game import PARAMETER_SETS

_PLAIN = (dict, list, str, bool, int, float, type(None))


def _walk(value, path="$"):
    """Assert ``value`` holds only plain JSON types (exactly, not subclasses) and finite floats."""
    assert type(value) in _PLAIN, f"{path}: {type(value).__module__}.{type(value).__name__}"
    if isinstance(value, float):
        assert np.isfinite(value), f"{path}: {value}"
    if isinstance(value, dict):
        for k, v in value.items():
            assert type(k) is str, f"{path}: key {k!r}"
            _walk(v, f"{path}.{k}")
    if isinstance(value, list):
        for i, v in enumerate(value):
            _walk(v, f"{path}[{i}]")


def _play():
    ql, qh = np.array([0.3, 0.35, 0.42]), np.array([0.8, 0.85, 0.9])
    measured = tuple(
        ModelQualities.from_mapping({"low": a, "high": b}, n_eval=100)
        for a, b in zip(ql, qh, strict=True)
    )
    nan = np.full(3, np.nan)
    return dfree.Play("defection-free", ql, qh, nan, nan, measured)


def _proposition():
    return run_proposition(registered("thesis.ch3.lemma21")[0])


def _repeated():
    from games.price_discrimination.exp3 import ContextualExp3
    from games.price_discrimination.repeated import simulate

    return simulate(PARAMETER_SETS["P0"], ContextualExp3(), 50, 2, seed=0)


def _train_result():
    from learning.train import TrainConfig, train

    config = TrainConfig(
        dataset="digits", model="mlp", clients=3, rounds=2, local_steps=1, batch_size=8
    )
    return train(config)


def _benchmarks():
    from collabecon.bench.all_pairs import AllPairsBenchmark

    return AllPairsBenchmark(
        method="fc",
        device="cpu",
        clients=np.int64(4),
        model="mlp",
        batch_size=8,
        repeats=1,
        threads=1,
        batched_s=np.float64(0.5),
        loop_s=np.float64(1.5),
        ratio=np.float64(3.0),
        max_difference=np.float32(1e-7),
    )


#: name -> builder of one result (a thunk: the learning rows import torch only when run)
RESULTS = {
    "duopoly.equilibrium(scalars)": lambda: duopoly.equilibrium(0.3, 0.8),
    "duopoly.equilibrium(arrays)": lambda: duopoly.equilibrium([0.0, 0.3, 0.5], [0.0, 0.8, 0.5]),
    "bargaining.duopoly_nash_solution": lambda: bargaining.duopoly_nash_solution(
        [0.2, 0.3], [0.7, 0.8]
    ),
    "bargaining.nash_report(not rational: NaN)": lambda: bargaining.nash_report(0.1, 0.2, 0.3, 0.8),
    "nash_bargaining.nash_bargaining": lambda: nash_bargaining.nash_bargaining(
        lambda x: float(x[0]), lambda x: float(1 - x[0]), [(0.0, 1.0)], (0.0, 0.0), grid=11
    ),
    "oligopoly.oligopoly_equilibrium": lambda: oligopoly_equilibrium([0.2, 0.5, 0.5, 0.9]),
    "market.market_round": lambda: market_round([0.711, 0.778, 0.711, 0.0]),
    "market.market_history": lambda: market_history(
        [ModelQualities.from_mapping({"a": 0.3, "b": 0.8})] * 2
    ),
    "market.sampled_market": lambda: sampled_market([0.3, 0.8], 200, seed=0),
    "qualities.ModelQualities": lambda: ModelQualities(
        names=("a", "b"), quality=np.array([0.5, 0.75]), metric="accuracy", n_eval=np.int64(4)
    ),
    "propositions.Outcome": _proposition,
    "defection_free.PlayReport": lambda: dfree.report(_play()),
    "defection_free.RevenueAudit": lambda: dfree.revenue_audit([0.3, 0.4], [0.8, 0.9]),
    "defection_free.SchemeClaim": lambda: dfree.scheme_claims(
        {"defection-free": dfree.report(_play())}
    )[0],
    "ipfl.IPFLConfig": lambda: IPFLConfig(price=np.float64(2.0)),
    "ipfl.TokenQualities": lambda: TokenQualities(
        names=("c0", "c1"),
        net_tokens=[-1.0, 1.0],
        pma=[0.5, np.nan],
        personalised_accuracy=[0.6, 0.7],
        n_eval=[10, 10],
    ),
    "price_discrimination.InformationSet": lambda: certify(
        PARAMETER_SETS["P0"],
        Fraction(3, 4),
        equilibrium_profile(PARAMETER_SETS["P0"], Fraction(3, 4)),
    ).sets[0],
    "price_discrimination.Equilibrium": lambda: pd_equilibrium(
        PARAMETER_SETS["P0"], Fraction(3, 4)
    ),
    "defection_free.Play": _play,
    "defection_free.MarketPath": lambda: dfree.market_path([0.3, 0.9], [0.8, 0.5]),
    "benchmarks.AllPairsBenchmark": _benchmarks,
    "train.TrainConfig": lambda: __import__("learning.train").train.TrainConfig(
        lr=np.float64(0.1), seed=np.int64(3)
    ),
    "train.TrainResult": _train_result,
}


@pytest.mark.parametrize("name", RESULTS)
def test_to_dict_is_plain_json(name):
    data = RESULTS[name]().to_dict()
    _walk(data)
    assert json.loads(json.dumps(data, allow_nan=False)) == data


def test_non_finite_numbers_become_null():
    report = bargaining.nash_report(0.1, 0.2, 0.3, 0.8)
    assert not report.rational and np.isnan(report.nash_value)
    assert report.to_dict()["nash_value"] is None
    assert plain({"x": [np.inf, -np.inf, np.float32(np.nan), 1.5]}) == {
        "x": [None, None, None, 1.5]
    }


def test_plain_converts_sympy_and_fractions_and_refuses_the_rest():
    import sympy as sp

    x = sp.Symbol("x")
    converted = plain([sp.Rational(1, 4), sp.Integer(3), sp.true, x + 1, Fraction(1, 8), (1, 2)])
    assert converted == [0.25, 3, True, "x + 1", 0.125, [1, 2]]
    _walk(converted)
    assert plain({1: "a", np.int64(2): "c", 0.5: "d"}) == {"1": "a", "2": "c", "0.5": "d"}
    assert plain({True: "b"}) == {"true": "b"}
    with pytest.raises(TypeError, match="not JSON serialisable: builtin_function_or_method"):
        plain({"f": len})


def test_the_cli_json_is_the_same_conversion(capsys):
    from collabecon.cli import main

    assert main(["duopoly", "--ql", "0.3", "--qh", "0.8", "--json"]) == 0
    out = json.loads(capsys.readouterr().out)
    assert out == duopoly.equilibrium(0.3, 0.8).to_dict()


# --------------------------------------------------------------------------- scalars

#: (name, function of scalars, the same on arrays): scalars give Python floats, arrays arrays
SCALAR_FUNCTIONS = [
    ("duopoly.revenues", lambda a, b: duopoly.revenues(a, b)),
    ("duopoly.u_h_inverse", lambda a, b: duopoly.u_h_inverse(a * 0.25)),
    ("duopoly.demands", lambda a, b: duopoly.demands(0.01 * a, 0.1 * b, a, b)),
    ("bargaining.firm_revenues", lambda a, b: bargaining.firm_revenues(a, b)),
    ("bargaining.nash_product", lambda a, b: bargaining.nash_product(a, b, a, b)),
    ("bargaining.feasible_interval", lambda a, b: bargaining.feasible_interval(a, b)),
    ("quality_caps.cap_ratio", lambda a, b: quality_caps.cap_ratio(a, 1 + b)),
    ("quality_caps.cap_high", lambda a, b: quality_caps.cap_high(a, b, b + 0.1)),
    ("quality_caps.cap_low", lambda a, b: quality_caps.cap_low(a, b, b + 0.1)),
    ("quality_caps.min_high_quality", lambda a, b: quality_caps.min_high_quality(a, 0.01 * b)),
    ("ipfl.net_token_change", lambda a, b: ipfl.net_token_change(a, 10, 0.1, 1.0)),
    ("ipfl.pma", lambda a, b: ipfl.pma(b, a)),
    (
        "quality_caps.next_low_quality",
        lambda a, b: quality_caps.next_low_quality(a, b, b + 0.1, rho_star=0.5, q_l_star=0.5),
    ),
]


def _values(out):
    return list(out) if isinstance(out, tuple) else [out]


@pytest.mark.parametrize(("name", "fn"), SCALAR_FUNCTIONS)
def test_scalars_in_floats_out_arrays_in_arrays_out(name, fn):
    for value in _values(fn(0.3, 0.8)):
        assert type(value) is float, (name, type(value))
    for value in _values(fn(np.array([0.3, 0.2]), np.array([0.8, 0.7]))):
        assert isinstance(value, np.ndarray) and value.shape == (2,), name


def test_equilibria_of_scalars_hold_floats():
    eq = duopoly.equilibrium(0.3, 0.8)
    assert type(eq.p_l) is float
    assert eq.p_l == pytest.approx(0.3 * 0.5 / (3.2 - 0.3))  # Lemma 22: q_l(q_h-q_l)/(4q_h-q_l)
    nash = bargaining.duopoly_nash_solution(0.3, 0.8)
    assert all(type(getattr(nash, f)) is float for f in nash.__dataclass_fields__)
    report = bargaining.nash_report(0.3, 0.8, 0.3, 0.8)
    assert type(report.rational) is bool and type(report.product) is float
    assert ipfl.opt_outs(-0.5) is True and ipfl.opt_outs([-0.5, 1.0]).tolist() == [True, False]
    array = duopoly.equilibrium(np.array([0.3]), 0.8)
    assert isinstance(array.p_l, np.ndarray) and array.p_l.shape == (1,)


def test_scalar_or_array():
    assert scalar_or_array(np.array(1.5)) == 1.5 and type(scalar_or_array(np.array(1.5))) is float
    assert type(scalar_or_array(np.array(True))) is bool
    kept = scalar_or_array(np.array(1.5), 0.3, [0.1])  # one input had a dimension
    assert isinstance(kept, np.ndarray)


# --------------------------------------------------------------------------- tables

#: name -> (builder, expected number of rows, columns that must be there)
TABLES = {
    "DuopolyEquilibrium": (
        lambda: duopoly.equilibrium([0.1, 0.3, 0.5], 0.8),
        3,
        {"q_l", "p_l", "U_h", "welfare"},
    ),
    "DuopolyNashSolution": (
        lambda: bargaining.duopoly_nash_solution([0.2, 0.3], [0.7, 0.8]),
        2,
        {"rho_star", "q_l_star"},
    ),
    "OligopolyEquilibrium": (
        lambda: oligopoly_equilibrium([0.2, 0.5, 0.5, 0.9]),
        4,
        {"quality", "price", "demand", "revenue", "priced_out"},
    ),
    "MarketRound": (
        lambda: market_round([0.711, 0.778, 0.711]),
        3,
        {"quality", "price", "share", "revenue", "priced_out"},
    ),
    "MarketHistory": (
        lambda: market_history([ModelQualities.from_mapping({"a": 0.3, "b": 0.8})] * 3),
        3,
        {"price_a", "share_b", "welfare"},
    ),
    "ModelQualities": (
        lambda: ModelQualities.from_mapping({"a": 0.5, "b": 0.9}, n_eval=100),
        2,
        {"quality", "standard_error", "n_eval"},
    ),
    "PlayReport": (lambda: dfree.report(_play()), 3, {"q_l", "U_l", "nash_product", "swapped"}),
    "Play": (_play, 3, {"q_l", "q_h", "cap", "hat_q"}),
    "MarketPath": (
        lambda: dfree.market_path([0.3, 0.9], [0.8, 0.5]),
        2,
        {"U_l", "U_h", "welfare", "swapped"},
    ),
    "RevenueAudit": (
        lambda: dfree.revenue_audit([0.3, 0.4, 0.45], [0.8, 0.9, 0.92]),
        2,
        {"change_low", "slack", "fall"},
    ),
    "TokenQualities": (
        lambda: TokenQualities(
            names=("c0", "c1"),
            net_tokens=[-1.0, 1.0],
            pma=[0.5, 1.0],
            personalised_accuracy=[0.6, 0.7],
            n_eval=[10, 10],
        ),
        2,
        {"net_tokens", "pma"},
    ),
    "RepeatedRun": (_repeated, 50, {"seller_utility", "alpha_hat", "action_PD"}),
    "TrainResult": (_train_result, 2, {"train_loss", "test_loss", "test_accuracy"}),
}


@pytest.mark.parametrize("name", TABLES)
def test_tables_are_data_frames(name):
    pd = pytest.importorskip("pandas")
    build, rows, columns = TABLES[name]
    table = build().to_frame()
    assert isinstance(table, pd.DataFrame)
    assert len(table) == rows and columns <= set(table.columns), list(table.columns)


def test_a_table_matches_its_dict():
    pytest.importorskip("pandas")
    m = market_round([0.711, 0.778, 0.711, 0.0])
    table = m.to_frame()
    assert list(table.index) == list(m.names)
    assert table["price"].tolist() == m.to_dict()["price"]
    assert table["share"].sum() + 0.0 == pytest.approx(sum(m.to_dict()["share"]))
    prices = oligopoly_equilibrium(m.quality).price
    assert demands(m.quality, prices).tolist() == pytest.approx(table["share"].tolist())


def test_without_pandas_the_error_names_the_install(monkeypatch):
    monkeypatch.setitem(sys.modules, "pandas", None)
    with pytest.raises(
        ValueError, match=r"MarketRound\.to_frame\(\) needs pandas.*pip install pandas"
    ):
        market_round([0.3, 0.8]).to_frame()
    with pytest.raises(ValueError, match="pip install pandas"):
        frame([], "anything")


def test_first_nan_names_the_field_of_a_nan() -> None:
    import numpy as np

    from collabecon.cli._output import first_nan

    assert first_nan({"a": 1.0, "b": [0.5, float("inf")]}) is None
    assert first_nan({"a": {"rows": [1.0, float("nan")]}}) == "result.a.rows[1]"
    assert first_nan({"m": np.array([[0.0, 1.0], [np.nan, 2.0]])}) == "result.m[1, 0]"


def test_a_result_holding_nan_is_an_error_not_a_number(monkeypatch, capsys) -> None:
    from collabecon.cli import main, market

    monkeypatch.setattr(market, "run", lambda args: {"price": float("nan")})
    assert main(["market", "--qualities", "0.3", "0.8", "--json"]) == 1
    captured = capsys.readouterr()
    assert captured.out == ""
    assert captured.err.strip() == (
        "collabecon market: error: the result holds no number at result.price (NaN): "
        "the computation failed there"
    )


def test_an_interrupted_atomic_write_leaves_the_old_file_whole(tmp_path, monkeypatch):
    import os

    path = tmp_path / "report.json"
    write_atomically(path, "old\n")

    def killed(src, dst):
        raise KeyboardInterrupt

    monkeypatch.setattr(os, "replace", killed)
    with pytest.raises(KeyboardInterrupt):
        write_atomically(path, "new\n")
    assert path.read_text() == "old\n"
    assert [p.name for p in tmp_path.iterdir()] == ["report.json"]  # no temporary file left
    monkeypatch.undo()
    write_atomically(path, "new\n")
    assert path.read_text() == "new\n"
