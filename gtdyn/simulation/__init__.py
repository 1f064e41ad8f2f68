"""Time: integrating the equations of motion (papers 000 and 004). ``gtdyn.simulate`` is the entry point."""

from gtdyn.simulation.simulate import METHODS, simulate
from gtdyn.simulation.trajectory import Trajectory

__all__ = ["METHODS", "Trajectory", "simulate"]
