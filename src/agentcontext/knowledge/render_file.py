"""Rendering a prompt file: plain text as one template, a YAML file (a Nenjo agent or ability) field by field.

A whole ``agent.yaml`` rendered as text put the inlined docs' lines at column 0, so the output no longer parsed.
Here a YAML file is loaded, every string field that holds a ``{{ ... }}`` is rendered on its own (one shared state:
the variables left are reported once, in order), and the result is written back as YAML, multi-line text as
literal blocks: the output parses, and each field equals that field rendered alone.

The file's own context blocks (``imports: {context: [./context/methodology.yml]}``, used as
``{{ context.methodology }}``) render as the installed block when its package is installed (Nenjo names it
``pkg:<scope>.<repo>.<package>.<folder>``, the block's name its selector), else stay for the runtime.
"""
from __future__ import annotations

import re
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Callable

import yaml

from .. import access, safe_yaml
from ..errors import ValidationError
from ..workspace import Workspace
from .packs import PACK, doc_id
from .render import render_many, render_with_variables

YAML_SUFFIXES = (".yaml", ".yml")
NENJO_SCHEMA = re.compile(r"^nenjo\.[a-z_]+\.v\d+$")


@dataclass
class Rendered:
    text: str
    variables: list[str]  # left for the runtime, inlined blocks' included, in order


def render_file(ws: Workspace, text: str, path: Path | None = None, principal: str | None = None,
                strict: bool = False) -> Rendered:
    """``text`` (read from ``path``, or stdin when None) rendered: field by field when it is a YAML file."""
    data = _yaml_document(text, path)
    if data is None:
        rendered, left = render_with_variables(ws, text, principal, strict)
        return Rendered(rendered, left)
    context = own_blocks(ws, data, path, principal) if path is not None else {}
    fields: list[str] = []
    _walk(data, lambda s: fields.append(s) or s)
    texts, left = render_many(ws, fields, principal, strict, context)
    done = iter(texts)
    result = _walk(data, lambda s: next(done))
    return Rendered(dump(result, explicit_start=text.lstrip().startswith("---")), left)


def _yaml_document(text: str, path: Path | None) -> Any:
    """The loaded document when ``text`` is a YAML file to render field by field, else None (a plain template).
    A file named .yaml/.yml is YAML; text from stdin only when it is a Nenjo resource (``schema: nenjo.*``)."""
    named = path is not None and path.suffix.lower() in YAML_SUFFIXES
    if not named and not re.match(r"\s*(---\s*\n)?\s*schema:\s*nenjo\.", text):
        return None
    data = safe_yaml.load(text, str(path or "<stdin>"))
    if isinstance(data, (dict, list)):
        return data
    if named:
        raise ValidationError(f"{path}: a YAML prompt file holds a mapping or a list, not a {type(data).__name__}; "
                              "render a plain template from a .md or .txt file", file=str(path))
    return None


def _walk(value: Any, each: Callable[[str], str]) -> Any:
    """``value`` with ``each`` applied to every string that holds a template reference (keys untouched)."""
    if isinstance(value, dict):
        return {k: _walk(v, each) for k, v in value.items()}
    if isinstance(value, list):
        return [_walk(v, each) for v in value]
    if isinstance(value, str) and "{{" in value:
        return each(value)
    return value


def own_blocks(ws: Workspace, data: Any, path: Path, principal: str | None) -> dict[str, tuple[str, str]]:
    """The file's imported context blocks that are installed: name (and slug) -> (pack, selector)."""
    imports = data.get("imports") if isinstance(data, dict) else None
    listed = imports.get("context") if isinstance(imports, dict) else None
    if not isinstance(listed, list):
        return {}
    installed = [name for name, _ in ws.store.list_records(PACK)]
    found: dict[str, tuple[str, str]] = {}
    for ref in listed:
        if not isinstance(ref, str):
            continue
        block_path = (path.parent / ref).resolve()
        if not block_path.is_file():
            continue  # not there: {{ context.<name> }} stays for the runtime, as for a block not installed
        block = safe_yaml.load(block_path.read_text(encoding="utf-8"), str(block_path))
        if not isinstance(block, dict):
            continue
        manifest = block.get("manifest")
        name = str((manifest if isinstance(manifest, dict) else {}).get("name") or block_path.stem)
        where = _installed_block(ws, block_path, name, installed, principal)
        if where is None:
            continue
        for alias in {name, str(block.get("slug") or name)}:
            found.setdefault(alias, where)
    return found


def _installed_block(ws: Workspace, block_path: Path, name: str, installed: list[str],
                     principal: str | None) -> tuple[str, str] | None:
    """(pack, selector) of the installed block ``name`` read from ``block_path``, found by its package and folder."""
    root = next((p for p in block_path.parents if (p / "package.yaml").is_file()), None)
    if root is None:
        return None
    package = safe_yaml.load((root / "package.yaml").read_text(encoding="utf-8"), str(root / "package.yaml"))
    package_name = str(package.get("name") or root.name) if isinstance(package, dict) else root.name
    rel = block_path.relative_to(root)
    if len(rel.parts) < 2:
        return None
    selector = ".".join([*rel.parts[1:-1], name])
    suffix = f".{package_name}.{rel.parts[0]}"
    for pack in installed:
        if (pack.startswith("pkg:") and pack.endswith(suffix) and pack.count(".") == 3
                and access.can_see(ws, principal, pack) and ws.store.get_node(doc_id(pack, selector)) is not None):
            return pack, selector
    return None


class _Dumper(safe_yaml._NoAliasDumper):  # type: ignore[misc, valid-type]
    """Multi-line text as literal blocks (``|-``), as prompt files are written."""


def _text(dumper: yaml.SafeDumper, value: str) -> Any:
    style = "|" if "\n" in value else None
    return dumper.represent_scalar("tag:yaml.org,2002:str", value, style=style)


_Dumper.add_representer(str, _text)


def dump(data: Any, explicit_start: bool = False) -> str:
    return yaml.dump(data, Dumper=_Dumper, sort_keys=False, allow_unicode=True, default_flow_style=False,
                     width=1 << 20, explicit_start=explicit_start)
