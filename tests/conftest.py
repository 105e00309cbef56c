"""Shared test settings: one thread per process, headless plotting, a bounded hypothesis
profile, and the extras.

Every kernel runs on one thread (``OMP_NUM_THREADS=1``, set before torch loads and inherited
by notebook kernels and subprocesses): on a machine whose cores are busy, torch's default of
one thread per core spends most of its CPU time waiting for the others.

A test that needs an optional extra carries its marker (``flower``: ``collabecon[flower]``,
``ray``: ``collabecon[ray]``) and skips, saying which extra, when that extra is not
installed; ``python3 -m pytest -m "flower or ray"`` selects them where it is.
"""

import importlib.util
import os

os.environ.setdefault("OMP_NUM_THREADS", "1")
os.environ.setdefault("MKL_NUM_THREADS", "1")

import matplotlib
import pytest
from hypothesis import settings

matplotlib.use("Agg")
os.environ.setdefault("MPLBACKEND", "Agg")

settings.register_profile("default", max_examples=60, deadline=None)
settings.register_profile("thorough", max_examples=1000, deadline=None)
settings.load_profile(os.environ.get("HYPOTHESIS_PROFILE", "default"))

#: marker -> (the module it needs, the install that brings it)
EXTRAS = {
    "flower": ("flwr", 'pip install -e ".[flower]"'),
    "ray": ("ray", 'pip install -e ".[ray]"'),
}


def pytest_collection_modifyitems(config, items):
    missing = {
        marker: pytest.mark.skip(reason=f"{module} is not installed ({install})")
        for marker, (module, install) in EXTRAS.items()
        if importlib.util.find_spec(module) is None
    }
    for item in items:
        for marker, skip in missing.items():
            if marker in item.keywords:
                item.add_marker(skip)
