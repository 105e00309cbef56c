"""The Examples sections of ``econ``, ``games`` and ``collabecon`` run as written (doctest).

Every closed form of the two layers shows a call and its numbers in its docstring; this test
runs them all, so a docstring cannot drift from the code it documents.
"""

from __future__ import annotations

import doctest
import importlib
import pkgutil

import numpy as np
import pytest


def _modules(package: str) -> list[str]:
    root = importlib.import_module(package)
    names = [package]
    names += [m.name for m in pkgutil.walk_packages(root.__path__, prefix=f"{package}.")]
    return sorted(n for n in names if not n.endswith(".__main__"))  # those run the program


MODULES = _modules("econ") + _modules("games") + _modules("collabecon")

#: Modules whose closed forms must carry examples.
WITH_EXAMPLES = (
    "collabecon",
    "econ.bargaining",
    "econ.duopoly",
    "econ.market",
    "econ.oligopoly",
    "econ.population",
    "econ.population_market",
    "econ.qualities",
    "econ.quality_caps",
    "econ.privacy.models",
    "econ.privacy.mechanisms",
    "econ.privacy.existence",
    "econ.privacy.optimal",
    "games.price_discrimination.equilibrium",
    "games.price_discrimination.estimator",
    "games.price_discrimination.game",
)


def _examples(name: str) -> tuple[int, int]:
    """(failed, attempted) for the doctests of module ``name``."""
    module = importlib.import_module(name)
    finder = doctest.DocTestFinder(exclude_empty=True)
    runner = doctest.DocTestRunner(optionflags=doctest.ELLIPSIS | doctest.NORMALIZE_WHITESPACE)
    with np.printoptions(legacy="1.25"):
        for test in finder.find(module, name):
            runner.run(test)
    result = runner.summarize(verbose=False)
    return result.failed, result.attempted


@pytest.mark.parametrize("name", MODULES)
def test_the_examples_of_the_module_hold(name):
    failed, _ = _examples(name)
    assert failed == 0, (
        f"{failed} example(s) of {name} fail (the doctest report is in the captured output)"
    )


@pytest.mark.parametrize("name", WITH_EXAMPLES)
def test_the_closed_forms_have_examples(name):
    _, attempted = _examples(name)
    assert attempted > 0, f"{name} has no Examples section"
