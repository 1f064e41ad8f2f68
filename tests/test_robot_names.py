"""Robots by name (issue 20): bundled names, and example-robot-data's robots by file name when that package is
installed, so that a Pinocchio user's ``load_robot("solo12")`` and the README's examples work as printed."""

import os

import pytest
from references import erd_path

import gtdyn


def test_example_robot_data_robots_load_by_file_name():
    for name in ("solo12", "solo12.urdf"):
        robot = gtdyn.load_robot(name, base="floating")
        assert robot.source == erd_path("solo_description/robots/solo12.urdf") and robot.num_dofs == 12
    ur5 = gtdyn.load_robot("ur5_robot")
    assert ur5.source == erd_path("ur_description/urdf/ur5_robot.urdf")
    relative = gtdyn.load_robot("ur_description/urdf/ur5_robot.urdf")  # a path inside its robots folder
    assert relative.source == ur5.source


def test_a_local_file_wins_over_a_robot_of_the_same_name(tmp_path, monkeypatch):
    """A file of that name in the working directory is what the user means."""
    monkeypatch.chdir(tmp_path)
    with open(gtdyn.bundled_path("rr")) as f:
        (tmp_path / "solo12.urdf").write_text(f.read())
    assert gtdyn.load_robot("solo12.urdf").name == "rr" and os.path.samefile(gtdyn.load_robot("solo12.urdf").source,
                                                                              tmp_path / "solo12.urdf")


def test_unknown_and_ambiguous_names_say_what_would_work():
    with pytest.raises(gtdyn.ModelError, match="example-robot-data robot"):
        gtdyn.load_robot("no_such_robot")
    with pytest.raises(gtdyn.ModelError, match="names several example-robot-data files: .*; give one of these paths"):
        gtdyn.load_robot("anymal")  # ANYmal B and C both ship an anymal.urdf
