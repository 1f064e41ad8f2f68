"""Time: integrating the equations of motion (papers 000 and 004). ``gtdyn.simulate`` is the entry point."""

from gtdyn.simulation.batch import Trajectories, simulate_batch
from gtdyn.simulation.controllers import PDController
from gtdyn.simulation.simulate import METHODS, simulate
from gtdyn.simulation.trajectory import Trajectory

__all__ = ["METHODS", "PDController", "Trajectories", "Trajectory", "simulate", "simulate_batch"]
