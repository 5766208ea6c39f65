"""``# TODO(dali-migrate): DMxxx ...`` comments above what the codemod leaves for a person."""

from __future__ import annotations

from dataclasses import dataclass

import libcst as cst

from ..analysis import FEED_NDARRAY, ModuleFacts, iterated_pipeline
from ..imports import dotted_name
from ..rules import Finding
from ..rules.dm010_framework_iterator import FrameworkIterator, iterator_name
from .names import variable_name_nodes
from .places import node_ids
from .plan import NOT_FOLLOWED, PipelinePlan

TODO_PREFIX = "# TODO(dali-migrate):"
TODO_CONTINUATION = "#   "  # the lines of a TODO that migrate wrapped to the line length
STATEMENT_TYPES = (cst.SimpleStatementLine, cst.BaseCompoundStatement)


@dataclass(frozen=True)
class Todo:
    code: str
    message: str
    node: cst.CSTNode  # a node of the original module, for its position

    @property
    def comment(self) -> str:
        return f"{TODO_PREFIX} {self.code} {self.message}"


KEPT = "kept in pipeline mode"


def _not_migrated(plan: PipelinePlan) -> str:
    """Kept on purpose (the audit, a ``noqa``, a use that needs the graph: Triton
    serialization): a re-run would keep it again, whatever else is fixed."""
    if any(KEPT in b.message or NOT_FOLLOWED in b.message for b in plan.blockers):
        return f"`{plan.graph.name}` was not migrated: see the reason below"
    return f"`{plan.graph.name}` was not migrated: fix the TODOs below, then re-run dali-migrate"


def _staying_uses(facts: ModuleFacts, plans: list[PipelinePlan]) -> dict[int, tuple[str | None, str]]:
    """id(node) -> (what to say instead of the finding's message, or None; why it stays), for
    the method calls and output uses of pipelines kept for a reason outside them (Triton, a
    framework that runs the graph), and every framework iterator this run does not migrate."""
    kept = {var: plan.graph.name for plan in plans if not plan.migratable
            and any(KEPT in b.message for b in plan.blockers) for var in plan.pipe_vars}
    migrated = {var for plan in plans if plan.migratable for var in plan.pipe_vars}
    sites = [*facts.pipeline_method_calls, *facts.tensorlist_uses]
    uses = {id(site.node): (None, f"`{kept[site.origin]}` is {KEPT}") for site in sites if site.origin in kept}
    for site in facts.iterator_uses:
        # DM010's advice is how to iterate the migrated pipeline: there is none
        plain = f"{FrameworkIterator.message}: {iterator_name(site)}"
        pipeline = iterated_pipeline(site.node)
        key = facts.key_of(pipeline)
        if key in kept:  # ``DALIClassificationIterator(pipe, ...)`` over a kept ``pipe``
            uses[id(site.node)] = (plain, f"`{kept[key]}` is {KEPT}")
        elif key not in migrated and isinstance(pipeline, (cst.Name, cst.Attribute)):  # a parameter, say
            given = cst.Module([]).code_for_node(pipeline)
            if site.name == FEED_NDARRAY:
                uses[id(site.node)] = (None, f"`{given}` is not an output this run follows to its pipeline")
                continue
            uses[id(site.node)] = (plain, f"`{given}` is not a pipeline this run migrates; once the pipelines it "
                                          "is given are migrated, loop over their generator instead")
    return uses


def _kept_graph_code(module: cst.Module, facts: ModuleFacts,
                     plans: list[PipelinePlan]) -> dict[int, tuple[None, str]]:
    """id(node) -> (None, why it stays), for the code of graphs that stay in pipeline mode: a
    kept legacy class (its other methods, its in-module pipeline base classes) or a blocked
    ``@pipeline_def`` function, and the module functions that only such code calls. Their
    ``fn.*`` calls are the kept pipeline's; advice to write ``ndd.*`` there would break it."""
    owners: dict[int, set[str]] = {}  # id(node) -> the kept pipelines whose code it is
    for name, roots in _kept_graph_roots(facts, plans).items():
        for root in roots:
            for node_id in node_ids(root):
                owners.setdefault(node_id, set()).add(name)
    if not owners:
        return {}
    for function, users in _functions_only_kept_code_calls(module, facts, owners).items():
        for node_id in node_ids(function):
            owners.setdefault(node_id, set()).update(users)
    return {node_id: (None, _kept_by(names)) for node_id, names in owners.items()}


def _kept_by(names: set[str]) -> str:
    quoted = [f"`{name}`" for name in sorted(names)]
    spelled = quoted[0] if len(quoted) == 1 else f"{', '.join(quoted[:-1])} and {quoted[-1]}"
    return f"{spelled} {'is' if len(names) == 1 else 'are'} {KEPT}"


def _kept_graph_roots(facts: ModuleFacts, plans: list[PipelinePlan]) -> dict[str, list[cst.CSTNode]]:
    """Kept pipeline -> the statements that hold its graph code."""
    roots: dict[str, list[cst.CSTNode]] = {p.graph.name: [p.function] for p in plans
                                           if not p.migratable and not p.imported}
    classes = {id(c): c for found in facts.module_classes.values() for c in found}
    for graph in facts.graphs:
        if graph.kind != "define_graph":
            continue
        owner = next((c for c in classes.values() if any(s is graph.node for s in c.body.body)), None)
        if owner is not None:
            roots[owner.name.value] = [owner, *_pipeline_bases(owner, facts)]
    return roots


