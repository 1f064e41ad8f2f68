"""Figure housekeeping shared by the drawings (speed only: nothing here changes a picture)."""

from __future__ import annotations

import contextlib


def tight_layout(fig) -> None:
    """``fig.tight_layout()``, done once, now. Matplotlib leaves a placeholder layout engine behind, and with
    any layout engine ``savefig`` draws the whole figure once more, without rendering, before drawing it for
    real: for a DAG of hundreds of arrows that is a third of the time. Without the placeholder the picture is
    the same, pixel for pixel."""
    fig.tight_layout()
    fig.set_layout_engine(None)


@contextlib.contextmanager
def fixed_limits(ax):
    """Within this block, patches added to ``ax`` do not grow its data limits. networkx adds every arrow with
    ``ax.add_patch``, which computes the arrow's curved, shortened path once more only for that; drawings
    that set their limits themselves afterwards lose nothing by skipping it. (If matplotlib stops calling
    ``Axes._update_patch_limits``, this does nothing and the drawing is as before.)"""
    ax._update_patch_limits = lambda patch: None
    try:
        yield
    finally:
        del ax._update_patch_limits
