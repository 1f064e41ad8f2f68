"""Timing: medians over repeated samples after warm-up calls (one function, or several interleaved sample by
sample)."""

from __future__ import annotations

import time
from collections.abc import Callable
from dataclasses import dataclass

import numpy as np


@dataclass(frozen=True)
class Timing:
    """Per-call seconds of each sample."""

    samples: tuple[float, ...]

    @property
    def median_us(self) -> float:
        return float(np.median(self.samples) * 1e6)

    @property
    def iqr_us(self) -> float:
        q1, q3 = np.percentile(self.samples, [25, 75])
        return float((q3 - q1) * 1e6)


def measure(fn: Callable[[], object], repeat: int, inner: int, warmup: int) -> Timing:
    """Warm up, then ``repeat`` samples of ``inner`` back-to-back calls each."""
    for _ in range(warmup):
        fn()
    samples = []
    for _ in range(repeat):
        start = time.perf_counter()
        for _ in range(inner):
            fn()
        samples.append((time.perf_counter() - start) / inner)
    return Timing(tuple(samples))


def measure_interleaved(fns: dict[str, Callable[[], object]], repeat: int, inner: int,
                        warmup: int) -> dict[str, Timing]:
    """``measure`` of several functions side by side: each of ``repeat`` rounds takes one sample of every
    function, in turn (in the given order on even rounds, reversed on odd ones), so that the drift of a shared
    machine reaches them all alike and sample k of one can be paired with sample k of another."""
    for fn in fns.values():
        for _ in range(warmup):
            fn()
    names = list(fns)
    samples: dict[str, list[float]] = {name: [] for name in names}
    for r in range(repeat):
        for name in names if r % 2 == 0 else names[::-1]:
            fn = fns[name]
            start = time.perf_counter()
            for _ in range(inner):
                fn()
            samples[name].append((time.perf_counter() - start) / inner)
    return {name: Timing(tuple(s)) for name, s in samples.items()}


def paired_ratio(a: Timing, b: Timing) -> float:
    """The median over rounds of a's sample / b's sample of the same round (``measure_interleaved``)."""
    return float(np.median(np.asarray(a.samples) / np.asarray(b.samples)))

