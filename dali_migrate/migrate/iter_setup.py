"""A legacy ``Pipeline`` subclass that feeds its external sources in ``iter_setup``.

Pipeline mode calls ``iter_setup()`` once per iteration, before it runs the graph; each
``self.feed_input(self.jpegs, images)`` hands a batch to the external source whose output
``define_graph`` stored in ``self.jpegs``; ``StopIteration`` ends the epoch. That is what an
``external_source`` with a callable source does, so the class

    def __init__(self, ...):
        ...
        self.input = ops.ExternalSource()
        self.input_label = ops.ExternalSource()
        self.iterator = iter(external_data)

    def define_graph(self):
        self.jpegs = self.input()
        self.labels = self.input_label()
        ...

    def iter_setup(self):
        try:
            (images, labels) = self.iterator.next()
            self.feed_input(self.jpegs, images)
            self.feed_input(self.labels, labels)
        except StopIteration:
            self.iterator = iter(self.external_data)
            raise StopIteration

builds the same pipeline as a graph function that defines ``iter_setup`` and reads it once:

    def iter_setup():
        nonlocal iterator
        try:
            (images, labels) = iterator.next()
            return images, labels
        except StopIteration:
            iterator = iter(external_data)
            raise StopIteration

    jpegs, labels = fn.external_source(source=iter_setup, num_outputs=2)

which the external-source migration then turns into a call per batch. What it accepts: every
``feed_input`` a statement of its own, in ``iter_setup``'s body or in the body of one ``try``
whose handlers end in ``raise``, each feeding a name to one external source's output once;
``layout=`` a literal or a value set in ``__init__``; no ``return`` of its own; the attributes it
assigns are values ``__init__`` computed and ``define_graph`` does not read.
"""

from __future__ import annotations

from dataclasses import dataclass

import libcst as cst

from ..visitors import Visitor, walk
from .names import assigned_targets, scope_names
from .ops import keyword_values


class NotFed(Exception):
    """``iter_setup`` is not in the shape this module converts; the message says why."""


SOURCE_FUNCTION = "iter_setup"


@dataclass(frozen=True)
class Feed:
    output: str  # ``jpegs`` of ``self.feed_input(self.jpegs, images)``
    data: cst.Name  # ``images``
    layout: cst.BaseExpression | None


@dataclass(frozen=True)
class FedSources:
    feeds: list[Feed]  # in the order iter_setup feeds them: the source's outputs
    function: cst.FunctionDef  # ``def iter_setup():`` with ``self.`` still in it
    written: set[str]  # ``self.x`` attributes iter_setup assigns: ``nonlocal x`` in the function


def _self_attribute(node: cst.BaseExpression) -> str | None:
    if isinstance(node, cst.Attribute) and isinstance(node.value, cst.Name) and node.value.value == "self":
        return node.attr.value
    return None


def _code(node: cst.CSTNode) -> str:
    return cst.Module([]).code_for_node(node).strip().splitlines()[0]


def _feed(statement: cst.BaseStatement) -> Feed | None:
    """The feed of a line ``self.feed_input(self.x, data[, layout=...])``, or None."""
    if not (isinstance(statement, cst.SimpleStatementLine) and len(statement.body) == 1
            and isinstance(statement.body[0], cst.Expr)):
        return None
    call = statement.body[0].value
    if not (isinstance(call, cst.Call) and isinstance(call.func, cst.Attribute)
            and _self_attribute(call.func) == "feed_input"):
        return None
    positional = [a for a in call.args if a.keyword is None and not a.star]
    keywords = keyword_values(call)
    output = _self_attribute(positional[0].value) if positional else None
    if output is None or len(positional) != 2 or set(keywords) - {"layout"} or any(a.star for a in call.args):
        raise NotFed(f"`{_code(statement)}`: feed `self.<output>` a batch, with `layout=` at most")
    if not isinstance(positional[1].value, cst.Name):
        raise NotFed(f"`{_code(statement)}`: feed a name (bind the batch to a name first)")
    layout = keywords.get("layout")
    if layout is not None and not (isinstance(layout, cst.SimpleString) or _self_attribute(layout)):
        raise NotFed(f"`{_code(statement)}`: give `layout=` as a string or a value set in `__init__`")
    return Feed(output, positional[1].value, layout)


def _fed_block(body: list[cst.BaseStatement]) -> tuple[list[cst.BaseStatement], cst.Try | None]:
    """The block that holds the feeds: ``body`` itself, or the body of its one ``try``."""
    if any(_feed(statement) for statement in body):
        return body, None
    tries = [s for s in body if isinstance(s, cst.Try)]
    if len(tries) != 1 or not any(_feed(s) for s in tries[0].body.body):
        raise NotFed("its `feed_input` calls must be statements of its own body, or of one `try` in it")
    handled = tries[0]
    if handled.orelse is not None or handled.finalbody is not None:
        raise NotFed("its `try` has an `else` or `finally` clause")
    for handler in handled.handlers:
        last = handler.body.body[-1]
        if not (isinstance(last, cst.SimpleStatementLine) and isinstance(last.body[-1], cst.Raise)):
            raise NotFed("an `except` clause around its `feed_input` calls does not end in `raise`: "
                         "no data would be fed")
    return list(handled.body.body), handled


