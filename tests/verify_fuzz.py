"""Long fuzz run over mutated bundled robot files: ``python tests/verify_fuzz.py --count 25000``.

Prints progress, the table of outcome classes (see ``tests/fuzz_models.py``) and, for each class of bug, the
first file's mutations, saved path and message. Exit status 1 if any outcome is a bug.
"""

from __future__ import annotations

import argparse
import os
import sys
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

import fuzz_models  # noqa: E402


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--count", type=int, default=25_000, help="number of mutated files (default 25000)")
    parser.add_argument("--seed", type=int, default=0, help="seed of the run (default 0)")
    parser.add_argument("--workdir", default=None, help="where to write the files (default: a new temp folder)")
    parser.add_argument("--every", type=int, default=1000, help="print progress every N files")
    args = parser.parse_args(argv)
    start = time.perf_counter()

    def progress(done, report):
        if done % args.every == 0 or done == args.count:
            bugs = sum(n for label, n in report.counts.items() if label.startswith("BUG"))
            elapsed = time.perf_counter() - start
            print(f"{done:>7}/{args.count} files  {elapsed:7.1f} s  bugs so far: {bugs}", flush=True)

    report = fuzz_models.run(args.count, seed=args.seed, workdir=args.workdir, progress=progress)
    print()
    print(f"fuzz run: {args.count} files, seed {args.seed}")
    print(report.table())
    seen = set()
    for mutant, outcome, saved in report.bugs:
        if outcome.label in seen:
            continue
        seen.add(outcome.label)
        print(f"\n== {outcome.label}: file #{mutant.index} (from {mutant.base}: {'; '.join(mutant.mutations)})")
        print(f"   saved as {saved}")
        print("   " + outcome.detail.strip().replace("\n", "\n   "))
    return 1 if any(label.startswith("BUG") for label in report.counts) else 0


if __name__ == "__main__":
    sys.exit(main())
