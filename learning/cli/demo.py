"""``collabecon demo``: the toolkit end to end, in a few minutes on a laptop CPU.

Two competing firms train LeNet-5 on the embedded ``mnist5k`` digits (label-skewed 80/20 and
20/80, the high firm pre-trained alone), then collaborate under the four schemes of Werner
(2024), ch. 3: complete collaboration, the two one-sided schemes, and defection-free
collaborative learning (Algorithm 5, reconciled). The qualities of every round go into the
market (equilibrium prices, revenues, consumer surplus); the chapter's claims and the
defection-free propositions are checked; a Markdown report with Figures 3.1-3.8 and a table
of final revenues, consumer surplus and Nash gaps is written to ``--out``.
"""

from __future__ import annotations

import argparse
from pathlib import Path
from typing import Any

from learning.cli._output import dump_json, fmt, table

#: The propositions the demo re-checks (registered in games.convex_duopoly).
DEMO_PROPOSITIONS = (
    "thesis.ch3.prop3.gd",
    "thesis.ch3.prop4.gd",
    "thesis.ch3.prop5.gd",
    "thesis.ch3.alg5.while",
    "thesis.ch3.alg5.while.corrected",
)
_HEADER = ("scheme", "q_l", "q_h", "U_l", "U_h", "consumer surplus", "welfare", "Nash gap")


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--out", default="collabecon-demo", help="report directory")
    parser.add_argument("--rounds", type=int, default=15, help="collaboration rounds (15)")
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--size", type=int, default=500, help="examples per firm (500)")
    parser.add_argument("--target-per-class", type=int, default=50)
    parser.add_argument("--device", default=None, help="cpu or cuda (default: cuda if present)")


def _market_rows(runs: dict[str, Any]) -> list[list[Any]]:
    from econ.market import market_history

    rows = []
    for name, r in runs.items():
        m = market_history(r.qualities)
        last = r.report.rows[-1]
        rows.append(
            [
                name,
                last["q_l"],
                last["q_h"],
                last["U_l"],
                last["U_h"],
                float(m.consumer_surplus[-1]),
                float(m.welfare[-1]),
                r.report.final_nash_gap,
            ]
        )
    return rows


def _markdown(result: dict[str, Any], figures: list[str]) -> str:
    lines = [
        "# collabecon demo: competing firms that collaborate",
        "",
        f"Two firms, LeNet-5 on `mnist5k` ({result['setup']['size']} label-skewed examples "
        f"each), {result['rounds']} rounds per scheme, seed {result['seed']}. Quality = "
        f"accuracy on a balanced held-out target set. Start: q_l = {result['start'][0]:.3f},"
        f" q_h = {result['start'][1]:.3f}; Q estimated from complete collaboration = "
        f"{result['q_max']:.3f}; rho* = {result['rho_star']:.3f}.",
        "",
        "## Final round",
        "",
        "| " + " | ".join(_HEADER) + " |",
        "|" + "---|" * len(_HEADER),
    ]
    lines += ["| " + " | ".join(fmt(c, 4) for c in row) + " |" for row in result["table"]]
    lines += ["", "## The chapter's claims on these runs", ""]
    lines += [
        f"- [{'x' if c['holds'] else ' '}] {c['claim']} ({c['evidence']})" for c in result["claims"]
    ]
    lines += ["", "## Propositions (convex toy, gradient-descent inner loops)", ""]
    lines += [
        f"- `{p['id']}`: {p['status']} (expected: {p['expected']}; agrees: {p['agrees']})"
        for p in result["propositions"]
    ]
    lines += ["", "## Figures", ""]
    lines += [f"![{Path(f).stem}]({Path(f).name})" for f in figures if f.endswith(".png")]
    return "\n".join(lines) + "\n"


def run(args: argparse.Namespace) -> dict[str, Any]:
    import games.convex_duopoly  # noqa: F401  (registers the propositions)
    from econ.propositions import registered
    from econ.propositions import run as check
    from games.defection_free import scheme_claims
    from games.defection_free_figures import write_figures
    from learning.defection_free import DuopolySetup, TorchFirms, run_schemes

    setup = DuopolySetup(
        size=args.size, target_per_class=args.target_per_class, lr=0.05, batch_size=32
    )
    firms = TorchFirms.prepare(setup, seed=args.seed, device=args.device)
    runs = run_schemes(firms, args.rounds, seed=args.seed)
    reports = {n: r.report for n, r in runs.items()}
    out = Path(args.out)
    out.mkdir(parents=True, exist_ok=True)
    figures = write_figures(reports, out)
    props = [check(p).to_dict() for p in registered("thesis.ch3") if p.id in DEMO_PROPOSITIONS]
    df = reports["defection-free"]
    result = {
        "out": str(out),
        "seed": args.seed,
        "rounds": args.rounds,
        "setup": {
            "size": setup.size,
            "target_per_class": setup.target_per_class,
            "lr": setup.lr,
            "batch_size": setup.batch_size,
        },
        "start": [df.rows[0]["q_l"], df.rows[0]["q_h"]],
        "q_max": df.q_max,
        "rho_star": df.rho_star,
        "table": _market_rows(runs),
        "claims": [c.to_dict() for c in scheme_claims(reports)],
        "propositions": props,
        "schemes": {n: r.to_dict() for n, r in runs.items()},
    }
    (out / "report.md").write_text(_markdown(result, figures))
    (out / "summary.json").write_text(dump_json(result))
    result["report"] = str(out / "report.md")
    return result


def render(result: dict[str, Any]) -> str:
    claims = "\n".join(
        f"  [{'ok' if c['holds'] else '--'}] {c['claim']}: {c['evidence']}"
        for c in result["claims"]
    )
    props = "\n".join(f"  {p['id']}: {p['status']}" for p in result["propositions"])
    return (
        table(result["table"], _HEADER)
        + "\n\nclaims:\n"
        + claims
        + "\n\npropositions:\n"
        + props
        + f"\n\nreport: {result['report']}"
    )


def exit_status(result: dict[str, Any]) -> int:
    """1 when the defection-free guarantee failed or a proposition disagrees."""
    guarantee = all(c["holds"] for c in result["claims"] if "no revenue fell" in c["claim"])
    return 0 if guarantee and all(p["agrees"] for p in result["propositions"]) else 1
