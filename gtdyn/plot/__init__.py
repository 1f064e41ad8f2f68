"""Every picture gtdyn draws, and the only place matplotlib is imported: elimination DAGs and steps
(``dag``), factor graphs (``factor_graph``), mechanisms (``mechanism``), trajectories (``trajectory``), planned
trajectories (``plan``), benchmark charts (``bench``).
matplotlib and networkx are imported only when something is drawn, so ``import gtdyn`` stays light."""

from importlib import import_module as _import_module

_HOMES = {"draw_dag": "dag", "draw_elimination_steps": "dag", "draw_factor_graph": "factor_graph",
          "draw_mechanism": "mechanism", "draw_trajectory": "trajectory", "draw_plan": "plan", "bar_chart": "bench",
          "scaling_plot": "bench"}
_MODULES = ("bench", "dag", "factor_graph", "figure", "mechanism", "plan", "trajectory")
__all__ = sorted(_HOMES)


def __getattr__(name: str):  # PEP 562: load a drawing module on first use
    if name in _HOMES:
        return getattr(_import_module(f"gtdyn.plot.{_HOMES[name]}"), name)
    if name in _MODULES:  # gtdyn.plot.trajectory and the like, as help(gtdyn.plot) lists them
        return _import_module(f"gtdyn.plot.{name}")
    raise AttributeError(f"module 'gtdyn.plot' has no attribute '{name}'")


def __dir__() -> list[str]:
    return sorted([*__all__, *_MODULES])
