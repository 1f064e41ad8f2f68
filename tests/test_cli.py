"""The gtdyn command: every subcommand, --help, what a result says, one-line errors and warnings, and
tracebacks only for bugs."""

import importlib
import os
import runpy
import subprocess
import sys
import warnings

import gtsam
import numpy as np
import pytest
import tomllib
from references import erd_path

import gtdyn
from gtdyn import cli
from gtdyn.cli import default_state, main
from gtdyn.errors import IllConditionedWarning, ModelWarning
from gtdyn.io.load import BUNDLED, DOCUMENTED_STATES, bundled_path, documented_state

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
SOLO = erd_path("solo_description/robots/solo12.urdf")  # a URDF: fixed unless --base floating
BASE_LABELS = ("ω [rad/s]", "v [m/s]", "ω̇ [rad/s²]", "v̇ [m/s²]", "moment [N·m]", "force [N]")


def run(capsys, *argv):
    code = main(list(argv))
    out = capsys.readouterr()
    return code, out.out, out.err


def table_rows(out: str, joint: str) -> list[str]:
    return [line for line in out.splitlines() if line.startswith(f"  {joint} ")]


def base_rows(out: str, problem: str) -> dict[str, tuple[np.ndarray, str]]:
    """The floating-base rows of ``problem``'s table: label -> ((x, y, z) as printed, given/solved)."""
    block = out.split(f"{problem} dynamics of ")[1].split("\n\n")[0]
    rows = {}
    for line in block.splitlines():
        label = next((x for x in BASE_LABELS if line.startswith(f"  {x} ")), None)
        if label:
            *xyz, status = line[len(label) + 2:].split()
            rows[label] = (np.array(xyz, dtype=float), status)
    return rows


def commas(values) -> str:
    return ",".join(repr(float(x)) for x in values)


def test_bare_solve_is_the_main_job(capsys):
    code, out, err = run(capsys, "solve")
    assert code == 0 and err == ""
    for problem in ("inverse", "forward", "hybrid"):
        assert out.count(f"{problem} dynamics of puma560") == 1
    assert len(table_rows(out, "joint6")) == 3
    assert "gravity (0, 0, -9.81) m/s²" in out and "q [rad]" in out and "τ [N·m]" in out
    assert "given: q, q̇, q̈ · solved: τ" in out and "given: q, q̇, τ · solved: q̈" in out
    assert "given: q, q̇; q̈ of joint1, joint2, joint3; τ of joint4, joint5, joint6 · solved: τ of joint1, joint2, " \
           "joint3; q̈ of joint4, joint5, joint6" in out
    assert out.count("ordering colamd (default): ") == 3


@pytest.mark.parametrize("argv, expected", [
    (["solve", "rrr", "--problem", "inverse", "--q", "0,0,0", "--v", "0,0,0", "--qdd", "0,0,0",
      "--gravity", "0", "-9.81", "0"], "gravity (0, -9.81, 0) m/s²"),
    (["solve", "rr", "--problem", "forward", "--tau", "1,2", "--ordering", "crba"], "ordering crba: F2,F1,A2,A1,a2,a1"),
    (["solve", "rrr", "--problem", "hybrid", "--qdd", "j1=1", "--tau", "j2=0,j3=0",
      "--ordering", "t1,a2,a3,F1,A1,A3,F3,A2,F2"],
     "ordering custom: t1,a2,a3,F1,A1,A3,F3,A2,F2"),
    (["solve", "--elimination", "constrained", "--problem", "forward"], "forward dynamics of puma560"),
    (["info", "puma560"], "joint6"),
    (["info", "four_bar"], "passive, closes a loop"),
    (["solve", "five_bar"], "hybrid dynamics of five_bar"),
    (["solve", "six_bar", "--problem", "forward", "--ordering", "aba"], "forward dynamics of six_bar"),
])
def test_solve_and_info(capsys, argv, expected):
    code, out, err = run(capsys, *argv)
    assert code == 0 and expected in out, err


def test_each_result_is_labelled_with_the_problem_asked_for(capsys):
    """four_bar has one actuated joint: no hybrid split exists, and `all` says so instead of printing a
    second forward problem; five_bar's default split is a real hybrid problem, labelled hybrid."""
    code, out, err = run(capsys, "solve", "four_bar")
    assert code == 0 and err == ""
    assert out.count("inverse dynamics of four_bar") == 1 and out.count("forward dynamics of four_bar") == 1
    assert "hybrid: skipped, needs at least two actuated joints (four_bar has 1: j1)" in out
    code, out, _ = run(capsys, "solve", "five_bar", "--problem", "hybrid")
    assert code == 0 and "hybrid dynamics of five_bar" in out and "forward dynamics" not in out
    assert "given: q, q̇; q̈ of j1; τ of j2; τ = 0 at passive j3, j4, j5 · solved: τ of j1; q̈ of" in out
    # the library infers a kind from what is known; the command prints what was asked for
    code, out, _ = run(capsys, "solve", "four_bar", "--problem", "hybrid", "--qdd", "j1=0.5")
    assert code == 0 and "hybrid dynamics of four_bar" in out and "inverse dynamics" not in out


