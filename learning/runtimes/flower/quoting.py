"""Strings written into the TOML files and the ``--node-config`` of a deployment.

A deployment writes paths into its Flower App (``pyproject.toml``), its Flower configuration
(``config.toml``) and each SuperNode's ``--node-config`` (:mod:`learning.runtimes.flower.deploy`);
:func:`toml_string` writes a string so that all three read it back unchanged, whatever
characters a path holds (quotes, backslashes, newlines, non-ASCII).
"""

from __future__ import annotations

__all__ = ["toml_string"]


def toml_string(value: str, what: str = "a path") -> str:
    r"""``value`` as a TOML basic string (``"..."``) that also passes Flower's key=value parser.

    Backslashes are doubled; double quotes and control characters become ``\uXXXX``
    escapes (Flower's ``--node-config`` parser ends a quoted value at the first ``"``, even
    an escaped one), every other character stands as it is.

    Raises
    ------
    ValueError
        ``value`` holds a character TOML cannot hold (a lone surrogate: a file name that is
        not valid UTF-8), naming ``what``.
    """
    out = []
    for char in value:
        code = ord(char)
        if 0xD800 <= code <= 0xDFFF:
            raise ValueError(
                f"{what} {value!r} is not valid Unicode (bytes that are not UTF-8); "
                "Flower's TOML configuration cannot name it"
            )
        if char == "\\":
            out.append("\\\\")
        elif char == '"' or code < 0x20 or code == 0x7F:
            out.append(f"\\u{code:04x}")
        else:
            out.append(char)
    return '"' + "".join(out) + '"'
