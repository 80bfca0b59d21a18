"""Autograd's backward passes, watched from a probe: how many ran, and what each leaf
tensor they reached looked like at each pass (its version counter and its value).

Every backward pass (``loss.backward()``, ``torch.autograd.grad``, ``torch.func.grad``)
goes through ``torch.autograd._engine_run_backward``. A torch without that function runs
the block unwatched, and says so (``watched`` yields False, ``found`` stays None), so a
test that needs the watch can stay silent there instead of failing the student.
"""

from __future__ import annotations

import contextlib


@contextlib.contextmanager
def watched(on_pass):
    """Inside the block, ``on_pass(roots)`` runs before each backward pass; yields whether
    this torch lets the passes be watched."""
    import torch.autograd as autograd

    engine = getattr(autograd, "_engine_run_backward", None)
    if engine is None:
        yield False
        return

    def run(roots, *args, **kwargs):
        on_pass(roots)
        return engine(roots, *args, **kwargs)

    autograd._engine_run_backward = run
    try:
        yield True
    finally:
        autograd._engine_run_backward = engine


class LeafSightings:
    """``found``: for each leaf a backward pass inside the block reached, its ``(version,
    value)`` at every pass that reached it and once more when the block ended (None where
    the passes cannot be watched). The leaves are kept alive, so each is one object."""

    def __init__(self) -> None:
        self.found: list[list[tuple]] | None = None
        self._seen: dict[int, tuple] = {}  # id(leaf) -> (leaf, sightings)

    def sight(self, roots) -> None:
        todo = [t.grad_fn for t in roots if t.grad_fn is not None]
        visited = set()
        while todo:
            node = todo.pop()
            if node is None or id(node) in visited:
                continue
            visited.add(id(node))
            leaf = getattr(node, "variable", None)
            if leaf is not None:
                entry = self._seen.setdefault(id(leaf), (leaf, []))
                entry[1].append((leaf._version, leaf.detach().clone()))
            todo.extend(nxt for nxt, _ in node.next_functions)

    def reached(self, t) -> bool:
        """Whether ``t`` itself (this very object) is one of the leaves a pass reached."""
        entry = self._seen.get(id(t))
        return entry is not None and entry[0] is t

    def close(self) -> None:
        for leaf, sightings in self._seen.values():
            sightings.append((leaf._version, leaf.detach().clone()))
        self.found = [sightings for _, sightings in self._seen.values()]


@contextlib.contextmanager
def leaf_sightings():
    """``with leaf_sightings() as seen: ...``, then ``seen.found`` (see ``LeafSightings``)."""
    seen = LeafSightings()
    with watched(seen.sight) as on:
        yield seen
    if on:
        seen.close()


def unseen_change(sightings):
    """The first ``(version, before, after)`` where a leaf's value changed between two
    sightings while its version counter stayed put (an update behind autograd's back,
    through ``.data``); None when autograd counted every change."""
    from harness import judge

    for (v0, x0), (v1, x1) in zip(sightings, sightings[1:]):
        if v1 == v0 and not judge.is_equal(x0, x1):
            return v0, x0, x1
    return None
