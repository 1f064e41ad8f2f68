"""Seeded fuzzing of robot files (see ``tests/fuzz_models.py``): mutants of the bundled URDF and SDF models
either load and give finite inverse and forward dynamics (possibly with a ModelWarning or
IllConditionedWarning), or raise one of gtdyn's typed errors. Never another exception, a NaN, or a numpy or
GTSAM warning. ``python tests/verify_fuzz.py --count 25000`` runs the long version."""

import fuzz_models
import pytest

COUNT = 2400  # 400 mutants of each bundled model; about 10 s of work, on two processes (heavy)
IN_SUITE = 480  # the default run's share: the same seed's first 480 files (80 of each model), about 2 s
SEED = 20261122


def test_mutants_are_deterministic():
    a, b = fuzz_models.mutant(17, SEED), fuzz_models.mutant(17, SEED)
    assert a.text == b.text and a.mutations == b.mutations and a.base == fuzz_models.BASES[17 % 6]
    assert fuzz_models.mutant(18, SEED).text != a.text


@pytest.mark.parametrize("count", [IN_SUITE, pytest.param(COUNT, marks=pytest.mark.heavy)])
def test_fuzzed_robot_files_give_results_or_typed_errors(tmp_path, count):
    report = fuzz_models.run_parallel(count, seed=SEED, workdir=str(tmp_path))
    print(f"\nfuzz: {count} files, seed {SEED}\n{report.table()}")
    assert sum(report.counts.values()) == count
    # the mutations reach every stage: many files are refused, many load and solve
    assert report.counts["load: ModelError"] > count // 4
    assert sum(n for label, n in report.counts.items() if label.startswith("ok")) > count // 5
    problems = [f"#{m.index} from {m.base} ({'; '.join(m.mutations)}), saved as {saved}:\n  {o.label} -- "
                + o.detail.strip().splitlines()[-1] for m, o, saved in report.bugs]
    assert not problems, (f"{sum(n for k, n in report.counts.items() if k.startswith('BUG'))} of {count} files "
                          "end in something other than a result or a typed error:\n" + "\n".join(problems[:10])
                          + f"\n{report.table()}")
