"""gtdyn.progress (issue 20 item 9): the one progress reporter. A bar on a terminal, plain lines or nothing in a
log (never a carriage return), nothing for quick work or when disabled."""

import io

import numpy as np
import pytest

import gtdyn
from gtdyn.progress import Progress


class Terminal(io.StringIO):
    """A stream that says it is a terminal."""

    def isatty(self):
        return True


def report(stream, total=3, **options):
    with Progress("work", total, stream=stream, **options) as progress:
        for k in range(total):
            progress.step(f"item {k}")
    return stream.getvalue()


@pytest.mark.parametrize("stream", [Terminal, io.StringIO])
def test_disabled_prints_nothing(stream):
    assert report(stream(), enabled=False) == ""


def test_a_log_gets_nothing_unless_asked():
    """The default (None) keeps a log file clean: what ``simulate`` does when stderr is no terminal."""
    assert report(io.StringIO()) == ""


def test_a_log_gets_plain_lines_without_carriage_returns():
    text = report(io.StringIO(), enabled=True)
    assert "\r" not in text
    lines = text.splitlines()
    assert [line.split(" (")[0] for line in lines] == ["gtdyn: work: 1/3 item 0", "gtdyn: work: 2/3 item 1",
                                                       "gtdyn: work: 3/3 item 2"]  # one per finished item


def test_a_log_gets_at_most_a_line_per_interval_and_the_final_count():
    stream = io.StringIO()
    with Progress("simulate", 1000, enabled=True, every=60.0, unit="steps", stream=stream) as progress:
        for k in range(64, 1000, 64):
            progress.at(k)
        progress.at(1000)
    lines = stream.getvalue().splitlines()
    assert [line.split(" (")[0] for line in lines] == ["gtdyn: simulate: 64/1000 steps",
                                                       "gtdyn: simulate: 1000/1000 steps"]


@pytest.mark.parametrize("enabled", [None, True])
def test_a_terminal_gets_a_bar(enabled):
    text = report(Terminal(), enabled=enabled)
    assert "gtdyn: work" in text and "3/3" in text and "item 2" in text


def test_the_total_may_come_late():
    """``draw_elimination_steps`` tells the panel count with the first panel."""
    stream = io.StringIO()
    with Progress("drawing", enabled=True, unit="panels", stream=stream) as progress:
        progress.at(1, 4)
        progress.at(4, 4)
    assert [line.split(" (")[0] for line in stream.getvalue().splitlines()] == ["gtdyn: drawing: 1/4 panels",
                                                                                 "gtdyn: drawing: 4/4 panels"]


@pytest.mark.parametrize("stream", [Terminal, io.StringIO])
def test_quick_work_with_a_delay_prints_nothing(stream):
    assert report(stream(), enabled=True, after=60.0) == ""


def test_close_twice_writes_once():
    stream = io.StringIO()
    progress = Progress("work", 2, enabled=True, every=60.0, stream=stream)
    progress.at(1)
    progress.at(2)
    progress.close()
    progress.close()
    assert len(stream.getvalue().splitlines()) == 2


def test_simulate_reports_in_a_log_only_when_asked(capsys):
    """``progress=True`` writes plain lines to a non-terminal stderr; the default writes nothing there."""
    robot = gtdyn.load_robot("rrr")
    run = lambda progress: gtdyn.simulate(robot, np.zeros(3), np.zeros(3), dt=1e-3, steps=200,  # noqa: E731
                                          progress=progress)
    run(None)
    assert capsys.readouterr().err == ""
    run(True)
    err = capsys.readouterr().err
    assert "\r" not in err and err.splitlines()[-1].startswith("gtdyn: simulate: 200/200 steps (")
