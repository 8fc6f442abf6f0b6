"""Where each node of a drawn graph goes: layers by dependency depth (foundations on top), barycentre order.

A view helper for the graph pages: O(nodes + edges), so a 2,000-node pack is placed in milliseconds and the
browser draws it without running a physics simulation (which takes seconds at that size). ``layer_edges``
are the edges that set the layers (``depends_on`` for packs, causal links for decisions); an edge that
would close a cycle is ignored for layering only.
"""
from __future__ import annotations

from collections import defaultdict
from typing import Iterable, Sequence

X_GAP = 60.0
Y_GAP = 140.0
LABEL_GAP = 24.0  # free space between two neighbours' label boxes in a row
CHAR_WIDTH = 8.5  # an upper bound of one character's width at the 14px label font
WRAP_WIDTH = 2400.0  # a row wider than this wraps onto sub-rows (a 2,000-node view stays on screen)
SUB_ROW_GAP = 90.0


def label_width(label: str) -> float:
    """An upper bound of a label's drawn width (px) plus the box's margins."""
    return len(label) * CHAR_WIDTH + 16.0


def layered(nodes: Sequence[str], layer_edges: Iterable[tuple[str, str]],
            labels: dict[str, str] | None = None) -> dict[str, tuple[float, float]]:
    """{node: (x, y)}; for each (dependent, prerequisite) edge the prerequisite sits in a higher row.
    With ``labels`` ({node: label}) the nodes of a row are spaced by their labels' widths so no two labels
    overlap, and a row wider than WRAP_WIDTH wraps onto sub-rows."""
    known = set(nodes)
    deps: dict[str, list[str]] = defaultdict(list)
    for src, dst in layer_edges:
        if src in known and dst in known and src != dst:
            deps[src].append(dst)
    layer: dict[str, int] = {}
    for root in nodes:  # iterative depth-first walk: a node's row is one below its deepest prerequisite
        if root in layer:
            continue
        stack = [(root, iter(deps.get(root, ())))]
        on_path = {root}
        while stack:
            here, pending = stack[-1]
            nxt = next(pending, None)
            if nxt is None:
                layer[here] = 1 + max((layer[d] for d in deps.get(here, ()) if d in layer), default=-1)
                on_path.discard(here)
                stack.pop()
            elif nxt not in layer and nxt not in on_path:
                on_path.add(nxt)
                stack.append((nxt, iter(deps.get(nxt, ()))))
    rows: dict[int, list[str]] = defaultdict(list)
    for n in nodes:
        rows[layer[n]].append(n)
    pos: dict[str, tuple[float, float]] = {}
    y = 0.0
    for depth in sorted(rows):
        row = rows[depth]
        if depth:
            row.sort(key=lambda n: sum(pos[d][0] for d in deps[n] if d in pos) / max(1, len(deps[n])))
        if labels is None:
            width = (len(row) - 1) * X_GAP
            for i, n in enumerate(row):
                pos[n] = (i * X_GAP - width / 2, depth * Y_GAP)
            continue
        y = depth * Y_GAP if not pos else max(y + Y_GAP, depth * Y_GAP)
        for line in _wrap(row, labels):
            widths = [max(X_GAP, label_width(labels.get(n, n))) for n in line]
            total = sum(widths) + LABEL_GAP * (len(line) - 1)
            x = -total / 2
            for n, w in zip(line, widths):
                pos[n] = (x + w / 2, y)
                x += w + LABEL_GAP
            y += SUB_ROW_GAP
        y -= SUB_ROW_GAP
    return pos


def _wrap(row: list[str], labels: dict[str, str]) -> list[list[str]]:
    lines: list[list[str]] = [[]]
    width = 0.0
    for n in row:
        w = label_width(labels.get(n, n)) + LABEL_GAP
        if lines[-1] and width + w > WRAP_WIDTH:
            lines.append([])
            width = 0.0
        lines[-1].append(n)
        width += w
    return lines
