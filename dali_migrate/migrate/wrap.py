"""Lines the migration wrote that are longer than the project's line length, wrapped the way
black wraps them.

Only statements that hold a line which is new or changed (compared with the original file) and
too long are touched; the user's own long lines stay. The split is black's right-hand split: the
last bracket pair of a statement's call chain (or a ``def``'s parameters) opens, its contents go
on one indented line when they fit there, one per line with a trailing comma when they do not,
and an argument that is still too long is split the same way. A statement with a comment inside
its brackets, or a string that spans lines, is left as it is: rewriting its whitespace would
move or drop what the user wrote.
"""

from __future__ import annotations

import ast
import difflib
import textwrap
from dataclasses import dataclass

import libcst as cst

from .todo import TODO_CONTINUATION, TODO_PREFIX

DEFAULT_LINE_LENGTH = 88


def wrap_long_lines(original: bytes, migrated: cst.Module, limit: int = DEFAULT_LINE_LENGTH,
                    migrated_bytes: bytes | None = None) -> bytes:
    """The migrated module's bytes (``migrated_bytes`` where they are made already), its
    written lines wrapped. Statements are found by the line numbers CPython's ``ast`` gives,
    walked beside the LibCST tree: no second LibCST parse and no position metadata, which would
    cost more than the migration itself."""
    data = _wrapped_code(original, migrated, limit, migrated.bytes if migrated_bytes is None else migrated_bytes)
    return _wrapped_todos(data, _long_written_lines(original, data, limit), limit, migrated.encoding)


def _wrapped_todos(data: bytes, lines: set[int], limit: int, encoding: str) -> bytes:
    """Each long TODO comment the migration wrote, over as many comment lines as it takes
    (``todo.py`` joins them back when it looks for a TODO it wrote before)."""
    if not lines:
        return data
    text = data.decode(encoding)
    out = []
    for number, line in enumerate(text.splitlines(keepends=True), 1):
        body = line.rstrip("\r\n")
        stripped = body.lstrip()
        if number not in lines or not stripped.startswith(TODO_PREFIX):
            out.append(line)
            continue
        indent, ending = body[: len(body) - len(stripped)], line[len(body):] or "\n"
        pieces = textwrap.wrap(stripped, width=max(limit - len(indent), 40), subsequent_indent=TODO_CONTINUATION,
                               break_long_words=False, break_on_hyphens=False)
        out += [f"{indent}{piece}{ending}" for piece in pieces]
        if not line.endswith(("\n", "\r")):
            out[-1] = out[-1][: -len(ending)]
    return "".join(out).encode(encoding)


def _wrapped_code(original: bytes, migrated: cst.Module, limit: int, data: bytes) -> bytes:
    lines = _long_written_lines(original, data, limit)
    if not lines:
        return data
    text = data.decode(migrated.encoding, "replace").splitlines()
    try:
        tree = ast.parse(data)
    except (SyntaxError, ValueError):
        return data
    unit = migrated.default_indent if migrated.default_indent.strip(" ") == "" else "    "
    walker = _Walker(lines, _Layout(limit, unit), migrated, text)
    try:
        return migrated.with_changes(body=walker.block(migrated.body, tree.body)).bytes
    except Exception:  # noqa: BLE001 - only the layout is at stake: the code stays as migrated
        return data


def _long_written_lines(original: bytes, migrated: bytes, limit: int) -> set[int]:
    """1-based numbers of the migrated file's lines that are new or changed and too long."""
    old = original.decode("utf-8", "replace").splitlines()
    new = migrated.decode("utf-8", "replace").splitlines()
    matcher = difflib.SequenceMatcher(None, old, new, autojunk=False)
    written = set()
    for tag, _, _, start, end in matcher.get_opcodes():
        if tag in ("replace", "insert"):
            written.update(n for n in range(start, end) if len(new[n]) > limit)
    return {n + 1 for n in written}


@dataclass(frozen=True)
class _Layout:
    limit: int
    unit: str  # one level of indentation

    def indent(self, base: int, level: int) -> int:
        return base + level * len(self.unit)


class _Mismatch(Exception):
    """The two trees disagree (never expected): the module is left unwrapped."""



