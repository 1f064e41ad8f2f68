"""Typed errors and warnings raised by gtdyn. Every message names the file, element, argument or variable at
fault. Anything else that escapes a gtdyn call is a bug."""


class ModelError(ValueError):
    """A robot description (URDF/SDF file or model data) is malformed or describes an unusable robot."""


class ModelWarning(UserWarning):
    """A robot description loads, but something in it is suspect (e.g. a physically invalid inertia)."""


class ArgumentError(ValueError):
    """A call argument is malformed (wrong type, length or value) or asks for something the robot cannot do.
    The message starts with the argument's name."""


class LoopClosureError(ValueError):
    """A state (q, q̇ or q̈) does not close a kinematic loop; ``gtdyn.close_loops`` computes one that does."""


class IndeterminateSystemError(RuntimeError):
    """The dynamics equations do not determine every unknown (e.g. a massless link in forward dynamics), or
    determine them so poorly that no digit of the answer can be trusted.

    ``free_variables`` lists the human labels of the variables the equations leave free; ``condition`` is the
    estimated condition number of the (column-scaled) equations, ``inf`` if they are exactly singular.
    """

    def __init__(self, message: str, free_variables: list[str], condition: float = float("inf")):
        super().__init__(message)
        self.free_variables = list(free_variables)
        self.condition = condition

    def __reduce__(self):  # whole across processes (a pool's or a cluster's worker raises it, the caller reads it)
        return type(self), (self.args[0], self.free_variables, self.condition)


class BudgetError(MemoryError):
    """A solve that would need more memory than the budget (``gtdyn.set_memory_budget``), refused before it
    starts: the message says what it would need, and which orderings fit."""


class IllConditionedWarning(UserWarning):
    """A dynamics solve succeeded, but its equations are so ill-conditioned that different orderings may
    disagree in the digits the warning names; ``r.condition`` holds the estimate."""


class ConvergenceWarning(UserWarning):
    """An iterative estimate (``gtdyn.trajectory_inverse_dynamics``) stopped at its iteration limit before it
    converged: the answer is the last iterate, not the optimum."""


class JointLimitWarning(UserWarning):
    """A simulated trajectory left a joint's position limits: gtdyn does not enforce limits (no limit model), so
    the motion past them is what the joint would do without its stops."""


class CacheWarning(UserWarning):
    """The compile cache's folder or a file in it can be written by someone else, or belongs to someone else:
    gtdyn neither loads from it (a cached solver is a pickle, and loading one runs code) nor stores to it, and
    compiles in memory instead."""


GTDYN_ERRORS = (ModelError, ArgumentError, LoopClosureError, IndeterminateSystemError, BudgetError)
