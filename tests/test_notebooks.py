"""Every notebook in ``notebooks/`` runs top to bottom, so none of them rots."""

from pathlib import Path

import nbformat
import pytest
from nbclient import NotebookClient

NOTEBOOKS = sorted((Path(__file__).parent.parent / "notebooks").glob("*.ipynb"))
#: the notebooks that train models or play long games (over ten CPU seconds even when small)
#: run with the slow tests
TRAINING = {
    "02_price_discrimination.ipynb",
    "03_privacy_accuracy.ipynb",
    "04_personalised_fl.ipynb",
    "05_defection_free_market.ipynb",
    "06_ipfl_tokens.ipynb",
}


@pytest.mark.parametrize(
    "path",
    [pytest.param(p, marks=pytest.mark.slow) if p.name in TRAINING else p for p in NOTEBOOKS],
    ids=[p.name for p in NOTEBOOKS],
)
def test_notebook_executes(path, tmp_path, monkeypatch):
    monkeypatch.setenv("MPLBACKEND", "Agg")
    monkeypatch.setenv("COLLABECON_NOTEBOOK_SMALL", "1")
    nb = nbformat.read(path, as_version=4)
    NotebookClient(
        nb, timeout=600, kernel_name="python3", resources={"metadata": {"path": str(tmp_path)}}
    ).execute()
    errors = [
        o
        for c in nb.cells
        if c.cell_type == "code"
        for o in c.get("outputs", [])
        if o.output_type == "error"
    ]
    assert not errors