class _Walker:
    """Each block of the LibCST tree beside the same block of the ``ast`` tree; only statements
    whose lines hold a written long line are rebuilt."""

    def __init__(self, lines: set[int], layout: _Layout, module: cst.Module, text: list[str]) -> None:
        self.lines, self.layout, self.module, self.text = lines, layout, module, text

    def _touches(self, first: int, last: int) -> bool:
        return any(first <= line <= last for line in self.lines)

    def _column(self, line: int) -> int:
        source = self.text[line - 1]
        return len(source) - len(source.lstrip())

    def block(self, statements, nodes: list[ast.stmt]) -> list:
        new, index = [], 0
        for statement in statements:
            if isinstance(statement, cst.SimpleStatementLine):
                span = nodes[index: index + len(statement.body)]
                index += len(statement.body)
                if len(span) != len(statement.body):
                    raise _Mismatch
                new.append(self._simple(statement, span))
            else:
                if index >= len(nodes):
                    raise _Mismatch
                new.append(self._compound(statement, nodes[index]))
                index += 1
        return new

    def _body(self, suite: cst.BaseSuite, nodes: list[ast.stmt]) -> cst.BaseSuite:
        if not isinstance(suite, cst.IndentedBlock):  # ``if x: a`` on one line
            return suite
        return suite.with_changes(body=self.block(suite.body, nodes))

    def _simple(self, statement: cst.SimpleStatementLine, span: list[ast.stmt]) -> cst.SimpleStatementLine:
        first, last = span[0].lineno, max(node.end_lineno or node.lineno for node in span)
        if len(statement.body) != 1 or not self._touches(first, last):
            return statement
        small = statement.body[0]
        value = getattr(small, "value", None)
        if not isinstance(small, (cst.Assign, cst.AnnAssign, cst.AugAssign, cst.Expr, cst.Return)) \
                or not isinstance(value, cst.BaseExpression) or not safe_to_reflow(small):
            return statement
        column = self._column(first)
        flat_small = flatten(small)
        flat_value = flat_small.value
        prefix = len(_code(self.module, flat_small)) - len(_code(self.module, flat_value))
        right_hand = isinstance(small, (cst.Assign, cst.AnnAssign, cst.AugAssign, cst.Return))
        new_value = _wrap_expression(flat_value, column + prefix, 0, column, 0, self.layout, self.module,
                                     right_hand)
        return statement.with_changes(body=[flat_small.with_changes(value=new_value)])

    def _header_end(self, node: ast.stmt) -> int:
        body = getattr(node, "body", None)
        return max(node.lineno, body[0].lineno - 1) if body else node.lineno

    def _compound(self, statement: cst.BaseCompoundStatement, node: ast.stmt, elif_: bool = False):
        if not self._touches(node.lineno, node.end_lineno or node.lineno):
            return statement  # decorators come first, and none is ever wrapped
        header = self._touches(node.lineno, self._header_end(node))
        if isinstance(statement, cst.FunctionDef):
            if header:
                statement = self._parameters(statement, self._column(node.lineno))
            return statement.with_changes(body=self._body(statement.body, node.body))
        if isinstance(statement, cst.If):
            if header:
                statement = self._test(statement, node, "elif " if elif_ else "if ")
            orelse = statement.orelse
            if isinstance(orelse, cst.If):
                orelse = self._compound(orelse, node.orelse[0], elif_=True)
            elif isinstance(orelse, cst.Else):
                orelse = orelse.with_changes(body=self._body(orelse.body, node.orelse))
            return statement.with_changes(body=self._body(statement.body, node.body), orelse=orelse)
        if isinstance(statement, cst.While) and header:
            statement = self._test(statement, node, "while ")
        if isinstance(statement, cst.For) and header:
            statement = self._iterable(statement, node)
        if isinstance(statement, cst.Try):
            handlers = [h.with_changes(body=self._body(h.body, n.body))
                        for h, n in zip(statement.handlers, node.handlers)]
            statement = statement.with_changes(handlers=handlers)
            if statement.finalbody is not None:
                statement = statement.with_changes(finalbody=statement.finalbody.with_changes(
                    body=self._body(statement.finalbody.body, node.finalbody)))
        if isinstance(statement, (cst.For, cst.While, cst.Try)) and isinstance(statement.orelse, cst.Else):
            statement = statement.with_changes(orelse=statement.orelse.with_changes(
                body=self._body(statement.orelse.body, node.orelse)))
        if isinstance(statement, (cst.For, cst.While, cst.With, cst.ClassDef, cst.Try)):
            return statement.with_changes(body=self._body(statement.body, node.body))
        return statement  # ``match`` and the like: left as written

    def _test(self, statement, node: ast.stmt, keyword: str):
        """An ``if``/``while`` test: black's parentheses around it."""
        if not safe_to_reflow(statement.test):
            return statement
        column = self._column(node.lineno)
        wrapped = _wrap_expression(flatten(statement.test), column + len(keyword), 1, column, 0, self.layout,
                                   self.module, True)
        return statement.with_changes(test=wrapped)

    def _iterable(self, statement: cst.For, node: ast.stmt) -> cst.For:
        """A ``for`` header's iterable: black opens its last bracket, adding no parentheses."""
        if not (safe_to_reflow(statement.iter) and safe_to_reflow(statement.target)):
            return statement
        column = self._column(node.lineno)
        keyword = "async for " if statement.asynchronous else "for "
        start = column + len(keyword) + len(_code(self.module, flatten(statement.target))) + len(" in ")
        wrapped = _wrap_expression(flatten(statement.iter), start, 1, column, 0, self.layout, self.module)
        return statement.with_changes(iter=wrapped)

    def _parameters(self, statement: cst.FunctionDef, column: int) -> cst.FunctionDef:
        if not safe_to_reflow(statement.params):
            return statement
        params = flatten(statement.params)
        flat = statement.with_changes(params=params, whitespace_before_params=cst.SimpleWhitespace(""))
        header = _code(self.module, flat.with_changes(body=cst.SimpleStatementSuite([cst.Pass()]),
                                                      leading_lines=[], decorators=[])).split("\n")[0]
        header = header[: header.rindex(":") + 1]
        if column + len(header) <= self.layout.limit:
            return flat
        elements = _parameter_elements(params)
        if not elements:
            return flat
        inside = ", ".join(_element_code(self.module, e) for e in elements)
        one_line = self.layout.indent(column, 1) + len(inside) <= self.layout.limit
        laid = _lay_out(elements, one_line, 0, self.layout)
        return flat.with_changes(params=_with_elements(params, laid),
                                 whitespace_before_params=_newline(1, self.layout))


