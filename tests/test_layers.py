"""The layer rule (docs/ARCHITECTURE.md), checked by parsing every import under src/agentcontext.

Every ``import`` and ``from ... import`` counts, wherever it stands: at the top of a module, inside a
function (a lazy import) or under ``if TYPE_CHECKING:``. The rule:

1. No circle of imports between files.
2. Imports point down the layers: base < store < embed < engine < workspace < services < facade < operations <
   interfaces (a module may import its own layer and the layers below it).
3. Inside the services layer, a service imports only itself and services of a lower rank (SERVICE_RANKS).
4. No dynamic imports (importlib, __import__) below the interfaces, where this test could not see them.
5. No interface imports another (cli, mcp_server, web are doors side by side): what two doors share lives in a
   service. The one exception is a launcher: `agentcontext serve` starts the MCP server and the web console
   (LAUNCHERS).

A file that no layer names fails the test: place it in LAYERS (or SERVICE_RANKS) when you add it.
"""
from __future__ import annotations

import ast
import sys
from contextlib import contextmanager
from functools import lru_cache
from pathlib import Path

PACKAGE = "agentcontext"
SRC = Path(__file__).resolve().parent.parent / "src" / PACKAGE

# Bottom up. Each entry names top-level modules or packages of agentcontext ("" is agentcontext/__init__.py).
LAYERS: list[tuple[str, set[str]]] = [
    ("base", {"model", "errors", "ids", "config", "text", "tokens", "safe_yaml", "files"}),
    ("store", {"store"}),
    ("embed", {"embed"}),
    ("engine", {"engine"}),
    ("workspace", {"workspace", "copies", "seams"}),  # seams: Scope and the protocols services type each other by
    ("services", set()),  # SERVICE_RANKS
    ("facade", {"context", ""}),
    ("operations", {"operations"}),  # each operation declared once; the doors derive their forms from it
    ("interfaces", {"cli", "mcp_server", "web", "integrations"}),
]

# Services, bottom up; a service may import services of lower ranks only (its own files freely).
SERVICE_RANKS: list[set[str]] = [
    {"access"},  # who may do what: below everything that checks access
    {"truth", "llms", "vector_store", "migrate"},  # truth maintenance, LLM providers, the embedding handle, copies
    {"decisions", "decision_models", "knowledge"},  # records over the store: decisions and policies, packs
    {"graph"},  # ContextGraph; its record_decision/find_precedents_by_scenario hand over to decisions/
    {"reasoning"},  # cited context and grounded answers over the services it is handed (ContextRetriever's
                    # query_with_reasoning builds one, so it sits below retrieval; memory typed by seams)
    {"entities", "retrieval", "retrieval_modes"},  # EntityLinker on the graph; ContextRetriever over the sources it
                                                   # is given, and its modes beside local (retrieval_modes)
    {"memory"},  # AgentMemory: on the vector store, linking memories to the graph's entities
    {"erasure", "state", "workspace_reasoning"},  # across memory, graph and vector store; the reasoning service
                                                  # over a workspace's memory, graph and packs (get_context, context)
    {"eval_locomo"},  # on top of retrieval and memory
]
SERVICE_OF = {"decision_models": "decisions",  # a module that belongs to another service's room
              "workspace_reasoning": "reasoning",
              "retrieval_modes": "retrieval"}

# Known violations still to be removed, each with the engineer whose room holds it. This list only shrinks:
# an entry that no longer occurs fails the test too, so it is struck when fixed.
KNOWN_UPWARD: dict[tuple[str, str], str] = {
}
KNOWN_CIRCLES: dict[frozenset[str], str] = {
}

# The only imports from one interface into another: the CLI command that starts the other doors. Like the lists
# above, an entry that no longer occurs fails the test.
LAUNCHERS: dict[tuple[str, str], str] = {
    (f"{PACKAGE}.cli.serve", f"{PACKAGE}.mcp_server"): "`agentcontext serve mcp` starts the MCP server",
    (f"{PACKAGE}.cli.serve", f"{PACKAGE}.web"): "`agentcontext serve web` starts the web console",
}


def module_name(path: Path) -> str:
    parts = [PACKAGE, *path.relative_to(SRC).with_suffix("").parts]
    if parts[-1] == "__init__":
        parts.pop()
    return ".".join(parts)


@lru_cache(maxsize=1)
def modules() -> dict[str, Path]:
    return {module_name(p): p for p in sorted(SRC.rglob("*.py"))}


