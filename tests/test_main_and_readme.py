"""The README's main job and its API example run as written."""

import os
import re

import numpy as np
import pytest
from references import rel_err

import gtdyn
from gtdyn.bench.pinocchio import PinocchioModel
from gtdyn.cli import main
from gtdyn.io.load import documented_state

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


def test_main_job_prints_three_problems_by_joint_name(capsys):
    assert main(["solve"]) == 0
    out = capsys.readouterr().out
    assert out.count(" dynamics of puma560") == 3
    for name in gtdyn.load_robot("puma560").joint_names:
        assert out.count(f"  {name} ") == 3
    # the printed inverse torques are the solver's, at the documented state
    puma = gtdyn.load_robot("puma560")
    tau = gtdyn.inverse_dynamics(puma, *documented_state(puma)).tau
    first_table = out.split("forward dynamics")[0]
    printed = [float(line.split()[-1]) for line in first_table.splitlines()
               if line.strip().startswith("joint") and "[" not in line and "dynamics" not in line]
    np.testing.assert_allclose(printed, tau, atol=5e-7)


def test_main_job_on_other_robots_and_bad_input(capsys):
    assert main(["solve", "rrr"]) == 0
    assert main(["solve", os.path.join(ROOT, "urdf", "rr.urdf")]) == 0
    assert main(["solve", "no/such/robot.urdf"]) == 1
    err = capsys.readouterr().err
    assert err.strip() == "gtdyn: error: no/such/robot.urdf: no such file"


def readme_blocks():
    with open(os.path.join(ROOT, "README.md")) as f:
        return re.findall(r"```python\n(.*?)```", f.read(), flags=re.S)


def readme_block(marker: str) -> str:
    """The README's one python example containing ``marker`` (by content, not position: a new example elsewhere
    in the README must not make these tests run another one)."""
    found = [block for block in readme_blocks() if marker in block]
    assert len(found) == 1, f"{len(found)} README python examples contain {marker!r}"
    return found[0]


def test_readme_api_example_runs():
    namespace = {}
    exec(compile(readme_block("qdd=np.ones(6)"), "README.md", "exec"), namespace)
    robot, q, v, r, f, h = (namespace[name] for name in ("robot", "q", "v", "r", "f", "h"))
    ref = PinocchioModel(robot.source, robot)
    assert rel_err(r.tau, ref.rnea(q, v, np.ones(6))) < 1e-9
    np.testing.assert_allclose(f.qdd, np.ones(6), atol=1e-9)
    # the hybrid solve with a 5 N push down on the flange: Pinocchio's three passes with the same wrench
    qdd, tau = ref.hybrid(q, v, {"joint1": 1.0}, dict(zip(robot.joint_names[1:], r.tau[1:])),
                          external_wrenches={"flange": [0, 0, 0, 0, 0, -5.0]})
    assert h.problem == "hybrid" and rel_err(h.qdd, qdd) < 1e-9 and rel_err(h.tau, tau) < 1e-9
    assert rel_err(h.qdd, np.ones(6)) > 1e-3  # the push changed the motion: the wrench was applied