def _code(module: cst.Module, node: cst.CSTNode) -> str:
    return module.code_for_node(node)


def _element_code(module: cst.Module, element) -> str:
    """An argument or parameter alone, without its comma (a bare one cannot be rendered with a
    default comma)."""
    if isinstance(element, cst.Param) and isinstance(element.star, cst.MaybeSentinel):
        element = element.with_changes(star="")  # the migration's own parameters leave it to their list
    return module.code_for_node(element.with_changes(comma=cst.Comma()))[:-1]


def safe_to_reflow(node: cst.CSTNode) -> bool:
    finder = _Unsafe()
    node.visit(finder)
    return not finder.found


class _Unsafe(cst.CSTVisitor):
    def __init__(self) -> None:
        self.found = False

    def visit_Comment(self, node: cst.Comment) -> None:
        self.found = True

    def visit_SimpleString(self, node: cst.SimpleString) -> None:
        if "\n" in node.value:
            self.found = True

    def visit_FormattedString(self, node: cst.FormattedString) -> None:
        if node.start.endswith(('"""', "'''")):
            self.found = True


class _Flattener(cst.CSTTransformer):
    """Every bracketed line break joined, and the trailing comma before a closing bracket
    dropped: what black starts from before it splits again."""

    def leave_ParenthesizedWhitespace(self, original, updated):
        return cst.SimpleWhitespace(" ")

    def leave_Comma(self, original: cst.Comma, updated: cst.Comma) -> cst.Comma:
        return updated.with_changes(whitespace_before=cst.SimpleWhitespace(""),
                                    whitespace_after=cst.SimpleWhitespace(" "))

    def leave_Call(self, original: cst.Call, updated: cst.Call) -> cst.Call:
        args = list(updated.args)
        if args:
            last = args[-1].with_changes(comma=cst.MaybeSentinel.DEFAULT,
                                         whitespace_after_arg=cst.SimpleWhitespace(""))
            args[-1] = last
        return updated.with_changes(args=args, whitespace_before_args=cst.SimpleWhitespace(""),
                                    whitespace_after_func=cst.SimpleWhitespace(""))

    def leave_Param(self, original: cst.Param, updated: cst.Param) -> cst.Param:
        return updated.with_changes(whitespace_after_param=cst.SimpleWhitespace(""))

    def leave_Parameters(self, original, updated):
        return _with_elements(updated, _last_without_comma(_parameter_elements(updated)))

    def leave_List(self, original, updated):
        return updated.with_changes(elements=_last_without_comma(updated.elements))

    leave_Set = leave_Dict = leave_List

    def leave_Tuple(self, original, updated):
        if len(updated.elements) == 1 or not updated.lpar:  # ``(a,)`` needs its comma
            return updated
        return updated.with_changes(elements=_last_without_comma(updated.elements))

    def leave_LeftParen(self, original, updated):
        return updated.with_changes(whitespace_after=cst.SimpleWhitespace(""))

    leave_LeftSquareBracket = leave_LeftCurlyBrace = leave_LeftParen

    def leave_RightParen(self, original, updated):
        return updated.with_changes(whitespace_before=cst.SimpleWhitespace(""))

    leave_RightSquareBracket = leave_RightCurlyBrace = leave_RightParen


