"""Functions that a graph calls to build part of itself (DM015).

Real pipelines share their processing between graphs::

    def augment(images, size):
        images = fn.resize(images, size=size)
        return fn.crop_mirror_normalize(images, dtype=types.FLOAT)

    @pipeline_def
    def train(root):
        jpegs, labels = fn.readers.file(file_root=root)
        return augment(fn.decoders.image(jpegs), 224), labels

Once ``train`` is a generator, ``augment`` gets Batches: its ``fn`` calls must become ``ndd``
calls too. That is done where every use of the helper is in a graph being migrated (or in
another such helper), and the helper holds only operators that give the same values called
from anywhere: no random operators (their RNG is the graph's), readers or sources, and no
subscripts (per sample inside a graph, not in a helper). Otherwise the graphs that call it stay
in pipeline mode, with a TODO: a migrated graph must never hand Batches to ``fn``.

The same holds for a function the graph itself defines (``def augment(images):`` at the top of
``train``'s body, or a helper method of a legacy ``Pipeline`` subclass), where no other function
of the module has its name; it sees the graph's RNG, so its random operators are allowed and
draw from it as the graph's own do (the plan counts them among the graph's calls).
"""

from __future__ import annotations

from dataclasses import dataclass

import libcst as cst

from ..visitors import Visitor, walk

from ..analysis import DaliCall, ModuleFacts
from ..rules.dm004_mixed_device import mixed_device_strings
from .places import node_ids


@dataclass
class Helper:
    function: cst.FunctionDef
    calls: list[DaliCall]
    subscripts: int = 0
    nested: bool = False  # defined by its graph, whose RNG and batch size it sees


def nested_functions(graph_function: cst.FunctionDef) -> list[cst.FunctionDef]:
    """The functions a graph defines at the top of its body."""
    return [s for s in graph_function.body.body if isinstance(s, cst.FunctionDef) and not s.decorators]


class _References(Visitor):
    """Each loaded name of ``names``, with the top-level function it stands in ("" outside)."""

    def __init__(self, names: set[str]) -> None:
        self.names = names
        self.where: list[str] = []
        self.found: dict[str, list[str]] = {}

    def visit_FunctionDef(self, node: cst.FunctionDef) -> None:
        self.where.append(node.name.value if not self.where else self.where[-1])

    def leave_FunctionDef(self, original_node: cst.FunctionDef) -> None:
        self.where.pop()

    def visit_Name(self, node: cst.Name) -> None:
        if node.value in self.names:
            self.found.setdefault(node.value, []).append(self.where[-1] if self.where else "")

    def visit_Import(self, node: cst.Import) -> bool:
        return False

    def visit_ImportFrom(self, node: cst.ImportFrom) -> bool:
        return False

    visit_LazyImport = visit_Import
    visit_LazyImportFrom = visit_ImportFrom


class _Subscripts(Visitor):
    def __init__(self) -> None:
        self.count = 0

    def visit_Subscript(self, node: cst.Subscript) -> None:
        self.count += 1


def _subscripts(function: cst.FunctionDef) -> int:
    counter = _Subscripts()
    walk(function, counter)
    return counter.count


def graph_helpers(facts: ModuleFacts) -> dict[str, Helper]:
    """Top-level functions, not graphs, that call DALI operators; and the functions a graph
    defines at the top of its body that do, where no other function has their name."""
    loose = [call for call in facts.calls if call.graph is None and call.qualname.startswith("nvidia.dali.fn.")]
    if not loose:
        return {}
    helpers = _top_level_helpers(facts, loose)
    nested = _nested_helpers(facts, loose)
    return {**helpers, **{name: helper for name, helper in nested.items()
                          if name not in helpers and name not in facts.module_functions}}


def _nested_helpers(facts: ModuleFacts, loose: list[DaliCall]) -> dict[str, Helper]:
    found: dict[str, list[Helper]] = {}
    for graph in (g for g in facts.graphs if g.kind == "decorator"):
        for function in nested_functions(graph.node):
            inside = node_ids(function)
            calls = [call for call in loose if id(call.node) in inside]
            if calls:
                found.setdefault(function.name.value, []).append(
                    Helper(function, calls, _subscripts(function), nested=True))
    return {name: helpers[0] for name, helpers in found.items() if len(helpers) == 1}


