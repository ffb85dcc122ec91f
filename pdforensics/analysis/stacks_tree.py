"""Prefix tree of stacks (after LLNL STAT): find the ranks that leave the majority path."""

from __future__ import annotations

from collections.abc import Sequence

from pdforensics.analysis.stacks_classify import SUSPECT_CLASSES, classify_stack
from pdforensics.analysis.stacks_model import Member, Outlier
from pdforensics.parsers.frames import Frame, ThreadStack

_END = ("<end of stack>", "")


class _Node:
    __slots__ = ("count", "children", "frame", "rep")

    def __init__(self, frame: Frame | None, rep: ThreadStack) -> None:
        self.count = 0
        self.children: dict[tuple[str, str], _Node] = {}
        self.frame = frame
        self.rep = rep


def _path(t: ThreadStack) -> list[tuple[tuple[str, str], Frame | None]]:
    out: list[tuple[tuple[str, str], Frame | None]] = [
        ((f.function, f.file), f) for f in reversed(t.frames)
    ]
    out.append((_END, None))
    return out


def find_outliers(
    group: str, entries: Sequence[tuple[Member, ThreadStack]]
) -> list[Outlier]:
    """Entries are one thread per process of one slot (same role, kind, thread name)."""
    if len(entries) < 3:
        return []
    # Peers mostly share one stack: build the tree once per distinct path, weighted.
    distinct: dict[tuple[tuple[str, str], ...], int] = {}
    paths: list[list[tuple[tuple[str, str], Frame | None]]] = []
    weights: list[int] = []
    reps: list[ThreadStack] = []
    which: list[int] = []
    for _m, t in entries:
        sig = tuple((f.function, f.file) for f in t.frames)
        i = distinct.get(sig)
        if i is None:
            i = distinct[sig] = len(paths)
            paths.append(_path(t))
            weights.append(0)
            reps.append(t)
        weights[i] += 1
        which.append(i)
    root = _Node(None, entries[0][1])
    for p, w, rep in zip(paths, weights, reps, strict=True):
        node = root
        node.count += w
        for key, frame in p:
            child = node.children.get(key)
            if child is None:
                child = _Node(frame, rep)
                node.children[key] = child
            child.count += w
            node = child
    # Where each distinct path leaves the majority (None: it does not).
    verdicts: list[tuple[_Node, Frame | None, _Node, int] | None] = []
    for p in paths:
        node = root
        found = None
        for depth, (key, frame) in enumerate(p):
            child = node.children[key]
            if len(node.children) > 1:
                best_key, best = max(node.children.items(), key=lambda kv: kv[1].count)
                if best_key != key and best.count * 2 > node.count and child.count < best.count:
                    found = (node, frame, best, depth)
                    break
            node = child
        verdicts.append(found)
    out: list[Outlier] = []
    for (member, thread), i in zip(entries, which, strict=True):
        v = verdicts[i]
        if v is not None:
            out.append(_outlier(group, member, thread, v[0], v[1], v[2], v[3], len(entries)))
    return out


def _outlier(group: str, member: Member, thread: ThreadStack, node: _Node,
             frame: Frame | None, best: _Node, depth: int, size: int) -> Outlier:
    cls, deciding = classify_stack(thread)
    mcls, mdec = classify_stack(best.rep)
    who = member.rank or (f"pid {member.pid}" if member.pid is not None else member.label())
    here = str(frame) if frame is not None else f"end of stack after {node.frame}"
    there = str(best.frame) if best.frame is not None else "the end of the stack"
    suspect = " (suspect: blocked in a " + cls.replace("_", " ") + ")" if (
        cls in SUSPECT_CLASSES and mcls not in SUSPECT_CLASSES) else ""
    reason = (
        f"{who} diverges from {best.count}/{size} {group} peers"
        + (f" below {node.frame.function}" if node.frame is not None else " at the root")
        + f": it is in {here} [{cls}: {deciding.function if deciding else '-'}]"
        + f" while the majority is in {there} [{mcls}: {mdec.function if mdec else '-'}]"
        + suspect
    )
    return Outlier(member, group, frame, node.frame, best.frame, best.count, size, cls, reason)