def flatten(node):
    return node.visit(_Flattener())


def _last_without_comma(elements):
    elements = list(elements)
    if elements:
        elements[-1] = elements[-1].with_changes(comma=cst.MaybeSentinel.DEFAULT)
    return elements


def _trailing_call(expression: cst.BaseExpression) -> cst.Call | None:
    """The call that ends an arithmetic expression without brackets of its own (``img + f(x)``)."""
    if not isinstance(expression, cst.BinaryOperation) or expression.lpar:
        return None
    right, left = expression.right, expression.left
    same = isinstance(left, cst.BinaryOperation) and not left.lpar and _rank(left) == _rank(expression)
    if same or isinstance(right, cst.BinaryOperation) and not right.lpar:
        return None  # ``a + b + f(x)``: black puts it all in parentheses of its own
    calls = _call_chain(right)
    return calls[0] if calls and calls[0].args and not right.lpar else None


def _rank(operation: cst.BinaryOperation) -> int:
    ranks = [(cst.Add, cst.Subtract), (cst.Multiply, cst.Divide, cst.FloorDivide, cst.Modulo, cst.MatrixMultiply)]
    return next((i for i, group in enumerate(ranks) if isinstance(operation.operator, group)), -1)


def _call_chain(expression: cst.BaseExpression) -> list[cst.Call]:
    """The calls along ``a.b(x).c[y](z)``, the last one in the text first."""
    calls, node = [], expression
    while True:
        if isinstance(node, cst.Call):
            calls.append(node)
            node = node.func
        elif isinstance(node, (cst.Attribute, cst.Subscript)):
            node = node.value
        else:
            return calls


