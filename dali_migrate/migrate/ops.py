"""Rewrites of single operator calls and subscripts inside a migrated graph (DM004/5/6/8/15/16)."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import TYPE_CHECKING

import libcst as cst

from ..visitors import Transformer

from ..analysis import MATH_MODULE, DaliCall
from ..optable import OpTable
from ..rules.dm004_mixed_device import is_mixed_device
from ..rules.dm016_op_arguments import PIPELINE_ONLY_ARGS

if TYPE_CHECKING:  # constants.py builds on this module
    from .constants import ConstantBatch

READER_ONLY_PIPELINE_ARGS = ("batch_size", "name") + PIPELINE_ONLY_ARGS


def ndd_expr(ndd_alias: str, target: str) -> cst.BaseExpression:
    return cst.parse_expression(f"{ndd_alias}.{target}")


def keyword(arg: cst.Arg) -> str | None:
    return arg.keyword.value if arg.keyword is not None else None


def keyword_values(call: cst.Call) -> dict[str, cst.BaseExpression]:
    """``f(x, a=1)`` -> {"a": <1>}."""
    return {a.keyword.value: a.value for a in call.args if a.keyword is not None}


def without_keywords(args: tuple[cst.Arg, ...] | list[cst.Arg], dropped) -> list[cst.Arg]:
    kept = [arg for arg in args if keyword(arg) not in dropped]
    if kept and args and kept[-1] is not args[-1]:
        # the new last argument takes over the old last one's comma and the layout before ")"
        old_last = args[-1]
        kept[-1] = kept[-1].with_changes(comma=old_last.comma, whitespace_after_arg=old_last.whitespace_after_arg)
    return kept


TIGHT_EQUAL = cst.AssignEqual(cst.SimpleWhitespace(""), cst.SimpleWhitespace(""))  # `name=value`


def keyword_arg(name: str, value: cst.BaseExpression) -> cst.Arg:
    return cst.Arg(value=value, keyword=cst.Name(name), equal=TIGHT_EQUAL)


class NotALiteral(ValueError):
    pass


def has_data_inputs(call: cst.Call, literal_names: frozenset[str] = frozenset()) -> bool:
    """A positional input other than a literal or a name of one: a literal (``fn.random.choice(
    [0, 1, 2])``) was the same for every sample of the batch, and ndd, given no batch, makes one
    sample of it."""
    return any(arg.keyword is None and arg.star == "" and not is_literal(arg.value)
               and not (isinstance(arg.value, cst.Name) and arg.value.value in literal_names) for arg in call.args)


def literal_names(function: cst.FunctionDef, module_values: dict[str, list[cst.BaseExpression]]) -> frozenset[str]:
    """Names that hold a literal wherever ``function`` reads them: bound once, at its top level,
    to a literal and nowhere else in it; or not bound in it and bound once in the module to one."""
    from ..scopes import all_params, name_assignment
    from .names import scope_names

    own: dict[str, int] = {}
    rebound: set[str] = set()
    for statement in function.body.body:
        assigned = name_assignment(statement)
        if assigned is not None and is_literal(assigned[1]):
            own[assigned[0]] = own.get(assigned[0], 0) + 1
            continue
        rebound |= scope_names([statement]).bound
    bound = set(own) | rebound | {p.name.value for p in all_params(function.params)}
    local = {name for name, count in own.items() if count == 1 and name not in rebound}
    module = {name for name, values in module_values.items()
              if name not in bound and len(values) == 1 and is_literal(values[0])}
    return frozenset(local | module)


def is_literal(node: cst.BaseExpression) -> bool:
    """A number, string, ``None``/``True``/``False``, or a list, tuple or set of them."""
    if isinstance(node, (cst.Integer, cst.Float, cst.Imaginary, cst.SimpleString, cst.ConcatenatedString)):
        return True
    if isinstance(node, cst.Name):
        return node.value in ("None", "True", "False")
    if isinstance(node, cst.UnaryOperation):
        return is_literal(node.expression)
    if isinstance(node, (cst.List, cst.Tuple, cst.Set)):
        return all(isinstance(e, cst.Element) and is_literal(e.value) for e in node.elements)
    return False


def literal_value(node: cst.BaseExpression | None):
    """The value of an argument written as True/False/None, an integer or a string; None for
    an argument not given. NotALiteral for anything else."""
    if node is None:
        return None
    if isinstance(node, cst.Name) and node.value in ("True", "False", "None"):
        return {"True": True, "False": False, "None": None}[node.value]
    if isinstance(node, cst.Integer):
        return int(node.evaluated_value)  # ``0x10``, ``1_000``
    if isinstance(node, cst.SimpleString):
        return node.evaluated_value
    raise NotALiteral(cst.Module([]).code_for_node(node))


def append_keyword(args: list[cst.Arg], name: str, value: cst.BaseExpression) -> list[cst.Arg]:
    new_arg = keyword_arg(name, value)
    if not args:
        return [new_arg]
    last = args[-1]
    before = args[-2].comma if len(args) > 1 and isinstance(args[-2].comma, cst.Comma) else None
    separator = cst.Comma(whitespace_after=cst.SimpleWhitespace(" "))
    if isinstance(last.comma, cst.Comma):
        # a trailing comma: the last one's comma holds the layout before ")", which the new
        # argument takes over; the last one takes the separator before it (one per line stays so)
        separator = _separator(before) if before is not None else separator
        return [*args[:-1], last.with_changes(comma=separator), new_arg.with_changes(comma=last.comma)]
    if before is not None and all(isinstance(arg.comma, cst.Comma) and isinstance(
            arg.comma.whitespace_after, cst.ParenthesizedWhitespace) for arg in args[:-1]):
        separator = _separator(before)  # one argument per line: the new one gets a line too
    # what stood between the last argument and ")" (a line break where ")" has a line of its own)
    # now follows the new one
    return [*args[:-1], last.with_changes(comma=separator, whitespace_after_arg=cst.SimpleWhitespace("")),
            new_arg.with_changes(whitespace_after_arg=last.whitespace_after_arg)]


def _separator(comma: cst.Comma) -> cst.Comma:
    """``comma``'s layout without its comment (``a,  # why``): a copy must not repeat it."""
    after = comma.whitespace_after
    if isinstance(after, cst.ParenthesizedWhitespace):
        after = after.with_changes(first_line=cst.TrailingWhitespace(), empty_lines=[])
    return comma.with_changes(whitespace_after=after)


