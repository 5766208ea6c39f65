"""``enable_conditionals=True``: ``if`` statements on DataNodes, run per sample (DM011).

In pipeline mode such an ``if`` splits the batch: each sample takes its own branch, and the
variables the branches assign are merged back into one batch. A Python ``if`` on an ndd Batch
would decide once for the whole batch, and an ndd Tensor has no truth value of its own (``bool()``
of a False Tensor is True: measured on DALI 2.4). So the statement becomes a function that runs
it for one sample, with each condition read as a NumPy value, and a comprehension over the
samples that batches what it returns::

    if brightness > 100:                     def per_sample_if(brightness, images):
        images = fn.flip(images, vertical=1)      if bool(np.asarray(brightness > 100)):
                                                      images = ndd.flip(images, vertical=1)
                                                  return images
                                             images = ndd.batch([per_sample_if(*sample)
                                                                 for sample in zip(brightness, images)])

Operators give the same values on one sample as on a batch, so this is exact, but for random
operators inside a branch: pipeline mode draws for the samples that take the branch, which no
ndd call reproduces. Those, and conditionals on GPU data, are left for a person.

The condition of the ``if`` itself is computed for the whole batch before the batch is split,
so a random operator there (``if fn.random.coin_flip(probability=0.5):``, DALI's conditionals
tutorial) draws for every sample. Such a condition is computed for the batch before the
function, as pipeline mode did, and each sample's value is passed in (``condition``). Not when
the condition holds ``and``/``or``/``x if c else y``: those decide per sample whether their
other operand is computed at all.
"""

from __future__ import annotations

from dataclasses import dataclass, field

import libcst as cst

from ..visitors import Visitor, walk

from ..analysis import DaliCall, Graph
from .names import ScopeNames, scope_names
from .places import node_ids
from .ops import keyword_values


class NotMigratable(Exception):
    """Why the conditionals of a graph are left for a person; the message ends up in a TODO."""


@dataclass
class PerSampleIf:
    statement: cst.If  # a top-level statement of the graph
    inputs: list[str]  # DataNodes it reads: one sample of each is passed in
    outputs: list[str]  # what it assigns that later statements read
    tests: set[int] = field(default_factory=set)  # id() of every per-sample condition inside
    # the nodes of the ``if``'s own condition when it holds a random operator: it is computed
    # for the batch first (empty otherwise)
    batch_condition: set[int] = field(default_factory=set)


def _datanode_names(node: cst.CSTNode, graph: Graph) -> set[str]:
    return scope_names([node]).loaded & graph.datanodes


# builtins that answer a plain bool about any object, a DataNode included
_PREDICATES = frozenset({"isinstance", "issubclass", "hasattr", "callable"})


def _truth_names(test: cst.BaseExpression, graph: Graph) -> set[str]:
    """DataNodes whose truth value a condition asks for: ``x is None`` / ``x is not None`` and
    ``isinstance(x, list)`` ask none (they work on a DataNode in pipeline mode, conditionals or
    not)."""
    if isinstance(test, cst.Call) and isinstance(test.func, cst.Name) and test.func.value in _PREDICATES:
        return set()
    if isinstance(test, cst.BooleanOperation):
        return _truth_names(test.left, graph) | _truth_names(test.right, graph)
    if isinstance(test, cst.UnaryOperation) and isinstance(test.operator, cst.Not):
        return _truth_names(test.expression, graph)
    if isinstance(test, cst.Comparison) and all(
            isinstance(c.operator, (cst.Is, cst.IsNot)) for c in test.comparisons):
        return set()
    return _datanode_names(test, graph)


class _Tests:
    """Whether a condition is decided per sample: it reads a DataNode or calls an operator."""

    def __init__(self, graph: Graph, calls: list[DaliCall]) -> None:
        self.graph = graph
        self.calls = {id(call.node) for call in calls}

    def per_sample(self, test: cst.BaseExpression) -> bool:
        return bool(_truth_names(test, self.graph)) or bool(node_ids(test) & self.calls)