def _wrap_expression(expression: cst.BaseExpression, start: int, suffix: int, base: int, level: int,
                     layout: _Layout, module: cst.Module, right_hand: bool = False) -> cst.BaseExpression:
    """``expression`` (flat) begins at column ``start`` on a line indented ``level`` levels past
    ``base``; ``suffix`` characters follow it on its last line. ``right_hand``: the value of an
    assignment, ``return`` or ``yield``, which black may put in parentheses of its own."""
    text = _code(module, expression)
    if start + len(text) + suffix <= layout.limit:
        return expression
    if isinstance(expression, (cst.Await, cst.Yield)) and isinstance(expression.value, cst.BaseExpression):
        keyword = len(text) - len(_code(module, expression.value))
        return expression.with_changes(value=_wrap_expression(expression.value, start + keyword, suffix, base,
                                                              level, layout, module, isinstance(expression, cst.Yield)))
    calls = [c for c in _call_chain(expression) if c.args]
    if calls:
        # black opens the last bracket whose line up to it fits (``a(x).b(`` is too long: ``a(``)
        call = next((c for c in calls if start + len(_code(module, c.func)) + 1 <= layout.limit), calls[0])
        return _split_call(expression, call, base, level, layout, module)
    trailing = _trailing_call(expression)
    if trailing is not None and start + len(text) - len(_code(module, trailing)) + len(
            _code(module, trailing.func)) + 1 <= layout.limit:
        # ``a + f(x, y)``: black splits the last bracket when the line up to it fits
        return _split_call(expression, trailing, base, level, layout, module)
    if _bracketed(expression):
        return _split_brackets(expression, base, level, layout, module)
    if right_hand and isinstance(expression, (cst.Tuple, *OPERATIONS)):
        opened = expression.with_changes(lpar=[cst.LeftParen()], rpar=[cst.RightParen()])
        return _split_brackets(opened, base, level, layout, module)
    if isinstance(expression, cst.BinaryOperation) and not expression.lpar and _rank(expression) >= 0:
        return _split_operands(expression, suffix, base, level, layout, module)
    return expression


def _split_operands(operation: cst.BinaryOperation, suffix: int, base: int, level: int, layout: _Layout,
                    module: cst.Module) -> cst.BinaryOperation:
    """An argument or element ``[...] * batch_size`` that does not fit: a line break before each
    operator of its lowest priority (black's delimiter split), and each operand still too long
    for its line split on its own."""
    rank, column = _rank(operation), layout.indent(base, level)

    def split(node: cst.BaseExpression, after: int) -> cst.BaseExpression:
        if not (isinstance(node, cst.BinaryOperation) and not node.lpar and _rank(node) == rank):
            return _wrap_expression(node, column, after, base, level, layout, module)
        operator = node.operator.with_changes(whitespace_before=cst.SimpleWhitespace(""))
        start = column + len(_code(module, operator))  # ``* `` begins the line
        right = _wrap_expression(node.right, start, after, base, level, layout, module)
        return node.with_changes(left=split(node.left, 0), right=right,
                                 operator=operator.with_changes(whitespace_before=_newline(level, layout)))

    return split(operation, suffix)


def _split_call(expression: cst.BaseExpression, call: cst.Call, base: int, level: int, layout: _Layout,
                module: cst.Module) -> cst.BaseExpression:
    arguments = [a.with_changes(comma=cst.MaybeSentinel.DEFAULT) for a in call.args]
    inside = ", ".join(_element_code(module, a) for a in arguments)
    one_line = layout.indent(base, level + 1) + len(inside) <= layout.limit
    if one_line:
        laid = _lay_out(arguments, True, level, layout)
    elif len(arguments) == 1 and _bare_generator(arguments[0]):  # ``all(x for x in y)``: its clauses split
        split = _split_comprehension(arguments[0].value, base, level + 1, layout, module)
        laid = _lay_out([arguments[0].with_changes(value=split)], True, level, layout)
    else:  # a sole argument has no comma to split at: black adds none after it
        arguments = [_wrap_argument(a, base, level + 1, layout, module) for a in arguments]
        laid = _lay_out(arguments, len(arguments) == 1, level, layout)
    split = call.with_changes(args=laid, whitespace_before_args=_newline(level + 1, layout))
    return expression.deep_replace(call, split) if call is not expression else split


def _bare_generator(argument: cst.Arg) -> bool:
    return isinstance(argument.value, cst.GeneratorExp) and not argument.value.lpar and not argument.keyword


COLLECTIONS = (cst.List, cst.Set, cst.Dict, cst.Tuple)
OPERATIONS = (cst.IfExp, cst.BooleanOperation, cst.BinaryOperation, cst.Comparison)
PARENTHESIZED = (cst.Tuple, cst.GeneratorExp, *OPERATIONS)  # in lpar/rpar
COMPREHENSIONS = (cst.ListComp, cst.SetComp, cst.DictComp, cst.GeneratorExp)


def _bracketed(expression: cst.BaseExpression) -> bool:
    if isinstance(expression, (cst.Tuple, cst.GeneratorExp)):
        return bool(expression.lpar) and (not isinstance(expression, cst.Tuple) or bool(expression.elements))
    if isinstance(expression, OPERATIONS):
        return bool(expression.lpar)
    return isinstance(expression, COLLECTIONS + COMPREHENSIONS) and not (
        isinstance(expression, COLLECTIONS) and not expression.elements)


