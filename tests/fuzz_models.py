"""Seeded mutation fuzzing of robot files: mutants of the bundled URDF/SDF models, and what gtdyn makes of them.

``mutant(index, seed)`` rebuilds file ``index`` of a run exactly (base model, mutations, text), so a failure
is reproduced from two numbers. ``run_file(path)`` loads a file and, when it loads, runs inverse and then
forward dynamics at a fixed small state (on closed loops, the state ``gtdyn.close_loops`` finds from the
actuated joints; on trees with passive joints, whose q̈ only the dynamics can say, forward dynamics of
torques that are zero on them comes first), and classifies the outcome:

* ``ok`` / ``ok, warned <Warning>``: loaded, and both dynamics gave finite results;
* ``<stage>: <ErrorType>``: one of gtdyn's typed errors (``gtdyn.errors.GTDYN_ERRORS``), or a ``ValueError``
  from ``close_loops``, at stage ``load``, ``close_loops``, ``inverse`` or ``forward``;
* ``BUG <stage>: ...``: anything else: an untyped exception, a non-finite result, or a warning other than
  ``ModelWarning``/``IllConditionedWarning``;
* ``BUG probe: ...``: a file that solves, asked the edge cases of issue 25 (``probe_edges``), answered other
  than with the typed error each must give.

Used by ``tests/test_fuzz.py`` (a short run in the suite) and ``tests/verify_fuzz.py`` (a long run).
"""

from __future__ import annotations

import copy
import os
import random
import re
import tempfile
import time
import traceback
import warnings
from collections import Counter
from dataclasses import dataclass, field

import numpy as np
from lxml import etree

import gtdyn
from gtdyn.errors import GTDYN_ERRORS, IllConditionedWarning, ModelWarning

BASES = ("puma560", "rrr", "rr", "four_bar", "five_bar", "six_bar")
EXPECTED_WARNINGS = (ModelWarning, IllConditionedWarning)
IRRELEVANT_WARNINGS = (DeprecationWarning, PendingDeprecationWarning, ResourceWarning)  # libraries' own business

# Replacements for one number, or for a whole attribute / element text.
WEIRD_NUMBERS = ("0", "-0", "1e-300", "5e-324", "1e300", "1e308", "-1e308", "1e309", "nan", "NaN", "inf", "-inf",
                 "1e6", "1e7", "-1", "-1e3", "1e15", "1e16", "1e12", "1e13", "2.5e5", "1e-12", "+1", ".5", "1.",
                 "1_0", "0x10", "abc", "", " ", "9.9e4", "1e5", "-1e5", "1e-150", "1e-200")
WEIRD_TEXTS = ("", " ", "0 0", "0 0 0 0", "1 2 3 4 5 6 7", "0 0 0", "0 0 1", "1e200 0 0", "1 0 0 1e300",
               "nan 0 0", "1,0,0", "x y z", "0 0 0 0 0 0", "0 0 0 0 0 0 1", "1 2 3 4 5", "true", "false", "maybe")
JOINT_TYPES = ("revolute", "continuous", "prismatic", "fixed", "floating", "planar", "ball", "universal", "")
ENTITY_DTD = '<!DOCTYPE {root} [<!ENTITY xxe "{value}">]>\n'


@dataclass
class Mutant:
    index: int
    base: str
    suffix: str
    mutations: list[str] = field(default_factory=list)
    text: str = ""


def _base_texts() -> dict[str, tuple[str, str]]:
    out = {}
    for name in BASES:
        path = gtdyn.bundled_path(name)
        with open(path, encoding="utf-8") as f:
            out[name] = (f.read(), os.path.splitext(path)[1])
    return out


_BASE_TEXTS: dict[str, tuple[str, str]] = {}


def base_text(name: str) -> tuple[str, str]:
    if not _BASE_TEXTS:
        _BASE_TEXTS.update(_base_texts())
    return _BASE_TEXTS[name]


# -- tree mutations --------------------------------------------------------------------------------------