def test_floating_base_inverse_dynamics_prints_the_base_wrench(capsys):
    """solo12 floated (issue 12): the base's twist and acceleration as given, and the wrench its environment must
    apply in N·m and N, as gtdyn.inverse_dynamics finds it for the same inputs (an rpy pose)."""
    from gtdyn.spatial import rpy_matrix

    q, v, qdd = np.linspace(-0.6, 0.6, 12), np.linspace(0.3, -0.2, 12), np.linspace(1, -1, 12)
    pose, twist, accel = [0.1, -0.2, 0.3, 0.2, -0.1, 0.5], [0.3, -0.2, 0.1, 0.5, 0.4, -0.3], [-1, 0.5, 2, 0.3, -0.2, 1]
    code, out, err = run(capsys, "solve", SOLO, "--base", "floating", "--problem", "inverse", f"--q={commas(q)}",
                         f"--v={commas(v)}", f"--qdd={commas(qdd)}", f"--base-pose={commas(pose)}",
                         f"--base-twist={commas(twist)}", f"--base-accel={commas(accel)}")
    assert code == 0 and err == ""
    assert out.startswith(f"solo from {SOLO}, floating base 'base_link'\n")
    assert "given: q, q̇, q̈; base pose, twist, acceleration · solved: τ; base wrench" in out
    assert "  base base_link at (0.1, -0.2, 0.3) m, (qx, qy, qz, qw) = (" in out
    robot = gtdyn.load_robot(SOLO, base="floating")
    T = np.eye(4)
    T[:3, :3], T[:3, 3] = rpy_matrix(*pose[3:]), pose[:3]
    r = gtdyn.inverse_dynamics(robot, q, v, qdd, base_pose=T, base_twist=twist, base_accel=accel)
    rows = base_rows(out, "inverse")
    expected = np.concatenate([twist, accel, r.base_wrench])
    for i, label in enumerate(BASE_LABELS):
        values, status = rows[label]
        np.testing.assert_allclose(values, expected[3 * i:3 * i + 3], atol=5.1e-5 if i < 2 else 5.1e-7, err_msg=label)
        assert status == ("given" if i < 4 else "solved")
    assert abs(r.base_wrench[5]) > 10  # the force holding it up against gravity: a real check
    printed_tau = [float(table_rows(out, name)[0].split()[-1]) for name in robot.joint_names]
    np.testing.assert_allclose(printed_tau, r.tau, atol=5.1e-7)


def test_floating_base_forward_dynamics_prints_the_base_acceleration(capsys):
    """Forward dynamics leaves the base free: its acceleration in rad/s² and m/s² is gtdyn.forward_dynamics's for
    the same inputs (a quaternion pose), the wrench on it is zero."""
    q, v, tau = np.linspace(0.5, -0.5, 12), np.full(12, 0.2), np.linspace(-0.3, 0.3, 12)
    position, quaternion, twist = [1.0, 2.0, 0.4], [0.5, -0.5, 0.5, 0.5], [0.1, 0.2, -0.3, 0.0, 0.5, 0.1]
    code, out, err = run(capsys, "solve", SOLO, "--base", "floating", "--problem", "forward", f"--q={commas(q)}",
                         f"--v={commas(v)}", f"--tau={commas(tau)}", f"--base-pose={commas(position + quaternion)}",
                         f"--base-twist={commas(twist)}")
    assert code == 0 and err == ""
    assert "given: q, q̇, τ; base pose, twist (free: no wrench) · solved: q̈; base acceleration" in out
    assert "  base base_link at (1, 2, 0.4) m, (qx, qy, qz, qw) = (0.5, -0.5, 0.5, 0.5)" in out
    robot = gtdyn.load_robot(SOLO, base="floating")
    x, y, z, w = quaternion
    pose = gtsam.Pose3(gtsam.Rot3.Quaternion(w, x, y, z), np.array(position))
    r = gtdyn.forward_dynamics(robot, q, v, tau, base_pose=pose, base_twist=twist)
    rows = base_rows(out, "forward")
    for label, expected in (("ω̇ [rad/s²]", r.base_accel[:3]), ("v̇ [m/s²]", r.base_accel[3:])):
        np.testing.assert_allclose(rows[label][0], expected, atol=5.1e-7, err_msg=label)
        assert rows[label][1] == "solved"
    for label in ("moment [N·m]", "force [N]"):
        assert np.all(rows[label][0] == 0) and rows[label][1] == "given"
    assert np.linalg.norm(r.base_accel) > 1  # falling, and spinning from the legs' reaction
    printed_qdd = [float(table_rows(out, name)[0].split()[3]) for name in robot.joint_names]
    np.testing.assert_allclose(printed_qdd, r.qdd, atol=5.1e-7)


def test_the_load_message_says_fixed_or_floating(capsys):
    """A URDF is fixed unless --base floating; info and dag say it too. A floating robot's bare solve prints a
    base table in each of the three problems (the default state: identity pose, zero twist)."""
    code, out, _ = run(capsys, "solve", "rr", "--problem", "inverse")
    assert code == 0 and out.startswith(f"rr from {bundled_path('rr')}, fixed base 'base_link'\n")
    assert "base_link frame" not in out
    code, out, _ = run(capsys, "info", SOLO)
    assert code == 0 and out.splitlines()[0].endswith(": 12 joints, fixed base 'base_link'")
    code, out, _ = run(capsys, "info", SOLO, "--base", "floating")
    assert code == 0 and out.splitlines()[0].endswith(": 12 joints, floating base 'base_link'")
    code, out, _ = run(capsys, "info", "five_bar", "--base", "fixed")
    assert code == 0 and "fixed base 'world'" in out.splitlines()[0]
    code, out, err = run(capsys, "solve", SOLO, "--base", "floating")
    assert code == 0 and err == "" and out.startswith(f"solo from {SOLO}, floating base 'base_link'\n")
    for problem in ("inverse", "forward", "hybrid"):
        rows = base_rows(out, problem)
        assert list(rows) == list(BASE_LABELS)
        assert np.all(rows["ω [rad/s]"][0] == 0) and np.all(rows["v [m/s]"][0] == 0)
    assert out.count("  base base_link at (0, 0, 0) m, (qx, qy, qz, qw) = (0, 0, 0, 1)") == 3


