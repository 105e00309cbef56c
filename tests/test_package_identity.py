"""The package says who it is: its version, its licence and how to cite it, each stated once in
``pyproject.toml`` and agreeing everywhere else."""

from __future__ import annotations

import ast
import re
from pathlib import Path
from typing import Any

import pytest

import collabecon
from collabecon.cli import main

ROOT = Path(__file__).resolve().parents[1]

try:
    import tomllib
except ModuleNotFoundError:  # Python 3.10
    try:
        import tomli as tomllib
    except ModuleNotFoundError:
        tomllib = None  # type: ignore[assignment]

#: The SPDX identifier of each licence this test knows, and a phrase its text starts with.
LICENCE_TEXTS = {"MIT": "MIT License"}


@pytest.fixture(scope="module")
def project() -> dict[str, Any]:
    if tomllib is None:
        pytest.skip("reading pyproject.toml needs tomllib (Python 3.11) or tomli")
    with open(ROOT / "pyproject.toml", "rb") as file:
        return tomllib.load(file)["project"]


def test_version_flag_prints_the_version_of_pyproject(project, capsys):
    assert main(["--version"]) == 0
    assert capsys.readouterr().out == f"collabecon {project['version']}\n"


def test_version_flag_takes_no_other_arguments(capsys):
    with pytest.raises(SystemExit) as stop:
        main(["--version", "verify"])
    assert stop.value.code == 2
    assert "--version" in capsys.readouterr().err


def test_top_help_lists_the_version_flag(capsys):
    assert main(["--help"]) == 0
    assert "--version" in capsys.readouterr().out


def test_dunder_version_is_the_version_of_pyproject(project):
    assert collabecon.__version__ == project["version"]


def test_license_file_holds_the_licence_pyproject_declares(project):
    licence = project["license"]
    assert isinstance(licence, str), "license is an SPDX expression"
    assert project["license-files"] == ["LICENSE"]
    text = (ROOT / "LICENSE").read_text()
    assert text.startswith(LICENCE_TEXTS[licence])
    assert "Copyright (c) 2026 the collabecon developers" in text


def test_citation_file_cites_this_version_and_the_five_papers(project):
    yaml = pytest.importorskip("yaml")
    citation = yaml.safe_load((ROOT / "CITATION.cff").read_text())
    assert citation["cff-version"] == "1.2.0"
    assert citation["version"] == project["version"]
    assert citation["license"] == project["license"]
    assert citation["authors"] == [{"name": "the collabecon developers"}]
    references = citation["references"]
    assert len(references) == 5
    titles = [reference["title"] for reference in references]
    assert titles == [
        "Collaborative Learning: Aligning Goals and Outcomes",
        "Provably Personalized and Robust Federated Learning",
        "Provable Mutual Benefits from Federated Learning in Privacy-Sensitive Domains",
        "CoBo: Collaborative Learning via Bilevel Optimization",
        "IP-FL: Incentivized and Personalized Federated Learning",
    ]
    assert all(reference["authors"] for reference in references)


def _flower_app_template() -> str:
    """The ``_APP`` template of ``learning/runtimes/flower/deploy.py``, read without importing Flower."""
    source = (ROOT / "learning" / "runtimes" / "flower" / "deploy.py").read_text()
    for node in ast.parse(source).body:
        if isinstance(node, ast.Assign) and any(
            isinstance(target, ast.Name) and target.id == "_APP" for target in node.targets
        ):
            return ast.literal_eval(node.value)
    raise AssertionError("learning/runtimes/flower/deploy.py defines no _APP template")


def test_flower_app_has_the_licence_of_the_package(project):
    app = tomllib.loads(_flower_app_template().format(meta_dir='"meta"'))
    assert app["project"]["license"] == project["license"]


def test_changelog_has_an_entry_for_this_version(project):
    changelog = (ROOT / "CHANGELOG.md").read_text()
    assert re.search(rf"^## \[{re.escape(project['version'])}\]", changelog, re.M)