def _elements(root) -> list:
    return [e for e in root.iter() if isinstance(e.tag, str)]


def _number_slots(root) -> list[tuple]:
    """(element, attribute or None) for every attribute and element text that holds numbers."""
    slots = []
    for e in _elements(root):
        for key, value in e.attrib.items():
            if re.search(r"[0-9]", value):
                slots.append((e, key))
        if e.text and re.search(r"[0-9]", e.text) and len(e) == 0:
            slots.append((e, None))
    return slots


def _get(e, key):
    return e.get(key) if key else (e.text or "")


def _set(e, key, value):
    if key:
        e.set(key, value)
    else:
        e.text = value


def m_delete_element(root, rng):
    e = rng.choice(_elements(root)[1:])
    e.getparent().remove(e)
    return f"delete <{e.tag}> (line {e.sourceline})"


def m_duplicate_element(root, rng):
    e = rng.choice(_elements(root)[1:])
    e.addnext(copy.deepcopy(e))
    return f"duplicate <{e.tag}> (line {e.sourceline})"


def m_move_element(root, rng):
    elements = _elements(root)[1:]
    e, target = rng.choice(elements), rng.choice(_elements(root))
    if e in target.iterancestors() or e is target:
        return "move (skipped)"
    e.getparent().remove(e)
    target.append(e)
    return f"move <{e.tag}> into <{target.tag}>"


def m_delete_attribute(root, rng):
    candidates = [(e, k) for e in _elements(root) for k in e.attrib]
    e, k = rng.choice(candidates)
    del e.attrib[k]
    return f"delete <{e.tag} {k}>"


def m_replace_number(root, rng):
    """Replace one number inside an attribute or element text."""
    e, key = rng.choice(_number_slots(root))
    words = _get(e, key).split()
    if not words:
        return "replace number (skipped)"
    i = rng.randrange(len(words))
    words[i] = rng.choice(WEIRD_NUMBERS)
    _set(e, key, " ".join(words))
    return f"<{e.tag} {key or 'text'}> = {' '.join(words)!r}"


def m_perturb_number(root, rng):
    """A plausible but different value for one number (most such files load, so the dynamics run)."""
    e, key = rng.choice(_number_slots(root))
    words = _get(e, key).split()
    if not words:
        return "perturb number (skipped)"
    i = rng.randrange(len(words))
    try:
        value = float(words[i])
    except ValueError:
        return "perturb number (skipped)"
    factor = rng.choice((0.0, -1.0, 0.5, 2.0, 10.0, 0.1, 1e3, 1e-3, 1e5, 1e-5))
    words[i] = repr(value * factor if rng.random() < 0.7 else rng.uniform(-2, 2))
    _set(e, key, " ".join(words))
    return f"<{e.tag} {key or 'text'}> = {' '.join(words)!r}"


def m_replace_value(root, rng):
    """Replace a whole numeric attribute or text."""
    e, key = rng.choice(_number_slots(root))
    value = rng.choice(WEIRD_TEXTS + WEIRD_NUMBERS)
    _set(e, key, value)
    return f"<{e.tag} {key or 'text'}> = {value!r}"


def m_extra_or_missing_value(root, rng):
    e, key = rng.choice(_number_slots(root))
    words = _get(e, key).split()
    if rng.random() < 0.5 or len(words) < 2:
        words.append(rng.choice(("0", "1", "1e300", "nan")))
    else:
        words.pop(rng.randrange(len(words)))
    _set(e, key, " ".join(words))
    return f"<{e.tag} {key or 'text'}> = {' '.join(words)!r}"


def m_scale_numbers(root, rng):
    """Scale every number of one kind of element by a huge or tiny factor (the whole model, consistently)."""
    factor = rng.choice((1e3, 1e4, 1e5, 1e7, 1e12, 1e20, 1e-5, 1e-20, 1e-150, 1e-200, -1.0, 0.0))
    tag = rng.choice(("mass", "inertia", "origin", "pose", "ixx", "izz", "xyz"))
    for e, key in _number_slots(root):
        if e.tag != tag:
            continue
        try:
            values = [float(w) * factor for w in _get(e, key).split()]
        except ValueError:
            continue
        _set(e, key, " ".join(repr(v) for v in values))
    return f"scale every <{tag}> by {factor:g}"