def _top_level_helpers(facts: ModuleFacts, loose: list[DaliCall]) -> dict[str, Helper]:
    graphs = {id(graph.node) for graph in facts.graphs}
    functions = {facts.top_level[id(defs[0])]: (name, defs[0]) for name, defs in facts.module_functions.items()
                 if len(defs) == 1 and id(defs[0]) not in graphs}
    calls_by_function: dict[str, list[DaliCall]] = {}
    for call in loose:  # the analysis knows the top-level statement of every node
        found = functions.get(facts.top_level[id(call.node)])
        if found is not None:
            calls_by_function.setdefault(found[0], []).append(call)
    return {name: Helper(facts.module_functions[name][0], calls, _subscripts(facts.module_functions[name][0]))
            for name, calls in calls_by_function.items()}


def _called(node: cst.CSTNode, names: set[str]) -> set[str]:
    references = _References(names)
    walk(node, references)
    return set(references.found)


def helpers_of(function: cst.FunctionDef, helpers: dict[str, Helper]) -> set[str]:
    """The helpers ``function`` uses, and those they use."""
    found: set[str] = set()
    todo = [function]
    while todo:
        new = _called(todo.pop(), set(helpers)) - found
        found |= new
        todo += [helpers[name].function for name in new]
    return found


def why_not(helper: Helper) -> str | None:
    """Why the helper's operators cannot simply become ndd calls, or None."""
    for call in helper.calls:
        op = call.op
        if op is None:
            return f"`{call.qualname}` is not in the op table"
        if (op.random and not helper.nested) or op.is_reader or op.fn in ("external_source", "python_function"):
            return f"it calls `fn.{op.fn}`, which must stay in the graph"
    if helper.subscripts:
        return "it subscripts its data (per sample in a graph); inline it into the graph"
    found = mixed_device_strings(helper.function, helper.calls)
    if found.strings:
        return "it gives a device variable \"mixed\"; write `device=\"mixed\"` where it is used"
    return None


@dataclass
class HelperUses:
    """The module's graph helpers, why each cannot be migrated (None if it can), and the
    top-level functions that use each: found once, before the plans settle."""

    helpers: dict[str, Helper]
    reasons: dict[str, str | None]
    users: dict[str, set[str]]


def find_helpers(facts: ModuleFacts, module: cst.Module) -> HelperUses | None:
    helpers = graph_helpers(facts)
    if not helpers:
        return None
    references = _References(set(helpers))
    walk(module, references)
    return HelperUses(helpers, {name: why_not(helper) for name, helper in helpers.items()},
                      {name: set(found) for name, found in references.found.items()})


def plan_helpers(plans: list, uses: HelperUses | None) -> dict[str, Helper]:
    """Blocks the plans whose helpers cannot be migrated with them; returns the helpers that
    are (by name). A helper is migrated when all graphs and helpers that use it are."""
    if uses is None:
        return {}
    for plan in plans:
        plan.helpers = helpers_of(plan.function, uses.helpers)
    while True:
        migrated_graphs = {p.graph.name for p in plans if p.migratable}
        usable = {name for name in set().union(*(p.helpers for p in plans if p.migratable))
                  if uses.reasons[name] is None}
        blocked = False
        for plan in [p for p in plans if p.migratable]:
            for name in sorted(plan.helpers):
                reason = uses.reasons[name]
                users = uses.users.get(name, set())
                if reason is None and not users <= migrated_graphs | usable:
                    outside = sorted(users - migrated_graphs - usable)[0] or "module-level code"
                    reason = f"`{outside}` uses it too, and stays in pipeline mode"
                if reason is not None:
                    plan.block("DM015", plan.function, f"`{name}()` builds part of the graph with `fn`: {reason}")
                    blocked = True
                    break
        if not blocked:
            return {name: uses.helpers[name] for name in usable}
