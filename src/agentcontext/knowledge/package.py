"""Which packs a folder holds: a knowledge pack, a Nenjo package, or a Nenjo registry of packages.

Resolution follows Nenjo's package layout (see the Nenjo packages repository README):

- a **registry** (``packages.yaml``, ``nenjo.registry.v1``) lists packages by name;
- a **package** (``package.yaml``, ``nenjo.package.v1``) lists root modules: manifest files, ``file#resource``
  selectors into bundles, or folders (``agents/``), which must hold an explicit ``index.yml``/``index.yaml``
  (``nenjo.module_index.v1``); a folder is never imported by listing its files;
- each module's schema says what it is. Two kinds are knowledge and become packs:
  ``nenjo.knowledge.v1`` (a knowledge pack; without its own ``selector`` a package names it
  ``pkg:<scope>.<repo>.<package>.<slug>``) and ``nenjo.context_block.v1`` (a prompt block: the blocks of one
  top folder become one pack ``pkg:<scope>.<repo>.<package>.<folder>`` whose docs are the blocks, so
  ``{{ pkg.nenjo_ai.packages.context.tools.host_tools }}`` renders the block ``host_tools``). Agents,
  abilities, commands, MCP servers and the other runtime resources are run by a Nenjo worker, not read as
  knowledge: they are refused with a message naming them, or skipped and reported with ``skip_unsupported``.

Nenjo takes ``scope`` and ``repo`` from where a package was installed from (the GitHub owner and repository);
a folder only says so in its git remote, so pass them unless the folder is such a clone.
"""
from __future__ import annotations

import re
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from ..errors import AgentContextError, ValidationError
from .manifest import (KNOWLEDGE_SCHEMA, PKG_SEGMENT, DocSpec, PackSpec, check_pack_name, check_selector,
                       load_manifest, read_yaml, resolve_source, text_field)

REGISTRY_SCHEMA = "nenjo.registry.v1"
PACKAGE_SCHEMA = "nenjo.package.v1"
INDEX_SCHEMA = "nenjo.module_index.v1"
BUNDLE_SCHEMA = "nenjo.modules.v1"
CONTEXT_SCHEMA = "nenjo.context_block.v1"
CONTEXT_KIND = "context_block"
RUNTIME = {"nenjo.agent.v1": "an agent", "nenjo.ability.v1": "an ability", "nenjo.command.v1": "a slash command",
           "nenjo.mcp_server.v1": "an MCP server", "nenjo.domain.v1": "a domain", "nenjo.routine.v1": "a routine",
           "nenjo.council.v1": "a council", "nenjo.script_tool.v1": "a script tool"}
_SEGMENT = re.compile(rf"^{PKG_SEGMENT}$")
_REMOTE = re.compile(r"[:/]([A-Za-z0-9_.-]+)/([A-Za-z0-9_.-]+?)(?:\.git)?/?$")


@dataclass
class Loaded:
    """The packs a folder holds, and the modules that are not knowledge (when asked to skip them)."""

    packs: list[PackSpec] = field(default_factory=list)
    skipped: list[dict[str, str]] = field(default_factory=list)


@dataclass
class _Package:
    name: str
    root: Path
    scope: str | None
    repo: str | None
    skip_unsupported: bool
    loaded: Loaded
    blocks: dict[str, list[DocSpec]] = field(default_factory=dict)  # top folder -> its context blocks
    seen: set[Path] = field(default_factory=set)


def load_folder(folder: str | Path, scope: str | None = None, repo: str | None = None,
                skip_unsupported: bool = False) -> list[PackSpec]:
    """The packs in a folder (registry, package, pack folder or manifest file), fully validated."""
    return load_packages(folder, scope, repo, skip_unsupported).packs


def load_packages(folder: str | Path, scope: str | None = None, repo: str | None = None,
                  skip_unsupported: bool = False) -> Loaded:
    path = Path(folder)
    try:
        loaded = _load(path, scope, repo, skip_unsupported)
    except AgentContextError:
        raise
    except (RecursionError, OSError, ValueError, TypeError, AttributeError) as exc:
        raise ValidationError(f"{path}: cannot load: {exc}", file=str(path)) from exc
    names = [p.pack for p in loaded.packs]
    dupes = sorted({n for n in names if names.count(n) > 1})
    if dupes:
        raise ValidationError(f"{path}: two modules declare the same pack {', '.join(dupes)}", file=str(path),
                              packs=dupes)
    if not loaded.packs:
        kinds = ", ".join(f"{s['module']} ({s['schema']})" for s in loaded.skipped)
        raise ValidationError(f"{path}: nothing here is knowledge (a nenjo.knowledge.v1 pack or "
                              f"nenjo.context_block.v1 blocks); skipped: {kinds}", file=str(path))
    return loaded