def test_readme_dag_example_runs(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    namespace = {}
    exec(compile(readme_block("draw_elimination_steps"), "README.md", "exec"), namespace)
    for name in ("aba.png", "aba.dot", "steps.png"):
        assert (tmp_path / name).stat().st_size > 0


def test_readme_compiled_example_runs(tmp_path, monkeypatch, capsys):
    monkeypatch.setenv("GTDYN_CACHE_DIR", str(tmp_path))
    namespace = {}
    exec(compile(readme_block("solver = gtdyn.compile("), "README.md", "exec"), namespace)
    robot, solver, Q, QDD = (namespace[name] for name in ("robot", "solver", "Q", "QDD"))
    ref = PinocchioModel(robot.source, robot)
    assert rel_err(namespace["qdd"], ref.aba(np.zeros(6), np.zeros(6), np.ones(6))) < 1e-9
    assert max(rel_err(QDD[k], ref.aba(Q[k], np.zeros(6), np.ones(6))) for k in range(0, 1000, 97)) < 1e-9
    assert "def solve(ws):" in capsys.readouterr().out


def test_readme_compiled_wrench_example_runs(tmp_path, monkeypatch):
    """2 kg held at the Panda's hand: the bare arm's torques minus Jᵀ of the weight (J checked against Pinocchio)."""
    monkeypatch.setenv("GTDYN_CACHE_DIR", str(tmp_path))
    namespace = {}
    exec(compile(readme_block("hold = gtdyn.compile("), "README.md", "exec"), namespace)
    panda, q, zero = (namespace[name] for name in ("panda", "q", "zero"))
    weight = np.array([0, 0, 0, 0, 0, -2 * 9.81])
    J = gtdyn.frame_jacobian(panda, q, "panda_hand", reference="world_aligned")
    bare = gtdyn.inverse_dynamics(panda, q, zero, zero).tau
    assert rel_err(namespace["tau"], bare - J.T @ weight) < 1e-12


def test_readme_loop_example_runs(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    namespace = {}
    exec(compile(readme_block("gtdyn.close_loops("), "README.md", "exec"), namespace)
    np.testing.assert_allclose(namespace["qdd"], namespace["state"].qdd, atol=1e-9)
    assert (tmp_path / "five_bar.png").stat().st_size > 0


def test_readme_floating_base_example_runs():
    """The example names the Solo-12 file as a user would have it; here it is example-robot-data's copy. Still,
    the base holds up the robot's weight (total mass from Pinocchio) and the free robot falls."""
    from references import erd_path

    from gtdyn.bench.pinocchio import FreeFlyerPinocchio

    path = erd_path("solo_description/robots/solo12.urdf")
    namespace = {}
    exec(compile(readme_block('"solo12.urdf"'), "README.md", "exec"), namespace)  # verbatim: the robot by name
    r, f, robot = namespace["r"], namespace["f"], namespace["robot"]
    assert robot.source == path
    ref = FreeFlyerPinocchio(path, robot)
    weight = ref.pin.computeTotalMass(ref.model) * 9.81
    assert rel_err(r.base_wrench[3:], [0.0, 0.0, weight]) < 1e-9
    accel, _ = ref.aba(np.zeros(12), np.zeros(12), np.zeros(12))
    assert rel_err(f.base_accel, accel) < 1e-9 and f.base_accel[5] < 0


def test_readme_contact_example_runs():
    """After the floating-base example: standing on four feet carries the weight with least-norm forces, and
    lifting a foot is Pinocchio's constrained dynamics on the other three."""
    from references import erd_path

    from gtdyn.bench.pinocchio import FreeFlyerPinocchio, PinocchioContacts

    path = erd_path("solo_description/robots/solo12.urdf")
    namespace = {}
    exec(compile(readme_block('"solo12.urdf"'), "README.md", "exec"), namespace)
    exec(compile(readme_block("gtdyn.Contact("), "README.md", "exec"), namespace)
    stand, lift, robot = namespace["stand"], namespace["lift"], namespace["robot"]
    ref = FreeFlyerPinocchio(path, robot)
    weight = ref.pin.computeTotalMass(ref.model) * 9.81
    assert stand.least_norm == ("c1", "c2", "c3", "c4")
    assert rel_err(sum(c.world[3:] for c in stand.contact_wrenches), [0.0, 0.0, weight]) < 1e-9
    want = np.concatenate(
        PinocchioContacts(ref, ["FR_FOOT", "HL_FOOT", "HR_FOOT"])(np.zeros(12), np.zeros(12), stand.tau))
    got = np.concatenate([lift.base_accel, lift.qdd, *[c.local[3:] for c in lift.contact_wrenches]])
    assert rel_err(got, want) < 1e-9


def test_readme_simulation_example_runs():
    """The variational run of the 2R arm against its hand-derived equations integrated by solve_ivp: second
    order at 1 ms leaves ~1e-5 rad (tests/test_simulation.py measures 1.5e-5 with a torque)."""
    from scipy.integrate import solve_ivp
    from test_analytic_2r import hand_derived_tau

    namespace = {}
    exec(compile(readme_block("run.energy[-1] - run.energy[0]"), "README.md", "exec"), namespace)
    run = namespace["run"]

    def rhs(_, x):
        bias, M, _ = hand_derived_tau(x[:2], x[2:], np.zeros(2))
        return np.concatenate([x[2:], np.linalg.solve(M, -bias)])

    start = np.concatenate([run.q[0], run.v[0]])  # the example's q0 and v0
    want = solve_ivp(rhs, (0.0, 2.0), start, method="DOP853", rtol=1e-13, atol=1e-13).y[:2, -1]
    assert np.max(np.abs(run.q[-1] - want)) < 1e-4
    assert abs(run.energy[-1] - run.energy[0]) < 1e-3


def test_readme_controller_example_runs():
    """The PD example tracks its reference (to 0.03 rad, where the same start without torque drifts 1 rad away),
    and each of the batch's runs is ``simulate`` from its row, bit for bit."""
    namespace = {}
    exec(compile(readme_block("gtdyn.PDController("), "README.md", "exec"), namespace)
    puma, run, runs, pd, q_ref, v_ref, starts = (namespace[name] for name in ("puma", "run", "runs", "pd", "q_ref",
                                                                             "v_ref", "starts"))
    free = gtdyn.simulate(puma, np.zeros(6), v_ref[0], dt=1e-3, steps=1000, gravity=(0, 0, 0))
    assert np.max(np.abs(run.q - q_ref)) < 0.03 and np.max(np.abs(free.q - q_ref)) > 0.9
    assert runs.q.shape == (8, 1001, 6)
    alone = gtdyn.simulate(puma, starts[5], np.zeros(6), tau=pd, dt=1e-3, steps=1000, gravity=(0, 0, 0))
    assert np.array_equal(runs.q[5], alone.q) and np.array_equal(runs[5].tau, alone.tau)


@pytest.mark.parametrize("marker", ["gtdyn.frame_placement(", "M = gtdyn.mass_matrix(", "panda.locked("])
def test_readme_quantity_examples_run_verbatim(marker, tmp_path, monkeypatch):
    """The frames, whole-body quantities and locking examples, exactly as printed (their own asserts check J v = V,
    the compiled mass matrix and T = ½ vᵀ M v; test_frames.py, test_quantities.py and test_locking.py check the
    numbers against Pinocchio)."""
    monkeypatch.chdir(tmp_path)
    exec(compile(readme_block(marker), "README.md", "exec"), {})


def test_readme_derivatives_example_runs(tmp_path, monkeypatch):
    """The derivatives example as printed (its own assert: ∂q̈/∂τ = M⁻¹), and its ∂q̈/∂q against Pinocchio."""
    monkeypatch.setenv("GTDYN_CACHE_DIR", str(tmp_path))
    namespace = {}
    exec(compile(readme_block("aba.derivatives("), "README.md", "exec"), namespace)
    robot, q, v, tau = (namespace[name] for name in ("robot", "q", "v", "tau"))
    ref = PinocchioModel(robot.source, robot)
    dq, dv, _ = ref.aba_derivatives(q, v, tau)
    assert rel_err(namespace["dq"], dq) < 1e-9 and rel_err(namespace["dv"], dv) < 1e-9
    assert namespace["many"].dq.shape == (100, 6, 6)


@pytest.mark.heavy
def test_readme_jump_example_runs():
    """The quadruped jump as printed (~15 s): converged, off the ground in flight, no force there; the checks
    against Pinocchio are tests/test_planning_contacts.py's."""
    namespace = {}
    exec(compile(readme_block("contacts={foot: [(0, 8), (13, 21)]"), "README.md", "exec"), namespace)
    jump, T = namespace["jump"], namespace["T_stand"]
    assert jump.converged and jump.base_pose[10, 2, 3] > T[2, 3] + 0.02
    assert not np.any(jump.contact_forces["FL_foot"][8:13])
