"""Plugins: algorithms, sellers and reproductions of other distributions, by entry points.

The toy plugin ``tests/plugins/collabecon_toy_plugin`` is a distribution of its own (its
``pyproject.toml`` declares one entry point in each group). The fixture ``installed`` makes
it installed the way an installer does, as far as :mod:`importlib.metadata` sees: a
``*.dist-info`` folder with its ``METADATA`` and ``entry_points.txt`` (read from the
``pyproject.toml``) in a folder on ``sys.path``. The plugin then keeps every registry's
contract, trains through ``collabecon train`` and plays ``collabecon pricing repeated``; a
broken plugin is refused with one warning naming its entry point and distribution. CI also
installs the package itself with pip and runs :func:`test_a_pip_installed_plugin_trains`.
"""

from __future__ import annotations

import importlib
import json
import os
import sys
import textwrap
from importlib.metadata import PackageNotFoundError, distribution
from pathlib import Path

import pytest

from collabecon.cli import main
from collabecon.reproductions import REPRODUCTIONS
from econ.plugins import PluginRegistry, PluginWarning
from games.price_discrimination.sellers import SELLERS
from learning.algorithms import ALGORITHMS
from learning.algorithms.averaging import FedAvg
from tests.contracts.test_algorithm import check_algorithm
from tests.contracts.test_reproduction import check_reproduction
from tests.contracts.test_seller import check_seller

try:
    import tomllib
except ModuleNotFoundError:  # Python 3.10: pytest's own dependency
    import tomli as tomllib

PLUGIN = Path(__file__).parent / "plugins" / "collabecon_toy_plugin"
DIST = "collabecon-toy-plugin"
REGISTRIES = (ALGORITHMS, SELLERS, REPRODUCTIONS)
TINY = [
    "--dataset", "digits", "--model", "mlp", "--clients", "4", "--rounds", "2",
    "--local-steps", "2", "--batch-size", "8", "--no-progress",
]  # fmt: skip


def _pip_installed() -> bool:
    """Whether the toy plugin is installed (outside the fixtures, which remove theirs)."""
    try:
        distribution(DIST)
    except PackageNotFoundError:
        return False
    return True


def _entry_points_txt(groups: dict[str, dict[str, str]]) -> str:
    return "".join(
        f"[{group}]\n" + "".join(f"{name} = {value}\n" for name, value in entries.items()) + "\n"
        for group, entries in groups.items()
    )


class Site:
    """A folder on ``sys.path`` into which distributions are 'installed' as dist-info."""

    def __init__(self, root: Path, monkeypatch: pytest.MonkeyPatch) -> None:
        self.root = root
        self.modules: list[str] = []
        root.mkdir()
        monkeypatch.syspath_prepend(str(root))

    def install(
        self, name: str, groups: dict[str, dict[str, str]], modules: dict[str, str] | None = None
    ) -> None:
        info = self.root / f"{name.replace('-', '_')}-0.1.0.dist-info"
        info.mkdir()
        (info / "METADATA").write_text(f"Metadata-Version: 2.1\nName: {name}\nVersion: 0.1.0\n")
        (info / "entry_points.txt").write_text(_entry_points_txt(groups))
        for module, source in (modules or {}).items():
            (self.root / f"{module}.py").write_text(textwrap.dedent(source))
            self.modules.append(module)
        importlib.invalidate_caches()
        for registry in REGISTRIES:
            registry.reload_plugins()


@pytest.fixture
def site(tmp_path, monkeypatch):
    installed = Site(tmp_path / "site", monkeypatch)
    yield installed
    for registry in REGISTRIES:
        registry.reload_plugins()
    for module in installed.modules:
        sys.modules.pop(module, None)


@pytest.fixture
def installed(site, monkeypatch):
    """The toy plugin, installed into ``site`` with the entry points of its pyproject.toml."""
    project = tomllib.loads((PLUGIN / "pyproject.toml").read_text())["project"]
    monkeypatch.syspath_prepend(str(PLUGIN))
    site.install(project["name"], project["entry-points"])
    return site


def test_the_plugin_joins_each_registry_beside_the_built_ins(installed):
    assert ALGORITHMS["fedavg"] is FedAvg
    assert ALGORITHMS["toy-fedavgm"].__module__ == "collabecon_toy_plugin.algorithm"
    assert SELLERS["toy-half-pd"]().name == "toy-half-pd"
    assert REPRODUCTIONS["toy-duopoly"] == "collabecon_toy_plugin.reproduction"
    for registry, name in zip(
        REGISTRIES, ["toy-fedavgm", "toy-half-pd", "toy-duopoly"], strict=True
    ):
        assert list(registry)[-1] == name
        assert DIST in registry.plugins[name]


def test_the_plugin_algorithm_keeps_the_algorithm_contract(installed):
    for check in check_algorithm("toy-fedavgm"):
        check("toy-fedavgm")
    for check in check_algorithm("toy-fedavgm"):
        check("toy-fedavgm", beta=0.0)