class _Inside(Visitor):
    """What a per-sample ``if`` holds that matters: its conditions and any ``return``."""

    def __init__(self, tests: _Tests) -> None:
        self.is_per_sample = tests.per_sample
        self.tests: list[cst.BaseExpression] = []
        self.returns = False

    def visit_If(self, node: cst.If) -> None:
        if self.is_per_sample(node.test):
            self.tests.append(node.test)

    def visit_Return(self, node: cst.Return) -> None:
        self.returns = True

    def visit_FunctionDef(self, node: cst.FunctionDef) -> bool:
        return False


class _Elsewhere(Visitor):
    """One walk over the graph outside its top-level per-sample ``if`` statements: an ``if`` or
    ``while`` on DataNodes there, or ``and``/``or``/``not``/``x if c else y`` on them, would be
    decided once for the whole Batch."""

    def __init__(self, tests: _Tests, per_sample_ifs: set[int]) -> None:
        self.tests = tests
        self.per_sample_ifs = per_sample_ifs

    def visit_If(self, node: cst.If) -> bool:
        if id(node) in self.per_sample_ifs:
            return False  # planned in _plan_if, run per sample
        if self.tests.per_sample(node.test):
            raise NotMigratable("an `if` on a DataNode nested in another statement: move it to the top "
                                "level of the graph")
        return True

    def visit_While(self, node: cst.While) -> None:
        if self.tests.per_sample(node.test):
            raise NotMigratable("a `while` on a DataNode")

    def _check(self, node: cst.CSTNode, what: str) -> None:
        if _truth_names(node, self.tests.graph):
            raise NotMigratable(f"`{what}` on DataNodes outside an `if` test: use `&`, `|`, `~` (per "
                                "sample in both modes) or an `if` statement")

    def visit_BooleanOperation(self, node: cst.BooleanOperation) -> None:
        self._check(node, "and`/`or")

    def visit_UnaryOperation(self, node: cst.UnaryOperation) -> None:
        if isinstance(node.operator, cst.Not):
            self._check(node, "not")

    def visit_IfExp(self, node: cst.IfExp) -> None:
        self._check(node.test, "x if c else y")


def plan_conditionals(function: cst.FunctionDef, graph: Graph, calls: list[DaliCall]) -> list[PerSampleIf]:
    """The graph's top-level ``if`` statements on DataNodes; NotMigratable says what a person must do."""
    tests = _Tests(graph, calls)
    body = list(function.body.body)
    tops = {index for index, statement in enumerate(body)
            if isinstance(statement, cst.If) and tests.per_sample(statement.test)}
    walk(function.body, _Elsewhere(tests, {id(body[index]) for index in tops}))
    return [_plan_if(body[index], body[:index], body[index + 1:], tests, calls) for index in sorted(tops)]


def _plan_if(statement: cst.If, before: list[cst.BaseStatement], after: list[cst.BaseStatement], tests: _Tests,
             calls: list[DaliCall]) -> PerSampleIf:
    inside = _Inside(tests)
    walk(statement, inside)
    if inside.returns:
        raise NotMigratable("`return` inside a per-sample `if`: assign the value and return after the `if`")
    batch_condition = node_ids(statement.test) if _draws_for_every_sample(statement.test, calls) else set()
    ids = node_ids(statement)
    for call in calls:
        if id(call.node) not in ids or id(call.node) in batch_condition:
            continue
        if call.op is not None and (call.op.random or call.op.is_reader or call.op.fn == "external_source"):
            raise NotMigratable(f"`fn.{call.op.fn}` inside a per-sample `if`: pipeline mode draws only for "
                                "the samples that take the branch; draw for the whole batch before the `if` "
                                "and use the result inside")
        device = keyword_values(call.node).get("device")
        if isinstance(device, cst.SimpleString) and device.evaluated_value in ("gpu", "mixed"):
            raise NotMigratable("a per-sample `if` on GPU data")
    names: ScopeNames = scope_names([statement])
    read_later = scope_names(after).loaded
    outputs = sorted(names.bound & read_later)
    if not outputs:
        raise NotMigratable("the `if` assigns nothing that the graph uses later")
    if batch_condition:  # what only the condition reads is not passed in: the condition's value is
        names = scope_names([statement.body, *([statement.orelse] if statement.orelse else [])])
    # a variable that only the branches assign has no sample to pass in
    inputs = sorted((names.loaded | set(outputs)) & tests.graph.datanodes & scope_names(before).bound)
    per_sample_tests = {id(test) for test in inside.tests} - batch_condition  # the condition itself
    return PerSampleIf(statement, inputs, outputs, per_sample_tests, batch_condition)