def imports_of(name: str) -> list[tuple[str, int]]:
    """(imported agentcontext module, line) for every import statement in the module, at any depth."""
    path = modules()[name]
    package = name if path.name == "__init__.py" else name.rsplit(".", 1)[0]
    known = modules()
    found: list[tuple[str, int]] = []
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"), str(path))):
        if isinstance(node, ast.Import):
            targets = [alias.name for alias in node.names]
        elif isinstance(node, ast.ImportFrom):
            if node.level:
                base = package.split(".")[: len(package.split(".")) - node.level + 1]
                source = ".".join(base + ([node.module] if node.module else []))
            else:
                source = node.module or ""
            # ``from pkg import sub`` imports the module pkg.sub; ``from mod import name`` imports mod
            targets = [f"{source}.{a.name}" if f"{source}.{a.name}" in known else source for a in node.names]
        else:
            continue
        for target in targets:
            while target and target not in known and "." in target:
                target = target.rsplit(".", 1)[0]
            if target in known and target != name:
                found.append((target, node.lineno))
    return found


def top_of(name: str) -> str:
    parts = name.split(".")
    return parts[1] if len(parts) > 1 else ""


def layer_of(name: str) -> int:
    top = top_of(name)
    for index, (_, members) in enumerate(LAYERS):
        if top in members:
            return index
    if rank_of(name) is not None:
        return [n for n, _ in LAYERS].index("services")
    raise AssertionError(f"{modules()[name]} is in no layer: add {top!r} to LAYERS or SERVICE_RANKS in "
                         "tests/test_layers.py (and to docs/ARCHITECTURE.md)")


def rank_of(name: str) -> int | None:
    top = top_of(name)
    for index, members in enumerate(SERVICE_RANKS):
        if top in members:
            return index
    return None


def graph() -> dict[str, set[str]]:
    return {name: {t for t, _ in imports_of(name)} for name in modules()}


def upward_imports() -> dict[tuple[str, str], str]:
    """(importer, imported) -> why, for every import that points up a layer or a service rank."""
    bad: dict[tuple[str, str], str] = {}
    for name in modules():
        for target, line in imports_of(name):
            a, b = layer_of(name), layer_of(target)
            where = f"{modules()[name].relative_to(SRC.parent)}:{line}"
            if b > a:
                bad[(name, target)] = f"{where}: {LAYERS[a][0]} imports {LAYERS[b][0]} ({target})"
            elif a == b and LAYERS[a][0] == "services":
                ra, rb = rank_of(name), rank_of(target)
                sa, sb = SERVICE_OF.get(top_of(name), top_of(name)), SERVICE_OF.get(top_of(target), top_of(target))
                if sa != sb and rb is not None and ra is not None and rb >= ra:
                    bad[(name, target)] = (f"{where}: service {sa} (rank {ra}) imports {sb} (rank {rb}); a service "
                                           "imports only services of lower ranks")
    return bad


def interface_crossings() -> dict[tuple[str, str], str]:
    """(importer, imported) -> where, for every import from one interface into another."""
    doors = dict(LAYERS)["interfaces"]
    found: dict[tuple[str, str], str] = {}
    for name in modules():
        for target, line in imports_of(name):
            if top_of(name) in doors and top_of(target) in doors and top_of(name) != top_of(target):
                found.setdefault((name, target), f"{modules()[name].relative_to(SRC.parent)}:{line}: {target}")
    return found


def circles() -> list[frozenset[str]]:
    """Strongly connected groups of more than one file (Tarjan, iterative)."""
    edges = graph()
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    on_stack: set[str] = set()
    stack: list[str] = []
    found: list[frozenset[str]] = []
    counter = 0
    for root in edges:
        if root in index:
            continue
        work = [(root, iter(sorted(edges[root])))]
        index[root] = low[root] = counter
        counter += 1
        stack.append(root)
        on_stack.add(root)
        while work:
            node, children = work[-1]
            child = next(children, None)
            if child is not None:
                if child not in index:
                    index[child] = low[child] = counter
                    counter += 1
                    stack.append(child)
                    on_stack.add(child)
                    work.append((child, iter(sorted(edges[child]))))
                elif child in on_stack:
                    low[node] = min(low[node], index[child])
                continue
            work.pop()
            if work:
                low[work[-1][0]] = min(low[work[-1][0]], low[node])
            if low[node] == index[node]:
                group = set()
                while True:
                    member = stack.pop()
                    on_stack.discard(member)
                    group.add(member)
                    if member == node:
                        break
                if len(group) > 1:
                    found.append(frozenset(group))
    return found


def test_every_module_has_a_layer():
    for name in modules():
        layer_of(name)


