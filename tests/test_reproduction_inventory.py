"""The inventory of the papers' tables and figures (collabecon.reproductions.inventory):
every row reproduced or explained, consistent with the reproductions and their claims."""

import collections
import fnmatch
import re

import pytest

import collabecon.reproductions as experiments
from collabecon.reproductions import (
    byzantine_mnist_claims,
    cifar_clustering_claims,
    clustered_mnist_claims,
    clustering,
    cobo_claims,
    cobo_sampling_claims,
    defection_free,
    failure_modes_claims,
    ipfl_claims,
    ipfl_comparison,
    ipfl_settings_claims,
    price_discrimination_claims,
    privacy,
)
from collabecon.reproductions.inventory import EXPERIMENTS, PAPERS, Experiment

#: Each reproduction's claims as data (every ClaimSpec it can report).
SPECS = {
    "table1": clustered_mnist_claims.CLAIMS,
    "clustering": clustering.CLAIMS,
    "cobo": cobo_claims.CLAIMS
    + cobo_sampling_claims.SAMPLING_CLAIMS
    + cobo_sampling_claims.ABLATION_CLAIMS,
    "ipfl": ipfl_claims.CLAIMS
    + tuple(
        s for shift in ipfl_claims.SETTINGS for s in ipfl_comparison.order_specs(shift, "10:90")
    )
    + ipfl_settings_claims.SPECS
    + ipfl_settings_claims.EMNIST_SPECS,
    "defection_free": defection_free.CLAIMS,
    "pricing": price_discrimination_claims.CLAIMS,
    "privacy": privacy.CLAIMS,
    "byzantine": byzantine_mnist_claims.CLAIMS,
    "failure_modes": failure_modes_claims.CLAIMS,
    "cifar_clustering": cifar_clustering_claims.CLAIMS,
}

#: A place in a paper: a table, figure, section, equation, proposition, theorem, appendix.
PLACE = re.compile(
    r"(Table|Fig\.|Figure|§|[Ss]ection|[Ee]q\.|Equation|Proposition|Theorem|Corollary|Lemma"
    r"|App\.|Appendix)\s*[\dA-Z]"
)
LABEL = re.compile(r"\b(Table|Fig\.|Figure)\s*(\d+(?:\.\d+)?)")


def test_every_row_is_reproduced_or_explained_not_both():
    for e in EXPERIMENTS:
        assert (e.reproduction is None) != (e.reason == ""), e.label
        if e.reproduction is not None:
            assert e.compared and e.claims, e.label
        else:
            assert not e.compared and not e.claims, e.label


@pytest.mark.parametrize(
    "fields",
    [
        {},
        {"reproduction": "cobo", "reason": "both", "compared": "c", "claims": ("x",)},
        {"reproduction": "cobo", "compared": "c"},
        {"reproduction": "cobo", "claims": ("x",)},
        {"reason": "r", "compared": "c"},
        {"reason": "r", "claims": ("x",)},
    ],
)
def test_a_row_that_is_neither_or_both_is_refused(fields):
    with pytest.raises(ValueError, match="Figure 9"):
        Experiment(paper=PAPERS[0], label="Figure 9", where="§1", subject="s", **fields)


def test_every_named_reproduction_exists_and_every_reproduction_covers_a_row():
    named = {e.reproduction for e in EXPERIMENTS if e.reproduction is not None}
    assert named == set(experiments.REPRODUCTIONS)


def test_labels_are_unique_per_paper_and_every_paper_is_listed():
    counts = collections.Counter((e.paper, e.label) for e in EXPERIMENTS)
    assert [k for k, n in counts.items() if n > 1] == []
    assert {e.paper for e in EXPERIMENTS} == set(PAPERS)
    assert all(e.label.startswith(("Table ", "Figure ")) for e in EXPERIMENTS)


def test_the_papers_tables_and_figures_are_all_listed():
    labels = collections.defaultdict(set)
    for e in EXPERIMENTS:
        labels[e.paper.short].add(e.label)
    fig, tab = (lambda *n: {f"Figure {i}" for i in n}), (lambda *n: {f"Table {i}" for i in n})
    thesis = {f"Figure 2.{i}" for i in range(1, 8)} | {"Table 2.1"}
    thesis |= {f"Figure 3.{i}" for i in range(1, 9)} | {f"Figure 4.{i}" for i in range(1, 6)}
    assert labels["Werner 2024 (thesis)"] == thesis
    assert labels["Werner et al. 2023"] == fig(1, 2, 3, 4) | tab(1)
    assert labels["CoBo (Hashemi et al. 2024)"] == fig(1, 3, 5, 6, 7, 8, 9) | tab(1, 2)
    assert labels["Tsoy et al. 2024"] == fig(1)
    assert labels["IP-FL (Khan et al.)"] == fig(*range(1, 10)) | tab(*range(1, 12))


def test_every_claim_pattern_names_claims_of_its_reproduction():
    for e in EXPERIMENTS:
        if e.reproduction is None:
            continue
        ids = [s.id for s in SPECS[e.reproduction]]
        for pattern in e.claims:
            assert fnmatch.filter(ids, pattern), (e.label, pattern)


def test_every_claim_names_its_place_in_the_paper():
    for name, specs in SPECS.items():
        for spec in specs:
            assert PLACE.search(spec.where), (name, spec.id, spec.where)


def test_every_claim_about_a_table_or_figure_is_on_that_row():
    for name, specs in SPECS.items():
        rows = [e for e in EXPERIMENTS if e.reproduction == name]
        for spec in specs:
            for kind, number in LABEL.findall(spec.where):
                label = f"{'Table' if kind == 'Table' else 'Figure'} {number}"
                on_row = [
                    e
                    for e in rows
                    if e.label == label and any(fnmatch.fnmatch(spec.id, p) for p in e.claims)
                ]
                assert on_row, (name, spec.id, label)


def test_every_named_statement_is_registered():
    from collabecon import _verify
    from econ import propositions

    propositions.load(_verify.PACKAGES)
    registered = {p.id for p in propositions.registered("")}
    named = [s for e in EXPERIMENTS for s in e.statements]
    assert named and set(named) <= registered


def test_a_figure_of_a_proof_names_its_statements():
    proofs = [e for e in EXPERIMENTS if "figure of a proof" in e.reason]
    assert [e.label for e in proofs] == [f"Figure 3.{i}" for i in range(4, 9)]
    assert all(e.statements for e in proofs)


def test_explanations_say_what_is_compared_or_why_not():
    for e in EXPERIMENTS:
        text = e.explanation()
        if e.reproduction is None:
            assert text.startswith("not reproduced"), e.label
            assert not text.startswith("not reproduced: not reproduced")
        else:
            assert text.startswith(e.compared) and all(f"`{c}`" in text for c in e.claims)
        assert all(f"`{s}`" in text for s in e.statements)
        assert e.to_dict()["explanation"] == text


def test_the_reproductions_page_shows_the_inventory():
    from pathlib import Path

    from collabecon.reproductions.inventory import markdown

    page = Path(__file__).parents[1] / "docs" / "reproductions.md"
    assert markdown(level=2) in page.read_text(), "regenerate the section of docs/reproductions.md"