def _split_brackets(expression: cst.BaseExpression, base: int, level: int, layout: _Layout,
                    module: cst.Module) -> cst.BaseExpression:
    """A bracketed expression opened: its contents on one line when they fit, else split at
    their commas (one element per line), comprehension clauses, or ``if``/``else``/``and``/``or``."""
    inside = layout.indent(base, level + 1)
    opened = _open(expression, level, layout)
    one_element_tuple = isinstance(expression, cst.Tuple) and len(expression.elements) == 1  # needs its comma
    if inside + _body_length(expression, module) <= layout.limit and not one_element_tuple:
        return opened
    if isinstance(expression, COLLECTIONS):
        elements = [_wrap_element(e, base, level + 1, layout, module) for e in expression.elements]
        if len(elements) == 1 and not isinstance(expression, cst.Tuple):
            return opened.with_changes(elements=_lay_out(elements, True, level, layout))
        laid = _lay_out(elements, False, level, layout)
        return _with_closing_flat(opened.with_changes(elements=laid))
    if isinstance(expression, COMPREHENSIONS):
        return _split_comprehension(opened, base, level + 1, layout, module)
    if isinstance(expression, cst.IfExp):
        return _split_conditional(opened, base, level + 1, layout, module)
    if isinstance(expression, cst.BooleanOperation):
        return _split_operators(opened, level + 1, layout)
    if isinstance(expression, cst.BinaryOperation):
        return _split_arithmetic(opened, _rank(opened), level + 1, layout)
    if isinstance(expression, cst.Comparison):
        return _split_comparison(opened, base, level + 1, layout, module)
    return opened


def _split_conditional(expression: cst.IfExp, base: int, level: int, layout: _Layout,
                       module: cst.Module) -> cst.IfExp:
    """``a if t else b``: a line break before ``if`` and ``else``; a part still too long for its
    line is split on its own, as black does."""
    column = layout.indent(base, level)
    return expression.with_changes(
        body=_wrap_expression(expression.body, column, 0, base, level, layout, module),
        test=_wrap_expression(expression.test, column + len("if "), 0, base, level, layout, module),
        orelse=_wrap_expression(expression.orelse, column + len("else "), 0, base, level, layout, module),
        whitespace_before_if=_newline(level, layout), whitespace_before_else=_newline(level, layout))


def _split_comparison(comparison: cst.Comparison, base: int, level: int, layout: _Layout,
                      module: cst.Module) -> cst.Comparison:
    """A line break before each comparison operator; an operand still too long for its line
    is split on its own (``f(...)`` opened)."""
    column = layout.indent(base, level)
    left = _wrap_expression(comparison.left, column, 0, base, level, layout, module)
    targets = []
    for target in comparison.comparisons:
        operator = target.operator.with_changes(whitespace_before=cst.SimpleWhitespace(""))
        start = column + len(_code(module, operator))  # ``< `` begins the line
        operator = operator.with_changes(whitespace_before=_newline(level, layout))
        comparator = _wrap_expression(target.comparator, start, 0, base, level, layout, module)
        targets.append(target.with_changes(operator=operator, comparator=comparator))
    return comparison.with_changes(left=left, comparisons=targets)


def _split_arithmetic(operation: cst.BinaryOperation, rank: int, level: int, layout: _Layout) -> cst.BinaryOperation:
    """A line break before each operator of ``rank`` along the chain (``a + b - c``)."""
    left = operation.left
    if isinstance(left, cst.BinaryOperation) and not left.lpar and _rank(left) == rank:
        left = _split_arithmetic(left, rank, level, layout)
    operator = operation.operator.with_changes(whitespace_before=_newline(level, layout))
    return operation.with_changes(left=left, operator=operator)


