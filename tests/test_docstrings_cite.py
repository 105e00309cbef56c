"""Every public function and class of ``econ`` and ``games`` names its source: a numpy-style
``References`` section with the paper and the place (or, for collabecon's own results, the
registered proposition it rests on). Modules of plumbing (validation, JSON outputs, the claim
record, the proposition registry and its check modules) cite nothing and are left out."""

import importlib
import inspect
import pkgutil

import pytest

#: Modules without paper content: the registry and its checks, validation, outputs, claims.
PLUMBING = (
    "econ.validation",
    "econ.outputs",
    "econ.claims",
    "econ.propositions",
    "econ.errata",
    "econ.plugins",
)


def _public(package: str) -> list[tuple[str, object]]:
    root = importlib.import_module(package)
    found = []
    for info in pkgutil.walk_packages(root.__path__, prefix=f"{package}."):
        name = info.name
        leaf = name.rsplit(".", 1)[-1]
        if name in PLUMBING or leaf.startswith("_") or "propositions" in leaf:
            continue
        module = importlib.import_module(name)
        for attr, obj in vars(module).items():
            if attr.startswith("_") or not (inspect.isfunction(obj) or inspect.isclass(obj)):
                continue
            if getattr(obj, "__module__", None) == name:
                found.append((f"{name}.{attr}", obj))
    return found


PUBLIC = _public("econ") + _public("games")


def test_there_is_a_public_api_to_check():
    assert len(PUBLIC) > 150


@pytest.mark.parametrize(("name", "obj"), PUBLIC, ids=[n for n, _ in PUBLIC])
def test_public_names_cite_their_source(name, obj):
    doc = inspect.getdoc(obj) or ""
    assert "References\n----------" in doc, f"{name} has no References section"
