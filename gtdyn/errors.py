"""Typed errors raised by gtdyn. Every message names the file, element, argument or variable at fault."""


class ModelError(ValueError):
    """A robot description (URDF/SDF file or model data) is malformed or describes an unusable robot."""


class ModelWarning(UserWarning):
    """A robot description loads, but something in it is suspect (e.g. a physically invalid inertia)."""


class IndeterminateSystemError(RuntimeError):
    """The dynamics equations do not determine every unknown (e.g. a massless link in forward dynamics).

    ``free_variables`` lists the human labels of the variables the equations leave free.
    """

    def __init__(self, message: str, free_variables: list[str]):
        super().__init__(message)
        self.free_variables = list(free_variables)