def test_prismatic_joints_are_shown_in_metres_and_newtons(capsys):
    code, out, _ = run(capsys, "solve", erd_path("panda_description/urdf/panda.urdf"), "--problem", "inverse")
    assert code == 0
    finger, arm = table_rows(out, "panda_finger_joint1")[0], table_rows(out, "panda_joint1")[0]
    assert finger.split()[2::2] == ["m", "m/s", "m/s²", "N"]
    assert arm.split()[2::2] == ["rad", "rad/s", "rad/s²", "N·m"]


def test_default_state_lies_inside_the_joint_limits():
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", ModelWarning)  # the Panda's mimic finger
        panda = gtdyn.load_robot(erd_path("panda_description/urdf/panda.urdf"))
    q, _, _ = default_state(panda)
    lower, upper = np.array([j.lower for j in panda.joints]), np.array([j.upper for j in panda.joints])
    assert np.all(lower < q) and np.all(q < upper)
    assert q[0] == pytest.approx(0.1)  # inside: 0.1·k as before
    assert q[3] == pytest.approx((lower[3] + upper[3]) / 2)  # panda_joint4 ∈ [−3.07, −0.07]: the middle
    assert q[7] == pytest.approx(0.02) and q[8] == pytest.approx(0.02)  # fingers ∈ [0, 0.04] m


def test_the_documented_state_belongs_to_the_bundled_file(tmp_path):
    """The PUMA's documented state is data of the bundled model, found by its file, not by its name: a copy
    elsewhere (same name, same joints) gets the generic in-limit default."""
    expected = DOCUMENTED_STATES["puma560"]
    for path in ("puma560", bundled_path("puma560"), os.path.relpath(bundled_path("puma560"))):
        state = default_state(gtdyn.load_robot(path))
        for got, want in zip(state, (expected.q, expected.v, expected.qdd)):
            np.testing.assert_array_equal(got, want)
    copy = tmp_path / "puma560.urdf"
    copy.write_text(open(bundled_path("puma560")).read())
    other = gtdyn.load_robot(str(copy))
    assert other.name == "puma560" and other.num_dofs == 6 and documented_state(other) is None
    q, v, qdd = default_state(other)
    assert q[0] == pytest.approx(0.1) and np.all(v == 0.1) and np.all(qdd == 0.5)
    assert documented_state(gtdyn.load_robot("rrr")) is None


def test_every_documented_state_fits_its_robot(capsys):
    """Right lengths; revolute joints (the help gives rad); positions inside the limits (the PUMA's nominal
    q3 = π of the toolbox is documented as −π, the same angle inside joint3's [−225°, 45°]: a simulation from the
    default state must not start past a limit); and `solve --help` states it."""
    assert set(DOCUMENTED_STATES) <= set(BUNDLED)
    with pytest.raises(SystemExit):
        main(["solve", "--help"])
    text = capsys.readouterr().out
    assert "default state: for the PUMA 560 q = (0, π/4, −π, 0, π/4, 0) rad (the toolbox's nominal pose qn, joint 3 " \
           "at −π inside its limits),\n" \
           "q̇ = (0.1, 0.2, 0.3, 0.4, 0.5, 0.6) rad/s, q̈ = (1, −1, 0.5, −0.5, 0.25, −0.25) rad/s². For other robots\n" \
           in text
    for name, state in DOCUMENTED_STATES.items():
        robot = gtdyn.load_robot(name)
        q, v, qdd = documented_state(robot)
        assert len(q) == len(v) == len(qdd) == robot.num_dofs and state.title in text
        for joint, x in zip(robot.joints, q):
            assert joint.type == "revolute"
            assert joint.lower <= x <= joint.upper, joint.name


def test_warnings_are_one_readable_line_each(capsys, monkeypatch):
    real = gtdyn.load_robot

    def noisy(path, base=None, transmissions="exact"):
        warnings.warn("first line\n   and a long second line " + "x" * 300, ModelWarning, stacklevel=2)
        warnings.warn("conditioned badly", IllConditionedWarning, stacklevel=2)
        warnings.warn("conditioned badly", IllConditionedWarning, stacklevel=2)  # the same text: shown once
        warnings.warn("something else", UserWarning, stacklevel=2)
        return real(path, base, transmissions)

    monkeypatch.setattr(gtdyn, "load_robot", noisy)
    code, out, err = run(capsys, "solve", "rr", "--problem", "inverse")
    assert code == 0 and "inverse dynamics of rr" in out
    lines = err.splitlines()
    assert lines == ["gtdyn: warning: first line and a long second line " + "x" * 300,
                     "gtdyn: warning: conditioned badly", "gtdyn: warning: something else"]