def _returning(block: list[cst.BaseStatement], feeds: list[Feed]) -> list[cst.BaseStatement]:
    """``block`` without its feeds, ending in ``return`` of the fed data; a fed name must not
    change between its feed and the return."""
    kept, pending = [], []
    for statement in block:
        feed = _feed(statement)
        if feed is not None:
            pending.append(feed)
            continue
        rebound = {f.data.value for f in pending} & _bound(statement)
        if rebound:
            raise NotFed(f"`{sorted(rebound)[0]}` changes after it is fed")
        kept.append(statement)
    data = [f.data for f in feeds]
    value = data[0] if len(data) == 1 else cst.Tuple([cst.Element(d) for d in data], lpar=[], rpar=[])
    return [*kept, cst.SimpleStatementLine([cst.Return(value)])]


def _bound(statement: cst.CSTNode) -> set[str]:
    return scope_names([statement]).bound


class _Uses(Visitor):
    """``return`` statements and ``feed_input`` calls inside ``iter_setup``."""

    def __init__(self) -> None:
        self.returns = False
        self.feeds = 0

    def visit_Return(self, node: cst.Return) -> None:
        self.returns = True

    def visit_FunctionDef(self, node: cst.FunctionDef) -> bool:
        return False

    def visit_Lambda(self, node: cst.Lambda) -> bool:
        return False

    def visit_Call(self, node: cst.Call) -> None:
        self.feeds += _self_attribute(node.func) == "feed_input"


class _SelfWrites(Visitor):
    def __init__(self, into_functions: bool) -> None:
        self.into_functions = into_functions
        self.statements: dict[str, cst.CSTNode] = {}  # each attribute's first write

    @property
    def written(self) -> set[str]:
        return set(self.statements)

    def visit_FunctionDef(self, node: cst.FunctionDef) -> bool:
        return self.into_functions

    def visit_Lambda(self, node: cst.Lambda) -> bool:
        return self.into_functions

    def _write(self, target: cst.BaseExpression, statement: cst.CSTNode) -> None:
        for element in assigned_targets(target):
            name = _self_attribute(element)
            if name is not None:
                self.statements.setdefault(name, statement)

    def visit_Assign(self, node: cst.Assign) -> None:
        for target in node.targets:
            self._write(target.target, node)

    def visit_AugAssign(self, node: cst.AugAssign) -> None:
        self._write(node.target, node)

    def visit_AnnAssign(self, node: cst.AnnAssign) -> None:
        self._write(node.target, node)


def assigned_self_attributes(node: cst.CSTNode, into_functions: bool = False) -> set[str]:
    """The ``x`` of every ``self.x = ...``, ``self.x += ...`` and ``self.x: T = ...`` in ``node``
    (in the functions and lambdas it defines too, with ``into_functions``)."""
    return set(self_writes(node, into_functions))


def self_writes(node: cst.CSTNode, into_functions: bool = False) -> dict[str, cst.CSTNode]:
    """Each attribute of ``self`` that ``node`` assigns, with the statement that first does."""
    writes = _SelfWrites(into_functions)
    walk(node, writes)
    return writes.statements


def fed_sources(method: cst.FunctionDef) -> FedSources:
    """What ``iter_setup`` feeds, and the function that returns it; NotFed says why not."""
    params = method.params
    if len(params.params) != 1 or params.posonly_params or params.kwonly_params or method.decorators \
            or isinstance(params.star_arg, cst.Param) or params.star_kwarg is not None:
        raise NotFed("`iter_setup(self)` is expected")
    uses = _Uses()
    walk(method.body, uses)
    written = assigned_self_attributes(method.body)
    if uses.returns:
        raise NotFed("it returns early")
    body = list(method.body.body)
    block, handled = _fed_block(body)
    feeds = [feed for feed in map(_feed, block) if feed is not None]
    if uses.feeds != len(feeds):
        raise NotFed("it calls `feed_input` inside a block or expression")
    outputs = [feed.output for feed in feeds]
    if len(set(outputs)) != len(outputs):
        raise NotFed(f"it feeds `self.{outputs[0]}` twice")
    if written & set(outputs):
        raise NotFed(f"it assigns `self.{sorted(written & set(outputs))[0]}`, an external source's output")
    returning = _returning(block, feeds)
    if handled is None:
        body = returning
    else:
        new_try = handled.with_changes(body=handled.body.with_changes(body=returning))
        body = [new_try if s is handled else s for s in body]
    function = method.with_changes(
        name=cst.Name(SOURCE_FUNCTION), params=cst.Parameters(),
        body=method.body.with_changes(body=body))
    return FedSources(feeds, function, written)


def with_nonlocals(function: cst.FunctionDef, names: set[str]) -> cst.FunctionDef:
    """``nonlocal`` for the graph's variables the source function assigns."""
    if not names:
        return function
    declaration = cst.SimpleStatementLine([cst.Nonlocal([cst.NameItem(cst.Name(n)) for n in sorted(names)])])
    body = list(function.body.body)
    return function.with_changes(body=function.body.with_changes(body=[declaration, *body]))
