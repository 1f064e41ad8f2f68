"""The package's one progress reporter (the CLI's drawings, the benchmarks, ``simulate``): a tqdm bar on a
terminal; elsewhere (a log file, a CI log) plain lines or nothing, never the carriage returns a bar redraws with."""

from __future__ import annotations

import sys
import time


class Progress:
    """Progress of ``total`` items of work called ``what`` on ``stream`` (stderr if None), each line starting
    ``gtdyn: ``.

    ``enabled``: None shows a bar on a terminal and nothing elsewhere (a log stays clean); True also writes
    plain lines ``gtdyn: what: done/total unit label (elapsed)`` where the stream is no terminal, at most one
    per ``every`` seconds (one per item if 0) and one for the finished work; False shows nothing. Nothing shows
    before ``after`` seconds, so quick work prints nothing. Tell it ``step(label)`` (one more item finished) or
    ``at(done, total)`` (done so far); ``close()``, or the end of a ``with`` block, ends the report.
    """

    def __init__(self, what: str, total: int | None = None, *, enabled: bool | None = None, after: float = 0.0,
                 every: float = 0.0, unit: str = "", stream=None):
        self.stream = sys.stderr if stream is None else stream
        self.what, self.total, self.unit, self.after, self.every = what, total, unit, after, every
        self.done, self.label, self.started = 0, "", time.monotonic()
        self.last_line: float | None = None  # when the last plain line was written
        self.written: int | None = None  # the count it showed
        terminal = _is_terminal(self.stream)
        self.lines = bool(enabled) and not terminal
        self.bar = None
        if (enabled is None or enabled) and terminal:
            from tqdm import tqdm  # here, not at the top: ``import gtdyn`` stays light

            self.bar = tqdm(total=total, desc=f"gtdyn: {what}", unit=unit or "it", delay=after, file=self.stream,
                            dynamic_ncols=True)

    def step(self, label: str = "") -> None:
        """One more item finished (``label`` names it); the callback the benchmark functions take."""
        self.label = label
        if self.bar is not None:
            self.bar.set_postfix_str(label, refresh=False)
        self.at(self.done + 1)

    def at(self, done: int, total: int | None = None) -> None:
        """``done`` items finished (of ``total``, if it is known only now); the callback of
        ``draw_elimination_steps``."""
        if total is not None and total != self.total:
            self.total = total
            if self.bar is not None:
                self.bar.total = total
        if self.bar is not None:
            self.bar.update(done - self.bar.n)
        self.done = done
        if self.lines:
            now = time.monotonic()
            if now - self.started >= self.after and (self.last_line is None or now - self.last_line >= self.every):
                self._line(now)

    def close(self) -> None:
        """End the report: the bar's last state stays on the terminal; a log gets the final count if it got
        lines before or the work outlasted ``after``."""
        if self.bar is not None:
            self.bar.close()
            self.bar = None
        if self.lines and self.written != self.done:
            now = time.monotonic()
            if self.last_line is not None or now - self.started >= self.after:
                self._line(now)
        self.lines = False

    def __enter__(self) -> Progress:
        return self

    def __exit__(self, *exc) -> None:
        self.close()

    def _line(self, now: float) -> None:
        count = f"{self.done}/{self.total}" if self.total else f"{self.done}"
        text = " ".join(t for t in (count, self.unit, self.label) if t)
        self.stream.write(f"gtdyn: {self.what}: {text} ({now - self.started:.1f} s)\n")
        self.stream.flush()
        self.last_line, self.written = now, self.done


def _is_terminal(stream) -> bool:
    try:
        return stream.isatty()
    except (AttributeError, ValueError):  # replaced or closed streams
        return False