def test_no_circle_of_imports():
    found = set(circles())
    new = [sorted(c) for c in found - set(KNOWN_CIRCLES)]
    assert not new, f"import circles (lazy and TYPE_CHECKING imports count): {new}"
    gone = [f"{sorted(c)} ({owner})" for c, owner in KNOWN_CIRCLES.items() if c not in found]
    assert not gone, f"fixed, so strike them from KNOWN_CIRCLES: {gone}"


def test_imports_point_down():
    bad = upward_imports()
    new = [why for key, why in sorted(bad.items()) if key not in KNOWN_UPWARD]
    assert not new, "imports that point up:\n" + "\n".join(new)
    gone = [f"{key} ({owner})" for key, owner in KNOWN_UPWARD.items() if key not in bad]
    assert not gone, f"fixed, so strike them from KNOWN_UPWARD: {gone}"


def test_no_interface_imports_another():
    found = interface_crossings()
    new = [where for key, where in sorted(found.items()) if key not in LAUNCHERS]
    assert not new, ("an interface imports another; move what both need into a service:\n" + "\n".join(new))
    gone = [f"{key} ({why})" for key, why in LAUNCHERS.items() if key not in found]
    assert not gone, f"no longer imported, so strike them from LAUNCHERS: {gone}"


def test_no_dynamic_imports_below_the_interfaces():
    interfaces = [n for n, _ in LAYERS].index("interfaces")
    hidden = []
    for name, path in modules().items():
        if layer_of(name) >= interfaces:
            continue
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            if isinstance(node, ast.Call):
                func = node.func
                called = func.attr if isinstance(func, ast.Attribute) else getattr(func, "id", "")
                if called in ("import_module", "__import__"):
                    hidden.append(f"{path.relative_to(SRC.parent)}:{node.lineno}")
    assert not hidden, f"dynamic imports the layer test cannot follow: {hidden}"


@contextmanager
def checking(tmp_path: Path, monkeypatch, files: dict[str, str]):
    """The checker pointed at a made-up package of ``files`` (path under the package -> source)."""
    pkg = tmp_path / PACKAGE
    for rel, text in {"__init__.py": "", **files}.items():
        (pkg / rel).parent.mkdir(parents=True, exist_ok=True)
        (pkg / rel).write_text(text)
    monkeypatch.setattr(sys.modules[__name__], "SRC", pkg)
    modules.cache_clear()
    try:
        yield
    finally:
        monkeypatch.undo()
        modules.cache_clear()


def test_the_checker_sees_lazy_and_type_checking_imports(tmp_path, monkeypatch):
    """The checker itself: a circle made only of a lazy import and a TYPE_CHECKING import is found, and so is the
    upward import in it."""
    with checking(tmp_path, monkeypatch, {
            "errors.py": "def f():\n    from .memory import io\n", "memory/__init__.py": "",
            "memory/io.py": "from typing import TYPE_CHECKING\nif TYPE_CHECKING:\n    from .. import errors\n"}):
        assert imports_of(f"{PACKAGE}.errors") == [(f"{PACKAGE}.memory.io", 2)]
        assert imports_of(f"{PACKAGE}.memory.io") == [(f"{PACKAGE}.errors", 3)]
        assert circles() == [frozenset({f"{PACKAGE}.errors", f"{PACKAGE}.memory.io"})]
        assert list(upward_imports()) == [(f"{PACKAGE}.errors", f"{PACKAGE}.memory.io")]


def test_the_checker_sees_a_lazy_import_between_interfaces(tmp_path, monkeypatch):
    """What cli/context.py once did (a lazy import of mcp_server inside a command) is found."""
    with checking(tmp_path, monkeypatch, {
            "cli/__init__.py": "", "mcp_server/__init__.py": "",
            "mcp_server/context.py": "def build():\n    return 1\n",
            "cli/context.py": "def command():\n    from ..mcp_server.context import build\n    return build()\n"}):
        assert list(interface_crossings()) == [(f"{PACKAGE}.cli.context", f"{PACKAGE}.mcp_server.context")]


def test_the_architecture_page_names_every_layer_and_service():
    page = (SRC.parent.parent / "docs" / "ARCHITECTURE.md").read_text(encoding="utf-8")
    names = [n for _, members in LAYERS for n in members if n] + [n for rank in SERVICE_RANKS for n in rank]
    missing = [n for n in names if not any(form in page for form in (f"{n}.py", f"{n}/", f"`{n}`"))]
    assert not missing, f"docs/ARCHITECTURE.md does not name {missing}"
    for owner in {*KNOWN_UPWARD.values(), *KNOWN_CIRCLES.values()}:
        assert f"{owner} engineer" in page, "the page lists the known violations with their owners"
