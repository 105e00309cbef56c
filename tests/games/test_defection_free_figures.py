"""Figures 3.4-3.8 (games.defection_free.figures) say what they draw: every axis labelled, a
colour bar wherever colour encodes a value, whose scale gives each curve's colour, and a
legend wherever more than one series is drawn."""

from __future__ import annotations

import matplotlib
import matplotlib.pyplot as plt
import numpy as np
import pytest

from games.defection_free.figures import static_figures


@pytest.fixture(scope="module")
def figures():
    made = static_figures(plt)
    yield made
    for fig, _ in made.values():
        plt.close(fig)


def _plots(fig):
    return [ax for ax in fig.axes if not hasattr(ax, "_colorbar")]


def _bars(fig):
    return [ax._colorbar for ax in fig.axes if hasattr(ax, "_colorbar")]


def test_figures_3_4_to_3_8_are_drawn(figures):
    assert sorted(figures) == ["fig3_4", "fig3_5", "fig3_6", "fig3_7", "fig3_8"]


def test_every_axis_and_colour_bar_is_labelled(figures):
    for name, (fig, _) in figures.items():
        for ax in _plots(fig):
            assert ax.get_xlabel() and ax.get_ylabel(), (name, ax.get_title())
        for bar in _bars(fig):
            assert bar.ax.get_ylabel(), name


def test_a_legend_names_every_kind_of_series(figures):
    # Fig. 3.4 draws one family of curves per panel (its colour bars say which); the others
    # add reference lines or marked points to theirs
    entries = {"fig3_5": 2, "fig3_6": 4, "fig3_7": 2, "fig3_8": 3}
    for name, count in entries.items():
        (ax,) = _plots(figures[name][0])
        legend = ax.get_legend()
        assert legend is not None and len(legend.get_texts()) == count, name
        assert all(t.get_text() for t in legend.get_texts()), name


def _colour_of(bar, value):
    return np.asarray(bar.cmap(bar.norm(value)))


def test_the_colour_bars_give_each_curve_its_colour(figures):
    fig, d = figures["fig3_4"]
    by_qh, by_ql = _bars(fig)
    assert "q_h" in by_qh.ax.get_ylabel() and "q_l" in by_ql.ax.get_ylabel()
    for ax, bar in zip(_plots(fig), (by_qh, by_ql, by_qh, by_ql), strict=True):
        for line, other in zip(ax.get_lines(), d["other"], strict=True):
            assert np.allclose(matplotlib.colors.to_rgba(line.get_color()), _colour_of(bar, other))

    fig, d = figures["fig3_5"]
    (bar,) = _bars(fig)
    curves = _plots(fig)[0].get_lines()[: d["b"].size]
    for line, b in zip(curves, d["b"], strict=True):
        assert np.allclose(matplotlib.colors.to_rgba(line.get_color()), _colour_of(bar, b))

    fig, d = figures["fig3_6"]
    (bar,) = _bars(fig)
    lines = _plots(fig)[0].get_lines()
    for style in ("-", ":"):
        curves = [x for x in lines if x.get_linestyle() == style and x.get_marker() == "None"]
        for line, a in zip(curves, d["a"], strict=True):
            assert np.allclose(matplotlib.colors.to_rgba(line.get_color()), _colour_of(bar, a))

    fig, d = figures["fig3_8"]
    (bar,) = _bars(fig)
    rho0 = d["q_l0"] / d["q_h0"]
    curves = _plots(fig)[0].get_lines()[: rho0.size]
    for line, r in zip(curves, rho0, strict=True):
        assert np.allclose(matplotlib.colors.to_rgba(line.get_color()), _colour_of(bar, r))

    fig, d = figures["fig3_7"]
    (bar,) = _bars(fig)
    (points,) = _plots(fig)[0].collections
    assert np.allclose(points.get_array(), d["q_l0"])
    assert bar.mappable is points
