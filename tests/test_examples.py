"""The example files the README points at stay valid."""

from pathlib import Path

from collabecon.cli import main

EXAMPLES = Path(__file__).parent.parent / "docs" / "examples"


def test_sweep_example_runs(tmp_path, capsys):
    assert (
        main(
            [
                "sweep",
                str(EXAMPLES / "sweep.toml"),
                "--workers",
                "1",
                "--out",
                str(tmp_path),
                "--json",
            ]
        )
        == 0
    )
    assert (tmp_path / "sweep.csv").read_text().count("\n") == 5  # header + 4 runs
