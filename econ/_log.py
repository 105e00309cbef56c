"""The loggers of the four packages, all under one ``collabecon`` logger.

A module of ``econ``, ``games``, ``learning`` or ``collabecon`` takes its logger from
:func:`get_logger` with its ``__name__``: ``learning.loop`` logs as
``collabecon.learning.loop``, ``collabecon.cli.sweep`` as itself. One call on the
``collabecon`` logger therefore silences, raises or redirects everything the toolkit
reports::

    import logging

    logging.getLogger("collabecon").setLevel(logging.WARNING)  # no progress, no debug

The packages never configure handlers: the ``collabecon`` logger holds only a
:class:`logging.NullHandler`, so a program that configures no logging sees nothing (not
even the warnings, which the last-resort handler would print otherwise), and one that does
(``logging.basicConfig(level=logging.INFO)``) sees the records through its own handlers.
The ``collabecon`` command configures its own handler for the length of one command
(:mod:`collabecon.cli._log`). Levels: ``DEBUG`` for diagnostics (a round's losses),
``INFO`` for progress (a command's phases), ``WARNING`` for operational notices (a failed
run of a sweep, a deployment without TLS, a stale lock taken over).
"""

from __future__ import annotations

import logging

__all__ = ["NAMESPACE", "get_logger"]

#: the logger every record of the toolkit goes through
NAMESPACE = "collabecon"

logging.getLogger(NAMESPACE).addHandler(logging.NullHandler())


def get_logger(module: str) -> logging.Logger:
    """The logger of the module named ``module`` (its ``__name__``), under ``collabecon``.

    A name already under ``collabecon`` is kept; any other is prefixed with it.
    """
    if module == NAMESPACE or module.startswith(f"{NAMESPACE}."):
        return logging.getLogger(module)
    return logging.getLogger(f"{NAMESPACE}.{module}")
