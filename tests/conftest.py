"""Shared test settings: headless plotting and a bounded hypothesis profile."""

import os

import matplotlib
from hypothesis import settings

matplotlib.use("Agg")
os.environ.setdefault("MPLBACKEND", "Agg")

settings.register_profile("default", max_examples=60, deadline=None)
settings.register_profile("thorough", max_examples=1000, deadline=None)
settings.load_profile(os.environ.get("HYPOTHESIS_PROFILE", "default"))
