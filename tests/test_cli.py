"""The gtdyn command: every subcommand, --help, and one-line errors with a non-zero exit status."""

import os
import subprocess
import sys

import pytest

from gtdyn.cli import main

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


def run(capsys, *argv):
    code = main(list(argv))
    out = capsys.readouterr()
    return code, out.out, out.err


def test_bare_solve_is_the_main_job(capsys):
    code, out, err = run(capsys, "solve")
    assert code == 0 and err == ""
    for problem in ("inverse", "forward", "hybrid"):
        assert f"{problem} dynamics of puma560" in out
    assert out.count("joint6") == 3


@pytest.mark.parametrize("argv, expected", [
    (["solve", "rrr", "--problem", "inverse", "--q", "0,0,0", "--v", "0,0,0", "--qdd", "0,0,0",
      "--gravity", "0", "-9.81", "0"], "inverse dynamics of rrr"),
    (["solve", "rr", "--problem", "forward", "--tau", "1,2", "--ordering", "crba"], "ordering F2,F1,A2,A1,a2,a1"),
    (["solve", "rrr", "--problem", "hybrid", "--qdd", "j1=1", "--tau", "j2=0,j3=0", "--ordering", "t1,a2,a3,F1,A1,A3,F3,A2,F2"],
     "ordering t1,a2,a3,F1,A1,A3,F3,A2,F2"),
    (["solve", "--elimination", "constrained", "--problem", "forward"], "forward dynamics of puma560"),
    (["info", "puma560"], "joint6"),
    (["solve", "five_bar"], "hybrid dynamics of five_bar"),
    (["solve", "six_bar", "--problem", "forward", "--ordering", "aba"], "forward dynamics of six_bar"),
])
def test_solve_and_info(capsys, argv, expected):
    code, out, err = run(capsys, *argv)
    assert code == 0 and expected in out, err


def test_dag_writes_picture_and_dot(capsys, tmp_path):
    prefix = str(tmp_path / "out" / "rnea")
    code, out, _ = run(capsys, "dag", "rrr", "--problem", "inverse", "--ordering", "rnea", "--out", prefix, "--steps")
    assert code == 0 and "10 DAG edges" in out
    for suffix in (".png", ".dot", "_steps.png"):
        assert os.path.getsize(prefix + suffix) > 0
    code, _, _ = run(capsys, "dag", "rr", "--problem", "forward", "--ordering", "aba", "--out", prefix, "--format", "svg")
    assert code == 0 and open(prefix + ".svg").read().lstrip().startswith("<?xml")


def test_dag_and_bench_on_a_closed_loop(capsys, tmp_path):
    code, out, _ = run(capsys, "dag", "five_bar", "--problem", "forward", "--ordering", "aba", "--out", str(tmp_path / "fb"))
    assert code == 0 and "forward dynamics of five_bar" in out
    code, out, _ = run(capsys, "bench", "five_bar", "--problem", "inverse", "--repeat", "2", "--inner", "1", "--warmup", "0")
    assert code == 0 and "| rnea |" in out


def test_bench_tiny(capsys, tmp_path):
    code, out, err = run(capsys, "bench", "rrr", "--problem", "forward", "--repeat", "2", "--inner", "1",
                         "--warmup", "1", "--orderings", "aba,crba", "--out", str(tmp_path))
    assert code == 0
    assert "| aba |" in out and "| crba |" in out and "ratio to ABA" in out and "1/" in err
    assert {"results.md", "results.csv", "samples.csv", "orderings.png"} <= set(os.listdir(tmp_path))


@pytest.mark.parametrize("argv, message", [
    (["solve", "missing.urdf"], "missing.urdf: no such file"),
    (["solve", "--q", "1,2"], "--q: expected 6 values"),
    (["solve", "--q", "a,b,c,d,e,f"], "--q: expected comma-separated numbers"),
    (["solve", "--ordering", "fastest"], "--ordering: unknown ordering 'fastest'"),
    (["solve", "--problem", "forward", "--ordering", "rnea"], "'rnea' applies to inverse dynamics"),
    (["solve", "rrr", "--problem", "hybrid", "--qdd", "j7=1", "--tau", "j2=0"], "qdd: unknown joints j7"),
    (["solve", "rrr", "--problem", "hybrid", "--qdd", "j1", "--tau", "j2=0,j3=0"], "give joint=value pairs"),
    (["solve", "--qdd", "1,1,1,1,1,1"], "choose one --problem"),
    (["bench", "--orderings", "quick"], "--orderings: unknown quick"),
    (["bench", "--repeat", "0"], "--repeat must be at least 1"),
])
def test_bad_input_is_one_line_and_nonzero(capsys, argv, message):
    code, out, err = run(capsys, *argv)
    assert code == 1 and out == ""
    assert err.count("\n") == 1 and err.startswith("gtdyn: error: ") and message in err


def test_malformed_robot_file(capsys, tmp_path):
    path = tmp_path / "bad.urdf"
    path.write_text("<robot name='x'><link name='a'>")
    code, out, err = run(capsys, "solve", str(path))
    assert code == 1 and "malformed XML" in err and "Traceback" not in err


def test_console_script_help_everywhere():
    """Through a real process: --help for the command and each subcommand; `python -m gtdyn` runs solve."""
    for argv in ([], ["solve"], ["dag"], ["bench"], ["info"]):
        out = subprocess.run([sys.executable, "-m", "gtdyn", *argv, "--help"], capture_output=True, text=True, cwd=ROOT)
        assert out.returncode == 0 and "usage: gtdyn" in out.stdout
    out = subprocess.run([sys.executable, "-m", "gtdyn"], capture_output=True, text=True, cwd=ROOT)
    assert out.returncode == 0 and "hybrid dynamics of puma560" in out.stdout
    out = subprocess.run([sys.executable, "-m", "gtdyn", "solve", "nope.urdf"], capture_output=True, text=True, cwd=ROOT)
    assert out.returncode == 1 and out.stderr == "gtdyn: error: nope.urdf: no such file\n"