@dataclass
class OpRewritePlan:
    """What a graph's calls need: per call, the ndd target and the RNG it draws from."""

    ndd_alias: str
    batch_size_name: str
    default_rng: str | None
    calls: dict[int, DaliCall] = field(default_factory=dict)
    call_rngs: dict[int, str] = field(default_factory=dict)  # per-op seed= -> own RNG
    call_batch_sizes: dict[int, str] = field(default_factory=dict)  # in a helper: its parameter
    per_sample: set[int] = field(default_factory=set)  # nodes of per-sample ``if`` branches (one sample)
    constant_inputs: set[int] = field(default_factory=set)  # calls whose inputs are names of literals
    subscripts: set[int] = field(default_factory=set)
    shape_methods: set[int] = field(default_factory=set)  # ``images.shape()`` on DataNodes
    constants: dict[int, str | None] = field(default_factory=dict)  # types.Constant -> NumPy dtype
    fn_constants: dict[int, ConstantBatch] = field(default_factory=dict)  # fn.constant -> its NumPy batch
    mixed_strings: set[int] = field(default_factory=set)  # "mixed" device names given to variables
    dtypes: dict[int, str] = field(default_factory=dict)  # ``types.FLOAT`` in an op's arguments -> ``float32``
    numpy_alias: str = "np"
    needs_numpy: bool = False  # set when a rewrite used numpy


