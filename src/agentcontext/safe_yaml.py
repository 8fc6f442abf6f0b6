"""The one way agentcontext reads and writes YAML (manifests, packages, Markdown frontmatter, saved graphs).

Safe loading (no Python objects), and stricter than YAML itself where YAML's freedoms are traps:

- **No aliases.** ``&a`` / ``*a`` let a few hundred bytes stand for gigabytes once the data is written out
  as JSON ("billion laughs"); an alias is refused with the line it is on.
- **No key twice** in one mapping (YAML keeps the last silently: ``slug:`` twice installed the second).
- **Keys are plain text**: a mapping or a list as a key is refused; a scalar key is kept as the text written
  (``1:`` is the key ``"1"``, ``on:`` the key ``"on"``), which is what JSON will hold anyway.
- Only the JSON-shaped types: text, numbers (finite), booleans, null, lists, mappings and timestamps.
  ``!!binary``, ``!!set``, ``!!omap``, ``!!pairs`` and merge keys (``<<``) are refused.

Every problem is a ``ValidationError`` naming the file (``where``) and the line.
"""
from __future__ import annotations

import math
from typing import Any

import yaml

from .errors import ValidationError

try:  # the C parser when PyYAML was built with libyaml (about 10x faster)
    _Base: Any = yaml.CSafeLoader
    _Dumper: Any = yaml.CSafeDumper
except AttributeError:  # pragma: no cover
    _Base = yaml.SafeLoader
    _Dumper = yaml.SafeDumper

MERGE_TAG = "tag:yaml.org,2002:merge"
_REFUSED_TAGS = {
    "tag:yaml.org,2002:binary": "binary data (!!binary)",
    "tag:yaml.org,2002:set": "a set (!!set)",
    "tag:yaml.org,2002:omap": "an ordered map (!!omap)",
    "tag:yaml.org,2002:pairs": "pairs (!!pairs)",
    "tag:yaml.org,2002:value": "a value key (=)",
}


class YamlProblem(Exception):
    """Raised inside the loader; turned into a ValidationError naming the file by :func:`load`."""

    def __init__(self, message: str, line: int | None, **data: Any) -> None:
        super().__init__(message)
        self.message = message
        self.line = line
        self.data = data


def _line(node: Any) -> int | None:
    mark = node.start_mark if isinstance(node, yaml.Node) else None
    return mark.line + 1 if mark is not None else None


class StrictLoader(_Base):  # type: ignore[misc, valid-type]
    """Safe loading without aliases, duplicate keys, non-text keys or non-JSON types."""

    def construct_object(self, node: Any, deep: bool = False) -> Any:
        if node in self.constructed_objects or node in self.recursive_objects:
            raise YamlProblem("an alias (*name) refers back to an anchor (&name); aliases are not allowed "
                              "(they let a small file expand without bound): write the value out",
                              _line(node), reason="alias")
        return super().construct_object(node, deep=deep)


def _mapping(loader: StrictLoader, node: Any) -> dict[str, Any]:
    if not isinstance(node, yaml.MappingNode):
        raise YamlProblem("expected a mapping", _line(node))
    out: dict[str, Any] = {}
    first: dict[str, int | None] = {}
    for key_node, value_node in node.value:
        line = _line(key_node)
        if key_node.tag == MERGE_TAG:
            raise YamlProblem("merge keys (<<) are not supported; write the fields out", line, reason="merge")
        if not isinstance(key_node, yaml.ScalarNode):
            kind = "mapping" if isinstance(key_node, yaml.MappingNode) else "list"
            raise YamlProblem(f"a key must be plain text, not a {kind}", line, reason="non-scalar key")
        key = str(key_node.value)
        if key in first:
            raise YamlProblem(f"key {key!r} appears twice (first on line {first[key]}); keep one", line,
                              key=key, reason="duplicate key")
        first[key] = line
        out[key] = loader.construct_object(value_node, deep=True)
    return out


def _sequence(loader: StrictLoader, node: Any) -> list[Any]:
    return [loader.construct_object(child, deep=True) for child in node.value]


def _float(loader: StrictLoader, node: Any) -> float:
    value = yaml.constructor.SafeConstructor.construct_yaml_float(loader, node)
    if not math.isfinite(value):
        raise YamlProblem(f"{node.value!r} is not a finite number; JSON cannot hold it", _line(node))
    return value


def _refuse(loader: StrictLoader, node: Any) -> Any:
    raise YamlProblem(f"{_REFUSED_TAGS[node.tag]} is not supported; use text, numbers, lists and mappings",
                      _line(node), tag=node.tag)


StrictLoader.add_constructor(yaml.resolver.BaseResolver.DEFAULT_MAPPING_TAG, _mapping)
StrictLoader.add_constructor(yaml.resolver.BaseResolver.DEFAULT_SEQUENCE_TAG, _sequence)
StrictLoader.add_constructor("tag:yaml.org,2002:float", _float)
for _tag in _REFUSED_TAGS:
    StrictLoader.add_constructor(_tag, _refuse)


class _Slow(Exception):
    """The fast path met something it leaves to the full loader (which gives the same value or the error)."""


_STR = yaml.resolver.BaseResolver.DEFAULT_SCALAR_TAG
_FAST_DEPTH = 64  # deeper documents go to the full loader, whose recursion limit they may reach
_FAST_TAGS = {"tag:yaml.org,2002:int", "tag:yaml.org,2002:float", "tag:yaml.org,2002:bool",
              "tag:yaml.org,2002:null", "tag:yaml.org,2002:timestamp"}