def test_a_real_model_warning(capsys, tmp_path):
    """A moving link without mass: the warning is one line, and forward dynamics is a one-line error."""
    path = tmp_path / "massless.urdf"
    path.write_text("""<robot name="m"><link name="base"/>
      <link name="a"><inertial><mass value="1"/><inertia ixx="1" iyy="1" izz="1" ixy="0" ixz="0" iyz="0"/></inertial></link>
      <link name="tip"/>
      <joint name="j1" type="continuous"><parent link="base"/><child link="a"/><axis xyz="0 0 1"/></joint>
      <joint name="j2" type="continuous"><parent link="a"/><child link="tip"/><origin xyz="1 0 0"/><axis xyz="0 0 1"/></joint>
    </robot>""")  # noqa: E501
    code, out, err = run(capsys, "solve", str(path), "--problem", "inverse")
    assert code == 0 and "inverse dynamics of m" in out
    assert err.startswith("gtdyn: warning: ") and err.count("\n") == 1 and "ModelWarning:" not in err
    code, out, err = run(capsys, "solve", str(path), "--problem", "forward")
    assert code == 1 and out == "" and err.splitlines()[-1].startswith("gtdyn: error: ")


def test_dag_writes_picture_and_dot(capsys, tmp_path):
    prefix = str(tmp_path / "out" / "rnea")
    code, out, _ = run(capsys, "dag", "rrr", "--problem", "inverse", "--ordering", "rnea", "--out", prefix, "--steps")
    assert code == 0 and "10 DAG edges" in out and "ordering rnea: " in out
    for suffix in (".png", ".dot", "_steps.png"):
        assert os.path.getsize(prefix + suffix) > 0
    code, _, _ = run(capsys, "dag", "rr", "--problem", "forward", "--ordering", "aba", "--out", prefix,
                     "--format", "svg")
    assert code == 0 and open(prefix + ".svg").read().lstrip().startswith("<?xml")


@pytest.mark.heavy  # ~3 s; test_dag_writes_picture_and_dot and test_dag_and_bench_on_a_closed_loop represent it
def test_dag_of_a_32_joint_tree_is_bounded_and_quick(capsys, tmp_path, monkeypatch):
    """Talos (32 joints; the issue's command): was a 41,904 × 456 px step view after 40 s; now at most 12
    panels, every PNG at most 8000 px on its long side."""
    from PIL import Image  # reads a PNG's size from its header, without decoding millions of pixels

    import gtdyn.plot.dag

    figures = []
    real = gtdyn.plot.dag.draw_elimination_steps
    monkeypatch.setattr(gtdyn.plot.dag, "draw_elimination_steps",
                        lambda *a, **k: figures.append(real(*a, **k)) or figures[-1])
    prefix = str(tmp_path / "talos")
    code, out, err = run(capsys, "dag", erd_path("talos_data/robots/talos_reduced.urdf"), "--out", prefix, "--steps")
    assert code == 0 and "wrote" in out
    assert all(line.startswith("gtdyn: ") for line in err.splitlines())  # warnings and progress only
    for suffix in (".png", "_steps.png"):
        with Image.open(prefix + suffix) as png:
            assert png.format == "PNG"
            width, height = png.size
        assert max(height, width) <= 8000 and min(height, width) >= 400
    panels = [ax for ax in figures[0].axes if ax.get_title()]
    assert 2 <= len(panels) <= 12


def test_dag_steps_refused_beyond_the_size_limit(capsys, tmp_path, monkeypatch):
    import gtdyn.plot.dag

    monkeypatch.setattr(gtdyn.plot.dag, "MAX_STEP_VARIABLES", 5)
    code, out, err = run(capsys, "dag", "rrr", "--out", str(tmp_path / "x"), "--steps")
    assert code == 1 and "--steps: rrr's inverse dynamics has 9 variables" in err and "without --steps" in err
    assert os.listdir(tmp_path) == []  # refused before drawing anything


def test_progress_shows_on_slow_work(capsys, tmp_path, monkeypatch):
    """Drawing the steps for longer than PROGRESS_AFTER_S writes a line per panel to a log (no carriage
    returns); quicker drawing writes nothing."""
    import gtdyn.cli.dag

    monkeypatch.setattr(gtdyn.cli.dag, "PROGRESS_AFTER_S", 0.0)
    code, _, err = run(capsys, "dag", "rrr", "--out", str(tmp_path / "slow"), "--steps")
    lines = err.splitlines()
    assert code == 0 and "\r" not in err and len(lines) >= 2
    assert lines[0].startswith("gtdyn: drawing the elimination steps: 1/") and " panels (" in lines[0]
    total = lines[0].split("/")[1].split()[0]
    assert lines[-1].startswith(f"gtdyn: drawing the elimination steps: {total}/{total} panels")
    monkeypatch.setattr(gtdyn.cli.dag, "PROGRESS_AFTER_S", 60.0)
    code, _, err = run(capsys, "dag", "rrr", "--out", str(tmp_path / "quick"), "--steps")
    assert code == 0 and err == ""