class GraphOpRewriter(Transformer):
    """Turns ``fn.X(...)`` into ``ndd.X(...)`` and DataNode subscripts into ``.slice[...]``."""

    def __init__(self, plan: OpRewritePlan, optable: OpTable) -> None:
        self.plan = plan
        self.optable = optable

    def leave_Call(self, original_node: cst.Call, updated_node: cst.Call) -> cst.BaseExpression:
        if id(original_node) in self.plan.shape_methods:
            return shapes_batch(updated_node, self.plan.ndd_alias, method=True)
        if id(original_node) in self.plan.constants:
            return self._constant(updated_node, self.plan.constants[id(original_node)])
        call = self.plan.calls.get(id(original_node))
        if call is not None and call.qualname.startswith(MATH_MODULE):  # the same functions, bit for bit
            func = ndd_expr(self.plan.ndd_alias, "math." + call.qualname.removeprefix(MATH_MODULE))
            return realigned(updated_node.with_changes(func=func), bracket_moved([updated_node.func], [func]))
        if call is None or call.op is None or call.op.is_reader:
            return updated_node
        if call.op.fn == "python_function":
            # it builds on this module's helpers
            from .python_function import per_sample_call

            self.plan.needs_numpy = True
            return per_sample_call(updated_node, self.plan.ndd_alias, self.plan.numpy_alias)
        if call.op.fn == "shapes":
            return shapes_batch(updated_node, self.plan.ndd_alias)
        if id(original_node) in self.plan.fn_constants:
            return self._constant_batch(original_node)
        op = self.optable.successor(call.op)
        target = self.optable.ndd_target(call.op)
        dropped = set(PIPELINE_ONLY_ARGS) | {"name"}
        if op.random or op.kind != "reader":
            # a random op's seed makes its RNG; any other op's was unused (DALI warns so), and
            # in ndd only readers take one (a TypeError elsewhere)
            dropped.add("seed")
        args = without_keywords(updated_node.args, dropped)
        args = [_gpu_instead_of_mixed(arg) for arg in args]
        if op.random:
            args = self._random_args(original_node, args)
        elif call.graph is not None and id(original_node) not in self.plan.per_sample and not self._has_data_inputs(
                original_node) and "batch_size" not in {keyword(a) for a in args}:
            # ``fn.transforms.translation(offset=...)``: pipeline mode made a batch of it, ndd one sample
            args = append_keyword(args, "batch_size", cst.Name(self.plan.batch_size_name))
        func = ndd_expr(self.plan.ndd_alias, target)
        moved = updated_node.with_changes(func=func, args=args)
        return realigned(moved, bracket_moved([updated_node.func], [func]))

    def _constant(self, call: cst.Call, dtype: str | None) -> cst.BaseExpression:
        number = next(a.value for a in call.args if a.keyword is None)
        if dtype is None:  # ``x - types.Constant(-1)`` is ``x - (-1)``
            signed = isinstance(number, cst.UnaryOperation) and not number.lpar
            return number.with_changes(lpar=[cst.LeftParen()], rpar=[cst.RightParen()]) if signed else number
        self.plan.needs_numpy = True
        return cst.Call(func=ndd_expr(self.plan.numpy_alias, dtype), args=[cst.Arg(number)])

    def _constant_batch(self, original: cst.Call) -> cst.Call:
        from .constants import batch_call

        self.plan.needs_numpy = True
        # only graphs migrate it (a helper calling it keeps its pipeline): the graph's batch size
        batch_size = None if id(original) in self.plan.per_sample else self.plan.batch_size_name
        return batch_call(self.plan.fn_constants[id(original)], self.plan.ndd_alias, self.plan.numpy_alias, batch_size)

    def _random_args(self, original: cst.Call, args: list[cst.Arg]) -> list[cst.Arg]:
        if not self._has_data_inputs(original) and "batch_size" not in {keyword(a) for a in args}:
            batch_size = self.plan.call_batch_sizes.get(id(original), self.plan.batch_size_name)
            args = append_keyword(args, "batch_size", cst.Name(batch_size))
        rng = self.plan.call_rngs.get(id(original), self.plan.default_rng)
        if rng is not None and "rng" not in {keyword(a) for a in args}:
            args = append_keyword(args, "rng", cst.Name(rng))
        return args

    def _has_data_inputs(self, call: cst.Call) -> bool:
        return id(call) not in self.plan.constant_inputs and has_data_inputs(call)

    def leave_Attribute(self, original_node: cst.Attribute | cst.Name, updated_node) -> cst.BaseExpression:
        dtype = self.plan.dtypes.get(id(original_node))
        return updated_node if dtype is None else ndd_expr(self.plan.ndd_alias, dtype)

    leave_Name = leave_Attribute  # ``FLOAT`` imported from nvidia.dali.types

    def leave_SimpleString(self, original_node: cst.SimpleString, updated_node: cst.SimpleString) -> cst.SimpleString:
        if id(original_node) not in self.plan.mixed_strings:
            return updated_node
        return updated_node.with_changes(value=f"{updated_node.quote}gpu{updated_node.quote}")

    def leave_Subscript(self, original_node: cst.Subscript, updated_node: cst.Subscript) -> cst.BaseExpression:
        if id(original_node) not in self.plan.subscripts:
            return updated_node
        return updated_node.with_changes(value=cst.Attribute(value=updated_node.value, attr=cst.Name("slice")))


TYPES_MODULE = "nvidia.dali.types."


def dtype_arguments(call: cst.Call, imports, optable: OpTable) -> dict[int, str]:
    """The DALI data type constants an operator takes as arguments (``dtype=types.FLOAT``, also
    in a list), by node id, with the ndd type each one is: NVIDIA's dynamic-mode code writes
    ``ndd.float32``. Constants used any other way (compared, stored) are left alone."""
    found = {}
    for arg in call.args:
        values = [arg.value]
        if isinstance(arg.value, (cst.List, cst.Tuple)):
            values = [e.value for e in arg.value.elements if isinstance(e, cst.Element)]
        for value in values:
            qualname = imports.resolve(value) or ""
            member = qualname.removeprefix(TYPES_MODULE).removeprefix("DALIDataType.")
            if qualname.startswith(TYPES_MODULE) and member in optable.ndd_dtypes:
                found[id(value)] = optable.ndd_dtypes[member]
    return found


SHAPES_KEYWORDS = frozenset({"dtype", "type", "name", "preserve", "bytes_per_sample_hint"})