class _ShortCircuits(Visitor):
    found = False

    def visit_BooleanOperation(self, node: cst.BooleanOperation) -> None:
        self.found = True

    def visit_IfExp(self, node: cst.IfExp) -> None:
        self.found = True


def _draws_for_every_sample(test: cst.BaseExpression, calls: list[DaliCall]) -> bool:
    """The condition calls a random operator and computes all of itself for every sample."""
    ids = node_ids(test)
    if not any(id(call.node) in ids and call.op is not None and call.op.random for call in calls):
        return False
    short_circuits = _ShortCircuits()
    walk(test, short_circuits)
    return not short_circuits.found


def per_sample_test(test: cst.BaseExpression, numpy_alias: str) -> cst.BaseExpression:
    """``a > 0 and not b`` -> ``bool(np.asarray(a > 0)) and not bool(np.asarray(b))``."""
    if isinstance(test, cst.BooleanOperation):
        return test.with_changes(left=per_sample_test(test.left, numpy_alias),
                                 right=per_sample_test(test.right, numpy_alias))
    if isinstance(test, cst.UnaryOperation) and isinstance(test.operator, cst.Not):
        return test.with_changes(expression=per_sample_test(test.expression, numpy_alias))
    inner = test.with_changes(lpar=[], rpar=[]) if test.lpar else test
    asarray = cst.Call(func=cst.parse_expression(f"{numpy_alias}.asarray"), args=[cst.Arg(inner)])
    return cst.Call(func=cst.Name("bool"), args=[cst.Arg(asarray)])


def per_sample_statements(planned: PerSampleIf, migrated: cst.If, function_name: str, ndd_alias: str,
                          condition: tuple[str, cst.BaseExpression] | None = None) -> list[cst.BaseStatement]:
    """The function that runs ``migrated`` for one sample, and the statement that runs it for
    every sample and batches the results. ``condition``: the name and the batch value of a
    condition computed before the function (``planned.batch_condition``); ``migrated`` tests
    that name already."""
    inputs = [condition[0], *planned.inputs] if condition else planned.inputs
    returned = ", ".join(planned.outputs)
    header = cst.parse_statement(f"def {function_name}({', '.join(inputs)}):  # one sample\n    pass\n")
    body = [migrated.with_changes(leading_lines=[]), cst.parse_statement(f"return {returned}\n")]
    definition = header.with_changes(body=header.body.with_changes(body=body), leading_lines=migrated.leading_lines)
    before = []
    if condition is not None:
        assignment = cst.Assign([cst.AssignTarget(cst.Name(condition[0]))], condition[1])
        before = [cst.SimpleStatementLine([assignment], leading_lines=migrated.leading_lines)]
        definition = definition.with_changes(leading_lines=[])
    samples = f"[{function_name}(*sample) for sample in zip({', '.join(inputs)})]"
    if len(planned.outputs) == 1:
        return [*before, definition, cst.parse_statement(f"{returned} = {ndd_alias}.batch({samples})\n")]
    results = f"{function_name}_results"
    return [*before, definition, cst.parse_statement(f"{results} = {samples}\n"),
            cst.parse_statement(f"{returned} = ({ndd_alias}.batch(list(outputs)) for outputs in zip(*{results}))\n")]
