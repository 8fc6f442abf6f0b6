"""Bad input to the pack loader: each case is a ValidationError naming the file and what to fix, and nothing
is half-loaded. Plus a hypothesis fuzz of the manifest: only our error types come out."""
from __future__ import annotations

import os

import pytest
import yaml
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from agentcontext.errors import AgentContextError, ValidationError
from agentcontext.knowledge.manifest import selector_from_path
from agentcontext.knowledge.package import load_folder
from agentcontext.knowledge.packs import install_folder

from .conftest import PACKS


def _manifest(root, docs, **extra):
    data = {"schema": "nenjo.knowledge.v1", "slug": "bad", "manifest": {"name": "Bad", "docs": docs}}
    data.update(extra)
    (root / "manifest.yaml").write_text(yaml.safe_dump(data), encoding="utf-8")
    return root


@pytest.fixture
def root(tmp_path):
    r = tmp_path / "pack"
    (r / "docs").mkdir(parents=True)
    (r / "docs" / "a.md").write_text("A body", encoding="utf-8")
    return r


def _expect(root, *words):
    with pytest.raises(ValidationError) as info:
        load_folder(root)
    message = str(info.value)
    assert "manifest.yaml" in message or "file" in info.value.data
    for w in words:
        assert w in message, message
    return info.value


def test_malformed_yaml(root):
    (root / "manifest.yaml").write_text("schema: [unclosed\n", encoding="utf-8")
    _expect(root, "malformed YAML", "line")


def test_unknown_schema(root):
    _manifest(root, [], schema="nenjo.knowledge.v9")
    _expect(root, "unknown schema")


def test_duplicate_selectors(root):
    _manifest(root, [{"selector": "a", "source_path": "docs/a.md"}, {"selector": "a", "source_path": "docs/a.md"}])
    err = _expect(root, "duplicate selector")
    assert err.data["selector"] == "a"


@pytest.mark.parametrize("selector", ["1abc", "a..b", "a-b", "a.", "has space", ""])
def test_bad_selector_syntax(root, selector):
    _manifest(root, [{"selector": selector, "source_path": "docs/a.md"}])
    _expect(root, "not valid")


def test_absolute_source_path(root):
    _manifest(root, [{"selector": "a", "source_path": str(root / "docs/a.md")}])
    _expect(root, "absolute")


def test_dotdot_source_path(root):
    _manifest(root, [{"selector": "a", "source_path": "../outside.md"}])
    _expect(root, "'..'")


def test_symlink_escaping_pack(root, tmp_path):
    outside = tmp_path / "secret.md"
    outside.write_text("secret", encoding="utf-8")
    os.symlink(outside, root / "docs" / "link.md")
    _manifest(root, [{"selector": "a", "source_path": "docs/link.md"}])
    _expect(root, "leads out of the pack")


def test_missing_doc_file(root):
    _manifest(root, [{"selector": "a", "source_path": "docs/none.md"}])
    _expect(root, "missing")


def test_non_utf8_doc(root):
    (root / "docs" / "bin.md").write_bytes(b"\xff\xfe\x00bad")
    _manifest(root, [{"selector": "a", "source_path": "docs/bin.md"}])
    _expect(root, "not UTF-8")


def test_unknown_edge_type(root):
    # Issue 12 s2: edge types are an open vocabulary (stored, traversed, linted); only a non-word is refused.
    _manifest(root, [{"selector": "a", "source_path": "docs/a.md", "related": [{"type": "Loves", "target": "b"}]}])
    assert load_folder(root)[0].docs[0].related[0].type == "loves"
    _manifest(root, [{"selector": "a", "source_path": "docs/a.md", "related": [{"type": "!!", "target": "b"}]}])
    _expect(root, "edge type '!!' is not a word")


def test_doc_over_5mb(root):
    (root / "docs" / "big.md").write_bytes(b"x" * (5 * 1024 * 1024 + 1))
    _manifest(root, [{"selector": "a", "source_path": "docs/big.md"}])
    _expect(root, "5 MB")


def test_selector_derived_from_source_path(root):
    (root / "docs" / "design").mkdir()
    (root / "docs" / "design" / "agents.md").write_text("x", encoding="utf-8")
    _manifest(root, [{"source_path": "docs/design/agents.md", "kind": "Design Notes", "tags": ["intent:design"]}])
    spec = load_folder(root)[0]
    assert spec.docs[0].selector == "design.agents" == selector_from_path("docs/design/agents.md")
    assert spec.docs[0].kind == "design-notes"
    assert spec.pack == "lib:bad"


def test_nothing_half_loaded(ws, root):
    (root / "docs" / "b.md").write_text("B", encoding="utf-8")
    _manifest(root, [{"selector": "a", "source_path": "docs/a.md"}, {"selector": "b", "source_path": "docs/zz.md"}])
    with pytest.raises(ValidationError):
        install_folder(ws, root, defer_embeddings=True)
    assert ws.store.count_nodes() == 0
    assert ws.store.list_records("pack") == []


def test_package_yaml_loads_modules():
    specs = load_folder(PACKS / "agentcontext-docs")
    assert [s.pack for s in specs] == ["pkg:agentcontext.agentcontext.docs.guide"]
    assert len(specs[0].docs) >= 25


_scalar = st.one_of(st.none(), st.booleans(), st.integers(), st.floats(allow_nan=True), st.text(max_size=30))
_value = st.recursive(_scalar, lambda inner: st.one_of(st.lists(inner, max_size=4),
                                                      st.dictionaries(st.text(max_size=10), inner, max_size=4)),
                      max_leaves=12)
_doc = st.fixed_dictionaries({}, optional={
    "selector": st.one_of(st.sampled_from(["a", "b.c", "x_1", "", "1a", "a..b"]), _value),
    "source_path": st.one_of(st.sampled_from(["docs/a.md", "../a.md", "/etc/passwd", "docs/none.md", ""]), _value),
    "title": _value, "summary": _value, "kind": _value, "tags": _value,
    "related": st.one_of(_value, st.lists(st.fixed_dictionaries(
        {"type": st.sampled_from(["depends_on", "related_to", "bogus"]), "target": _value}), max_size=3)),
})
_manifest_strategy = st.one_of(
    _value,
    st.fixed_dictionaries({"schema": st.sampled_from(["nenjo.knowledge.v1", "x"]),
                           "slug": st.one_of(st.sampled_from(["ok", "Bad Slug"]), _value),
                           "manifest": st.one_of(_value, st.fixed_dictionaries(
                               {"docs": st.one_of(_value, st.lists(_doc, max_size=4))},
                               optional={"selector": st.one_of(st.sampled_from(["lib:ok", "pkg:a.b.c.d", "pkg:x"]),
                                                               _value), "name": _value}))}),
)


@settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(data=_manifest_strategy, raw=st.one_of(st.none(), st.binary(max_size=80)))
def test_fuzz_manifest_only_our_errors(root, data, raw):
    path = root / "manifest.yaml"
    if raw is not None:
        path.write_bytes(raw)
    else:
        path.write_text(yaml.safe_dump(data, allow_unicode=True), encoding="utf-8")
    try:
        specs = load_folder(root)
    except AgentContextError:
        return
    for spec in specs:
        assert spec.pack.startswith(("lib:", "pkg:"))
        for doc in spec.docs:
            assert doc.content == "A body"
