r"""Build hooks of the documentation site (``mkdocs.yml``, ``hooks:``): its maths as MathML.

The site loads nothing from the network, so its maths is typeset at build time rather
than by a script in the browser: every formula becomes MathML (latex2mathml), which
browsers render natively.

- On Markdown and API pages ``pymdownx.arithmatex`` (generic mode) marks the maths as
  ``<span class="arithmatex">\(...\)</span>`` and ``<div class="arithmatex">\[...\]</div>``;
  each becomes inline or display MathML.
- On notebook pages (mkdocs-jupyter) the Markdown cells keep ``$...$`` and ``$$...$$`` as
  text; those outside code and scripts become MathML, as do the headings in the table of
  contents. The MathJax and mermaid loaders that nbconvert's template adds, which would
  fetch their scripts from a CDN, are removed.

A formula that does not convert, or whose MathML still holds a TeX command, is a warning,
so ``mkdocs build --strict`` fails on it.
"""

from __future__ import annotations

import html
import logging
import re
from typing import Any

from latex2mathml.converter import convert

log = logging.getLogger("mkdocs.hooks.maths")

ARITHMATEX = re.compile(
    r'<(?P<tag>span|div) class="arithmatex">\s*\\(?P<open>[(\[])(?P<tex>.*?)\\[)\]]\s*</(?P=tag)>',
    re.DOTALL,
)
# what nbconvert's template puts between these comments loads MathJax or mermaid from a CDN
NOTEBOOK_LOADERS = re.compile(
    r"<!-- Load mathjax -->.*?<!-- End of mathjax configuration -->"
    r'|<script type="module">(?:(?!</script>).)*?\.jp-Mermaid.*?<!-- End of mermaid configuration -->',
    re.DOTALL,
)
# elements whose text is never maths, and tags
NOT_TEXT = re.compile(
    r"(<(script|style|pre|code|math)\b.*?</\2>|<[^>]+>)", re.DOTALL | re.IGNORECASE
)
DOLLARS = re.compile(r"\$\$(?P<block>.+?)\$\$|\$(?=\S)(?P<inline>[^$]+?)(?<=\S)\$", re.DOTALL)
# latex2mathml leaves these TeX names as text: sized delimiters (\big\langle) and \arg
LEFT_AS_TEXT = {
    r"\langle": "&#x27E8;",
    r"\rangle": "&#x27E9;",
    r"\lceil": "&#x2308;",
    r"\rceil": "&#x2309;",
    r"\lfloor": "&#x230A;",
    r"\rfloor": "&#x230B;",
    r"\lVert": "&#x2016;",
    r"\rVert": "&#x2016;",
    r"\lvert": "|",
    r"\rvert": "|",
    r"\{": "{",
    r"\}": "}",
    r"\arg": "arg",
}
TOKEN_TEXT = re.compile(r">([^<>]*\\[^<>]*)<")


def mathml(tex: str, display: bool, where: str) -> str:
    """The MathML of ``tex``; a warning names ``where`` when it does not convert."""
    try:
        out = convert(tex.strip(), display="block" if display else "inline")
    except Exception as error:  # latex2mathml raises many types on unsupported input
        log.warning("%s: the formula %r does not convert to MathML: %s", where, tex, error)
        return html.escape(tex)

    def token(match: re.Match[str]) -> str:
        text = match[1].strip()
        if text in LEFT_AS_TEXT:
            return f">{LEFT_AS_TEXT[text]}<"
        log.warning("%s: the formula %r keeps %r as text in MathML", where, tex, text)
        return match[0]

    return TOKEN_TEXT.sub(token, out)


def _dollars(text: str, where: str) -> str:
    def one(match: re.Match[str]) -> str:
        block = match["block"]
        tex = block if block is not None else match["inline"]
        return mathml(html.unescape(tex), block is not None, where)

    return DOLLARS.sub(one, text)


def _notebook(content: str, where: str) -> str:
    content = NOTEBOOK_LOADERS.sub("", content)
    parts = NOT_TEXT.split(content)
    # split keeps the two groups: [text, element, tag name, text, element, tag name, ...]
    out = []
    for i in range(0, len(parts), 3):
        out.append(_dollars(parts[i], where))
        if i + 1 < len(parts):
            out.append(parts[i + 1])
    return "".join(out)


def _toc(items: Any, where: str) -> None:
    for item in items:
        item.title = _dollars(item.title, where)
        _toc(item.children, where)


def on_page_content(html_: str, page: Any, **kwargs: Any) -> str:
    """The HTML of a page with its maths as MathML (MkDocs' ``on_page_content`` event).

    A notebook page (``.ipynb``) has its ``$...$`` and ``$$...$$`` converted outside code
    and scripts, its table of contents' headings too, and its CDN loaders removed; any other
    page has its ``arithmatex`` spans and divs converted. Warnings name the page's source.

    Parameters
    ----------
    html_ : str
        The page's HTML as rendered from its source.
    page : mkdocs.structure.pages.Page
        The page; its ``file.src_uri`` tells a notebook and names the page in warnings.
    **kwargs
        The rest of the event's arguments (``config``, ``files``), unused.

    Returns
    -------
    str
        The HTML with every formula as MathML.
    """
    where = page.file.src_uri
    if where.endswith(".ipynb"):
        _toc(page.toc, where)
        return _notebook(html_, where)
    return ARITHMATEX.sub(lambda m: mathml(html.unescape(m["tex"]), m["open"] == "[", where), html_)
