"""The docstrings' reST markup as the Markdown that mkdocstrings renders.

The docstrings are numpy-style with reST roles and directives, which Markdown would show
as literal text. :class:`RestMarkup`, a griffe extension (``mkdocs.yml`` loads it through
the python handler's ``extensions`` option), rewrites each docstring of a loaded package
before it is parsed:

- ``:math:`X``` becomes ``$X$`` and a ``.. math::`` directive a ``$$`` block, both for
  ``pymdownx.arithmatex`` (the build turns them into MathML, ``docs/hooks.py``);
- ``:class:``, ``:func:``, ``:meth:``, ``:mod:``, ``:data:``, ``:attr:`` (and ``:obj:``,
  ``:exc:``, ``:const:``) become cross-references to the object's dotted path, shown as
  code: the whole target, or its last component after ``~``. A name without its module
  is looked up in the docstring's scope. The reference is optional: a target that the
  site does not document (another library's object, a private helper) stays code
  without a link, and the build does not fail on it;
- ``:pep:`N``` becomes "PEP N", and a paragraph ending in ``::`` (a reST literal block
  follows) ends in ``:``, the indented block below it being Markdown's code block;
- the further lines of a list item, aligned with its text in reST, are indented by four
  spaces, so that the item keeps its paragraphs and maths in Markdown.

Double-backtick literals are Markdown code spans already.
"""

from __future__ import annotations

import html
import re
import textwrap
from typing import Any

import griffe

ROLE = re.compile(
    r":(?P<role>math|pep|class|func|meth|mod|data|attr|obj|exc|const):`(?P<body>[^`]+)`"
)
MATH_DIRECTIVE = re.compile(r"^(?P<indent>[ \t]*)\.\. math::[ \t]*(?P<first>.*)$")
LITERAL_BLOCK = re.compile(r"(?P<head>\S)?(?P<sep>[ \t]*)::$")
DIRECTIVE_OPTION = re.compile(r"^:[a-z-]+:")
BULLET = re.compile(r"^(?P<indent> *)(?:[*+-]|\d+[.)]) +(?=\S)")


def _indentation(line: str) -> int:
    return len(line) - len(line.lstrip())


def _math_blocks(text: str) -> str:
    """Each ``.. math::`` directive as ``$$`` blocks, one per equation (paragraph)."""
    lines = text.split("\n")
    out: list[str] = []
    i = 0
    while i < len(lines):
        match = MATH_DIRECTIVE.match(lines[i])
        if match is None:
            out.append(lines[i])
            i += 1
            continue
        indent, level = match["indent"], len(match["indent"])
        body = [match["first"]] if match["first"].strip() else []
        i += 1
        while i < len(lines) and (not lines[i].strip() or _indentation(lines[i]) > level):
            body.append(lines[i])
            i += 1
        content = textwrap.dedent("\n".join(body)).strip("\n").split("\n")
        content = [line for line in content if not DIRECTIVE_OPTION.match(line)]
        equations = [e.strip() for e in "\n".join(content).split("\n\n") if e.strip()]
        if out and out[-1].strip():
            out.append("")
        for n, equation in enumerate(equations):
            if n:
                out.append("")
            out.append(indent + "$$")
            out += [indent + line for line in equation.split("\n")]
            out.append(indent + "$$")
        if i < len(lines) and lines[i].strip():
            out.append("")
    return "\n".join(out)


def _list_items(lines: list[str]) -> list[str]:
    """Each list item's further lines indented by four spaces, as Python-Markdown needs.

    reST aligns them with the item's text (two spaces after ``*``, three after ``1.``);
    Python-Markdown would end the item at the first blank line.
    """
    out: list[str] = []
    i = 0
    while i < len(lines):
        match = BULLET.match(lines[i])
        if match is None:
            out.append(lines[i])
            i += 1
            continue
        column, depth = match.end(), len(match["indent"]) + 4
        end = i + 1
        while end < len(lines) and (not lines[end].strip() or _indentation(lines[end]) >= column):
            end += 1
        while end > i + 1 and not lines[end - 1].strip():
            end -= 1
        inner = _list_items([line[column:] for line in lines[i + 1 : end]])
        out.append(lines[i])
        out += [" " * depth + line if line.strip() else "" for line in inner]
        if any(not line.strip() for line in inner) and end < len(lines) and lines[end].strip():
            out.append("")  # an item of several paragraphs ends at a blank line
        i = end
    return out


