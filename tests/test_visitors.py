"""``visitors.walk`` makes the calls LibCST's own traversal makes, in the same order."""

from __future__ import annotations

import dataclasses
import inspect
import typing
from pathlib import Path

import libcst as cst
import pytest

from dali_migrate import visitors
from dali_migrate.visitors import Visitor, walk

ROOT = Path(__file__).resolve().parent.parent
SOURCES = sorted([*ROOT.glob("fixtures/**/*.py"), *ROOT.glob("dali_migrate/**/*.py"), *ROOT.glob("tests/**/*.py")])

NEWER_SYNTAX = '''\
match point:
    case Point(x=0, y=y) | [1, *rest] if y > 0:
        pass
    case {"k": v, **others}:
        pass
type Alias[T: int = str, *Ts, **P] = list[T]
def f[T](x: T) -> T:
    return (y := x) if x else lambda *a, b=1, **k: f"{x!r:>{width}}"
async def g():
    async with a as b, c:
        async for i in b:
            yield [j async for j in i]
    try:
        pass
    except* ValueError as error:
        raise RuntimeError from error
from . import (a as b, c)
from x import *
del a[1:2, ::3], b.c
global q
assert x, "y"
print(*args, **kwargs); x @= 2
'''


class Recorder(Visitor):
    def __init__(self, skip: type | None = None) -> None:
        self.calls: list[tuple[str, int]] = []
        self.skip = skip

    def on_visit(self, node: cst.CSTNode) -> bool:
        self.calls.append(("visit", id(node)))
        return not isinstance(node, self.skip) if self.skip else True

    def on_leave(self, original_node: cst.CSTNode) -> None:
        self.calls.append(("leave", id(original_node)))


def _both(module: cst.Module, skip: type | None = None) -> tuple[list, list]:
    libcst_order, walked = Recorder(skip), Recorder(skip)
    module.visit(libcst_order)
    walk(module, walked)
    return libcst_order.calls, walked.calls


@pytest.mark.parametrize("path", SOURCES, ids=lambda p: str(p.relative_to(ROOT)))
def test_walk_makes_libcsts_calls_in_libcsts_order(path):
    libcst_order, walked = _both(cst.parse_module(path.read_bytes()))
    assert walked == libcst_order


def test_newer_syntax_is_walked_as_libcst_does():
    libcst_order, walked = _both(cst.parse_module(NEWER_SYNTAX))
    assert len(walked) > 400 and walked == libcst_order


def test_a_visitor_that_declines_a_node_skips_its_children():
    module = cst.parse_module("def f(x):\n    return g(x) + 1\n")
    libcst_order, walked = _both(module, skip=cst.Call)
    assert walked == libcst_order and len(walked) < len(_both(module)[1])


def test_a_node_type_it_cannot_read_goes_through_libcst(monkeypatch):
    """A field declared to hold nodes that is not among those LibCST is known to visit: that
    node's children are visited LibCST's way."""
    known, _ = visitors._child_fields(cst.Call)
    real = visitors._child_fields
    monkeypatch.setattr(visitors, "_child_fields", lambda node_type: (
        (tuple(f for f in known if f != "args"), False) if node_type is cst.Call else real(node_type)))
    module = cst.parse_module("x = f(a, g(b))\n")
    libcst_order, walked = _both(module)
    assert walked == libcst_order


def test_fields_that_may_hold_nodes_are_told_from_text_and_flags():
    assert visitors._may_hold_nodes(typing.Sequence[cst.Arg])
    assert visitors._may_hold_nodes(typing.Optional[cst.BaseExpression])
    assert visitors._may_hold_nodes("BaseExpression")  # unresolved: assume the worst
    assert not visitors._may_hold_nodes(typing.Optional[str])
    assert not visitors._may_hold_nodes(typing.Literal["", "*"])
    assert not visitors._may_hold_nodes(bool)


def test_every_libcst_node_type_is_understood():
    """Fields left out of the walk hold text or flags only; a new LibCST that changes that
    makes the walk fall back to LibCST's own traversal, and this test says so."""
    node_types = [t for t in vars(cst).values()
                  if isinstance(t, type) and issubclass(t, cst.CSTNode) and dataclasses.is_dataclass(t)
                  and not inspect.isabstract(t)]
    assert len(node_types) > 100
    assert [t.__name__ for t in node_types if not visitors._child_fields(t)[1]] == []
