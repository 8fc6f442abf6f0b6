"""safe_yaml.load's fast path (values built straight from the parser's events) gives exactly what the full
StrictLoader gives: the same value for every document, the same ValidationError (message, file, line, data)
for every malformed one; and it really is the path a pack manifest takes."""
from __future__ import annotations

import datetime

import pytest
import yaml

from agentcontext import safe_yaml
from agentcontext.errors import ValidationError

DOCUMENTS = [
    "", "# only a comment\n", "---\n...\n", "a: 1", "- a\n- b: c\n  d: [1, 2]\n", "plain text",
    "a: [1, 2.5, true, false, null, ~, 2024-01-02, 2024-01-02T03:04:05Z, '1', \"x\", 0x1F, 1_000, .5, -3, 0o17]",
    "1: one\non: yes\nnull: x\n3.5: y\n", "k: |\n  block\n  text\nf: >\n  folded\n  text\n", "a: ''\nb:\nc: ' '\n",
    "'<<': 1\n", "key: {}\nlist: []\n", "a: 'it''s'\nb: \"tab\\there ✓ 東京\"\n", "- [a, b]\n- {c: d, e: [f]}\n",
    "? a\n", "k: !!str 1\nj: !!int '7'\n", "k: &anchor 1\n", "--- !!map\na: 1\n", "a: !!float 1\n",
    "[" * 70 + "]" * 70, "[" * 40 + "{a: 1}" + "]" * 40, "a: 2001-12-14t21:59:43.10-05:00\nb: 2002-12-14\n",
    "schema: nenjo.knowledge.v1\nslug: s\nmanifest:\n  docs:\n  - selector: a.b\n    tags: [x, 'y', 3]\n",
    # malformed: each must fail exactly as the full loader fails
    "? [a]\n: 1\n", "? {a: 1}\n: 1\n", "a: 1\nb: 2\na: 3\n", "a: &x 1\nb: *x\n", "a: &x [1]\nb: [*x, *x]\n",
    "<<: {a: 1}\n", "a: !!binary aGk=\n", "a: .nan\n", "a: -.inf\n", "a: [1, 2\n", "--- a\n--- b\n", "a: b: c\n",
    "!!set {a, b}\n", "a: !custom x\n", "a: *nothing\n", "a: 1\n  b: 2\n", "a: !!omap [{b: 1}]\n", "a: !!value x\n",
    "x: [1, {y: 2, y: 3}]\n", "- 1\n- a: 1\n  a: 2\n", "a:\n- 1\n-2: x\n", "\tbad: tab\n", "a: 'unclosed\n",
    "&a [*a]\n", "k: <<\n",
]


def full(text: str, monkeypatch: pytest.MonkeyPatch) -> object:
    """What ``load`` gave before the fast path: the full loader only."""
    with monkeypatch.context() as m:
        m.setattr(safe_yaml, "_fast_load", lambda text: (_ for _ in ()).throw(safe_yaml._Slow()))
        return outcome(text)


def outcome(text: str) -> object:
    try:
        return ("value", repr(safe_yaml.load(text, "f.yaml", line_offset=1)))
    except ValidationError as exc:
        return ("error", str(exc), exc.data)


@pytest.mark.parametrize("text", DOCUMENTS)
def test_the_fast_path_gives_what_the_full_loader_gives(text, monkeypatch):
    assert outcome(text) == full(text, monkeypatch)


def test_a_manifest_takes_the_fast_path_and_refusals_do_not():
    manifest = yaml.safe_dump({"schema": "nenjo.knowledge.v1", "slug": "big", "manifest": {"docs": [
        {"selector": f"d.s{i}", "title": f"Doc {i}", "tags": ["topic:a", i], "when": datetime.date(2024, 1, i + 1),
         "related": [{"type": "depends_on", "target": "d.s0"}]} for i in range(20)]}}, sort_keys=False)
    assert safe_yaml._fast_load(manifest) == yaml.load(manifest, Loader=safe_yaml.StrictLoader)
    for text in ("a: &x 1\nb: *x\n", "a: 1\na: 2\n", "<<: {a: 1}\n", "a: !!str x\n", "? [a]\n: 1\n", "a: .inf\n",
                 "--- a\n--- b\n", "[" * 70 + "]" * 70):
        with pytest.raises((safe_yaml._Slow, safe_yaml.YamlProblem, yaml.YAMLError)):
            safe_yaml._fast_load(text)


def test_malformed_manifests_keep_their_errors(tmp_path):
    from agentcontext.knowledge.manifest import load_manifest

    path = tmp_path / "manifest.yaml"
    path.write_text("schema: nenjo.knowledge.v1\nslug: s\nslug: t\nmanifest: {docs: []}\n", encoding="utf-8")
    with pytest.raises(ValidationError, match=r"manifest.yaml: line 3: key 'slug' appears twice \(first on line 2\)"):
        load_manifest(path)
    path.write_text("schema: nenjo.knowledge.v1\nslug: &s s\nmanifest: {name: *s, docs: []}\n", encoding="utf-8")
    with pytest.raises(ValidationError, match="line 2: an alias"):
        load_manifest(path)
