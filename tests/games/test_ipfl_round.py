"""IP-FL's round as a pure token economy (games.ipfl.open_round / close_round), without torch."""

import subprocess
import sys
import textwrap

import numpy as np
import pytest

from games.ipfl import IPFLConfig, TokenState, close_round, open_round

_ROUNDS = r"""
import numpy as np
from games.ipfl import IPFLConfig, TokenState, close_round, open_round

def play(config, n=12, k=2, rounds=8, seed=0):
    # a numpy stand-in for the learner: client i is best served by cluster i % k, and each
    # payer's contribution is drawn; the token economy sees only accuracies and contributions
    rng = np.random.default_rng(seed)
    state = TokenState.start(n, k, config)
    scores = np.full((n, k), 0.2)
    scores[np.arange(n), np.arange(n) % k] = 0.9
    totals = [state.ledger.total]
    for r in range(rounds):
        opening = open_round(state, r, config, rng, scores=scores)
        accuracy = {c: 0.5 + 0.04 * r for c, p in enumerate(opening.payers) if p.size}
        psi = {c: rng.normal(size=p.size) for c, p in enumerate(opening.payers) if p.size}
        state, refunds = close_round(opening, accuracy, psi, config)
        totals.append(state.ledger.total)
        assert (refunds >= 0).all() and (refunds <= 1).all()
    return state, np.array(totals)
"""


def _play(config, **kwargs):
    scope: dict = {}
    exec(_ROUNDS, scope)
    return scope["play"](config, **kwargs)


def test_the_token_economy_runs_without_torch():
    code = (
        "import sys; sys.modules['torch'] = None\n"
        + _ROUNDS
        + textwrap.dedent(
            """
        state, totals = play(IPFLConfig())
        assert 'torch' not in sys.modules or sys.modules['torch'] is None
        print(totals[0], totals[-1], int(state.omega.sum()))
        """
        )
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    first, last, taken = out.stdout.split()
    assert float(first) == pytest.approx(float(last), abs=1e-9) and int(taken) > 0


@pytest.mark.parametrize(
    "config",
    [IPFLConfig(), IPFLConfig(code_compat=True), IPFLConfig(reward_mode="code_split")],
    ids=["paper", "code_compat", "code_split"],
)
def test_tokens_are_conserved_and_never_negative(config):
    state, totals = _play(config)
    assert np.ptp(totals) < 1e-9 * totals[0]  # ipfl.ledger.conservation, round by round
    assert (state.ledger.tokens >= 0).all() and (state.ledger.pools >= 0).all()
    assert state.explored.any() and (state.omega >= 0).all()


def test_round_zero_is_free_and_later_rounds_charge_the_payers():
    config = IPFLConfig()
    state = TokenState.start(10, 2, config)
    rng = np.random.default_rng(1)
    free = open_round(state, 0, config, rng, groups=[np.arange(5), np.arange(5, 10)])
    assert not free.paid and (free.state.ledger.tokens == config.tok_init).all()
    state, _ = close_round(free, {0: 0.5, 1: 0.5}, {0: np.zeros(5), 1: np.zeros(5)}, config)
    assert state.tracker.acc_max == (0.5, 0.5) and state.explored.all()
    scores = np.tile([0.9, 0.1], (10, 1))
    paid = open_round(state, 1, config, rng, scores=scores)
    payers = np.concatenate(paid.payers)
    assert paid.paid and payers.size > 0
    charged = config.tok_init - paid.state.ledger.tokens
    assert np.allclose(charged[payers], config.price * np.bincount(payers, minlength=10)[payers])
    assert paid.state.ledger.pools.sum() == pytest.approx(config.price * payers.size)


def test_bad_halves_are_refused():
    config = IPFLConfig()
    state = TokenState.start(6, 2, config)
    rng = np.random.default_rng(0)
    with pytest.raises(ValueError, match="scores are needed"):
        open_round(state, 1, config, rng)
    opening = open_round(state, 0, config, rng)
    trained = [c for c, p in enumerate(opening.payers) if p.size]
    with pytest.raises(ValueError, match="no accuracy or contributions"):
        close_round(opening, {}, {}, config)
    c = trained[0]
    with pytest.raises(ValueError, match="contributions for"):
        close_round(
            opening,
            {i: 0.5 for i in trained},
            {i: np.zeros(opening.payers[i].size + (i == c)) for i in trained},
            config,
        )
