"""``import collabecon`` gives the public API, lazily; the packages say what is public.

The README's Python quickstart runs as written; ``learning.byzantine`` imports on its own;
no two public classes of the four packages share a name.
"""

from __future__ import annotations

import importlib
import importlib.util
import inspect
import pkgutil
import re
import subprocess
import sys
from pathlib import Path

import pytest

import collabecon

ROOT = Path(__file__).resolve().parents[1]
PACKAGES = ("collabecon", "econ", "games", "learning")


def _python(code: str) -> str:
    out = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, cwd=ROOT, check=True
    )
    return out.stdout.strip()


def test_import_collabecon_and_its_economics_names_do_not_import_torch():
    probe = (
        "import sys, collabecon\n"
        "print(sorted(m for m in sys.modules if m.split('.')[0] in "
        "('torch', 'econ', 'games', 'learning')))\n"
        "collabecon.duopoly_equilibrium(0.3, 0.8)\n"
        "collabecon.market_round([0.2, 0.9])\n"
        "collabecon.PDGame, collabecon.ModelQualities, collabecon.DPMean\n"
        "collabecon.collaboration_graph([[1.0]]), collabecon.bid_graph([[True]])\n"
        "import learning\n"
        "print('torch' in sys.modules)\n"
    )
    assert _python(probe).splitlines() == ["[]", "False"]


@pytest.mark.parametrize("name", collabecon.__all__)
def test_every_public_name_resolves_to_the_object_of_its_module(name):
    module, attribute = collabecon._NAMES[name]
    assert getattr(collabecon, name) is getattr(importlib.import_module(module), attribute)


def test_all_names_exactly_the_table_and_dir_lists_them():
    assert sorted(collabecon.__all__) == sorted(collabecon._NAMES)
    assert len(set(collabecon.__all__)) == len(collabecon.__all__)
    assert set(collabecon.__all__) <= set(dir(collabecon))


def test_an_unknown_name_is_an_attribute_error_naming_it():
    with pytest.raises(AttributeError, match="no_such_name"):
        collabecon.no_such_name  # noqa: B018


@pytest.mark.parametrize("package", ["econ", "games", "learning"])
def test_each_package_names_its_public_modules(package):
    module = importlib.import_module(package)
    assert module.__doc__ and "Public modules" in module.__doc__
    for name in module.__all__:
        value = getattr(module, name)
        if name in module.MODULES:
            assert value is importlib.import_module(f"{package}.{name}")
            assert f"``{name}``" in module.__doc__, f"{package}.{name} missing from the docstring"
    with pytest.raises(AttributeError, match="no_such_module"):
        module.no_such_module  # noqa: B018


def _public_modules(package: str) -> list[str]:
    """Every module of ``package`` with no ``_``-name in its path, but ``__main__``; without
    the flower extra, the Flower modules that need ``flwr`` are left out."""
    flower = importlib.util.find_spec("flwr") is not None
    root = importlib.import_module(package)
    found = [package]
    for info in pkgutil.walk_packages(root.__path__, prefix=f"{package}."):
        if any(part.startswith("_") for part in info.name.split(".")):
            continue
        try:
            importlib.import_module(info.name)
        except ModuleNotFoundError as err:
            if flower or err.name != "flwr":
                raise
            continue
        found.append(info.name)
    return found


def test_no_two_public_classes_share_a_name():
    homes: dict[str, list[str]] = {}
    for package in PACKAGES:
        for name in _public_modules(package):
            for attribute, value in vars(importlib.import_module(name)).items():
                if inspect.isclass(value) and value.__module__ == name and attribute[0] != "_":
                    homes.setdefault(attribute, []).append(name)
    shared = {name: modules for name, modules in homes.items() if len(modules) > 1}
    assert not shared, shared


def test_byzantine_imports_on_its_own_and_robust_fedavg_registers_with_the_algorithms():
    probe = (
        "import learning.byzantine\n"
        "from learning.algorithms import ALGORITHMS\n"
        "print('robust-fedavg' in ALGORITHMS)"
    )
    assert _python(probe) == "True"


def test_each_package_ships_py_typed():
    pyproject = (ROOT / "pyproject.toml").read_text()
    include = ", ".join(f'"{p}*"' for p in PACKAGES)
    assert f"include = [{include}]" in pyproject
    for package in PACKAGES:
        assert (ROOT / package / "py.typed").is_file()
        assert f'{package} = ["py.typed"]' in pyproject


def test_the_readme_quickstart_runs(capsys):
    readme = (ROOT / "README.md").read_text()
    blocks = re.findall(r"^## Python quickstart\n.*?```python\n(.*?)```", readme, re.S | re.M)
    assert len(blocks) == 1, "README.md has one Python quickstart block"
    exec(compile(blocks[0], "README.md", "exec"), {})
    lines = capsys.readouterr().out.splitlines()
    assert lines[0] == "prices 0.0517 0.2759, welfare 0.3453"
    assert re.fullmatch(r"q_l\* 0\.\d{4}, q_h\* 1\.0000", lines[1])
    assert "welfare" in lines[2]
    assert re.fullmatch(r"(\d+) of \1 verdicts as expected", lines[3])


def test_the_api_page_lists_every_public_name_with_its_module():
    page = (ROOT / "docs" / "api" / "collabecon.md").read_text()
    listed = {
        name: (module, attribute)
        for name, attribute, module in re.findall(
            r"^\| `collabecon\.(\w+)` \| `(\w+)` of \[`([\w.]+)`\]", page, re.M
        )
    }
    assert set(listed) == set(collabecon.__all__)
    for name, (module, attribute) in listed.items():
        assert getattr(importlib.import_module(module), attribute) is getattr(collabecon, name)
