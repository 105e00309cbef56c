"""The documentation site builds with ``mkdocs build --strict``: every page, link, anchor,
notebook and API reference resolves (``mkdocs.yml``; the ``docs`` extra installs what it
needs). The built pages render the docstrings' reST as Markdown (``docs/rst_markup.py``),
show their maths as MathML typeset at build time (``docs/hooks.py``) and load nothing from
the network."""

from __future__ import annotations

import importlib.util
import os
import re
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
NEEDED = (
    "mkdocs",
    "material",
    "mkdocstrings",
    "mkdocstrings_handlers.python",
    "mkdocs_jupyter",
    "latex2mathml",
)
# reST that Markdown would show as literal text
REST = (":math:`", ":class:`", ":func:`", ":meth:`", ":mod:`", ":data:`", ":attr:`", ".. math::")
# a script, stylesheet, font, image or frame fetched from another host, and an empty script
# source (which loads the page itself)
EXTERNAL = re.compile(
    r"<(?:script|link|img|iframe|source|embed)\b[^>]*\b(?:src|href)\s*=\s*[\"']?(?:https?:)?//"
    r"|\bimport\(\s*[\"'](?:https?:)?//"
    r"|\burl\(\s*[\"']?(?:https?:)?//"
    r"|@import\s+[\"'](?:https?:)?//"
    r"|<script\b[^>]*\bsrc=[\"']{2}",
    re.IGNORECASE,
)


def _missing() -> list[str]:
    missing = []
    for name in NEEDED:
        try:
            found = importlib.util.find_spec(name) is not None
        except ModuleNotFoundError:
            found = False
        if not found:
            missing.append(name)
    return missing


@pytest.fixture(scope="module")
def site(tmp_path_factory) -> Path:
    missing = _missing()
    if missing:
        pytest.skip(
            f"the docs extra is not installed ({', '.join(missing)} missing): "
            'python3 -m pip install -e ".[docs]"'
        )
    site = tmp_path_factory.mktemp("docs") / "site"
    env = {**os.environ, "NO_MKDOCS_2_WARNING": "1", "COLLABECON_DOCS_EXECUTE": "false"}
    out = subprocess.run(
        [sys.executable, "-m", "mkdocs", "build", "--strict", "--site-dir", str(site)],
        cwd=ROOT,
        capture_output=True,
        text=True,
        env=env,
    )
    assert out.returncode == 0, out.stdout[-4000:] + out.stderr[-4000:]
    return site


def _pages(site: Path) -> dict[str, str]:
    return {p.relative_to(site).as_posix(): p.read_text() for p in site.rglob("*.html")}


def test_the_documentation_site_builds_strictly(site):
    pages = {p.relative_to(site).as_posix() for p in site.rglob("index.html")}
    for page in (
        "architecture/index.html",
        "conventions/index.html",
        "errata/index.html",
        "benchmarks/index.html",
        "notebooks/01_duopoly_and_bargaining/index.html",
        "api/econ/index.html",
    ):
        assert page in pages, sorted(pages)
    # the benchmark page holds bench/RESULTS.md itself, the API pages the docstrings
    results = (ROOT / "bench" / "RESULTS.md").read_text().splitlines()[0].lstrip("# ")
    assert results in (site / "benchmarks" / "index.html").read_text()
    assert "oligopoly_equilibrium" in (site / "api" / "econ" / "index.html").read_text()
    # the build's support code is not published
    assert not list(site.rglob("*.py"))


def test_no_page_shows_rest_markup(site):
    shown = {
        (page, markup) for page, text in _pages(site).items() for markup in REST if markup in text
    }
    assert not shown, sorted(shown)


def test_no_page_loads_anything_from_the_network(site):
    loads = {(page, m[0]) for page, text in _pages(site).items() for m in EXTERNAL.finditer(text)}
    assert not loads, sorted(loads)