def _pipeline_bases(node: cst.ClassDef, facts: ModuleFacts) -> list[cst.ClassDef]:
    """The pipeline classes of this module that ``node`` derives from, at any depth."""
    found: list[cst.ClassDef] = []
    pending = [node]
    while pending:
        for base in pending.pop().bases:
            name = dotted_name(base.value)
            for parent in facts.module_classes.get(name or "", []) if name in facts.pipeline_classes else []:
                if all(parent is not seen for seen in found):
                    found.append(parent)
                    pending.append(parent)
    return found


def _functions_only_kept_code_calls(module: cst.Module, facts: ModuleFacts,
                                    owners: dict[int, set[str]]) -> dict[cst.FunctionDef, set[str]]:
    """Module functions read only inside kept graph code (``random_augmentation`` called from a
    kept class's method) -> the kept pipelines that call them."""
    candidates = {name: found[0] for name, found in facts.module_functions.items()
                  if len(found) == 1 and id(found[0]) not in owners}
    if not candidates:
        return {}
    users: dict[str, set[str]] = {}
    elsewhere: set[str] = set()
    definitions = {id(function.name) for function in candidates.values()}
    for name in variable_name_nodes(module):  # ``fn.flip`` and ``f(flip=...)`` read no function ``flip``
        if name.value not in candidates or id(name) in definitions:
            continue
        if id(name) in owners:
            users.setdefault(name.value, set()).update(owners[id(name)])
        else:
            elsewhere.add(name.value)
    return {candidates[name]: kept for name, kept in users.items() if name not in elsewhere}


def _staying(message: str, use: tuple[str | None, str] | None) -> str:
    if use is None:
        return message
    instead, why = use
    return f"{instead or message} (it stays: {why})"


def _comment_texts(lines) -> list[str]:
    """The comments above a statement, a wrapped TODO joined back into one line."""
    texts: list[str] = []
    for line in lines:
        if line.comment is None:
            continue
        value = line.comment.value
        if value.startswith(TODO_CONTINUATION) and texts and texts[-1].startswith(TODO_PREFIX):
            texts[-1] += " " + value[len(TODO_CONTINUATION):]
        else:
            texts.append(value)
    return texts


class TodoInserter:
    """Collects TODOs by node and writes each above the innermost statement that holds it."""

    def __init__(self, todos: list[Todo]) -> None:
        self.by_node: dict[int, list[Todo]] = {}
        for todo in todos:
            self.by_node.setdefault(id(todo.node), []).append(todo)
        self.stack: list[cst.CSTNode] = []
        self.pending: dict[int, list[Todo]] = {}
        self.placed: list[Todo] = []

    @classmethod
    def for_unfixed(cls, facts: ModuleFacts, plans: list[PipelinePlan], unfixed: list[Finding],
                    graph_reasons: dict[int, list], warnings: list[Todo],
                    module: cst.Module | None = None) -> "TodoInserter":
        """``warnings``: TODOs on migrated code that a person should look at. ``module``: where
        the functions that only kept graphs call are found (their findings say they stay)."""
        todos: list[Todo] = list(warnings)
        hidden: set[int] = set()
        blocked = {id(p.function): p for p in plans if not p.migratable}
        for graph in facts.graphs:
            if graph.kind != "decorator" or id(graph.node) in blocked:
                hidden |= node_ids(graph.node)
        for plan in blocked.values():
            todos.append(Todo("DM001", _not_migrated(plan), plan.function))
            todos += [Todo(b.code, b.message, b.node) for b in plan.blockers]
        for graph in facts.graphs:
            if graph.kind != "decorator":
                # the reasons say what to do; the generic line only where there is none
                reasons = graph_reasons.get(id(graph.node), [])
                todos += [Todo(b.code, b.message, graph.node) for b in reasons] or [
                    Todo("DM002", "graph not migrated automatically: rewrite it as a generator of ndd calls", graph.node)]
        explained = {(t.code, id(t.node)) for t in todos}  # a blocker says more than the finding
        staying = _staying_uses(facts, plans)
        if module is not None:
            staying = {**_kept_graph_code(module, facts, plans), **staying}
        todos += [Todo(f.code, _staying(f.message, staying.get(id(f.node))), f.node) for f in unfixed
                  if id(f.node) not in hidden and (f.code, id(f.node)) not in explained]
        return cls(todos)

    def enter(self, node: cst.CSTNode) -> None:
        if isinstance(node, STATEMENT_TYPES):
            self.stack.append(node)
        todos = self.by_node.get(id(node))
        if todos and self.stack:
            self.pending.setdefault(id(self.stack[-1]), []).extend(todos)

    def leave(self, original: cst.CSTNode, result):
        if not isinstance(original, STATEMENT_TYPES):
            return result
        self.stack.pop()
        todos = self.pending.pop(id(original), [])
        if todos and isinstance(result, cst.FlattenSentinel) and isinstance(result.nodes[0], STATEMENT_TYPES):
            # a statement that became several: the TODOs go above the first
            return cst.FlattenSentinel([self._with_todos(result.nodes[0], todos), *result.nodes[1:]])
        if not todos or not isinstance(result, STATEMENT_TYPES):
            return result
        return self._with_todos(result, todos)

    def _with_todos(self, statement, todos: list[Todo]):
        present = set(_comment_texts(statement.leading_lines))
        new_lines = []
        for todo in todos:
            if todo.comment not in present and todo.comment not in {l.comment.value for l in new_lines}:
                new_lines.append(cst.EmptyLine(indent=True, comment=cst.Comment(todo.comment)))
            self.placed.append(todo)
        if not new_lines:
            return statement
        return statement.with_changes(leading_lines=[*statement.leading_lines, *new_lines])
