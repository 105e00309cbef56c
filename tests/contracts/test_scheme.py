"""The scheme contract, checked on every entry of :data:`games.defection_free.SCHEMES`.

A scheme built by :func:`games.defection_free.build_scheme` carries its name, answers the high
firm's and the low firm's moves, and plays the convex toy of Werner (2024), ch. 3 (Algorithm 5
on quadratic firms) into a report of finite qualities and revenues, the same on a second play.
"""

import numpy as np
import pytest

from games.defection_free import (
    SCHEMES,
    DefectionFreeConfig,
    HighMove,
    LowMove,
    build_scheme,
    play,
    report,
)
from games.quadratic_firms import thesis_toy

#: The toy's start and the best quality its pooled objective reaches.
START, Q = ((-5.0, 5.0), (2.0, 2.0)), 63 / 64


def _scheme(name):
    firms = thesis_toy(*START)
    start = firms.measure()
    return firms, build_scheme(name, start["low"], start["high"], DefectionFreeConfig(q_max=Q))


def _named_as_registered(name):
    assert _scheme(name)[1].name == name


def _answers_both_moves(name):
    _, scheme = _scheme(name)
    assert isinstance(scheme.high_move(0.2, 0.6), HighMove)
    assert isinstance(scheme.low_move(0.2, 0.6, 0.62), LowMove)


def _plays_the_toy(name):
    def rows():
        firms, scheme = _scheme(name)
        return report(play(scheme, firms, 20), q_max=Q).rows

    first = rows()
    assert len(first) == 21
    keys = ("q_l", "q_h", "U_l", "U_h")
    assert all(np.isfinite(row[k]) for row in first for k in keys)
    assert [[row[k] for k in keys] for row in rows()] == [[row[k] for k in keys] for row in first]


def check_scheme(name):
    """The checks every registered scheme passes (each called with its name)."""
    return [_named_as_registered, _answers_both_moves, _plays_the_toy]


@pytest.mark.parametrize("name", SCHEMES)
def test_every_scheme_keeps_the_contract(name):
    for check in check_scheme(name):
        check(name)
