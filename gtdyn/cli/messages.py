"""What the command says on stderr besides its results: user errors (one line, exit status 1), warnings
(one line each) and progress on slow work."""

from __future__ import annotations

import contextlib
import sys
import time
import warnings


class CLIError(Exception):
    """A user error: printed as one line, exit status 1."""


def one_line(text) -> str:
    """``text`` with every run of whitespace, newlines included, made one space."""
    return " ".join(str(text).split())


@contextlib.contextmanager
def readable_warnings(stream=None):
    """Show each warning once, as one line ``gtdyn: warning: <message>`` (no file, line or source)."""
    seen: set[str] = set()

    def show(message, category, filename, lineno, file=None, line=None):
        text = one_line(message)
        if not issubclass(category, UserWarning):  # e.g. numpy's RuntimeWarning: say what it is
            text += f" ({category.__name__})"
        if text not in seen:
            seen.add(text)
            print(f"gtdyn: warning: {text}", file=stream or sys.stderr, flush=True)

    with warnings.catch_warnings():
        warnings.simplefilter("always")
        warnings.showwarning = show
        yield


class Progress:
    """Progress lines on stderr, for work that turns out to take more than ``after`` seconds (quick work
    prints nothing)."""

    def __init__(self, what: str, after: float = 1.0, stream=None):
        self.what, self.after, self.start, self.shown = what, after, time.monotonic(), False
        self.stream = stream or sys.stderr

    def __call__(self, done: int, total: int) -> None:
        elapsed = time.monotonic() - self.start
        if self.shown or elapsed >= self.after:
            stage = "saving" if done >= total else f"{done}/{total - 1} panels"
            print(f"gtdyn: {self.what}: {stage} ({elapsed:.0f} s)", file=self.stream, flush=True)
            self.shown = True