def _load(path: Path, scope: str | None, repo: str | None, skip: bool) -> Loaded:
    if path.is_file():
        data = read_yaml(path)
        schema = data.get("schema") if isinstance(data, dict) else None
        if schema == REGISTRY_SCHEMA:
            return _registry(path, data, scope, repo, skip)
        if schema == PACKAGE_SCHEMA:
            return _package(path, data, None, scope, repo, skip)
        return Loaded([load_manifest(path, data=data)])
    if not path.is_dir():
        raise ValidationError(f"{path}: no such pack folder", file=str(path))
    for name in ("packages.yaml", "package.yaml", "manifest.yaml", "manifest.yml"):
        if (path / name).is_file():
            return _load(path / name, scope, repo, skip)
    raise ValidationError(f"{path}: no manifest.yaml, package.yaml or packages.yaml here; point at a pack, "
                          "package or registry folder", file=str(path))


def _registry(path: Path, data: dict[str, Any], scope: str | None, repo: str | None, skip: bool) -> Loaded:
    where = str(path)
    packages = data.get("packages")
    if not isinstance(packages, dict) or not packages:
        raise ValidationError(f"{where}: packages must map package names to their package.yaml paths",
                              file=where)
    out = Loaded()
    for name, rel in packages.items():
        manifest = resolve_source(path.parent, rel, where, f"package {name}")
        one = _package(manifest, read_yaml(manifest), str(name), scope, repo, skip)
        out.packs += one.packs
        out.skipped += one.skipped
    return out


def _source(root: Path, scope: str | None, repo: str | None) -> tuple[str | None, str | None]:
    """``scope``/``repo`` as given (``@nenjo-ai`` -> ``nenjo-ai``), else from a GitHub-style git remote."""
    if scope is None or repo is None:
        remote = _git_remote(root)
        if remote:
            scope, repo = scope or remote[0], repo or remote[1]
    out = []
    for label, value in (("scope", scope), ("repo", repo)):
        if value is not None:
            value = value.strip().lstrip("@")
            if not _SEGMENT.match(value):
                raise ValidationError(f"{label} {value!r} is not a name (letters, digits, '-', '_')", **{label: value})
        out.append(value)
    return out[0], out[1]


def _git_remote(folder: Path) -> tuple[str, str] | None:
    for parent in [folder.resolve(), *folder.resolve().parents]:
        config = parent / ".git" / "config"
        if config.is_file():
            text = config.read_text(encoding="utf-8", errors="replace")
            section = re.search(r'\[remote "origin"\]([^\[]*)', text)
            url = re.search(r"^\s*url\s*=\s*(\S+)", section.group(1), re.M) if section else None
            match = _REMOTE.search(url.group(1)) if url else None
            return (match.group(1), match.group(2)) if match else None
    return None


def _package(path: Path, data: Any, name: str | None, scope: str | None, repo: str | None, skip: bool) -> Loaded:
    where = str(path)
    if not isinstance(data, dict) or data.get("schema") != PACKAGE_SCHEMA:
        schema = data.get("schema") if isinstance(data, dict) else None
        raise ValidationError(f"{where}: unknown schema {schema!r}; expected {PACKAGE_SCHEMA}", file=where)
    modules = data.get("modules")
    if not isinstance(modules, list) or not modules:
        raise ValidationError(f"{where}: modules must list module paths, e.g. [core/manifest.yaml]", file=where)
    pkg_name = text_field(data.get("name"), where, "name") or name or path.parent.name
    scope, repo = _source(path.parent, scope, repo)
    package = _Package(pkg_name, path.parent, scope, repo, skip, Loaded())
    for module in modules:
        _module(package, path.parent, module, where)
    for folder, docs in package.blocks.items():
        package.loaded.packs.append(_context_pack(package, folder, docs))
    return package.loaded


def _module(package: _Package, base: Path, module: Any, where: str) -> None:
    if not isinstance(module, str) or not module.strip():
        raise ValidationError(f"{where}: each module is a path (a manifest file or a folder/)", file=where)
    ref, _, fragment = module.partition("#")
    if ref.endswith("/") or (base / ref).is_dir():
        folder = ref.rstrip("/")
        names = [f"{folder}/{n}" if folder else n for n in ("index.yml", "index.yaml")]
        found = next((n for n in names if (base / n).is_file()), None)
        if found is None:
            raise ValidationError(f"{where}: module {module} is a folder without index.yml or index.yaml; Nenjo "
                                  "imports a folder only through an explicit module index (nenjo.module_index.v1) "
                                  "listing its modules", file=where, module=module)
        path = resolve_source(base, found, where, f"module {module}")
    else:
        path = resolve_source(base, ref, where, f"module {module}")
    if path in package.seen and not fragment:
        return  # an index may list what another already did
    package.seen.add(path)
    data = read_yaml(path)
    if fragment:
        data = _bundled(data, fragment, str(path))
    _resource(package, path, data, bundled=bool(fragment))