def test_the_maths_is_mathml(site):
    api = (site / "api" / "econ" / "index.html").read_text()
    # econ.bargaining's module docstring: a .. math:: block and :math: roles
    assert '<math xmlns="http://www.w3.org/1998/Math/MathML" display="block">' in api
    assert api.count('display="inline"') > 100
    assert 'class="arithmatex"' not in api and "\\(" not in api
    notebook = (site / "notebooks" / "05_defection_free_market" / "index.html").read_text()
    assert "<math" in notebook and "$q_l \\le q_h$" not in notebook
    assert "MathJax" not in notebook


def test_roles_are_cross_references_shown_as_code(site):
    api = (site / "api" / "econ" / "index.html").read_text()
    link = r'<a class="autorefs autorefs-internal"[^>]*href="{}"[^>]*><code>{}</code>'
    # :func:`econ.oligopoly.oligopoly_equilibrium`, a documented object: a link
    assert re.search(
        link.format(
            "#econ.oligopoly.oligopoly_equilibrium", "econ.oligopoly.oligopoly_equilibrium"
        ),
        api,
    )
    # :func:`market_round` in econ.market: the name found in its module
    assert re.search(link.format("#econ.market.market_round", "market_round"), api)
    # :class:`~econ.privacy.empirical.Empirical` in econ.privacy.existence: its last component
    assert re.search(
        r'href="#econ\.privacy\.empirical\.Empirical"[^>]*><code>Empirical</code>', api
    )
    # a target the site does not document stays code, without a link
    learning = (site / "api" / "learning" / "index.html").read_text()
    assert '<span title="torch.save"><code>' in learning


def test_the_errata_formulas_are_text(site):
    page = (site / "errata" / "index.html").read_text()
    article = page[page.index("<article") : page.index("</article>")]
    # x**2, a * b, f~_ij and Proj_[0,1](w) are neither emphasis nor links
    assert "<em>" not in article
    labels = set(re.findall(r"<strong>(.*?)</strong>", article))
    assert labels == {
        "Source:",
        "As printed:",
        "Why it fails:",
        "Counterexample:",
        "Corrected",
        "Evidence for the correction:",
    }, labels
    assert not re.findall(r'<a [^>]*href="(?!#)', article)
    assert "Proj_[0,1](w + gamma &lt;h_i, h_j&gt;)" in article


def test_rest_markup_becomes_markdown():
    griffe = pytest.importorskip("griffe")
    spec = importlib.util.spec_from_file_location("rst_markup", ROOT / "docs" / "rst_markup.py")
    assert spec is not None and spec.loader is not None
    rst = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(rst)
    loader = griffe.GriffeLoader(search_paths=[str(ROOT)])
    market = loader.load("econ.market")
    docstring = (
        "Prices :math:`p_l \\le p_h` (:func:`market_round`, :class:`~econ.market.MarketRound`,\n"
        ":mod:`.oligopoly`, :pep:`562`).\n"
        "\n"
        "* an item\n"
        "  of two lines and an equation:\n"
        "\n"
        "  .. math:: U = q\n"
        "\n"
        "  after it.\n"
        "* a second item\n"
        "\n"
        "A table::\n"
        "\n"
        "    [grid]\n"
    )
    assert rst.markdown(docstring, market, loader) == (
        "Prices $p_l \\le p_h$ ("
        '<autoref identifier="econ.market.market_round" optional><code>market_round</code></autoref>, '
        '<autoref identifier="econ.market.MarketRound" optional><code>MarketRound</code></autoref>,\n'
        '<autoref identifier="econ.oligopoly" optional><code>oligopoly</code></autoref>, PEP 562).\n'
        "\n"
        "* an item\n"
        "    of two lines and an equation:\n"
        "\n"
        "    $$\n"
        "    U = q\n"
        "    $$\n"
        "\n"
        "    after it.\n"
        "\n"
        "* a second item\n"
        "\n"
        "A table:\n"
        "\n"
        "    [grid]\n"
    )