def _split_operators(operation: cst.BooleanOperation, level: int, layout: _Layout) -> cst.BooleanOperation:
    """A line break before each ``and``/``or`` of the chain outside inner parentheses."""
    left, right = operation.left, operation.right
    if isinstance(left, cst.BooleanOperation) and not left.lpar:
        left = _split_operators(left, level, layout)
    if isinstance(right, cst.BooleanOperation) and not right.lpar:
        right = _split_operators(right, level, layout)
    operator = operation.operator.with_changes(whitespace_before=_newline(level, layout))
    return operation.with_changes(left=left, right=right, operator=operator)


def _body_length(expression: cst.BaseExpression, module: cst.Module) -> int:
    """The length of what is between ``expression``'s brackets, on one line."""
    if isinstance(expression, PARENTHESIZED):
        return len(_code(module, expression.with_changes(lpar=[], rpar=[])))
    return len(_code(module, expression)) - 2


def _open(expression: cst.BaseExpression, level: int, layout: _Layout) -> cst.BaseExpression:
    """The brackets of ``expression`` with a line break after the opening one and before the
    closing one."""
    after, before = _newline(level + 1, layout), _newline(level, layout)
    if isinstance(expression, PARENTHESIZED):
        return expression.with_changes(lpar=[expression.lpar[0].with_changes(whitespace_after=after)],
                                       rpar=[expression.rpar[0].with_changes(whitespace_before=before)])
    if isinstance(expression, (cst.List, cst.ListComp)):
        return expression.with_changes(lbracket=expression.lbracket.with_changes(whitespace_after=after),
                                       rbracket=expression.rbracket.with_changes(whitespace_before=before))
    return expression.with_changes(lbrace=expression.lbrace.with_changes(whitespace_after=after),
                                   rbrace=expression.rbrace.with_changes(whitespace_before=before))


def _with_closing_flat(expression: cst.BaseExpression) -> cst.BaseExpression:
    """One element per line: the last comma's line break closes the bracket, so the bracket
    itself takes no whitespace of its own."""
    empty = cst.SimpleWhitespace("")
    if isinstance(expression, cst.Tuple):
        return expression.with_changes(rpar=[expression.rpar[0].with_changes(whitespace_before=empty)])
    if isinstance(expression, cst.List):
        return expression.with_changes(rbracket=expression.rbracket.with_changes(whitespace_before=empty))
    return expression.with_changes(rbrace=expression.rbrace.with_changes(whitespace_before=empty))


def _split_comprehension(comprehension, base: int, level: int, layout: _Layout, module: cst.Module):
    """A comprehension's element and each of its clauses on lines of their own, at ``level``."""
    split = comprehension.with_changes(for_in=_split_clauses(comprehension.for_in, base, level, layout, module))
    if isinstance(comprehension, cst.DictComp):
        return split
    element = _wrap_expression(comprehension.elt, layout.indent(base, level), 0, base, level, layout, module)
    return split.with_changes(elt=element)


def _split_clauses(clause: cst.CompFor, base: int, level: int, layout: _Layout, module: cst.Module) -> cst.CompFor:
    """Each ``for`` and ``if`` of a comprehension on a line of its own; a ``for`` whose iterable
    is still too long is split in turn."""
    ifs = [i.with_changes(whitespace_before=_newline(level, layout)) for i in clause.ifs]
    inner = _split_clauses(clause.inner_for_in, base, level, layout, module) if clause.inner_for_in else None
    alone = clause.with_changes(ifs=[], inner_for_in=None, whitespace_before=cst.SimpleWhitespace(""))
    head = len(_code(module, alone))
    head -= len(_code(module, clause.iter))
    iterable = _wrap_expression(clause.iter, layout.indent(base, level) + head, 0, base, level, layout, module)
    return clause.with_changes(whitespace_before=_newline(level, layout), ifs=ifs, inner_for_in=inner, iter=iterable)


def _wrap_element(element, base: int, level: int, layout: _Layout, module: cst.Module):
    if not isinstance(element, (cst.Element, cst.StarredElement)) or isinstance(element, cst.StarredElement):
        return element
    start = layout.indent(base, level)
    if _split_strings(element.value, start, layout, module):
        return element.with_changes(value=_strings_split(element.value, level, layout))
    return element.with_changes(value=_wrap_expression(element.value, start, 1, base, level, layout, module))


