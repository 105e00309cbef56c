"""Checking the registry of propositions from Python, as ``collabecon verify`` does."""

from __future__ import annotations

from econ import propositions

#: The packages whose modules register propositions; none of them imports torch.
PACKAGES = ("econ", "games", "learning.theory")


def verify(prefix: str = "") -> list[propositions.Outcome]:
    """Check every registered proposition whose id starts with ``prefix``.

    Imports every module of ``econ``, ``games`` and ``learning.theory`` (so that each
    registers its entries), then runs the check of each matching entry. An outcome ``agrees``
    when its verdict (``proved``, ``checked`` or ``refuted``) matches what the entry expects,
    or when it is ``unchecked`` (registered with the reason no check is possible) and names no
    perturbation; ``docs/errata.md`` lists the refuted statements with their
    counterexamples, and :func:`econ.statement_index.coverage` of the outcomes says how many
    of each paper's numbered statements they register.

    Parameters
    ----------
    prefix
        Only ids starting with it, e.g. ``"thesis.ch3"``; ``""`` checks every entry.

    Returns
    -------
    list of econ.propositions.Outcome
        One per matching entry, sorted by id.

    Raises
    ------
    ValueError
        When ``prefix`` matches no registered id.
    """
    propositions.load(PACKAGES)
    found = list(propositions.verify(prefix))
    if not found:
        raise ValueError(f"prefix {prefix!r} matches no registered proposition")
    return found
