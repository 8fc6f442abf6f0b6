"""Load and validate one knowledge pack manifest in the ``nenjo.knowledge.v1`` shape (packages, registries and
module indexes that hold manifests are resolved in ``package.py``).

Everything is checked before anything is returned, so a bad pack never half-loads; every problem is a
``ValidationError`` naming the file, the selector and what to fix.
"""
from __future__ import annotations

import os
import re
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from .. import safe_yaml
from ..errors import AgentContextError, ValidationError

KNOWLEDGE_SCHEMA = "nenjo.knowledge.v1"
# The edge types seed 002 names. The vocabulary is open, like kinds: any other type is stored, traversed and
# shown, and lint warns about it (a typo of a known type is the usual cause); only depends_on drives flash.
EDGE_TYPES = ("part_of", "defines", "governs", "classifies", "references", "depends_on", "extends", "related_to")
EDGE_TYPE_RE = re.compile(r"^[a-z][a-z0-9_]{0,63}\Z")
MAX_DOC_BYTES = 5 * 1024 * 1024
SELECTOR_RE = re.compile(r"^[A-Za-z_][A-Za-z0-9_]*(\.[A-Za-z_][A-Za-z0-9_]*)*\Z")
SLUG_RE = re.compile(r"^[a-z0-9][a-z0-9_-]{0,62}\Z")
PKG_SEGMENT = r"[A-Za-z0-9_][A-Za-z0-9_-]*"
PKG_RE = re.compile(rf"^pkg:{PKG_SEGMENT}\.{PKG_SEGMENT}\.{PKG_SEGMENT}\.{PKG_SEGMENT}\Z")
LIB_RE = re.compile(r"^lib:[a-z0-9][a-z0-9_-]{0,62}\Z")

@dataclass
class RelatedSpec:
    type: str
    target: str
    description: str = ""


@dataclass
class DocSpec:
    selector: str
    source_path: str
    title: str
    summary: str
    kind: str
    tags: list[str]
    related: list[RelatedSpec]
    content: str
    extra: dict[str, Any] = field(default_factory=dict)  # further props (e.g. a context block's schema)


@dataclass
class PackSpec:
    pack: str  # lib:<slug> or pkg:<scope>.<repo>.<package>.<pack>
    slug: str
    name: str
    pack_id: str
    root: Path
    docs: list[DocSpec] = field(default_factory=list)


def slugify(text: str) -> str:
    """Open-vocabulary kinds are slugified: lower case, runs of other characters become '-'."""
    slug = re.sub(r"[^a-z0-9_]+", "-", str(text).strip().lower()).strip("-")
    return slug or "reference"


def check_selector(selector: Any, where: str) -> str:
    if not isinstance(selector, str) or not SELECTOR_RE.match(selector):
        raise ValidationError(
            f"{where}: selector {selector!r} is not valid; use dotted segments like design.agents, each "
            "starting with a letter or '_' and holding only letters, digits and '_'",
            file=where, selector=str(selector))
    return selector


def check_edge_type(edge_type: Any, where: str = "edge type") -> str:
    """An edge type, normalised like a kind but with '_' (``Depends-On`` -> ``depends_on``); any such word is
    accepted, the known ones (``EDGE_TYPES``) keep their meaning."""
    normal = re.sub(r"[^a-z0-9_]+", "_", edge_type.strip().lower()).strip("_") if isinstance(edge_type, str) else ""
    if not EDGE_TYPE_RE.match(normal):
        raise ValidationError(f"{where}: edge type {edge_type!r} is not a word; use letters, digits and '_' "
                              f"(at most 64), starting with a letter, e.g. {', '.join(EDGE_TYPES[:3])}",
                              edge_type=str(edge_type))
    return normal


def check_pack_name(pack: Any, where: str = "pack") -> str:
    if not isinstance(pack, str) or not (LIB_RE.match(pack) or PKG_RE.match(pack)):
        raise ValidationError(
            f"{where}: {pack!r} is not a pack name; use lib:<slug> (lower-case letters, digits, '-', '_') or "
            "pkg:<scope>.<repo>.<package>.<pack>", file=where, pack=str(pack))
    return pack


def selector_from_path(source_path: str) -> str:
    """``docs/design/agents.md`` -> ``design.agents``."""
    path = source_path.replace("\\", "/")
    if path.startswith("docs/"):
        path = path[len("docs/"):]
    if path.endswith(".md"):
        path = path[: -len(".md")]
    return path.replace("/", ".")