def shapes_call_problem(call: cst.Call) -> str | None:
    """Why ``fn.shapes(...)`` cannot become ``shapes_batch``'s form, or None: that form reads its
    input twice (``x.shape``, ``x.device``), so the input must be a name, not an operator call
    that would run twice (and draw twice from an RNG)."""
    inputs = [a for a in call.args if a.keyword is None]
    keywords = {a.keyword.value for a in call.args if a.keyword is not None}
    if any(a.star for a in call.args) or len(inputs) != 1 or not isinstance(inputs[0].value, cst.Name):
        return "`fn.shapes`: give it one input, by name (`fn.shapes(images)`)"
    if keywords - SHAPES_KEYWORDS or {"dtype", "type"} <= keywords:
        return f"`fn.shapes`: `{sorted(keywords - SHAPES_KEYWORDS or {'type'})[0]}=` has no dynamic-mode form"
    return None


def shapes_batch(call: cst.Call, ndd_alias: str, method: bool = False) -> cst.Call:
    """``fn.shapes(x, dtype=D)`` -> ``ndd.batch(x.shape, dtype=D, device=x.device)``: each sample's
    shape as a 1-D tensor (int64 unless ``dtype=`` says otherwise), where ``x`` is. ``method``:
    the DataNode method ``x.shape(dtype=D, device=V)``, whose result is on the CPU by default."""
    source = call.func.value if method else next(a.value for a in call.args if a.keyword is None)
    given = keyword_values(call)
    dtype = given.get("dtype") or given.get("type") or ndd_expr(ndd_alias, "int64")
    default_device = cst.SimpleString('"cpu"') if method else cst.Attribute(source, cst.Name("device"))
    return cst.Call(func=ndd_expr(ndd_alias, "batch"), args=[
        cst.Arg(cst.Attribute(source, cst.Name("shape"))),
        keyword_arg("dtype", dtype),
        keyword_arg("device", given.get("device") or default_device),
    ])


def _gpu_instead_of_mixed(arg: cst.Arg) -> cst.Arg:
    if not is_mixed_device(arg):
        return arg
    return arg.with_changes(value=_gpu_leaves(arg.value))


def _gpu_leaves(value: cst.BaseExpression) -> cst.BaseExpression:
    if isinstance(value, cst.SimpleString):
        return value.with_changes(value=f"{value.quote}gpu{value.quote}") if value.evaluated_value == "mixed" else value
    if isinstance(value, cst.IfExp):
        return value.with_changes(body=_gpu_leaves(value.body), orelse=_gpu_leaves(value.orelse))
    return value


class _ShiftContinuationLines(Transformer):
    def __init__(self, columns: int) -> None:
        super().__init__()
        self.columns = columns

    def leave_ParenthesizedWhitespace(self, original_node, updated_node):
        width = max(len(updated_node.last_line.value) + self.columns, 0)
        return updated_node.with_changes(last_line=cst.SimpleWhitespace(" " * width))


def realigned(call: cst.Call, columns: int) -> cst.Call:
    """``call`` with its continuation lines moved by ``columns``, after the text before its
    opening bracket changed length (``fn.resize(`` -> ``ndd.resize(``). Only arguments aligned
    with the bracket move; a hanging indent (first argument on the next line) stays."""
    if columns == 0 or isinstance(call.whitespace_before_args, cst.ParenthesizedWhitespace):
        return call
    shift = _ShiftContinuationLines(columns)
    return call.with_changes(args=[arg.visit(shift) for arg in call.args])


def is_true(node: cst.BaseExpression | None) -> bool:
    """``True`` written as a literal."""
    return isinstance(node, cst.Name) and node.value == "True"


def code_length(node: cst.CSTNode) -> int:
    return len(cst.Module([]).code_for_node(node))


def bracket_moved(old_prefix: list[cst.CSTNode], new_prefix: list[cst.CSTNode]) -> int:
    """How far a call's opening bracket moved when the code before it changed. Zero for calls
    that subclass.py assembled from an operator's constructor: their arguments were laid out
    elsewhere, and no alignment can be kept."""
    if any(cst.Module([]).code_for_node(node).startswith("__dali_migrate") for node in old_prefix):
        return 0
    return sum(map(code_length, new_prefix)) - sum(map(code_length, old_prefix))


def reader_constructor(call: DaliCall, ndd_alias: str, optable: OpTable, updated: cst.Call) -> cst.Call:
    """``fn.readers.file(..., batch_size=.., name=..)`` -> ``ndd.readers.File(...)``."""
    target = optable.ndd_target(call.op)
    args = without_keywords(updated.args, READER_ONLY_PIPELINE_ARGS)
    return updated.with_changes(func=ndd_expr(ndd_alias, target), args=args)
