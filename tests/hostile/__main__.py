"""``python -m tests.hostile``: run the hostile corpus and print the counts and the failures.

``--jobs N`` runs N cases at once, ``--only TEXT`` those whose id or group holds TEXT,
``--list`` prints the cases instead, ``--json FILE`` writes every ending as a JSON line
as soon as it comes (a run stopped half-way keeps what it measured), and
``--timeout-scale X`` stretches every case's time-out (a loaded machine). The exit status is
1 when a case ended with a traceback, a hang or a silent wrong answer.
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

from tests.hostile.corpus import all_cases
from tests.hostile.runner import Result, report, run_all


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m tests.hostile", description=__doc__)
    parser.add_argument("--jobs", type=int, default=2, help="cases run at once (2)")
    parser.add_argument("--only", action="append", default=[], help="ids or groups holding TEXT")
    parser.add_argument("--list", action="store_true", help="list the cases and run nothing")
    parser.add_argument("--json", type=Path, default=None, help="JSON lines of every ending")
    parser.add_argument("--timeout-scale", type=float, default=1.0, help="stretch time-outs")
    args = parser.parse_args(argv)
    cases = [
        c for c in all_cases() if not args.only or any(t in c.id or t == c.group for t in args.only)
    ]
    if args.list:
        for c in cases:
            print(f"{c.group:<14} {c.id:<60} {'|'.join(sorted(c.expect)):<22} {' '.join(c.argv)!r}")
        print(f"{len(cases)} cases")
        return 0
    sink = None if args.json is None else args.json.open("w")

    def record(result: Result) -> None:
        if sink is not None:
            sink.write(json.dumps(result.to_dict()) + "\n")
            sink.flush()

    try:
        results = run_all(cases, args.jobs, args.timeout_scale, echo=True, on_result=record)
    finally:
        if sink is not None:
            sink.close()
    print(report(results))
    bad = [r for r in results if r.outcome in ("traceback", "hang", "silent")]
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main())