def m_joint_type(root, rng):
    joints = [e for e in _elements(root) if e.tag == "joint"]
    e = rng.choice(joints)
    kind = rng.choice(JOINT_TYPES)
    e.set("type", kind)
    return f"joint '{e.get('name')}' type = {kind!r}"


def m_freeze_joints(root, rng):
    """Make every joint fixed, or all but one, down to robots with one or no degree of freedom."""
    joints = [e for e in _elements(root) if e.tag == "joint"]
    keep = rng.choice(joints) if rng.random() < 0.5 else None
    for e in joints:
        if e is not keep:
            e.set("type", "fixed")
    return "every joint fixed" + (f" but '{keep.get('name')}'" if keep is not None else "")


def _link_refs(joint):
    """(element, attribute or None) naming the parent and the child link of a URDF or SDF joint."""
    refs = []
    for role in ("parent", "child"):
        node = joint.find(role)
        if node is not None:
            refs.append((node, "link" if node.get("link") is not None else None))
    return refs


def m_swap_parent_child(root, rng):
    joints = [e for e in _elements(root) if e.tag == "joint" and len(_link_refs(e)) == 2]
    e = rng.choice(joints)
    (p, pk), (c, ck) = _link_refs(e)
    a, b = _get(p, pk), _get(c, ck)
    _set(p, pk, b)
    _set(c, ck, a)
    return f"joint '{e.get('name')}' swap parent/child"


def m_rename_link(root, rng):
    links = [e for e in _elements(root) if e.tag == "link" and e.get("name")]
    e = rng.choice(links)
    old = e.get("name")
    new = rng.choice(("renamed", "world", "__model__", "", old + " ", "l1", "base", "base_link", "j1"))
    e.set("name", new)
    if rng.random() < 0.5:  # also the references to it
        for joint in _elements(root):
            if joint.tag == "joint":
                for node, key in _link_refs(joint):
                    if _get(node, key).strip() == old:
                        _set(node, key, new)
    return f"rename link {old!r} -> {new!r}"


def m_reference(root, rng):
    """Point a joint's parent/child, or a relative_to / attached_to / expressed_in, at some other name."""
    names = [e.get("name") for e in _elements(root) if e.get("name")] + ["world", "__model__", "ghost", ""]
    slots = [(node, key) for j in _elements(root) if j.tag == "joint" for node, key in _link_refs(j)]
    slots += [(e, k) for e in _elements(root) for k in ("relative_to", "attached_to", "expressed_in") if e.get(k)]
    e, key = rng.choice(slots)
    value = rng.choice(names)
    _set(e, key, value)
    return f"<{e.tag} {key or 'text'}> = {value!r}"


def m_add_mimic(root, rng):
    joints = [e for e in _elements(root) if e.tag == "joint"]
    e = rng.choice(joints)
    etree.SubElement(e, "mimic", joint=rng.choice(joints).get("name") or "x", multiplier=rng.choice(("2", "x", "")))
    return f"joint '{e.get('name')}' gets a <mimic>"


def m_add_inertial(root, rng):
    links = [e for e in _elements(root) if e.tag == "link"]
    e = rng.choice(links)
    if root.tag == "robot":
        inertial = etree.SubElement(e, "inertial")
        etree.SubElement(inertial, "mass", value=rng.choice(("0", "1", "1e-300", "")))
        if rng.random() < 0.7:
            etree.SubElement(inertial, "inertia", ixx="1", ixy="0", ixz="0", iyy="1", iyz="0",
                             izz=rng.choice(("1", "0", "-1")))
    else:
        inertial = etree.SubElement(e, "inertial")
        etree.SubElement(inertial, "mass").text = rng.choice(("0", "1", "1e-300", ""))
    return f"link '{e.get('name')}' gets another <inertial>"


