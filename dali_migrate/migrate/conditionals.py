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
    ids = node_ids(statement)
    for call in calls:
        if id(call.node) not in ids:
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
    # a variable that only the branches assign has no sample to pass in
    inputs = sorted((names.loaded | set(outputs)) & tests.graph.datanodes & scope_names(before).bound)
    return PerSampleIf(statement, inputs, outputs, {id(test) for test in inside.tests})


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


def per_sample_statements(planned: PerSampleIf, migrated: cst.If, function_name: str,
                          ndd_alias: str) -> list[cst.BaseStatement]:
    """The function that runs ``migrated`` for one sample, and the statement that runs it for
    every sample and batches the results."""
    returned = ", ".join(planned.outputs)
    header = cst.parse_statement(f"def {function_name}({', '.join(planned.inputs)}):  # one sample\n    pass\n")
    body = [migrated.with_changes(leading_lines=[]), cst.parse_statement(f"return {returned}\n")]
    definition = header.with_changes(body=header.body.with_changes(body=body), leading_lines=migrated.leading_lines)
    samples = f"[{function_name}(*sample) for sample in zip({', '.join(planned.inputs)})]"
    if len(planned.outputs) == 1:
        return [definition, cst.parse_statement(f"{returned} = {ndd_alias}.batch({samples})\n")]
    results = f"{function_name}_results"
    return [definition, cst.parse_statement(f"{results} = {samples}\n"),
            cst.parse_statement(f"{returned} = ({ndd_alias}.batch(list(outputs)) for outputs in zip(*{results}))\n")]