def test_dag_and_bench_on_a_closed_loop(capsys, tmp_path, monkeypatch):
    monkeypatch.setenv("GTDYN_CACHE_DIR", str(tmp_path / "cache"))
    code, out, _ = run(capsys, "dag", "five_bar", "--problem", "forward", "--ordering", "aba",
                       "--out", str(tmp_path / "fb"))
    assert code == 0 and "forward dynamics of five_bar" in out
    code, out, _ = run(capsys, "bench", "five_bar", "--problem", "inverse", "--repeat", "2", "--inner", "1",
                       "--warmup", "0", "--orderings", "rnea,colamd", "--batch", "20")
    assert code == 0 and "| rnea |" in out and "compiled solvers" in out and "fallbacks" not in out
    code, out, _ = run(capsys, "bench", "five_bar", "--problem", "inverse", "--repeat", "2", "--inner", "1",
                       "--warmup", "0", "--reference")
    assert code == 0 and "| rnea |" in out and "reference path" in out


def test_bench_tiny(capsys, tmp_path, monkeypatch):
    """Compiled solvers by default: single calls and batches against Pinocchio, compile seconds (--lanes: batches
    in SIMD lanes; not with --reference); --reference: the reference path's elimination and its files."""
    monkeypatch.setenv("GTDYN_CACHE_DIR", str(tmp_path / "cache"))
    code, out, err = run(capsys, "bench", "rrr", "--problem", "forward", "--repeat", "2", "--inner", "1",
                         "--warmup", "1", "--orderings", "aba,crba", "--batch", "20", "--out", str(tmp_path / "c"))
    assert code == 0
    assert "| aba |" in out and "| crba |" in out and "ratio to ABA" in out and "1/" in err
    assert "Pinocchio abaInParallel" in out and "20 states" in out and "compile s: cold / cached" in out
    assert {"results.md", "results.csv", "samples.csv", "operations.png"} <= set(os.listdir(tmp_path / "c"))
    code, out, err = run(capsys, "bench", "rrr", "--problem", "forward", "--repeat", "2", "--inner", "1",
                         "--warmup", "1", "--orderings", "aba", "--batch", "8", "--lanes")
    assert code == 0 and "| aba |" in out and "SIMD lanes" in out
    code, out, err = run(capsys, "bench", "rrr", "--lanes", "--reference")
    assert code != 0 and "--lanes: SIMD lanes are for compiled solvers" in err
    code, out, err = run(capsys, "bench", "rrr", "--problem", "forward", "--repeat", "2", "--inner", "1",
                         "--warmup", "1", "--orderings", "aba,crba", "--reference", "--out", str(tmp_path / "r"))
    assert code == 0
    assert "| aba |" in out and "| crba |" in out and "ratio to ABA" in out and "elimination µs" in out
    assert {"results.md", "results.csv", "samples.csv", "orderings.png"} <= set(os.listdir(tmp_path / "r"))


@pytest.mark.heavy  # ~3 s; test_bench_tiny and test_dag_and_bench_on_a_closed_loop represent it
def test_bench_puma_prints_the_paper_table(capsys, tmp_path, monkeypatch):
    monkeypatch.setenv("GTDYN_CACHE_DIR", str(tmp_path / "cache"))
    code, out, err = run(capsys, "bench", "--problem", "all", "--orderings", "rnea,aba", "--repeat", "2",
                         "--inner", "1", "--warmup", "0", "--batch", "0")
    assert code == 0 and "Tables I–II" in out and "| inverse RNEA | 26.6 | 1.00 |" in out
    assert "| hybrid dynamics, puma560 |" in out and "µs per state" not in out  # --batch 0: no batch tables
    assert "puma560 hybrid aba" in err


def test_bench_checks_its_output_directory_before_timing(capsys, tmp_path, monkeypatch):
    from gtdyn import bench as benchmark

    def timing(*args, **kwargs):
        raise AssertionError("the benchmark started")

    for name in ("benchmark_state", "bench_orderings", "bench_compiled"):
        monkeypatch.setattr(benchmark, name, timing)
    blocker = tmp_path / "a_file"
    blocker.write_text("")
    for extra in ([], ["--reference"]):
        code, out, err = run(capsys, "bench", "rrr", "--out", str(blocker / "results"), *extra)
        assert code == 1 and out == ""
        assert err.startswith(f"gtdyn: error: --out: cannot write to '{blocker / 'results'}'") and err.count("\n") == 1


def simulate_csv(path) -> tuple[list[str], np.ndarray]:
    with open(path) as f:
        header = f.readline().strip().split(",")
    return header, np.loadtxt(path, delimiter=",", skiprows=1, ndmin=2)


def test_simulate_writes_csv_plot_and_summary(capsys, tmp_path):
    prefix = tmp_path / "new" / "rr"
    argv = ["--dt", "0.002", "--steps", "150", "--method", "variational", "--q0", "0.3,-0.2", "--v0", "0.1,0",
            "--tau", "0.5,0", "--gravity", "0", "-9.81", "0"]
    code, out, err = run(capsys, "simulate", "rr", *argv, "--out", str(prefix))
    assert code == 0 and err == ""
    header, table = simulate_csv(f"{prefix}.csv")
    assert header == ["t", "q_j1", "q_j2", "v_j1", "v_j2", "qdd_j1", "qdd_j2", "tau_j1", "tau_j2", "kinetic",
                      "potential", "energy"]
    assert table.shape == (151, 12)
    robot = gtdyn.load_robot("rr")
    expected = gtdyn.simulate(robot, [0.3, -0.2], [0.1, 0.0], tau=[0.5, 0.0], dt=0.002, steps=150,
                              method="variational", gravity=[0, -9.81, 0])
    np.testing.assert_allclose(table[-1, 1:3], expected.q[-1], rtol=0, atol=1e-12)
    np.testing.assert_array_equal(table[:, 0], expected.t)  # full precision: every number reads back exactly
    np.testing.assert_array_equal(table[:, 1:3], expected.q)
    np.testing.assert_array_equal(table[:, 7:9], np.tile([0.5, 0.0], (151, 1)))
    np.testing.assert_array_equal(table[:, -1], expected.energy)
    assert os.path.getsize(f"{prefix}.png") > 10_000
    drift = np.max(np.abs(expected.energy - expected.energy[0]))
    assert "simulated rr (fixed base 'base_link'), method variational, dt 0.002 s, 150 steps" in out
    assert "0.3 s simulated in " in out and " steps per second" in out
    assert f"max |E − E(0)| = {drift:.3g} J (not a drift: the torques do work" in out  # τ = (0.5, 0) does work
    assert out.splitlines()[-1] == f"wrote {prefix}.csv, {prefix}.png"