def test_the_plugin_seller_and_reproduction_keep_their_contracts(installed):
    for check in check_seller("toy-half-pd"):
        check("toy-half-pd")
    for check in check_reproduction("toy-duopoly"):
        check("toy-duopoly")


def test_train_runs_the_plugin_algorithm_by_name(installed, capsys):
    argv = ["train", *TINY, "--algorithm", "toy-fedavgm", "--algorithm-arg", "beta=0.5", "--json"]
    assert main(argv) == 0
    result = json.loads(capsys.readouterr().out)
    assert result["algorithm"] == "toy-fedavgm" and result["status"] == "done"
    assert len(result["accuracy"]) == 4


def test_pricing_repeated_plays_the_plugin_seller(installed, capsys):
    argv = ["pricing", "repeated", "--seller", "toy-half-pd", "--rounds", "50", "--seeds", "2"]
    assert main([*argv, "--json"]) == 0
    result = json.loads(capsys.readouterr().out)
    assert sum(result["action_freq"].values()) == pytest.approx(1.0)
    assert 0.3 < result["alpha_bar_final"] < 0.7  # half the rounds discriminate
    assert main([*argv, "--alpha", "0.3"]) == 2
    assert "does not apply to seller 'toy-half-pd'" in capsys.readouterr().err


def test_reproduce_reports_the_plugin_reproduction(installed, capsys, tmp_path):
    out = tmp_path / "report"
    assert main(["reproduce", "--only", "toy-duopoly", "--out", str(out), "--json"]) == 0
    result = json.loads(capsys.readouterr().out)
    assert "toy-duopoly" in json.dumps(result)
    assert "toy.duopoly.high-firm-ahead" in (out / "report.md").read_text()


def test_without_the_plugin_the_name_is_unknown(site, capsys):
    assert "toy-fedavgm" not in ALGORITHMS and not ALGORITHMS.plugins
    assert main(["train", *TINY, "--algorithm", "toy-fedavgm"]) == 2
    assert "toy-fedavgm" in capsys.readouterr().err


@pytest.mark.parametrize(
    ("value", "module", "reason"),
    [
        (
            "broken_algo:Algo",
            "raise ImportError('needs a GPU library')",
            "ImportError: needs a GPU",
        ),
        ("broken_algo:Algo", "Algo = 3", "3 is not a subclass of learning.algorithms.Algorithm"),
        (
            "broken_algo:Algo",
            "from learning.algorithms import FederatedAlgorithm\n"
            "class Algo(FederatedAlgorithm):\n    name = 'broken'\n",
            "Algo does not define aggregate, client_models, configure, init",
        ),
        (
            "broken_algo:Algo",
            "from learning.algorithms.averaging import GroupAveraging\n"
            "class Algo(GroupAveraging):\n    name = 'other'\n"
            "    def assignment(self): return [0]\n",
            "Algo.name is 'other', not the entry point's name",
        ),
        ("broken_algo:Missing", "", "AttributeError"),
    ],
)
def test_a_broken_plugin_is_refused_with_one_warning_naming_it(site, value, module, reason):
    site.install(
        "broken-dist", {"collabecon.algorithms": {"broken": value}}, {"broken_algo": module}
    )
    with pytest.warns(PluginWarning) as record:
        assert "broken" not in ALGORITHMS
    (warning,) = record
    message = str(warning.message)
    assert message.startswith(f"collabecon.algorithms: entry point 'broken' ({value})")
    assert "of distribution broken-dist 0.1.0 is not registered" in message
    assert reason in message and "\n" not in message
    assert "fedavg" in ALGORITHMS  # the built-ins stand
    with pytest.warns(PluginWarning):  # read again after a reload, not before
        ALGORITHMS.reload_plugins()
        assert "broken" not in ALGORITHMS


def test_the_command_line_prints_a_refused_plugin_as_one_warning_line(site, capsys):
    site.install("broken-dist", {"collabecon.algorithms": {"broken": "not_there:Algo"}})
    assert main(["train", *TINY, "--algorithm", "broken"]) == 2
    err = capsys.readouterr().err.splitlines()
    assert err[0] == (
        "collabecon: warning: collabecon.algorithms: entry point 'broken' (not_there:Algo) of "
        "distribution broken-dist 0.1.0 is not registered: it failed to load: "
        "ModuleNotFoundError: No module named 'not_there'"
    )
    assert err[1].startswith("collabecon train: error: --algorithm must be one of 'local'")
    assert len(err) == 2


def test_a_refused_seller_is_shown_while_the_flags_are_declared_even_quiet(site, capsys):
    site.install("broken-dist", {"collabecon.sellers": {"broken": "not_there:make"}})
    argv = ["pricing", "repeated", "--rounds", "20", "--seeds", "1", "--json", "--quiet"]
    assert main(argv) == 0
    (line,) = capsys.readouterr().err.splitlines()
    assert line.startswith("collabecon: warning: collabecon.sellers: entry point 'broken'")