def m_actuation(root, rng):
    marks = [e for e in _elements(root) if etree.QName(e).localname == "actuated"]
    if not marks:
        return "actuation (skipped)"
    e = rng.choice(marks)
    e.text = rng.choice(("true", "false", "false", "1", "0", "maybe", ""))
    return f"{e.getparent().get('name')} actuated = {e.text!r}"


def m_version(root, rng):
    if root.tag != "sdf":
        return "version (skipped)"
    value = rng.choice(("1.6", "1.5", "1.9", "2.0", "1", "x", "1.7.1", ""))
    root.set("version", value)
    return f"sdf version = {value!r}"


def m_rotation_format(root, rng):
    poses = [e for e in _elements(root) if e.tag == "pose"]
    if not poses:
        return "rotation format (skipped)"
    e = rng.choice(poses)
    if rng.random() < 0.5:
        e.set("rotation_format", rng.choice(("quat_xyzw", "euler_rpy", "quat_wxyz")))
    else:
        e.set("degrees", rng.choice(("true", "false", "yes")))
    return f"<pose {dict(e.attrib)}>"


def m_sdf_frames(root, rng):
    """SDFormat frame semantics the bundled files do not use: a <frame>, poses relative to it, expressed_in."""
    model = root.find("model")
    if model is None:
        return "frames (skipped)"
    names = [e.get("name") for e in model if e.get("name")] + ["__model__", "f0", "ghost"]
    frame = etree.SubElement(model, "frame", name=rng.choice(("f0", "f0", "f1", names[0])))
    if rng.random() < 0.8:
        frame.set("attached_to", rng.choice(names))
    pose = etree.SubElement(frame, "pose")
    pose.text = rng.choice(("0.1 0 0.2 0 0.3 0", "", "0 0 0 0 0 0", "1e5 0 0 0 0 0"))
    if rng.random() < 0.5:
        pose.set("relative_to", rng.choice(names))
    targets = [e for e in _elements(model) if e.tag == "pose"]
    if targets and rng.random() < 0.6:
        rng.choice(targets).set("relative_to", frame.get("name"))
    axes = [e for e in _elements(model) if e.tag == "xyz" and e.getparent().tag == "axis"]
    if axes and rng.random() < 0.5:
        rng.choice(axes).set("expressed_in", rng.choice(names))
    return f"add <frame name={frame.get('name')!r} attached_to={frame.get('attached_to')!r}>"


TREE_MUTATIONS = (  # (mutation, weight)
    (m_perturb_number, 12), (m_replace_number, 5), (m_replace_value, 4), (m_extra_or_missing_value, 3),
    (m_scale_numbers, 3), (m_delete_element, 3), (m_duplicate_element, 2), (m_move_element, 1),
    (m_delete_attribute, 2), (m_joint_type, 2), (m_freeze_joints, 1), (m_swap_parent_child, 2),
    (m_rename_link, 2), (m_reference, 2), (m_add_mimic, 1), (m_add_inertial, 1), (m_actuation, 2),
    (m_version, 1), (m_rotation_format, 1), (m_sdf_frames, 2),
)


# -- text mutations --------------------------------------------------------------------------------------


def t_truncate(text, rng):
    cut = rng.randrange(len(text))
    return text[:cut], f"truncate at {cut}"


def t_entity(text, rng):
    """An entity reference inside some text or attribute, declared in a DTD or not."""
    spots = [m.end() for m in re.finditer(r">[A-Za-z_]|=\"[A-Za-z_]", text)]
    if not spots:
        return text, "entity (skipped)"
    at = rng.choice(spots)
    text = text[:at] + "&xxe;" + text[at:]
    if rng.random() < 0.7:
        root = "robot" if "<robot" in text else "sdf"
        dtd = ENTITY_DTD.format(root=root, value=rng.choice(("", "x", "1")))
        declaration = re.match(r"<\?xml[^>]*\?>\s*", text)
        start = declaration.end() if declaration else 0
        text = text[:start] + dtd + text[start:]
    return text, f"entity &xxe; at {at}"