_NO_KEY = object()


def _resolve_plain(value: str) -> str:
    """The tag YAML gives a plain scalar (what the composer's ``resolve`` does for an untagged plain scalar)."""
    for tag, regexp in StrictLoader.yaml_implicit_resolvers.get(value[0] if value else "", ()):
        if regexp.match(value):
            return tag
    return _STR


def _fast_load(text: str) -> Any:
    """The value of ``text`` built straight from the parser's events, for documents made only of untagged,
    unanchored scalars, mappings with distinct plain-text keys and lists. Anything else (an alias, an anchor,
    a tag, a merge key, a repeated or non-text key, a non-finite number, a second document, a syntax error,
    deep nesting) raises ``_Slow``, and ``load`` hands the text to the full loader: the same value for every
    document this path accepts, and every refusal, with its line, made in one place (``StrictLoader``).
    About twice as fast as building the node tree first (a 10,000-doc manifest: benchmarks/packs.py)."""
    loader = StrictLoader(text)
    try:
        get, scalar_event = loader.get_event, yaml.ScalarEvent
        mapping_start, sequence_start = yaml.MappingStartEvent, yaml.SequenceStartEvent
        ends = (yaml.MappingEndEvent, yaml.SequenceEndEvent)
        get()  # stream start
        event = get()
        if isinstance(event, yaml.StreamEndEvent):
            return None
        if not isinstance(event, yaml.DocumentStartEvent):
            raise _Slow
        stack: list[list[Any]] = []  # [container, is_mapping, key waiting for its value]
        root: Any = None
        while True:
            event = get()
            kind = type(event)
            if kind is scalar_event:
                if event.anchor is not None or event.tag is not None:
                    raise _Slow
                if stack and stack[-1][1] and stack[-1][2] is _NO_KEY:  # a mapping's key: the text as written
                    key = event.value
                    if key in stack[-1][0] or (key == "<<" and event.implicit[0]):
                        raise _Slow
                    stack[-1][2] = key
                    continue
                value = event.value
                if event.implicit[0]:
                    tag = _resolve_plain(value)
                    if tag != _STR:
                        if tag not in _FAST_TAGS:
                            raise _Slow
                        node = yaml.ScalarNode(tag, value, event.start_mark, event.end_mark, event.style)
                        value = StrictLoader.yaml_constructors[tag](loader, node)
            elif kind is mapping_start or kind is sequence_start:
                if event.anchor is not None or event.tag is not None or len(stack) >= _FAST_DEPTH or (
                        stack and stack[-1][1] and stack[-1][2] is _NO_KEY):
                    raise _Slow
                stack.append([{} if kind is mapping_start else [], kind is mapping_start, _NO_KEY])
                continue
            elif kind in ends:
                value = stack.pop()[0]
            elif isinstance(event, yaml.DocumentEndEvent) and not stack:
                break
            else:
                raise _Slow
            if not stack:
                root = value
            elif stack[-1][1]:
                stack[-1][0][stack[-1][2]] = value
                stack[-1][2] = _NO_KEY
            else:
                stack[-1][0].append(value)
        if not isinstance(get(), yaml.StreamEndEvent):
            raise _Slow
        return root
    finally:
        loader.dispose()


def load(text: str, where: str, what: str = "YAML", line_offset: int = 0) -> Any:
    """Parse one YAML document; ``line_offset`` shifts reported lines (frontmatter starts on line 2)."""
    try:
        return _fast_load(text)
    except (_Slow, YamlProblem, yaml.YAMLError, RecursionError, ValueError, TypeError, OverflowError):
        pass  # the full loader below gives the same value, or the error with its line
    try:
        return yaml.load(text, Loader=StrictLoader)
    except YamlProblem as exc:
        line = exc.line + line_offset if exc.line is not None else None
        at = f" line {line}:" if line is not None else ""
        raise ValidationError(f"{where}:{at} {exc.message}", file=where, line=line, **exc.data) from None
    except yaml.YAMLError as exc:
        marked = exc if isinstance(exc, yaml.MarkedYAMLError) else None
        mark = marked.problem_mark if marked is not None else None
        line = mark.line + 1 + line_offset if mark is not None else None
        at = f" at line {line}, column {mark.column + 1}" if mark is not None else ""
        problem = (marked.problem if marked is not None else None) or str(exc).splitlines()[0]
        raise ValidationError(f"{where}: malformed {what}{at}: {problem}", file=where, line=line) from None
    except (RecursionError, ValueError, TypeError, OverflowError) as exc:
        raise ValidationError(f"{where}: {what} could not be loaded: {exc}", file=where) from None


class _NoAliasDumper(_Dumper):  # type: ignore[misc, valid-type]
    """Writes a value shared by two fields out twice instead of as an anchor and alias, so what we write
    we can read back."""

    def ignore_aliases(self, data: Any) -> bool:
        return True


def dump(data: Any, **options: Any) -> str:
    """YAML text that :func:`load` reads back (no anchors or aliases, insertion order kept by default)."""
    options.setdefault("sort_keys", False)
    options.setdefault("allow_unicode", True)
    options.setdefault("default_flow_style", False)
    return yaml.dump(data, Dumper=_NoAliasDumper, **options)
