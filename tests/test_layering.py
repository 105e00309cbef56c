"""The layers point one way: ``econ`` <- ``games`` <- ``learning`` <- ``collabecon``.

Read from the source (every import statement, those inside functions included): ``econ``
imports none of the layers above it, ``games`` neither ``learning`` nor ``collabecon``,
``learning`` never ``collabecon``, and the engine core of ``learning`` (everything but
``drivers``, ``runtimes`` and ``theory``) neither the drivers nor the runtimes. Checked by
running: ``econ`` and ``games`` never pull in torch, nor does ``verify``.

Statements point one way too: ``@proposition`` registers checks only in modules named
``propositions`` or ``<name>_propositions``, such a module imports its model and never the
reverse, and no module imports another's private (underscored) names.
"""

import ast
import functools
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


@functools.cache
def _tree(path: Path) -> ast.Module:
    """Each source file parsed once for every test that reads it."""
    return ast.parse(path.read_text())


def _imports(path: Path) -> set[str]:
    names = set()
    for node in ast.walk(_tree(path)):
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


#: The packages whose modules the statement rules below read.
PACKAGES = ("econ", "games", "learning", "collabecon")
#: The registry itself: every check module imports its decorator and verdicts.
REGISTRY = "econ.propositions"
#: Modules that import propositions modules to register their entries, not to use their names:
#: the registry's loader (``load`` imports every module) and the commands that check entries.
LOADERS = ("econ.propositions", "collabecon._verify", "collabecon.cli.demo")


def _dotted(path: Path) -> str:
    parts = path.relative_to(ROOT).with_suffix("").parts
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


@functools.cache
def _all_modules() -> list[tuple[str, Path, ast.Module]]:
    return [
        (_dotted(path), path, _tree(path))
        for package in PACKAGES
        for path in sorted((ROOT / package).rglob("*.py"))
    ]


def _is_statement_module(name: str) -> bool:
    leaf = name.rsplit(".", 1)[-1]
    return name != REGISTRY and (leaf == "propositions" or leaf.endswith("_propositions"))


def _imported(module: str, path: Path, tree: ast.Module) -> list[tuple[str, str, int]]:
    """Every ``(module imported from, name or "", line)`` of the source, relative ones resolved."""
    package = module if path.name == "__init__.py" else module.rpartition(".")[0]
    found = []
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            found += [(alias.name, "", node.lineno) for alias in node.names]
        elif isinstance(node, ast.ImportFrom):
            base = node.module or ""
            if node.level:
                anchor = package.split(".")[: len(package.split(".")) - node.level + 1]
                base = ".".join([*anchor, *([base] if base else [])])
            found += [(base, alias.name, node.lineno) for alias in node.names]
    return found


def _decorated_by_proposition(tree: ast.Module) -> list[str]:
    def is_proposition(decorator: ast.expr) -> bool:
        target = decorator.func if isinstance(decorator, ast.Call) else decorator
        return (isinstance(target, ast.Name) and target.id == "proposition") or (
            isinstance(target, ast.Attribute) and target.attr == "proposition"
        )

    return [
        node.name
        for node in ast.walk(tree)
        if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef | ast.ClassDef)
        and any(is_proposition(d) for d in node.decorator_list)
    ]


def test_statements_are_registered_only_in_propositions_modules():
    modules = _all_modules()
    found = [
        f"{module}.{name}"
        for module, _, tree in modules
        if not _is_statement_module(module)
        for name in _decorated_by_proposition(tree)
    ]
    assert not found, found
    # the scan sees the decorator where it is used
    assert sum(len(_decorated_by_proposition(tree)) for _, _, tree in modules) > 150


def test_only_propositions_modules_import_propositions_modules():
    found = [
        f"{module}:{line} imports {'.'.join(filter(None, (source, name)))}"
        for module, path, tree in _all_modules()
        if not _is_statement_module(module) and module not in LOADERS
        for source, name, line in _imported(module, path, tree)
        if _is_statement_module(source) or (name and _is_statement_module(f"{source}.{name}"))
    ]
    assert not found, found


def test_no_module_imports_a_private_name_of_another():
    found = [
        f"{module}:{line} imports {name} from {source}"
        for module, path, tree in _all_modules()
        for source, name, line in _imported(module, path, tree)
        if source.split(".")[0] in PACKAGES and name.startswith("_") and not name.startswith("__")
    ]
    assert not found, found
