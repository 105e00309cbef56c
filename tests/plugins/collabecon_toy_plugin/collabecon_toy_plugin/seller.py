"""A seller of the repeated price-discrimination game, from collabecon's public sellers."""

from __future__ import annotations

from games.price_discrimination.sellers import AlphaPD


def half_pd() -> AlphaPD:
    """The committed seller that discriminates with probability one half (Werner 2024, §4.4)."""
    return AlphaPD(0.5, name="toy-half-pd")