def read_yaml(path: Path) -> Any:
    try:
        text = path.read_text(encoding="utf-8")
    except FileNotFoundError as exc:
        raise ValidationError(f"{path}: file not found", file=str(path)) from exc
    except UnicodeDecodeError as exc:
        raise ValidationError(f"{path}: not UTF-8 text ({exc.reason}); save it as UTF-8", file=str(path)) from exc
    except OSError as exc:
        raise ValidationError(f"{path}: cannot read ({exc.strerror})", file=str(path)) from exc
    return safe_yaml.load(text, str(path))


def text_field(value: Any, where: str, name: str, selector: str = "", required: bool = False) -> str:
    if value is None:
        if required:
            raise ValidationError(f"{where}: doc {selector!r} needs a {name}", file=where, selector=selector)
        return ""
    if not isinstance(value, (str, int, float)) or isinstance(value, bool):
        raise ValidationError(f"{where}: doc {selector!r}: {name} must be text, got {type(value).__name__}",
                              file=where, selector=selector)
    return str(value).strip()


def resolve_source(root: Path, source_path: Any, where: str, selector: str, real_root: Path | None = None) -> Path:
    """The real path of a doc file inside ``root`` (``real_root``: ``root.resolve()``, when the caller checks
    many files of one folder)."""
    if not isinstance(source_path, str) or not source_path.strip():
        raise ValidationError(f"{where}: doc {selector!r}: source_path must be a relative path to a .md file",
                              file=where, selector=selector)
    raw = source_path.replace("\\", "/")
    if raw.startswith("/") or re.match(r"^[A-Za-z]:", raw) or os.path.isabs(source_path):
        raise ValidationError(f"{where}: doc {selector!r}: source_path {source_path!r} is absolute; make it "
                              "relative to the pack folder", file=where, selector=selector)
    if ".." in raw.split("/"):
        raise ValidationError(f"{where}: doc {selector!r}: source_path {source_path!r} contains '..'; keep docs "
                              "inside the pack folder", file=where, selector=selector)
    if "\x00" in raw:
        raise ValidationError(f"{where}: doc {selector!r}: source_path contains a NUL byte",
                              file=where, selector=selector)
    path = root / raw
    try:
        real = path.resolve(strict=True)
    except FileNotFoundError as exc:
        raise ValidationError(f"{where}: doc {selector!r}: file {raw} is missing", file=where,
                              selector=selector, source_path=raw) from exc
    except (OSError, RuntimeError) as exc:
        raise ValidationError(f"{where}: doc {selector!r}: cannot open {raw}: {exc}", file=where,
                              selector=selector) from exc
    if not real.is_relative_to(real_root or root.resolve()):
        raise ValidationError(f"{where}: doc {selector!r}: {raw} leads out of the pack folder (a symlink?); "
                              "copy the file into the pack", file=where, selector=selector, source_path=raw)
    if not real.is_file():
        raise ValidationError(f"{where}: doc {selector!r}: {raw} is not a file", file=where, selector=selector)
    return real


def _read_doc(path: Path, where: str, selector: str) -> str:
    size = path.stat().st_size
    if size > MAX_DOC_BYTES:
        raise ValidationError(f"{where}: doc {selector!r}: {path.name} is {size} bytes, over the 5 MB limit; split "
                              "it into several docs", file=where, selector=selector, size=size)
    try:
        return path.read_bytes().decode("utf-8")
    except UnicodeDecodeError as exc:
        raise ValidationError(f"{where}: doc {selector!r}: {path.name} is not UTF-8 ({exc.reason} at byte "
                              f"{exc.start}); save it as UTF-8", file=where, selector=selector) from exc


def parse_related(raw: Any, where: str, selector: str) -> list[RelatedSpec]:
    if raw is None:
        return []
    if not isinstance(raw, list):
        raise ValidationError(f"{where}: doc {selector!r}: related must be a list of {{type, target}}",
                              file=where, selector=selector)
    out: list[RelatedSpec] = []
    for item in raw:
        if not isinstance(item, dict):
            raise ValidationError(f"{where}: doc {selector!r}: each related entry needs type and target",
                                  file=where, selector=selector)
        etype = check_edge_type(item.get("type"), f"{where}: doc {selector!r} related")
        target = check_selector(item.get("target"), f"{where}: doc {selector!r} related target")
        out.append(RelatedSpec(etype, target, text_field(item.get("description"), where, "description", selector)))
    return out