def test_simulate_defaults_start_from_the_default_state_at_rest(capsys, tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    code, out, err = run(capsys, "simulate", "rr", "--steps", "40", "--format", "svg")
    assert code == 0 and err == ""
    header, table = simulate_csv("simulation.csv")
    assert table.shape == (41, len(header)) and table[1, 0] == 0.001  # --dt 0.001 s
    np.testing.assert_array_equal(table[0, 1:3], default_state(gtdyn.load_robot("rr"))[0])
    np.testing.assert_array_equal(table[0, 3:5], [0.0, 0.0])
    assert os.path.getsize("simulation.svg") > 0 and not os.path.exists("simulation.png")
    assert "method semi_implicit_euler" in out and "gravity (0, 0, -9.81) m/s²" in out
    assert out.splitlines()[-1] == "wrote simulation.csv, simulation.svg"


def test_simulate_refuses_an_unknown_method_and_an_unwritable_out(capsys, tmp_path):
    code, out, err = run(capsys, "simulate", "rr", "--method", "leapfrog")
    assert code == 1 and err.count("\n") == 1 and err.startswith("gtdyn: error: argument --method: invalid choice")
    blocker = tmp_path / "a_file"
    blocker.write_text("")
    code, out, err = run(capsys, "simulate", "rr", "--out", str(blocker / "sim"))
    assert code == 1 and out == "" and err.count("\n") == 1
    assert err.startswith(f"gtdyn: error: --out: cannot write to '{blocker}'")


@pytest.mark.parametrize("argv", [["solve", "--gravity", "0", "0"], ["solve", "--problem", "bogus"],
                                  ["solve", "--elimination", "lu"], ["bench", "--repeat", "x"]])
def test_argparse_errors_are_one_line_and_status_1_as_the_readme_promises(capsys, argv):
    """argparse printed a usage block and exited 2 (issue 25, item 7)."""
    code, out, err = run(capsys, *argv)
    assert code == 1 and out == "" and err.count("\n") == 1 and err.startswith("gtdyn: error: argument --")
    assert "--help lists the options" in err


def test_simulate_out_as_a_directory_writes_files_named_after_the_robot_inside(capsys, tmp_path):
    """A directory given as --out used to get the hidden files '.csv' and '.png.png' (printed as '.csv, .png')."""
    existing = tmp_path / "existing"
    existing.mkdir()
    for out in (str(existing), str(tmp_path / "new") + os.sep):
        code, printed, err = run(capsys, "simulate", "rr", "--steps", "5", "--out", out)
        folder = out.rstrip(os.sep)
        assert code == 0 and err == ""
        assert printed.splitlines()[-1] == f"wrote {os.path.join(folder, 'rr.csv')}, {os.path.join(folder, 'rr.png')}"
        assert sorted(os.listdir(folder)) == ["rr.csv", "rr.png"]
    with pytest.raises(SystemExit):
        main(["simulate", "--help"])
    assert "a directory" in capsys.readouterr().out


@pytest.mark.parametrize("argv, message", [
    (["solve", "missing.urdf"], "missing.urdf: no such file"),
    (["solve", "--q", "1,2"], "--q: expected 6 values"),
    (["solve", "--q", "a,b,c,d,e,f"], "--q: expected comma-separated numbers"),
    (["solve", "--q", "0,0,nan,0,0,0"], "--q: 'nan' is not a finite number"),
    (["solve", "--ordering", "fastest"], "--ordering: unknown ordering 'fastest'"),
    (["solve", "--problem", "forward", "--ordering", "rnea"], "'rnea' applies to inverse dynamics"),
    (["solve", "rrr", "--problem", "hybrid", "--qdd", "j7=1", "--tau", "j2=0"], "qdd: unknown joints j7"),
    (["solve", "rrr", "--problem", "hybrid", "--qdd", "j1", "--tau", "j2=0,j3=0"], "give joint=value pairs"),
    (["solve", "rrr", "--problem", "hybrid", "--qdd", "j1=1,j1=2", "--tau", "j2=0,j3=0"],
     "--qdd: joint 'j1' is given twice"),
    (["solve", "rrr", "--problem", "inverse", "--tau", "1,2,3"], "--tau: inverse dynamics solves for τ"),
    (["solve", "rrr", "--problem", "forward", "--qdd", "1,2,3"], "--qdd: forward dynamics solves for q̈"),
    (["dag", "rrr", "--problem", "inverse", "--tau", "1,2,3"], "--tau: inverse dynamics solves for τ"),
    (["solve", "four_bar", "--problem", "hybrid"], "four_bar has 1 actuated joint (j1)"),
    (["solve", "--qdd", "1,1,1,1,1,1"], "choose one --problem"),
    (["solve", "--gravity", "0", "0", "nan"], "--gravity: expected three finite numbers"),
    (["bench", "--orderings", "quick"], "--orderings: unknown quick"),
    (["bench", "--repeat", "0"], "--repeat must be at least 1"),
    (["bench", "--threads", "0,2"], "--threads: expected comma-separated thread counts"),
    (["bench", "--threads", "two"], "--threads: expected comma-separated thread counts"),
    (["bench", "--batch", "-1"], "--batch: expected a number of states"),
    (["solve", SOLO, "--base", "floating", "--problem", "inverse", "--base-twist", "1,2,3"],
     "--base-twist: expected 6 values (ωx,ωy,ωz in rad/s, vx,vy,vz in m/s), got 3"),
    (["solve", SOLO, "--base", "floating", "--problem", "inverse", "--base-pose", "0,0,0,1,1,1,1"],
     "--base-pose: the quaternion qx,qy,qz,qw must have unit norm, got norm 2"),
    (["solve", SOLO, "--base", "floating", "--problem", "inverse", "--base-pose", "0,0,0"],
     "--base-pose: expected 7 values x,y,z,qx,qy,qz,qw"),
    (["solve", SOLO, "--base", "floating", "--problem", "forward", "--base-accel", "0,0,0,0,0,0"],
     "--base-accel: forward dynamics solves for the base acceleration"),
    (["solve", SOLO, "--base", "floating", "--base-accel", "0,0,0,0,0,0"], "--base-accel: choose --problem"),
    (["solve", "--base-pose", "0,0,0,0,0,0", "--base-twist", "0,0,0,0,0,1"],
     "--base-pose/--base-twist: puma560 has a fixed base"),
    (["dag", SOLO, "--base-accel", "0,0,0,0,0,0"], "--base-accel: solo has a fixed base"),
    (["solve", "five_bar", "--base", "floating"], "--base: "),
    (["bench", SOLO, "--base", "floating"], "solo has a floating base, which gtdyn bench does not cover"),
    (["simulate", "rr", "--dt", "0"], "--dt: expected a positive time step in seconds, got 0"),
    (["simulate", "rr", "--dt", "nan"], "--dt: expected a positive time step"),
    (["simulate", "rr", "--steps", "0"], "--steps: expected a number of steps, 1 or more, got 0"),
    (["simulate", "rr", "--q0", "1,2,3"], "--q0: expected 2 values (joints j1, j2), got 3"),
    (["simulate", "rr", "--tau", "1,x"], "--tau: expected comma-separated numbers"),
    (["simulate", "rr", "--gravity", "0", "0", "inf"], "--gravity: expected three finite numbers"),
    (["simulate", "rr", "--base", "floating"], "do not determine A0 (link base_link)"),  # a massless floating base
    (["simulate", "rr", "--dt", "0.5", "--steps", "10", "--method", "rk4", "--v0", "1e200,1e200"],
     "overflow double precision at this state"),
    (["simulate", "rr", "--dt", "1e308", "--steps", "3"], "--dt: 3 steps of 1e+308 s end at t = inf"),
    (["simulate", "rr", "--steps", "99999999999999"], "--steps: 99999999999999 steps of 'rr' need"),
    (["simulate", "four_bar", "--tau", "1,1,1,1"], "--tau: joints j2, j3, j4 are passive"),
    (["simulate", "rr", "--out", ""], "--out: expected a path prefix (such as 'simulation') or a directory, got ''"),
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


@pytest.mark.parametrize("error", [ZeroDivisionError("division by zero"), ValueError("not a user error"),
                                   KeyError("k")])
def test_anything_else_is_a_bug_with_its_traceback(capsys, monkeypatch, error):
    def broken(*args, **kwargs):
        raise error

    solve_command = importlib.import_module("gtdyn.cli.solve")
    monkeypatch.setattr(solve_command, "solve_query", broken)  # what `gtdyn solve` solves with (since 3db603f)
    code, out, err = run(capsys, "solve", "rr", "--problem", "inverse")
    assert code == 2 and out == ""
    assert "Traceback (most recent call last)" in err and type(error).__name__ in err
    assert err.splitlines()[-1].startswith("gtdyn: internal error: this is a bug in gtdyn") and "report" in err


def test_help_is_accurate(capsys):
    with pytest.raises(SystemExit):
        main(["--help"])
    text = capsys.readouterr().out
    for word in [".sdf", "--format", *BUNDLED]:
        assert word in text
    with pytest.raises(SystemExit):
        main(["solve", "--help"])
    text = capsys.readouterr().out
    assert "limits" in text and "m/s²" in text and "four_bar" in text
    assert ".sdf" in cli.__doc__ and "--format" in cli.__doc__
    for argv in (["solve"], ["dag"], ["bench"], ["simulate"], ["info"]):
        with pytest.raises(SystemExit) as exit_info:
            main([*argv, "--help"])
        assert exit_info.value.code == 0 and capsys.readouterr().out.startswith(f"usage: gtdyn {argv[0]} ")


def test_entry_points(capsys, monkeypatch):
    """In process: the console script pyproject.toml declares is gtdyn.cli.main; `python -m gtdyn` exits with
    main's status (1 and one line for an error, 0 for --help)."""
    with open(os.path.join(ROOT, "pyproject.toml"), "rb") as f:
        module, name = tomllib.load(f)["project"]["scripts"]["gtdyn"].split(":")
    assert getattr(importlib.import_module(module), name) is main
    for argv, status in ((["solve", "nope.urdf"], 1), (["--help"], 0)):
        monkeypatch.setattr(sys, "argv", ["gtdyn", *argv])
        with pytest.raises(SystemExit) as exit_info:
            runpy.run_module("gtdyn", run_name="__main__", alter_sys=True)
        assert exit_info.value.code == status
    out = capsys.readouterr()
    assert out.err == "gtdyn: error: nope.urdf: no such file\n" and out.out.startswith("usage: gtdyn")


def test_python_dash_m_gtdyn_runs_solve():
    """The one real process: `python -m gtdyn` with no arguments is `gtdyn solve`."""
    out = subprocess.run([sys.executable, "-m", "gtdyn"], capture_output=True, text=True, cwd=ROOT)
    assert out.returncode == 0 and out.stderr == ""
    assert all(f"{p} dynamics of puma560" in out.stdout for p in ("inverse", "forward", "hybrid"))


def test_solve_on_a_loop_whose_every_joint_is_actuated(capsys, tmp_path):
    """An SDF loop without gtdyn:actuated tags has every joint actuated (redundantly): the default state takes
    as many independent joints as the loop leaves free, and the three problems solve (least-norm torques)."""
    from square_four_bar import square_four_bar_sdf

    path = tmp_path / "all_actuated.sdf"
    path.write_text(square_four_bar_sdf(1, False, ("j1", "j2", "j3", "j4")))
    code, out, err = run(capsys, "solve", str(path))
    assert code == 0, err
    assert [line.split()[0] for line in out.splitlines() if " dynamics of " in line] == ["inverse", "forward", "hybrid"]


def test_transmissions_option_reads_mimic_joints_three_ways(capsys):
    """--transmissions: exact (default) couples the Panda's second finger to the first (passive, driven), independent
    frees it with a one-line warning, approximate welds it (8 joints)."""
    panda = erd_path("panda_description/urdf/panda.urdf")
    code, out, err = run(capsys, "solve", panda, "--problem", "forward")
    assert code == 0 and err == "" and "0 at passive panda_finger_joint2" in out
    code, out, err = run(capsys, "info", panda, "--transmissions", "independent")
    assert code == 0 and "with transmissions='independent'" in err and ": 9 joints" in out.splitlines()[0]
    code, out, err = run(capsys, "info", panda, "--transmissions", "approximate")
    assert code == 0 and ": 8 joints" in out.splitlines()[0]


def test_compile_warms_the_cache_and_a_second_run_loads_it(capsys, tmp_path, monkeypatch):
    """``gtdyn compile``, a deployment's warm-up step: the solvers go into the cache the environment names, and
    the next run (here, in this process: a later process loads them the same way) reads them back."""
    monkeypatch.setenv("GTDYN_CACHE_DIR", str(tmp_path / "cache"))
    code, out, err = run(capsys, "compile", "rrr")
    assert code == 0 and err == ""
    lines = out.splitlines()
    assert [line.split(" dynamics")[0] for line in lines[:2]] == ["inverse", "forward"]
    assert all("compiled into the cache" in line for line in lines[:2])
    assert lines[2].startswith(f"cache: {tmp_path / 'cache'}, 2 solvers")
    assert len(list((tmp_path / "cache").glob("*.pkl"))) == 2
    code, out, _ = run(capsys, "compile", "rrr", "--problem", "hybrid", "--qdd-joints", "j1")
    assert code == 0 and "hybrid dynamics of 'rrr'" in out and "3 solvers" in out
    code, out, _ = run(capsys, "compile", "rrr")
    assert code == 0 and out.count("loaded from the cache") == 2
    code, out, _ = run(capsys, "compile", "rrr", "--problem", "forward", "--lanes")  # lanes join the same entry
    assert code == 0 and "compiled into the cache" in out and "3 solvers" in out
    code, out, _ = run(capsys, "compile", "rrr", "--problem", "forward", "--lanes")
    assert code == 0 and "loaded from the cache" in out


@pytest.mark.parametrize("argv, message", [
    (("--problem", "hybrid"), "--problem hybrid needs --qdd-joints"),
    (("--problem", "inverse", "--qdd-joints", "j1"), "--qdd-joints: only hybrid dynamics takes them, not inverse"),
    (("--problem", "forward", "--ordering", "rnea"), "--ordering: 'rnea' applies to inverse dynamics"),
    (("--problem", "hybrid", "--qdd-joints", "j9"), "qdd_joints: unknown joints j9"),
])
def test_compile_refuses_what_it_cannot_compile_in_one_line(capsys, tmp_path, monkeypatch, argv, message):
    monkeypatch.setenv("GTDYN_CACHE_DIR", str(tmp_path / "cache"))
    code, out, err = run(capsys, "compile", "rrr", *argv)
    assert code == 1 and out == "" and err.startswith("gtdyn: error: ") and message in err
    assert len(err.strip().splitlines()) == 1
