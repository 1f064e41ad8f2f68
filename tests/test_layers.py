"""The shape of the package (issue 10): imports only point down the layers, and the heavy libraries are
imported only by the layers that draw (matplotlib), analyse (networkx) or compare (Pinocchio), so that
``import gtdyn`` stays light."""

import ast
import pathlib
import subprocess
import sys

import gtdyn

PACKAGE = pathlib.Path(gtdyn.__file__).parent

# Bottom to top. A module may import only from units below its own (or from its own folder). Folders are
# units; top-level modules are units of their own. See the README's "How the code is organised".
ORDER = ["gtdyn.errors", "gtdyn.progress", "gtdyn.spatial", "gtdyn.keys", "gtdyn.equations", "gtdyn.model",
         "gtdyn.problem", "gtdyn.arguments", "gtdyn.io", "gtdyn.factors", "gtdyn.linear", "gtdyn.kinematics",
         "gtdyn.orderings", "gtdyn.analysis", "gtdyn.dynamics", "gtdyn.compiled", "gtdyn.simulation",
         "gtdyn.estimation", "gtdyn.planning", "gtdyn.distributed",
         "gtdyn.plot", "gtdyn.bench", "gtdyn", "gtdyn.cli", "gtdyn.__main__"]
HEAVY = {"matplotlib": ("gtdyn.plot",), "networkx": ("gtdyn.analysis", "gtdyn.plot"), "pinocchio": ("gtdyn.bench",)}


def module_name(path: pathlib.Path) -> str:
    parts = path.relative_to(PACKAGE.parent).with_suffix("").parts
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


def unit(name: str) -> str:
    """The layer unit of a module: its folder's package, or itself for a top-level module."""
    parts = name.split(".")
    if len(parts) >= 2 and (PACKAGE / parts[1]).is_dir():
        return ".".join(parts[:2])
    return name if len(parts) <= 2 else ".".join(parts[:2])


def runtime_imports(path: pathlib.Path) -> list[tuple[str, int]]:
    """(module, line) of every import, except those under ``if TYPE_CHECKING:`` (type hints only)."""
    tree = ast.parse(path.read_text())
    skipped = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.If) and "TYPE_CHECKING" in ast.unparse(node.test):
            skipped.update(id(n) for n in ast.walk(node))
    out = []
    for node in ast.walk(tree):
        if id(node) in skipped:
            continue
        if isinstance(node, ast.Import):
            out += [(alias.name, node.lineno) for alias in node.names]
        elif isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
            if node.module == "gtdyn":  # `from gtdyn import keys` imports the submodule
                out += [(f"gtdyn.{alias.name}" if (PACKAGE / alias.name).exists()
                         or (PACKAGE / f"{alias.name}.py").exists() else "gtdyn", node.lineno) for alias in node.names]
            else:
                out.append((node.module, node.lineno))
    return out


def modules():
    return sorted(p for p in PACKAGE.rglob("*.py") if "__pycache__" not in p.parts)


def test_every_module_has_a_layer():
    assert sorted({unit(module_name(p)) for p in modules()} - set(ORDER)) == []


def test_imports_point_down():
    wrong = []
    for path in modules():
        me = module_name(path)
        for imported, line in runtime_imports(path):
            if imported != "gtdyn" and not imported.startswith("gtdyn."):
                continue
            theirs = unit(imported)
            if theirs != unit(me) and ORDER.index(theirs) > ORDER.index(unit(me)):
                wrong.append(f"{me}:{line} imports {imported} (layer {theirs} is above {unit(me)})")
    assert wrong == []


def test_heavy_libraries_only_where_used():
    wrong = []
    for path in modules():
        me = module_name(path)
        for imported, line in runtime_imports(path):
            top = imported.split(".")[0]
            if top in HEAVY and not me.startswith(HEAVY[top]):
                wrong.append(f"{me}:{line} imports {imported}")
    assert wrong == []


def test_import_gtdyn_is_light():
    """Importing gtdyn, reading a URDF and an SDF robot and solving their dynamics load none of them."""
    code = ("import sys, gtdyn; r = gtdyn.load_robot('five_bar'); s = gtdyn.close_loops(r, {'j1': 0.1, 'j2': 0.2}); "
            "gtdyn.inverse_dynamics(r, s.q, s.v, s.qdd); p = gtdyn.load_robot('puma560'); "
            "gtdyn.forward_dynamics(p, [0.1] * 6, [0.0] * 6, [1.0] * 6); "
            "print(sorted(m for m in ('matplotlib', 'networkx', 'pinocchio', 'scipy', 'trimesh') if m in sys.modules))")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout
    assert out.strip() == "[]"


def test_modules_stay_small():
    """No module over 400 lines (issues 10 and 19): a bigger one is doing two jobs."""
    assert [f"{module_name(p)}: {n}" for p in modules() if (n := len(p.read_text().splitlines())) > 400] == []


def test_one_input_boundary():
    """Arguments are checked at the boundary (``gtdyn.arguments``, and the CLI's own options), not all over the
    package (issue 19: 130 raise sites before; at most 40 elsewhere, each a check only its module can make)."""
    elsewhere = [f"{module_name(p)}:{k}" for p in modules() if not module_name(p).startswith(("gtdyn.arguments",
                                                                                             "gtdyn.cli"))
                 for k, line in enumerate(p.read_text().splitlines(), 1) if "raise ArgumentError" in line]
    assert len(elsewhere) <= 40, elsewhere


def test_solve_is_no_hub():
    """The entry points of the reference path stay small (issue 19): verdicts, the reference path and argument
    checks live beside them."""
    assert len((PACKAGE / "dynamics" / "solve.py").read_text().splitlines()) <= 250


def test_every_package_is_installed():
    """pyproject.toml lists packages by name: a new folder left out would be missing from a non-editable install."""
    import tomllib

    listed = set(tomllib.loads((PACKAGE.parent / "pyproject.toml").read_text())["tool"]["setuptools"]["packages"])
    folders = {".".join(p.parent.relative_to(PACKAGE.parent).parts) for p in PACKAGE.rglob("__init__.py")}
    assert folders - listed == set()
