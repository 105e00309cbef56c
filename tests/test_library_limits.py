"""Library entry points refuse sizes and steps they cannot hold, with a ValueError, up front."""

import pytest

from econ.market import sampled_market
from games.price_discrimination.game import THESIS_GAME
from games.price_discrimination.repeated import simulate
from games.price_discrimination.sellers import SELLERS
from learning.optim import SGDConfig


@pytest.mark.parametrize("field", ["lr", "weight_decay"])
def test_steps_beyond_float32_are_refused(field):
    kwargs = {"lr": 0.1, field: 1e39}
    with pytest.raises(ValueError, match=f"{field} must be at most 3.4e\\+38"):
        SGDConfig(**kwargs)


def test_a_sampled_market_that_cannot_fit_in_memory_is_refused():
    with pytest.raises(ValueError, match=r"n_consumers=10000000000000 needs about .* of memory"):
        sampled_market([0.3, 0.5], 10**13)


def test_repeated_play_that_cannot_fit_in_memory_is_refused():
    with pytest.raises(ValueError, match="rounds=100000000000, runs=100000 needs about"):
        simulate(THESIS_GAME, SELLERS["exp3"](), rounds=10**11, runs=10**5)


@pytest.mark.parametrize(
    ("text", "message"),
    [
        (b'{"a": 1, "a": 2}', "names the key 'a' twice"),
        (b"[NaN]", "NaN is no JSON number"),
        (b"[-Infinity]", "-Infinity is no JSON number"),
        (b"[1e400]", "beyond the largest float"),
        (b"[" * 100_000 + b"]" * 100_000, "deeper than 32 levels"),
        (b"[" * 33 + b"]" * 33, "deeper than 32 levels"),
        (b"[1" + b"0" * 5000 + b"]", "is not strict JSON"),
        (b'["\xff"]', "is not UTF-8 text"),
        (b"{", "is not JSON"),
    ],
)
def test_json_files_are_read_strictly(tmp_path, text, message):
    from econ.validation import read_json

    path = tmp_path / "data.json"
    path.write_bytes(text)
    with pytest.raises(ValueError, match=message) as caught:
        read_json(path, "curve file")
    assert str(path) in str(caught.value) and "\n" not in str(caught.value)
    path.write_bytes(b"[" * 32 + b"]" * 32)
    assert read_json(path) is not None  # 32 levels are read
