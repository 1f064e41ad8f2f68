"""Run the conformance check over every URDF that example-robot-data ships and print the table.

    python tests/verify_conformance.py [--states 3] [--only SUBSTRING]
"""

from __future__ import annotations

import argparse
import glob
import os
import sys
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

from conformance import check_robot  # noqa: E402
from references import erd_root  # noqa: E402


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--states", type=int, default=3)
    parser.add_argument("--only", default="")
    args = parser.parse_args()
    root = erd_root()
    paths = sorted(p for p in glob.glob(os.path.join(root, "**", "*.urdf"), recursive=True) if args.only in p)
    rows, start = [], time.perf_counter()
    for k, path in enumerate(paths, 1):
        name = os.path.relpath(path, root)
        print(f"[{k}/{len(paths)}] {name} ...", file=sys.stderr, flush=True)
        t = time.perf_counter()
        outcome = check_robot(path, states=args.states)
        rows.append((name, outcome, time.perf_counter() - t))
    print("\n| robot | dofs | outcome | κ(M) max | max rel. err | notes |\n|---|---|---|---|---|---|")
    for name, o, _ in rows:
        detail = f": {o.detail}" if o.detail else ""
        print(f"| {name} | {o.dofs} | {o.verdict}{detail} | {o.kappa:.2g} | {o.worst:.1g} | {', '.join(o.notes)} |")
    counts = {}
    for _, o, _ in rows:
        counts[o.verdict] = counts.get(o.verdict, 0) + 1
    print(f"\n{len(rows)} files in {time.perf_counter() - start:.0f} s: "
          + ", ".join(f"{v} {n}" for v, n in sorted(counts.items())))
    return 1 if counts.get("FAIL") else 0


if __name__ == "__main__":
    sys.exit(main())
