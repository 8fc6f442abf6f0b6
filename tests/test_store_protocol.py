"""The store protocol (agentcontext.store.base.Store) is the whole API: both backends implement exactly it, the
conformance suite exercises every method of it, and no service probes a store for anything else."""
from __future__ import annotations

import inspect
import re
from pathlib import Path

from agentcontext.store import Capability, SQLiteStore, Store
from agentcontext.store.base import OPTIONAL_METHODS
from agentcontext.store.sql_base import SQLStore

from .conftest import ROOT

CONFORMANCE = ROOT / "tests" / "conformance"


def _public(cls) -> dict[str, inspect.Signature]:
    return {name: inspect.signature(fn) for name, fn in inspect.getmembers(cls, inspect.isfunction)
            if not name.startswith("_")}


def _backends() -> list[type]:
    from agentcontext.store.postgres import PostgresStore

    return [SQLiteStore, PostgresStore]


def _protocol_of(cls) -> dict[str, inspect.Signature]:
    """The base protocol plus the protocols of the optional capabilities the class declares."""
    methods = _public(Store)
    for capability, protocol in OPTIONAL_METHODS.items():
        if capability in cls.capabilities:
            methods.update(_public(protocol))
    return methods


def test_every_backend_implements_exactly_the_protocol_with_its_parameters():
    for cls in _backends():
        assert issubclass(cls, SQLStore)
        protocol = _protocol_of(cls)
        ours = _public(cls)
        assert sorted(set(ours) - set(protocol)) == [], f"{cls.__name__} has public methods outside the protocol"
        assert sorted(set(protocol) - set(ours)) == [], f"{cls.__name__} lacks protocol methods"
        for name, sig in protocol.items():
            params = ours[name].parameters
            for pname, param in sig.parameters.items():
                assert pname in params, f"{cls.__name__}.{name} lacks parameter {pname}"
                assert params[pname].default == param.default, f"{cls.__name__}.{name}({pname}=) default differs"
            assert list(params) == list(sig.parameters), f"{cls.__name__}.{name} parameters differ from the protocol"


def test_every_public_sqlite_method_exists_with_the_same_parameters():
    from agentcontext.store.postgres import PostgresStore

    sqlite, postgres = _public(SQLiteStore), _public(PostgresStore)
    assert sorted(set(sqlite) - set(postgres)) == []
    for name, sig in sqlite.items():
        ours = postgres[name].parameters
        for pname, param in sig.parameters.items():
            assert pname in ours, f"PostgresStore.{name} lacks parameter {pname}"
            assert ours[pname].default == param.default, f"PostgresStore.{name}({pname}=) default differs"


def test_the_conformance_suite_calls_every_protocol_method():
    from tests.conformance import SPEC

    spec_files = sorted(p.stem for p in CONFORMANCE.glob("test_*.py"))
    assert spec_files == sorted(SPEC), "every spec module runs (tests/conformance/__init__.py SPEC lists them)"
    text = "\n".join(p.read_text() for p in CONFORMANCE.glob("test_*.py"))
    every = dict(_public(Store))
    for protocol in OPTIONAL_METHODS.values():
        every.update(_public(protocol))
    uncalled = [name for name in every if not re.search(rf"\.{name}\(", text)]
    assert uncalled == [], f"no conformance test calls {uncalled}"


def test_capabilities_are_declared_per_store():
    assert SQLiteStore(":memory:").capabilities == frozenset()
    assert set(Capability) == {Capability.PERSISTENT, Capability.SHARED, Capability.VECTOR_SEARCH,
                               Capability.SERVER_QUERIES, Capability.VECTOR_DELTA, Capability.READ_AHEAD}
    # the others are properties, without methods
    assert set(OPTIONAL_METHODS) == {Capability.VECTOR_SEARCH, Capability.VECTOR_DELTA, Capability.READ_AHEAD}


def test_no_service_probes_a_store():
    """``getattr(store, ...)`` / ``hasattr(store, ...)`` outside store/ means a method missing from the protocol."""
    probe = re.compile(r"\b(getattr|hasattr)\(\s*(?:[\w.]*\.)?_?store\s*,")
    found = []
    for path in sorted((ROOT / "src" / "agentcontext").rglob("*.py")):
        if "store" in path.relative_to(ROOT / "src" / "agentcontext").parts[:1]:
            continue
        for n, line in enumerate(path.read_text().splitlines(), 1):
            if probe.search(line):
                found.append(f"{path.relative_to(ROOT)}:{n}: {line.strip()}")
    assert found == [], "services probe stores:\n" + "\n".join(found)


def test_spec_modules_are_not_collected_on_their_own():
    assert (CONFORMANCE / "conftest.py").read_text().count('collect_ignore_glob = ["test_*.py"]') == 1
    assert Path(CONFORMANCE / "__init__.py").exists()


def test_the_protocol_is_its_roles_each_method_in_one():
    from agentcontext.store import base

    roles = [base.Lifecycle, base.NodeStore, base.EdgeStore, base.TextIndex, base.VectorRows, base.RecordLog,
             base.Erasable, base.Copyable]
    assert [c for c in Store.__mro__ if c in roles] == roles  # Store is all of them
    seen: dict[str, str] = {}
    for role in roles:
        for name in _public(role):
            assert name not in seen, f"{name} is in {seen[name]} and {role.__name__}"
            seen[name] = role.__name__
    assert sorted(seen) == sorted(_public(Store))
    store = SQLiteStore(":memory:")
    try:
        assert all(isinstance(store, role) for role in roles)
        assert not isinstance(store, base.Sharded)  # an optional role, told by isinstance
    finally:
        store.close()


def test_a_sharded_store_has_its_optional_role_and_only_it_has_it():
    from agentcontext.store.base import Sharded
    from agentcontext.store.pg_shards import ShardedStore
    from agentcontext.store.postgres import PostgresStore

    ours, role = _public(ShardedStore), _public(Sharded)
    optional = {name for protocol in OPTIONAL_METHODS.values() for name in _public(protocol)}
    assert sorted(set(ours) - set(_public(Store)) - optional) == sorted(role)
    for name, sig in role.items():
        assert list(ours[name].parameters) == list(sig.parameters), f"ShardedStore.{name} differs from Sharded"
    assert not set(role) & set(_public(PostgresStore))


def test_move_tenant_tells_a_sharded_store_by_its_role(tmp_path):
    import pytest

    from agentcontext.errors import ValidationError
    from agentcontext.migrate import move_tenant
    from agentcontext.workspace import Workspace

    ws = Workspace.open(url=f"sqlite:///{tmp_path / 'one.db'}", create=True)
    try:
        with pytest.raises(ValidationError, match="is not sharded"):
            move_tenant(ws, "acme", "b")
    finally:
        ws.store.close()
