"""Strict, safe XML reading shared by the URDF and SDF readers."""

from __future__ import annotations

import os

from lxml import etree

from gtdyn.errors import ModelError


def parse_xml(path: str) -> etree._Element:
    """Parse ``path`` strictly: no network access, no external entities, no recovery from errors."""
    if not os.path.isfile(path):
        raise ModelError(f"{path}: no such file")
    parser = etree.XMLParser(resolve_entities=False, no_network=True, load_dtd=False, huge_tree=False,
                             remove_comments=True, recover=False)
    try:
        return etree.parse(path, parser=parser).getroot()
    except etree.XMLSyntaxError as e:
        raise ModelError(f"{path}: malformed XML: {e}") from None
    except OSError as e:
        raise ModelError(f"{path}: cannot read: {e}") from None
