"""``# TODO(dali-migrate): DMxxx ...`` comments above what the codemod leaves for a person."""

from __future__ import annotations

from dataclasses import dataclass

import libcst as cst

from ..analysis import FEED_NDARRAY, ModuleFacts, iterated_pipeline
from ..rules import Finding
from ..rules.dm010_framework_iterator import FrameworkIterator, iterator_name
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
                    graph_reasons: dict[int, list], warnings: list[Todo]) -> "TodoInserter":
        """``warnings``: TODOs on migrated code that a person should look at."""
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