def _wrap_argument(argument: cst.Arg, base: int, level: int, layout: _Layout, module: cst.Module) -> cst.Arg:
    text = _element_code(module, argument)
    value = _code(module, argument.value)
    start = layout.indent(base, level) + len(text) - len(value)
    if _split_strings(argument.value, start, layout, module):
        return argument.with_changes(value=_strings_split(argument.value, level, layout))
    return argument.with_changes(value=_wrap_expression(argument.value, start, 1, base, level, layout, module))


def _split_strings(value: cst.BaseExpression, start: int, layout: _Layout, module: cst.Module) -> bool:
    """``"a" "b"`` inside brackets that does not fit: black puts each string on a line of its own."""
    return (isinstance(value, cst.ConcatenatedString) and not value.lpar
            and start + len(_code(module, value)) + 1 > layout.limit)


def _strings_split(strings: cst.ConcatenatedString, level: int, layout: _Layout) -> cst.ConcatenatedString:
    right = strings.right
    if isinstance(right, cst.ConcatenatedString):
        right = _strings_split(right, level, layout)
    return strings.with_changes(right=right, whitespace_between=_newline(level, layout))


def _lay_out(elements: list, one_line: bool, level: int, layout: _Layout) -> list:
    """Commas and line breaks of an opened bracket's contents; the closing bracket goes back to
    ``level``. One line: no trailing comma, as black writes it. One per line: a trailing comma."""
    laid = []
    last = len(elements) - 1
    for index, element in enumerate(elements):
        if one_line and index < last:
            comma = cst.Comma(whitespace_after=cst.SimpleWhitespace(" "))
        elif one_line:
            laid.append(_closing(element, level, layout))
            continue
        else:
            comma = cst.Comma(whitespace_after=_newline(level + (index < last), layout))
        laid.append(element.with_changes(comma=comma))
    return laid


def _closing(element, level: int, layout: _Layout):
    """The last element of a one-line body: the line break before the closing bracket."""
    if isinstance(element, (cst.Element, cst.StarredElement, cst.DictElement, cst.StarredDictElement)):
        return element.with_changes(comma=cst.MaybeSentinel.DEFAULT)
    if isinstance(element, cst.Arg):
        return element.with_changes(comma=cst.MaybeSentinel.DEFAULT, whitespace_after_arg=_newline(level, layout))
    if isinstance(element, cst.Param):
        return element.with_changes(comma=cst.MaybeSentinel.DEFAULT,
                                    whitespace_after_param=_newline(level, layout))
    # ``*`` or ``/`` last: not valid Python, never produced
    return element


def _newline(level: int, layout: _Layout) -> cst.ParenthesizedWhitespace:
    return cst.ParenthesizedWhitespace(first_line=cst.TrailingWhitespace(), empty_lines=[], indent=True,
                                       last_line=cst.SimpleWhitespace(layout.unit * level))


def _parameter_elements(params: cst.Parameters) -> list:
    elements = [*params.posonly_params]
    if isinstance(params.posonly_ind, cst.ParamSlash):
        elements.append(params.posonly_ind)
    elements += params.params
    if isinstance(params.star_arg, (cst.Param, cst.ParamStar)):
        elements.append(params.star_arg)
    elements += params.kwonly_params
    if isinstance(params.star_kwarg, cst.Param):
        elements.append(params.star_kwarg)
    return elements


def _with_elements(params: cst.Parameters, elements: list) -> cst.Parameters:
    """``params`` with its elements replaced, in the order ``_parameter_elements`` gave them."""
    remaining = list(elements)

    def take(count: int) -> list:
        taken = remaining[:count]
        del remaining[:count]
        return taken

    posonly = take(len(params.posonly_params))
    slash = take(1)[0] if isinstance(params.posonly_ind, cst.ParamSlash) else params.posonly_ind
    plain = take(len(params.params))
    star = take(1)[0] if isinstance(params.star_arg, (cst.Param, cst.ParamStar)) else params.star_arg
    kwonly = take(len(params.kwonly_params))
    star_kwarg = take(1)[0] if isinstance(params.star_kwarg, cst.Param) else params.star_kwarg
    return params.with_changes(posonly_params=posonly, posonly_ind=slash, params=plain, star_arg=star,
                               kwonly_params=kwonly, star_kwarg=star_kwarg)
