"""Compiled elimination plans: the symbolic elimination of a graph in an ordering done once, its numbers
replayed as machine code (paper 001's future work). ``gtdyn.compile`` is the entry point."""

from gtdyn.compiled.build import compile
from gtdyn.compiled.solver import CompiledSolver

__all__ = ["CompiledSolver", "compile"]
