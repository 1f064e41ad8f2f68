"""Strict, safe XML reading shared by the URDF and SDF readers, and the checks of every number they read.

Messages name the file, the element and its line, as ``path:line: joint 'j2' <axis xyz> ...``.
"""

from __future__ import annotations

import math
import os
import re
import warnings

import numpy as np
from lxml import etree

from gtdyn.errors import ModelError, ModelWarning
from gtdyn.model.limits import check_magnitude

_UNDECLARED_PREFIX = "NS_ERR_UNDEFINED_NAMESPACE"
# A decimal number as XML Schema writes a double (no hex, digit separators or non-ASCII digits, which Python's
# float() would take); inf and nan are recognised only to be refused as non-finite.
_NUMBER = re.compile(r"[+-]?([0-9]+(\.[0-9]*)?|\.[0-9]+)([eE][+-]?[0-9]+)?")
_NON_FINITE = re.compile(r"[+-]?(inf|infinity|nan)", re.IGNORECASE)
_UNDECLARED_NAMESPACE = "urn:gtdyn:undeclared-prefix:"


def at(path: str, element=None) -> str:
    """``path:line`` for an element that has a source line, else ``path``: the start of every message."""
    line = getattr(element, "sourceline", None)
    return f"{path}:{line}" if line else str(path)


def parse_xml(path: str, read_elements: dict[str, set[str]] | None = None) -> etree._Element:
    """Parse ``path`` strictly: no network access, no DTD, no entities, no recovery from malformed XML.

    Undeclared namespace prefixes (``<xacro:property>`` in a file that never declares ``xacro``), which ROS
    tools accept, are the one exception: the prefixed elements get a placeholder namespace and one
    ``ModelWarning`` names the prefixes, unless such an element is one the reader needs. ``read_elements``
    maps a (plain) parent tag to the child tags the reader reads under it.
    """
    if not os.path.isfile(path):
        raise ModelError(f"{path}: no such file")
    try:
        with open(path, "rb") as f:
            text = f.read()
    except OSError as e:
        raise ModelError(f"{path}: cannot read: {e}") from None
    root, undeclared = _parse(text, path)
    _refuse_dtd_and_entities(root, text, path)
    prefixes = _declare_prefixes(root, path, read_elements or {}) if undeclared else []
    if prefixes:
        named = ", ".join(f"'{prefix}'" for prefix in prefixes)
        warnings.warn(f"{path}: the namespace prefix{'es' if len(prefixes) > 1 else ''} {named} "
                      f"{'are' if len(prefixes) > 1 else 'is'} used without being declared; gtdyn ignores the "
                      "elements and attributes that carry them (e.g. unexpanded xacro)", ModelWarning, stacklevel=4)
    return root


def _parse(text: bytes, path: str):
    """The root element, and whether the document uses undeclared namespace prefixes (its only fault then)."""
    for recover in (False, True):
        parser = _parser(recover)
        try:
            root = etree.fromstring(text, parser=parser, base_url=None)
        except etree.XMLSyntaxError as e:
            root, error = None, e
        except ValueError as e:  # e.g. an encoding declaration lxml cannot honour
            raise ModelError(f"{path}: malformed XML: {e}") from None
        if root is not None and not recover:
            return root, False
        # this parse's own errors (an exception's log holds earlier parses' too), not libxml2's warnings
        errors = [entry for entry in parser.error_log if entry.level >= etree.ErrorLevels.ERROR]
        if not errors or any(entry.type_name != _UNDECLARED_PREFIX for entry in errors):
            raise ModelError(_first_error(errors, error if root is None else None, path))
        if root is not None:  # well-formed but for undeclared prefixes, which libxml2 keeps in the names
            return root, True
    raise ModelError(f"{path}: malformed XML: no root element")


def _parser(recover: bool) -> etree.XMLParser:
    return etree.XMLParser(resolve_entities=False, no_network=True, load_dtd=False, huge_tree=False,
                           remove_comments=True, remove_pis=True, recover=recover)


def _first_error(errors: list, error: etree.XMLSyntaxError | None, path: str) -> str:
    """``path:line: malformed XML: message (column c)`` for the first error that is not an undeclared prefix."""
    entries = [entry for entry in errors if entry.type_name != _UNDECLARED_PREFIX]
    if entries:
        entry = entries[0]
        return f"{path}:{entry.line}: malformed XML: {entry.message.strip()} (column {entry.column})"
    return f"{path}: malformed XML: {error or 'no root element'}"


