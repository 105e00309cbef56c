import numpy as np
import pytest

from econ import ModelQualities


def test_roundtrip_and_lookup():
    mq = ModelQualities.from_mapping({"low": 0.3, "high": 0.8}, n_eval=1000)
    assert mq["high"] == 0.8 and len(mq) == 2
    assert mq.n_eval.tolist() == [1000, 1000]
    assert mq.to_dict()["metric"] == "accuracy"
    np.testing.assert_allclose(mq.standard_error(), np.sqrt([0.3 * 0.7, 0.8 * 0.2]) / np.sqrt(1000))


def test_is_frozen_and_read_only():
    mq = ModelQualities.from_mapping({"a": 0.5})
    with pytest.raises(AttributeError):
        mq.metric = "1-loss"
    with pytest.raises(ValueError):
        mq.quality[0] = 0.1


@pytest.mark.parametrize(
    ("kwargs", "match"),
    [
        (
            {"names": ("a",), "quality": [1.2], "metric": "accuracy", "n_eval": [1]},
            r"quality must lie in \[0, 1\]",
        ),
        (
            {"names": ("a",), "quality": [np.nan], "metric": "accuracy", "n_eval": [1]},
            "quality must be finite",
        ),
        (
            {"names": ("a", "b"), "quality": [0.2], "metric": "accuracy", "n_eval": [1, 1]},
            "matching lengths",
        ),
        (
            {"names": ("a", "a"), "quality": [0.2, 0.3], "metric": "accuracy", "n_eval": [1, 1]},
            "distinct",
        ),
        ({"names": ("a",), "quality": [0.2], "metric": "accuracy", "n_eval": [0]}, "n_eval"),
        ({"names": (), "quality": [], "metric": "accuracy", "n_eval": []}, "at least one"),
    ],
)
def test_bad_input_is_named(kwargs, match):
    with pytest.raises(ValueError, match=match):
        ModelQualities(**kwargs)
