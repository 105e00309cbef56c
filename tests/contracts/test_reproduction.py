"""The reproduction contract, checked on every entry of
:data:`collabecon.reproductions.REPRODUCTIONS`, without running the experiments.

A reproduction module defines ``reproduce(scale, out, seeds=None)`` and declares the claims
of its paper as a table of :class:`econ.claims.ClaimSpec` (``CLAIMS``): ids unique and
stable, every claim placed in its paper, its measurement and its test callables.
"""

import importlib
import inspect

import pytest

from collabecon.reproductions import REPRODUCTIONS
from econ.claims import ClaimSpec


def _module(name):
    return importlib.import_module(REPRODUCTIONS[name])


def _reproduce_signature(name):
    parameters = list(inspect.signature(_module(name).reproduce).parameters.values())
    assert [p.name for p in parameters[:3]] == ["scale", "out", "seeds"]
    assert parameters[2].default is None
    assert all(p.default is not p.empty or p.kind is p.KEYWORD_ONLY for p in parameters[2:])


def _claims_are_a_table(name):
    table = _module(name).CLAIMS
    assert isinstance(table, tuple) and table
    assert all(isinstance(spec, ClaimSpec) for spec in table)
    ids = [spec.id for spec in table]
    assert len(ids) == len(set(ids)), [i for i in ids if ids.count(i) > 1]
    for spec in table:
        assert " " not in spec.id and spec.statement == spec.statement.strip()
        assert callable(spec.measured) and callable(spec.holds)
        assert spec.applies is None or callable(spec.applies)


def check_reproduction(name):
    """The checks every registered reproduction passes (each called with its name)."""
    return [_reproduce_signature, _claims_are_a_table]


@pytest.mark.parametrize("name", sorted(REPRODUCTIONS))
def test_every_reproduction_keeps_the_contract(name):
    for check in check_reproduction(name):
        check(name)
