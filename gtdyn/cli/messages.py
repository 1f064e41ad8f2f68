"""What the command says on stderr besides its results: user errors (one line, exit status 1) and warnings
(one line each). Progress on slow work is ``gtdyn.progress``."""

from __future__ import annotations

import contextlib
import sys
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