def t_undeclared_prefix(text, rng):
    """Give a random start tag an undeclared namespace prefix, or add a xacro element."""
    tags = [m for m in re.finditer(r"<([A-Za-z_][\w-]*)([\s/>])", text)]
    if not tags or rng.random() < 0.4:
        at = text.rfind("</")
        return text[:at] + '<xacro:property name="x" value="1"/>' + text[at:], "add <xacro:property>"
    m = rng.choice(tags[1:] or tags)
    tag = m.group(1)
    end_tag = f"</{tag}>"
    text = text[:m.start()] + f"<xacro:{tag}{m.group(2)}" + text[m.end():]
    close = text.find(end_tag, m.start())
    if close >= 0:
        text = text[:close] + f"</xacro:{tag}>" + text[close + len(end_tag):]
    return text, f"prefix <{tag}> with xacro:"


def t_garbage(text, rng):
    at = rng.randrange(len(text))
    junk = rng.choice(("<", ">", "&", "\x00", "]]>", "<!--", "é", "\ufeff", "<?pi x?>", "<![CDATA[x]]>"))
    return text[:at] + junk + text[at:], f"insert {junk!r} at {at}"


TEXT_MUTATIONS = ((t_truncate, 1), (t_entity, 2), (t_undeclared_prefix, 2), (t_garbage, 1))


def _weighted(rng, table):
    functions, weights = zip(*table)
    return rng.choices(functions, weights)[0]


def mutant(index: int, seed: int = 0) -> Mutant:
    """File ``index`` of the run with ``seed``: a bundled model with one to three mutations."""
    rng = random.Random(seed * 1_000_003 + index)
    base = BASES[index % len(BASES)]
    text, suffix = base_text(base)
    result = Mutant(index, base, suffix)
    root = etree.fromstring(text.encode("utf-8"))
    for _ in range(rng.choice((1, 1, 1, 2, 2, 3))):
        try:
            result.mutations.append(_weighted(rng, TREE_MUTATIONS)(root, rng))
        except (IndexError, ValueError):  # nothing of that kind left to mutate
            result.mutations.append("(no-op)")
    text = etree.tostring(root, xml_declaration=True, encoding="utf-8").decode("utf-8")
    if rng.random() < 0.12:
        text, what = _weighted(rng, TEXT_MUTATIONS)(text, rng)
        result.mutations.append(what)
    result.text = text
    return result


# -- running one file ------------------------------------------------------------------------------------


@dataclass
class Outcome:
    label: str  # the outcome class
    detail: str = ""  # the message, or the traceback of a bug
    seconds: float = 0.0

    @property
    def is_bug(self) -> bool:
        return self.label.startswith("BUG")


PATTERN = np.array([0.1, -0.2, 0.3, -0.15, 0.25, -0.05, 0.2])


def _state(robot):
    """A fixed small state; on closed loops, the one close_loops finds from the actuated joints' values."""
    n = robot.num_dofs
    q, v, qdd = (np.resize(PATTERN * scale, n) for scale in (1.0, 0.5, 2.0))
    if not robot.loops:
        return q, v, qdd
    names = [j.name for j in robot.joints if j.actuated and not j.closes_loop] or [robot.joints[0].name]
    index = {name: i for i, name in enumerate(robot.joint_names)}
    state = gtdyn.close_loops(robot, q={j: q[index[j]] for j in names}, v={j: v[index[j]] for j in names},
                              qdd={j: qdd[index[j]] for j in names})
    return state.q, state.v, state.qdd


PROBE_SECONDS = 10.0  # every public entry point returns or raises in bounded time