def test_a_plugin_that_registers_itself_is_still_a_plugin(site):
    source = (
        "from learning.algorithms import register\n"
        "from learning.algorithms.averaging import FedAvg\n"
        "@register\nclass Again(FedAvg):\n    name = 'again'\n"
    )
    site.install(
        "self-dist",
        {"collabecon.algorithms": {"again": "again_algo:Again"}},
        {"again_algo": source},
    )
    assert ALGORITHMS["again"].__name__ == "Again"
    assert "self-dist" in ALGORITHMS.plugins["again"]
    ALGORITHMS.reload_plugins()  # read again: the module is imported already
    assert "self-dist" in ALGORITHMS.plugins["again"]


def test_a_plugin_cannot_take_a_built_in_or_another_plugins_name(site):
    seller = "from games.price_discrimination.sellers import AlphaPD\n"
    seller += "def make(): return AlphaPD(0.5, name='half')\n"
    site.install("a-dist", {"collabecon.sellers": {"half": "a_seller:make"}}, {"a_seller": seller})
    site.install(
        "b-dist",
        {
            "collabecon.sellers": {"half": "a_seller:make", "exp3": "a_seller:make"},
            "collabecon.algorithms": {"fedavg": "learning.algorithms.averaging:FedAvg"},
        },
    )
    with pytest.warns(PluginWarning) as record:
        assert SELLERS.plugins == {
            "half": "entry point 'half' (a_seller:make) of distribution a-dist 0.1.0"
        }
        assert ALGORITHMS["fedavg"] is FedAvg and not ALGORITHMS.plugins
    messages = sorted(str(w.message) for w in record)
    assert len(messages) == 3
    assert "a plugin cannot replace the built-in algorithm 'fedavg'" in messages[0]
    assert (
        "b-dist" in messages[1]
        and "a plugin cannot replace the built-in seller 'exp3'" in messages[1]
    )
    assert "b-dist" in messages[2] and "'half' comes already from entry point 'half'" in messages[2]


def test_bad_sellers_and_reproductions_are_refused(site):
    site.install(
        "bad-dist",
        {
            "collabecon.sellers": {"named-wrong": "bad_mod:make", "not-callable": "bad_mod:VALUE"},
            "collabecon.reproductions": {"attr": "bad_mod:make", "no-claims": "bad_mod"},
        },
        {
            "bad_mod": "from games.price_discrimination.sellers import AlphaPD\n"
            "VALUE = 1\ndef make(): return AlphaPD(0.5, name='other')\n"
            "def reproduce(scale, out, seeds=None): return None\n"
        },
    )
    with pytest.warns(PluginWarning) as record:
        assert not set(SELLERS) & {"named-wrong", "not-callable"}
        assert not set(REPRODUCTIONS) & {"attr", "no-claims"}
    messages = " ".join(str(w.message) for w in record)
    assert "gives a seller named 'other', not the entry point's name" in messages
    assert "1 is not callable" in messages
    assert "is not a module (name the module, without ':attribute')" in messages
    assert "module bad_mod defines no CLAIMS tuple of ClaimSpec" in messages


def test_entry_points_are_read_once_on_first_consultation(monkeypatch):
    calls = []

    def entry_points(group):
        calls.append(group)
        return []

    monkeypatch.setattr("econ.plugins.entry_points", entry_points)
    registry = PluginRegistry("some.group", "thing", lambda name, loaded: loaded, {"a": 1})
    assert calls == []
    assert registry["a"] == 1 and list(registry) == ["a"] and len(registry) == 1
    assert calls == ["some.group"]
    with pytest.raises(ValueError, match="thing 'a' is registered twice"):
        registry.add("a", 2)


@pytest.mark.skipif(
    not _pip_installed() and not os.environ.get("COLLABECON_PLUGIN_INSTALLED"),
    reason=f"{DIST} is not pip-installed (.ci/run installs it from tests/plugins/)",
)
def test_a_pip_installed_plugin_trains(capsys):
    ALGORITHMS.reload_plugins()
    assert DIST in ALGORITHMS.plugins["toy-fedavgm"]
    assert main(["train", *TINY, "--algorithm", "toy-fedavgm", "--json"]) == 0
    assert json.loads(capsys.readouterr().out)["status"] == "done"


@pytest.mark.flower
def test_flower_simulate_runs_the_plugin_algorithm_on_the_nodes(
    installed, monkeypatch, capsys, tmp_path
):
    """The Flower nodes (Ray workers, new processes) find the plugin on their path, as an
    installed distribution is found, and build it by name as the server does."""
    path = [str(installed.root), str(PLUGIN), os.environ.get("PYTHONPATH", "")]
    monkeypatch.setenv("PYTHONPATH", os.pathsep.join(p for p in path if p))
    argv = [*TINY[:-1], "--algorithm", "toy-fedavgm", "--cpus", "2", "--out", str(tmp_path / "out")]
    assert main(["flower", "simulate", "--json", *argv]) == 0
    (run,) = json.loads(capsys.readouterr().out)["runs"]
    assert run["config"]["algorithm"] == "toy-fedavgm" and len(run["history"]) == 2
