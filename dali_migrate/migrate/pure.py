"""Expressions that may be evaluated a second time with the same result.

A pipeline's argument is sometimes needed twice after migration: a computed seed
(``seed=12 + device_id``) at the call site, a reader's arguments where its metadata is read.
Copying an expression is safe when evaluating it again gives the same value and does
nothing else: names, attributes, literals, f-strings, operators, subscripts and a few
built-in or library functions that only compute (``len``, ``os.path.join``,
``torch.cuda.device_count``). A call to anything else may have effects, and is not copied.
"""

from __future__ import annotations

import libcst as cst

from ..imports import dotted_name
from ..visitors import Transformer
from .ops import NotALiteral, literal_value
from .places import MadeNodes

PURE_FUNCTIONS = frozenset({
    "len", "int", "float", "str", "bool", "min", "max", "abs", "round", "sorted", "tuple", "list",
    "os.path.join", "os.path.expanduser", "os.path.dirname", "os.path.basename", "os.getenv",
    "os.environ.get", "torch.cuda.device_count", "dist.get_rank", "dist.get_world_size",
    "torch.distributed.get_rank", "torch.distributed.get_world_size",
})
LITERALS = (cst.Integer, cst.Float, cst.Imaginary, cst.SimpleString)
OPERATIONS = (cst.BinaryOperation, cst.BooleanOperation, cst.Comparison, cst.IfExp, cst.UnaryOperation)


def evaluates_the_same_twice(node: cst.BaseExpression) -> bool:
    if isinstance(node, (cst.Name, *LITERALS)):
        return True
    if isinstance(node, cst.Attribute):
        return evaluates_the_same_twice(node.value)
    if isinstance(node, cst.ConcatenatedString):
        return evaluates_the_same_twice(node.left) and evaluates_the_same_twice(node.right)
    if isinstance(node, cst.FormattedString):
        return all(evaluates_the_same_twice(part.expression) for part in node.parts
                   if isinstance(part, cst.FormattedStringExpression))
    if isinstance(node, (cst.Tuple, cst.List)):
        return all(isinstance(e, cst.Element) and evaluates_the_same_twice(e.value) for e in node.elements)
    if isinstance(node, cst.Subscript):
        return evaluates_the_same_twice(node.value) and all(
            isinstance(s.slice, cst.Index) and evaluates_the_same_twice(s.slice.value) for s in node.slice)
    if isinstance(node, cst.Call):
        return dotted_name(node.func) in PURE_FUNCTIONS and all(
            not a.star and evaluates_the_same_twice(a.value) for a in node.args)
    if isinstance(node, cst.Comparison):
        return evaluates_the_same_twice(node.left) and all(
            evaluates_the_same_twice(target.comparator) for target in node.comparisons)
    if isinstance(node, OPERATIONS):
        return all(evaluates_the_same_twice(child) for child in node.children
                   if isinstance(child, cst.BaseExpression))
    return False


def grouped(node: cst.BaseExpression) -> cst.BaseExpression:
    """``node`` in parentheses when an operator inside it could bind to its new neighbours."""
    if isinstance(node, OPERATIONS) and not node.lpar:
        return node.with_changes(lpar=[cst.LeftParen()], rpar=[cst.RightParen()])
    return node


class Substitution(Transformer):
    """Puts copied expressions in place of variables. ``x.name`` and ``f(name=...)`` hold no
    variable; an operator goes in parentheses (``grouped``), except as a whole argument."""

    def __init__(self) -> None:
        super().__init__()
        self.not_variables: set[int] = set()
        self.grouped = MadeNodes()  # parenthesized here -> as copied

    def visit_Attribute(self, node: cst.Attribute) -> None:
        self.not_variables.add(id(node.attr))

    def visit_Arg(self, node: cst.Arg) -> None:
        if node.keyword is not None:
            self.not_variables.add(id(node.keyword))

    def leave_Arg(self, original_node: cst.Arg, updated_node: cst.Arg) -> cst.Arg:
        copied = self.grouped.get(updated_node.value)
        return updated_node if copied is None else updated_node.with_changes(value=copied)

    def is_variable(self, node: cst.Name) -> bool:
        return id(node) not in self.not_variables

    def copy_of(self, value: cst.BaseExpression) -> cst.BaseExpression:
        grouped_value = grouped(value)
        if grouped_value is not value:
            self.grouped.add(grouped_value, value)
        return grouped_value


_UNKNOWN = object()


def _literal_value(node: cst.BaseExpression) -> object:
    """The value of ``None``/``True``/``False``, an integer or a plain string; else _UNKNOWN."""
    try:
        return literal_value(node)
    except NotALiteral:
        return _UNKNOWN


def _in_place_of(node: cst.BaseExpression, kept: cst.BaseExpression) -> cst.BaseExpression:
    """``kept`` standing where ``node`` stood: a literal needs no parentheses, anything else
    keeps the ones ``node`` had (it binds at least as tightly as the operation it replaces)."""
    if _literal_value(kept) is not _UNKNOWN:
        return kept.with_changes(lpar=[], rpar=[])
    return kept.with_changes(lpar=node.lpar, rpar=node.rpar) if node.lpar else kept


class _Folding(Transformer):
    def leave_IfExp(self, original_node: cst.IfExp, updated_node: cst.IfExp) -> cst.BaseExpression:
        test = _literal_value(updated_node.test)
        if test is _UNKNOWN:
            return updated_node
        return _in_place_of(updated_node, updated_node.body if test else updated_node.orelse)

    def leave_BooleanOperation(self, original_node: cst.BooleanOperation,
                               updated_node: cst.BooleanOperation) -> cst.BaseExpression:
        left = _literal_value(updated_node.left)
        if left is _UNKNOWN:
            return updated_node
        takes_left = bool(left) == isinstance(updated_node.operator, cst.Or)
        return _in_place_of(updated_node, updated_node.left if takes_left else updated_node.right)

    def leave_BinaryOperation(self, original_node: cst.BinaryOperation,
                              updated_node: cst.BinaryOperation) -> cst.BaseExpression:
        left, right = _literal_value(updated_node.left), _literal_value(updated_node.right)
        operations = {cst.Add: int.__add__, cst.Subtract: int.__sub__, cst.Multiply: int.__mul__}
        operation = operations.get(type(updated_node.operator))
        if operation is None or not all(type(value) is int for value in (left, right)):
            return updated_node
        value = operation(left, right)
        literal = cst.Integer(str(value)) if value >= 0 else cst.UnaryOperation(cst.Minus(), cst.Integer(str(-value)))
        return _in_place_of(updated_node, literal)


def folded(node: cst.BaseExpression) -> cst.BaseExpression:
    """``node`` with what its literals decide worked out: ``12 + None if None else 12`` is
    ``12``, ``12 + (None or 0)`` is ``12``. For expressions the migration computed by putting
    a call's arguments in place of parameters (``seed=12 + device_id``)."""
    return node.visit(_Folding())