def probe_edges(robot, q, v, qdd) -> tuple[str, str] | None:
    """The edge cases of issue 25 asked of a robot that solves: an angle of 1e300 rad (an ArgumentError naming q,
    not a blame on the masses), a loop closed from such an angle (an ArgumentError at once, not a walk for
    ever), a solve over a tiny memory budget (a BudgetError before it starts). (what, detail) of the first that
    answers otherwise, or None."""
    from gtdyn.linear import budget

    if robot.num_dofs == 0:
        return None
    probes = []
    revolute = [k for k, j in enumerate(robot.joints) if j.type == "revolute"]
    if revolute:
        big = np.array(q, float)
        big[revolute[0]] = 1e300
        probes.append(("huge angle", gtdyn.ArgumentError, lambda: gtdyn.inverse_dynamics(robot, big, v, qdd)))
    driving = [j.name for j in robot.joints if j.type == "revolute" and not j.closes_loop]
    if robot.loops and driving:
        probes.append(("loop closed from a huge angle", gtdyn.ArgumentError,
                       lambda: gtdyn.close_loops(robot, {driving[0]: 1e300})))

    def over_budget():
        saved = list(budget._budget)
        gtdyn.set_memory_budget(16)  # bytes: nothing fits
        try:
            gtdyn.forward_dynamics(robot, q, v, np.zeros(robot.num_dofs))
        finally:
            budget._budget[:] = saved

    probes.append(("over the memory budget", gtdyn.BudgetError, over_budget))
    for what, expected, call in probes:
        started = time.perf_counter()
        try:
            call()
            answered = "an answer"
        except expected:
            answered = None
        except Exception as e:  # noqa: BLE001 -- what it raised instead is the finding
            answered = f"{type(e).__name__}: {e}"
        took = time.perf_counter() - started
        if answered or took > PROBE_SECONDS:
            return what, f"expected {expected.__name__} within {PROBE_SECONDS:g} s, got {answered or 'it'} " \
                         f"after {took:.2g} s"
    return None


class _NonFinite(Exception):
    pass


def _finite(values, stage: str, name: str) -> np.ndarray:
    values = np.asarray(values, dtype=float)
    if not np.all(np.isfinite(values)):
        raise _NonFinite(stage, name, f"{name} = {values}")
    return values


def run_file(path: str) -> Outcome:
    """Load ``path`` and run inverse then forward dynamics; classify what happens."""
    start = time.perf_counter()
    stage = "load"
    warned: list[str] = []
    try:
        with warnings.catch_warnings(record=True) as caught:
            warnings.simplefilter("always")
            robot = gtdyn.load_robot(path)
            stage = "close_loops"
            q, v, qdd = _state(robot)
            passive = np.array([not j.actuated for j in robot.joints], dtype=bool)
            if passive.any() and not robot.loops:
                # On a tree, a passive joint's q̈ is whatever the dynamics make it: forward dynamics of torques
                # that are zero on passive joints first, then inverse dynamics of the q̈ it finds.
                stage = "forward"
                tau = np.where(passive, 0.0, np.resize(PATTERN[::-1], robot.num_dofs))
                qdd = _finite(gtdyn.forward_dynamics(robot, q, v, tau).qdd, "forward", "qdd")
            stage = "inverse"
            tau = _finite(gtdyn.inverse_dynamics(robot, q, v, qdd).tau, "inverse", "tau")
            stage = "forward"
            _finite(gtdyn.forward_dynamics(robot, q, v, tau).qdd, "forward", "qdd")
            stage = "probe"
            failed = probe_edges(robot, q, v, qdd)
            if failed:
                return Outcome(f"BUG probe: {failed[0]}", failed[1], time.perf_counter() - start)
        for w in caught:
            if issubclass(w.category, IRRELEVANT_WARNINGS):
                continue
            if not issubclass(w.category, EXPECTED_WARNINGS):
                return Outcome(f"BUG warned {w.category.__name__}", f"{w.filename}:{w.lineno}: {w.message}",
                               time.perf_counter() - start)
            warned.append(w.category.__name__)
    except _NonFinite as e:
        return Outcome(f"BUG {e.args[0]}: non-finite {e.args[1]}", str(e.args[2]), time.perf_counter() - start)
    except GTDYN_ERRORS as e:
        return Outcome(f"{stage}: {type(e).__name__}", str(e), time.perf_counter() - start)
    except ValueError as e:
        if stage == "close_loops":  # a state that does not close the loop: expected on mutated loops
            return Outcome(f"{stage}: {type(e).__name__}", str(e), time.perf_counter() - start)
        return Outcome(f"BUG {stage}: {type(e).__name__}", traceback.format_exc(), time.perf_counter() - start)
    except Exception as e:  # noqa: BLE001 -- classifying every escape is the point
        return Outcome(f"BUG {stage}: {type(e).__name__}", traceback.format_exc(), time.perf_counter() - start)
    label = "ok" if not warned else "ok, warned " + "+".join(sorted(set(warned)))
    return Outcome(label, "", time.perf_counter() - start)