def _bundled(data: Any, name: str, where: str) -> Any:
    if not isinstance(data, dict) or data.get("schema") != BUNDLE_SCHEMA:
        raise ValidationError(f"{where}#{name}: only a {BUNDLE_SCHEMA} file holds #resources", file=where)
    for res in data.get("resources") or []:
        if isinstance(res, dict) and name in (res.get("slug"), (res.get("manifest") or {}).get("name")):
            return res
    raise ValidationError(f"{where}: no resource {name!r} in this bundle", file=where, resource=name)


def _resource(package: _Package, path: Path, data: Any, bundled: bool = False) -> None:
    where = str(path)
    schema = data.get("schema") if isinstance(data, dict) else None
    if schema == INDEX_SCHEMA:
        modules = data.get("modules")
        if not isinstance(modules, list):
            raise ValidationError(f"{where}: a module index lists its modules", file=where)
        for module in modules:
            _module(package, path.parent, module, where)
    elif schema == BUNDLE_SCHEMA:
        for res in data.get("resources") or []:
            _resource(package, path, res, bundled=True)
    elif schema == KNOWLEDGE_SCHEMA:
        if bundled:
            raise ValidationError(f"{where}: a knowledge pack inside a {BUNDLE_SCHEMA} bundle is not supported; "
                                  "give it its own manifest file (its docs' source_path are relative to it)",
                                  file=where)
        default = None
        if package.scope and package.repo and isinstance(data.get("slug"), str):
            default = f"pkg:{package.scope}.{package.repo}.{package.name}.{data['slug']}"
        package.loaded.packs.append(load_manifest(path, default_pack=default))
    elif schema == CONTEXT_SCHEMA:
        _context_block(package, path, data)
    else:
        what = RUNTIME.get(str(schema))
        reason = (f"{what} ({schema}) is a runtime resource a Nenjo worker runs, not knowledge; agentcontext "
                  "installs knowledge packs and context blocks" if what else
                  f"schema {schema!r} is not a module kind agentcontext knows")
        _unsupported(package, path, str(schema), reason)


def _unsupported(package: _Package, path: Path, schema: str, reason: str) -> None:
    module = path.relative_to(package.root).as_posix() if path.is_relative_to(package.root) else str(path)
    if not package.skip_unsupported:
        raise ValidationError(f"{path}: {reason}. Pass skip_unsupported=True (pack add --skip-unsupported) to "
                              "install the rest and list what was skipped", file=str(path), schema=schema,
                              module=module)
    package.loaded.skipped.append({"package": package.name, "module": module, "schema": schema, "reason": reason})


def _context_block(package: _Package, path: Path, data: dict[str, Any]) -> None:
    where = str(path)
    body = data.get("manifest")
    if not isinstance(body, dict):
        raise ValidationError(f"{where}: a context block needs a manifest mapping (name, template)", file=where)
    template = body.get("template")
    if not isinstance(template, str):
        raise ValidationError(f"{where}: manifest.template must be the block's text", file=where)
    rel = path.relative_to(package.root)
    name = text_field(body.get("name"), where, "name") or path.stem
    if len(rel.parts) < 2:
        raise ValidationError(f"{where}: context block {name!r} sits at the package root; agentcontext names "
                              "blocks pkg:<scope>.<repo>.<package>.<folder> + the block name, so put it in a folder",
                              file=where)
    if not (package.scope and package.repo):
        raise ValidationError(
            f"{where}: context blocks are installed as pkg:<scope>.<repo>.{package.name}.{rel.parts[0]}, and a "
            "folder does not say its scope and repo (Nenjo takes them from the GitHub owner and repository it "
            "installed from); pass scope= and repo= (pack add --scope nenjo-ai --repo packages for "
            "github.com/nenjo-ai/packages)", file=where)
    selector = check_selector(".".join([*rel.parts[1:-1], name]), f"{where} block name")
    docs = package.blocks.setdefault(rel.parts[0], [])
    if any(d.selector == selector for d in docs):
        raise ValidationError(f"{where}: two context blocks are named {selector!r} in {rel.parts[0]}/",
                              file=where, selector=selector)
    docs.append(DocSpec(
        selector=selector, source_path=rel.as_posix(),
        title=text_field(body.get("display_name"), where, "display_name", selector) or name,
        summary=text_field(body.get("description"), where, "description", selector),
        kind=CONTEXT_KIND, tags=[], related=[], content=template,
        extra={"schema": CONTEXT_SCHEMA, "slug": str(data.get("slug") or name)}))


def _context_pack(package: _Package, folder: str, docs: list[DocSpec]) -> PackSpec:
    pack = check_pack_name(f"pkg:{package.scope}.{package.repo}.{package.name}.{folder}",
                           f"{package.root / folder}")
    return PackSpec(pack=pack, slug=folder, name=f"{package.name} {folder} (context blocks)",
                    pack_id=f"{package.name}.{folder}", root=package.root / folder, docs=docs)