def _declare_prefixes(root, path: str, read_elements: dict[str, set[str]]) -> list[str]:
    """Give every element named ``prefix:name`` a placeholder namespace; refuse one that the reader needs."""
    prefixes = set()
    for element in root.iter():
        if not isinstance(element.tag, str):
            continue
        for name in element.attrib:
            if not name.startswith("{") and ":" in name:
                prefixes.add(name.split(":", 1)[0])
        if element.tag.startswith("{") or ":" not in element.tag:
            continue
        prefix, local = element.tag.split(":", 1)
        parent = element.getparent()
        parent_tag = parent.tag if parent is not None else None
        if element is root or (isinstance(parent_tag, str) and local in read_elements.get(parent_tag, ())):
            raise ModelError(f"{at(path, element)}: <{element.tag}> uses the undeclared namespace prefix '{prefix}', "
                             f"but gtdyn needs this element; declare the namespace or drop the prefix")
        prefixes.add(prefix)
        try:
            element.tag = f"{{{_UNDECLARED_NAMESPACE}{prefix}}}{local}"
        except ValueError:  # not a name with one prefix, e.g. <a:b:c>
            raise ModelError(f"{at(path, element)}: <{element.tag}> is not a valid element name") from None
    return sorted(prefixes)


def _refuse_dtd_and_entities(root, text: bytes, path: str) -> None:
    """Robot files need no DTD; one could define entities that silently change names and numbers."""
    docinfo = root.getroottree().docinfo
    if docinfo.doctype or docinfo.internalDTD is not None or docinfo.externalDTD is not None:
        index = text.find(b"<!DOCTYPE")
        line = text.count(b"\n", 0, index) + 1 if index >= 0 else None
        where = f"{path}:{line}" if line else path
        raise ModelError(f"{where}: the file has a <!DOCTYPE> declaration; gtdyn reads no DTDs or entity "
                         "definitions in robot files")
    for entity in root.iter(etree.Entity):
        raise ModelError(f"{at(path, entity.getparent())}: the entity reference {entity.text} in "
                         f"<{entity.getparent().tag}> is not allowed; write the text it stands for")


# -- numbers ---------------------------------------------------------------------------------------------


def numbers(text: str | None, path: str, element, what: str, count: int | tuple[int, ...], layout: str,
            bound: float | None = None, quantity: str = "") -> list[float]:
    """The whitespace-separated numbers in ``text``: exactly ``count`` of them (or one of several counts),
    all finite, and at most ``bound`` in magnitude. ``what`` names the element (and attribute) read."""
    where = at(path, element)
    shown = " ".join((text or "").split())
    words = shown.split()
    if not all(_NUMBER.fullmatch(word) or _NON_FINITE.fullmatch(word) for word in words):
        raise ModelError(f"{where}: {what} has '{shown}', which is not a list of numbers")
    values = [float(word) for word in words]
    counts = (count,) if isinstance(count, int) else tuple(count)
    if len(values) not in counts:
        expected = " or ".join(str(c) for c in counts)
        raise ModelError(f"{where}: {what} has {len(values)} numbers; expected {expected} ({layout}), in '{shown}'")
    if not all(math.isfinite(v) for v in values):
        raise ModelError(f"{where}: {what} has a non-finite number in '{shown}'")
    if bound is not None:
        check_magnitude(values, bound, quantity, where, what)
    return values


def unit_vector(values) -> np.ndarray | None:
    """``values`` scaled to unit length without overflow or underflow; None for the zero vector."""
    vector = np.asarray(values, dtype=float)
    scale = float(np.max(np.abs(vector))) if vector.size else 0.0
    if not scale > 0 or not math.isfinite(scale):
        return None
    vector = vector / scale
    return vector / np.linalg.norm(vector)


def element_text(element, path: str, what: str) -> str:
    """The text of an element that holds a value; ModelError if it also holds elements, whose text would be
    silently lost."""
    if len(element):
        raise ModelError(f"{at(path, element)}: {what} contains a <{element[0].tag}> element; expected only text")
    return element.text or ""


def only_child(parent, tag: str, path: str, owner: str):
    """The one child element ``tag`` of ``parent`` (None if absent); ModelError if it appears twice."""
    found = parent.findall(tag)
    if len(found) > 1:
        lines = ", ".join(str(element.sourceline) for element in found)
        raise ModelError(f"{at(path, found[1])}: {owner} has {len(found)} <{tag}> elements (lines {lines}); "
                         "gtdyn needs exactly one")
    return found[0] if found else None