@dataclass
class Report:
    counts: Counter = field(default_factory=Counter)
    bugs: list = field(default_factory=list)  # (Mutant, Outcome, saved path)
    slowest: tuple = (0.0, None)
    seconds: float = 0.0

    def table(self) -> str:
        width = max([len(label) for label in self.counts] + [len("outcome")])
        total = sum(self.counts.values())
        lines = [f"{'outcome':<{width}}  {'files':>7}  {'share':>6}", "-" * (width + 17)]
        for label, count in sorted(self.counts.items(), key=lambda item: (item[0].startswith("BUG"), -item[1])):
            lines.append(f"{label:<{width}}  {count:>7}  {100 * count / total:>5.1f}%")
        lines.append("-" * (width + 17))
        lines.append(f"{'total':<{width}}  {total:>7}  ({self.seconds:.1f} s, slowest file {self.slowest[0]:.2f} s:"
                     f" #{self.slowest[1]})")
        return "\n".join(lines)


def run(count: int, seed: int = 0, workdir: str | None = None, progress=None, keep_bugs: int = 50,
        indices: range | None = None) -> Report:
    """Generate and run ``count`` mutants (or those of ``indices``); bug files are saved (up to ``keep_bugs``)
    for inspection."""
    workdir = workdir or tempfile.mkdtemp(prefix="gtdyn-fuzz-")
    report = Report()
    start = time.perf_counter()
    for index in indices if indices is not None else range(count):
        m = mutant(index, seed)
        path = os.path.join(workdir, f"fuzz{m.suffix}")
        with open(path, "w", encoding="utf-8") as f:
            f.write(m.text)
        outcome = run_file(path)
        report.counts[outcome.label] += 1
        if outcome.seconds > report.slowest[0]:
            report.slowest = (outcome.seconds, index)
        if outcome.is_bug and len(report.bugs) < keep_bugs:
            saved = os.path.join(workdir, f"bug_{seed}_{index}_{m.base}{m.suffix}")
            with open(saved, "w", encoding="utf-8") as f:
                f.write(m.text)
            report.bugs.append((m, outcome, saved))
        if progress is not None:
            progress(index + 1, report)
    report.seconds = time.perf_counter() - start
    return report


def _run_share(args) -> Report:
    count, seed, workdir, share, workers = args
    os.makedirs(workdir, exist_ok=True)
    return run(count, seed, workdir, indices=range(share, count, workers))


def run_parallel(count: int, seed: int = 0, workdir: str | None = None, workers: int = 2) -> Report:
    """``run`` split over ``workers`` processes (file k goes to worker k mod workers); the same files and
    outcomes as ``run``, merged into one report."""
    from concurrent.futures import ProcessPoolExecutor

    workdir = workdir or tempfile.mkdtemp(prefix="gtdyn-fuzz-")
    start = time.perf_counter()
    with ProcessPoolExecutor(max_workers=workers) as pool:
        shares = list(pool.map(_run_share, [(count, seed, os.path.join(workdir, f"worker{k}"), k, workers)
                                            for k in range(workers)]))
    report = Report()
    for share in shares:
        report.counts.update(share.counts)
        report.bugs += share.bugs
        report.slowest = max(report.slowest, share.slowest, key=lambda t: t[0])
    report.seconds = time.perf_counter() - start
    return report