def _literal_blocks(text: str) -> str:
    """A paragraph that ends in ``::`` ends in ``:`` (or nothing after a space), as in reST."""
    lines = text.split("\n")
    for i, line in enumerate(lines):
        match = LITERAL_BLOCK.search(line)
        if match is None or (i + 1 < len(lines) and lines[i + 1].strip()):
            continue
        if match["head"] is None:
            lines[i] = line[: match.start()]
        else:
            lines[i] = line[: match.start()] + match["head"] + ("" if match["sep"] else ":")
    return "\n".join(lines)


def markdown(text: str, obj: griffe.Object, loader: griffe.GriffeLoader) -> str:
    """``text``, a docstring of ``obj`` (loaded by ``loader``), with its reST as Markdown."""
    text = _literal_blocks("\n".join(_list_items(_math_blocks(text).split("\n"))))

    def role(match: re.Match[str]) -> str:
        name, body = match["role"], match["body"]
        if name == "math":
            return f"${body.strip()}$"
        if name == "pep":
            return f"PEP {body}"
        return _reference(body, obj, loader)

    return ROLE.sub(role, text)


def _reference(body: str, obj: griffe.Object, loader: griffe.GriffeLoader) -> str:
    short = body.startswith("~")
    target = body.lstrip("~")
    shown = target.lstrip(".").rsplit(".", 1)[-1] if short else target.lstrip(".")
    path = _resolve(target, obj, loader)
    return (
        f'<autoref identifier="{html.escape(path)}" optional>'
        f"<code>{html.escape(shown)}</code></autoref>"
    )


class RestMarkup(griffe.Extension):
    """Rewrites the reST markup of every docstring of a loaded package into Markdown."""

    def on_package(self, *, pkg: griffe.Module, loader: griffe.GriffeLoader, **kwargs: Any) -> None:
        """Rewrite the docstrings of ``pkg`` and of all its members (griffe's package event).

        Aliases are left to the object they point to; ``loader`` resolves the roles' targets.
        """
        _rewrite(pkg, loader)


def _rewrite(obj: griffe.Object, loader: griffe.GriffeLoader) -> None:
    if obj.docstring is not None:
        obj.docstring.value = markdown(obj.docstring.value, obj, loader)
    for member in obj.members.values():
        if not member.is_alias:
            _rewrite(member, loader)  # type: ignore[arg-type]


def _exists(path: str, loader: griffe.GriffeLoader) -> bool:
    try:
        loader.modules_collection.get_member(path)
    except (KeyError, ValueError, IndexError):
        return False
    return True


def _resolve(target: str, obj: griffe.Object, loader: griffe.GriffeLoader) -> str:
    """The dotted path that a role's target names, seen from ``obj``'s docstring.

    A leading ``.`` searches from the docstring's module outwards; a name whose first part
    is in ``obj``'s scope (its members, its module's names and imports) resolves through it;
    anything else is taken as a full path.
    """
    if target.startswith("."):
        relative = target.lstrip(".")
        scope: griffe.Object | None = obj.module
        while scope is not None:
            if _exists(f"{scope.path}.{relative}", loader):
                return f"{scope.path}.{relative}"
            scope = scope.parent
        return relative
    first, _, rest = target.partition(".")
    try:
        resolved = obj.resolve(first)
    except griffe.NameResolutionError:
        return target
    return f"{resolved}.{rest}" if rest else resolved
