"""The layers point one way: ``econ`` <- ``games`` <- ``learning`` <- ``collabecon``.

Read from the source (every import statement, those inside functions included): ``econ``
imports none of the layers above it, ``games`` neither ``learning`` nor ``collabecon``,
``learning`` never ``collabecon``, and the engine core of ``learning`` (everything but
``drivers``, ``runtimes`` and ``theory``) neither the drivers nor the runtimes. Checked by
running: ``econ`` and ``games`` never pull in torch, nor does ``verify``.
"""

import ast
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
#: package -> the top-level names and subpackages its modules must never import
FORBIDDEN = {
    "econ": ("games", "learning", "collabecon", "torch"),
    "games": ("learning", "collabecon", "torch"),
    "learning": ("collabecon",),
}
#: the parts of ``learning`` outside its engine core
OUTSIDE_CORE = ("learning.drivers", "learning.runtimes", "learning.theory")


def _imports(path: Path) -> set[str]:
    names = set()
    for node in ast.walk(ast.parse(path.read_text())):
        if isinstance(node, ast.Import):
            names.update(alias.name for alias in node.names)
        elif isinstance(node, ast.ImportFrom) and node.level == 0 and node.module:
            names.add(node.module)
            names.update(f"{node.module}.{alias.name}" for alias in node.names)
    return names


def _modules(package: str) -> list[tuple[str, Path]]:
    return [
        (".".join(path.relative_to(ROOT).with_suffix("").parts), path)
        for path in sorted((ROOT / package).rglob("*.py"))
    ]


def _within(name: str, prefixes: tuple[str, ...]) -> bool:
    return any(name == p or name.startswith(p + ".") for p in prefixes)


@pytest.mark.parametrize("package", sorted(FORBIDDEN))
def test_no_module_imports_a_layer_above_its_own(package):
    found = [
        f"{module} imports {name}"
        for module, path in _modules(package)
        for name in sorted(_imports(path))
        if _within(name, FORBIDDEN[package])
    ]
    assert not found, found


def test_the_engine_core_imports_neither_drivers_nor_runtimes():
    found = [
        f"{module} imports {name}"
        for module, path in _modules("learning")
        if not _within(module, OUTSIDE_CORE)
        for name in sorted(_imports(path))
        if _within(name, ("learning.drivers", "learning.runtimes"))
    ]
    assert not found, found


def test_the_application_left_learning():
    for gone in ("cli", "experiments", "benchmarks"):
        assert not (ROOT / "learning" / gone).exists(), gone


PROBE = """
import importlib, pkgutil, sys
for name in ("econ", "games"):
    package = importlib.import_module(name)
    for info in pkgutil.walk_packages(package.__path__, prefix=name + "."):
        importlib.import_module(info.name)
bad = sorted(m for m in sys.modules if m == "torch" or m.startswith(("torch.", "learning")))
print(",".join(bad))
"""


def test_econ_and_games_import_without_torch_or_learning():
    out = subprocess.run([sys.executable, "-c", PROBE], capture_output=True, text=True, check=True)
    assert out.stdout.strip() == ""


def test_econ_does_not_import_games():
    probe = (
        "import importlib, pkgutil, sys\n"
        "import econ\n"
        "for i in pkgutil.walk_packages(econ.__path__, prefix='econ.'):\n"
        "    importlib.import_module(i.name)\n"
        "print(any(m == 'games' or m.startswith('games.') for m in sys.modules))\n"
    )
    out = subprocess.run([sys.executable, "-c", probe], capture_output=True, text=True, check=True)
    assert out.stdout.strip() == "False"


# verify loads every registering package (econ, games, learning.theory) before filtering
@pytest.mark.parametrize("argv", [["verify", "--only", "thesis.ch3.lemma2", "--json"]])
def test_verify_does_not_import_torch(argv):
    probe = (
        "import sys, contextlib, io\n"
        "from collabecon.cli import main\n"
        "with contextlib.redirect_stdout(io.StringIO()):\n"
        f"    main({argv!r})\n"
        "print('torch' in sys.modules)\n"
    )
    out = subprocess.run([sys.executable, "-c", probe], capture_output=True, text=True, check=True)
    assert out.stdout.strip().splitlines()[-1] == "False"