def _parse_tags(raw: Any, where: str, selector: str) -> list[str]:
    if raw is None:
        return []
    if not isinstance(raw, list) or not all(isinstance(t, (str, int, float)) and not isinstance(t, bool)
                                            for t in raw):
        raise ValidationError(f"{where}: doc {selector!r}: tags must be a list of strings like intent:design",
                              file=where, selector=selector)
    tags = [str(t).strip() for t in raw]
    if any(not t or len(t) > 200 for t in tags):
        raise ValidationError(f"{where}: doc {selector!r}: tags must be non-empty and short",
                              file=where, selector=selector)
    return list(dict.fromkeys(tags))


def load_manifest(manifest_path: str | Path, default_pack: str | None = None, data: Any = None) -> PackSpec:
    """Parse and validate one pack manifest and read its docs; a manifest without ``selector`` is the pack
    ``default_pack`` (a package's ``pkg:`` name) or else ``lib:<slug>``. ``data``: the file's YAML, when the
    caller has parsed it already (a 10,000-doc manifest takes seconds to parse)."""
    path = Path(manifest_path)
    try:
        return _load_manifest(path, default_pack, data)
    except AgentContextError:
        raise
    except (RecursionError, OSError, ValueError, TypeError, AttributeError) as exc:
        raise ValidationError(f"{path}: cannot load manifest: {exc}", file=str(path)) from exc


def _load_manifest(path: Path, default_pack: str | None = None, data: Any = None) -> PackSpec:
    where = str(path)
    data = read_yaml(path) if data is None else data
    if not isinstance(data, dict):
        raise ValidationError(f"{where}: a manifest must be a mapping with schema, slug and manifest",
                              file=where)
    if data.get("schema") != KNOWLEDGE_SCHEMA:
        raise ValidationError(f"{where}: unknown schema {data.get('schema')!r}; expected {KNOWLEDGE_SCHEMA}",
                              file=where, schema=str(data.get("schema")))
    slug = data.get("slug")
    if not isinstance(slug, str) or not SLUG_RE.match(slug):
        raise ValidationError(f"{where}: slug {slug!r} must be lower-case letters, digits, '-' or '_'",
                              file=where)
    body = data.get("manifest")
    if not isinstance(body, dict):
        raise ValidationError(f"{where}: missing 'manifest' mapping (name, pack_id, selector, docs)", file=where)
    pack = body.get("selector") or default_pack or f"lib:{slug}"
    check_pack_name(pack, where)
    docs_raw = body.get("docs") or []
    if not isinstance(docs_raw, list):
        raise ValidationError(f"{where}: manifest.docs must be a list", file=where)
    root = path.parent
    spec = PackSpec(pack=pack, slug=slug, name=text_field(body.get("name"), where, "name") or slug,
                    pack_id=text_field(body.get("pack_id"), where, "pack_id") or slug, root=root)
    seen: dict[str, int] = {}
    real_root = root.resolve()
    for index, raw in enumerate(docs_raw):
        if not isinstance(raw, dict):
            raise ValidationError(f"{where}: docs[{index}] must be a mapping", file=where)
        source = raw.get("source_path")
        selector = raw.get("selector")
        if selector is None and isinstance(source, str):
            selector = selector_from_path(source)
        selector = check_selector(selector, f"{where} docs[{index}]")
        if selector in seen:
            raise ValidationError(f"{where}: duplicate selector {selector!r} (docs[{seen[selector]}] and "
                                  f"docs[{index}]); selectors must be unique in a pack", file=where,
                                  selector=selector)
        seen[selector] = index
        doc_path = resolve_source(root, source, where, selector, real_root)
        spec.docs.append(DocSpec(
            selector=selector,
            source_path=source.replace("\\", "/"),
            title=text_field(raw.get("title"), where, "title", selector) or selector,
            summary=text_field(raw.get("summary"), where, "summary", selector),
            kind=slugify(text_field(raw.get("kind"), where, "kind", selector) or "reference"),
            tags=_parse_tags(raw.get("tags"), where, selector),
            related=parse_related(raw.get("related"), where, selector),
            content=_read_doc(doc_path, where, selector),
        ))
    return spec
