"""The straightforward repeated PD game: one run, a Python loop over rounds and over buyers.

The baseline that :mod:`collabecon.bench.pricing_repeated` measures the vectorised simulator
(``games.price_discrimination.repeated.simulate``) against. It follows the repeated interaction of
Werner (2024), section 4.3, and its protocol, Algorithm 6 (section 4.6), the way a first
implementation would: each buyer draws her type and signal, the seller prices each signal class,
each buyer decides, and the seller's Exp3 learners and the buyers' estimator (4.7) are updated with
plain Python floats. Same model, same parameters, independent code: results agree in distribution.
"""

from __future__ import annotations

import math

import numpy as np

from games.price_discrimination.exp3 import exp3_parameters
from games.price_discrimination.game import PDGame


class _Exp3:
    """Two-armed Exp3-IX in loss form: arm 0 = low price, arm 1 = high price."""

    def __init__(self, eta: float, gamma: float) -> None:
        self.losses = [0.0, 0.0]
        self.eta, self.gamma = eta, gamma

    def probabilities(self) -> list[float]:
        top = max(-self.eta * x for x in self.losses)
        w = [math.exp(-self.eta * x - top) for x in self.losses]
        return [v / sum(w) for v in w]

    def update(self, arm: int, p: float, loss: float) -> None:
        self.losses[arm] += loss / (p + self.gamma)


def run_baseline(game: PDGame, seller: str, rounds: int, seed: int) -> dict[str, float]:
    """One run of ``seller`` ("exp3", "cexp3" or "alpha-pd") against CBER buyers."""
    rng = np.random.default_rng(seed)
    g = game.numeric()
    n, mu, tl, th, cb, cs = g.n, g.mu, g.theta_low, g.theta_high, g.c_b, g.c_s
    alpha_star, q_star = g.alpha_star, g.q_star
    eta, gamma = exp3_parameters("paper_code", rounds)
    blind, by_signal = _Exp3(eta, gamma), {"L": _Exp3(eta, gamma), "H": _Exp3(eta, gamma)}
    commit = alpha_star - 0.01
    total, belief, seller_sum, buyer_sum = 0.0, 0.0, 0.0, 0.0
    for t in range(1, rounds + 1):
        q = q_star if belief > alpha_star else 0.0
        values, signals = [], []
        for _ in range(n):
            high = rng.random() < mu
            evade = high and rng.random() < q
            values.append(th if high else tl)
            signals.append("L" if (not high or evade) else "H")
        probs = {}
        if seller == "exp3":
            probs["all"] = blind.probabilities()
            arm = int(rng.random() < probs["all"][1])
            prices = {"L": (tl, th)[arm], "H": (tl, th)[arm]}
            arms = {"L": arm, "H": arm}
        elif seller == "cexp3":
            prices, arms = {}, {}
            for s in ("L", "H"):
                probs[s] = by_signal[s].probabilities()
                arms[s] = int(rng.random() < probs[s][1])
                prices[s] = (tl, th)[arms[s]]
        else:
            discriminate = rng.random() < commit
            prices = {"L": tl if discriminate else th, "H": th}
        utilities: dict[str, list[float]] = {"L": [], "H": []}
        buyer_total = 0.0
        for value, signal in zip(values, signals, strict=True):
            price = prices[signal]
            buys = price <= value
            evaded = (value == th) != (signal == "H")
            utilities[signal].append(price * buys - cs * evaded)
            buyer_total += (value - price) * buys - cb * evaded
        seller_round = sum(utilities["L"] + utilities["H"]) / n
        seller_sum += seller_round
        buyer_sum += buyer_total / n
        if seller == "exp3":
            loss = (th - seller_round) / (th + cs)
            blind.update(arms["L"], probs["all"][arms["L"]], loss)
        elif seller == "cexp3":
            for s in ("L", "H"):
                if utilities[s]:
                    reward = sum(utilities[s]) / len(utilities[s])
                    by_signal[s].update(arms[s], probs[s][arms[s]], (th - reward) / (th + cs))
        p_low = (1 - mu) + mu * q
        rho = 1 - p_low**n - (1 - p_low) ** n
        if utilities["L"] and utilities["H"] and prices["L"] != prices["H"]:
            total += 1 / rho
        belief = total / (t + 1)
    return {"seller": seller_sum / rounds, "buyer": buyer_sum / rounds, "belief": belief}
