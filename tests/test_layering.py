"""The layers point one way: ``econ`` and ``games`` never pull in torch, nor does ``verify``."""

import subprocess
import sys

import pytest

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
        "from learning.cli import main\n"
        "with contextlib.redirect_stdout(io.StringIO()):\n"
        f"    main({argv!r})\n"
        "print('torch' in sys.modules)\n"
    )
    out = subprocess.run([sys.executable, "-c", probe], capture_output=True, text=True, check=True)
    assert out.stdout.strip().splitlines()[-1] == "False"
