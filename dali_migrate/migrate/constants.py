"""``fn.constant`` in a graph (DM015): dynamic mode has no such operator, and its batch is plain
NumPy data repeated for every sample.

``fn.constant`` gives the same tensor in every sample: ``fdata=`` (float32 by default) or
``idata=`` (int32 by default) converted to ``dtype=``, shaped ``shape=`` (one value fills the
shape; without ``shape=`` the data is 1-D: a single number is a tensor of shape ``[1]``),
with ``layout=``, on ``device=`` (measured on DALI 2.4). The migrated graph builds that batch
from NumPy where the values are literals::

    fn.constant(fdata=0.5)                       -> ndd.full(np.float32(0.5), shape=[1], batch_size=batch_size)
    fn.constant(idata=[1, 2, 3])                 -> ndd.batch([np.array([1, 2, 3], dtype=np.int32)] * batch_size)
    fn.constant(fdata=[1.0, 2.0, 3.0, 4.0], shape=[2, 2], layout="HW")
        -> ndd.batch([np.array([1.0, 2.0, 3.0, 4.0], dtype=np.float32).reshape([2, 2])] * batch_size, layout="HW")

Anything NumPy would convert otherwise than DALI is kept with a TODO: DALI rounds ``fdata``
to an integer ``dtype=`` and saturates out-of-range integers, NumPy truncates and wraps; so
``fdata`` must hold whole numbers for an integer type and every value must fit its type. In
a per-sample branch (one sample, not a batch) the same data is one Tensor.
"""

from __future__ import annotations

import ast
import math
from dataclasses import dataclass

import libcst as cst

from ..imports import ImportTable, code_of
from .ops import keyword_arg, ndd_expr
from .plan import NUMPY_DTYPES

KEYWORDS = frozenset({"fdata", "idata", "shape", "dtype", "layout", "device", "name", "preserve",
                      "bytes_per_sample_hint"})
NUMPY_TYPES = {name: numpy for name, numpy in NUMPY_DTYPES.items() if name != "BOOL"}  # DALI's data is numbers


class NotConvertible(Exception):
    """Why an ``fn.constant`` call keeps its pipeline; the message ends up in a TODO."""


@dataclass(frozen=True)
class ConstantBatch:
    data: cst.BaseExpression  # the ``fdata=``/``idata=`` value, as written
    count: int  # how many values it holds
    numpy_type: str
    shape: cst.BaseExpression | None
    layout: cst.BaseExpression | None
    device: cst.BaseExpression | None


def constant_batch(call: cst.Call, imports: ImportTable) -> ConstantBatch:
    """What ``fn.constant(...)`` makes, checked to be exactly what NumPy would make of it."""
    if any(a.keyword is None for a in call.args):
        raise NotConvertible("give its data by keyword (`fdata=` or `idata=`)")
    given = {a.keyword.value: a.value for a in call.args}
    unknown = sorted(set(given) - KEYWORDS)
    if unknown:
        raise NotConvertible(f"`{unknown[0]}=` has no NumPy form")
    if ("fdata" in given) == ("idata" in given):
        raise NotConvertible("give exactly one of `fdata=` and `idata=`")
    data = given.get("fdata", given.get("idata"))
    values = _numbers(data)
    numpy_type = _numpy_type(given.get("dtype"), imports, floating="fdata" in given)
    _check_exact(values, numpy_type)
    shape = given.get("shape")
    if shape is not None:
        dims = _shape(shape)
        if len(values) != 1 and len(values) != math.prod(dims):
            raise NotConvertible(f"{len(values)} values do not fill `shape={code_of(shape)}`")
        if len(dims) == 1 and dims[0] == len(values) > 1:
            shape = None  # the data is that 1-D tensor already
    for keyword in ("layout", "device"):
        if keyword in given and not isinstance(given[keyword], cst.SimpleString):
            raise NotConvertible(f"give `{keyword}=` as a string literal")
    if "device" in given and given["device"].evaluated_value not in ("cpu", "gpu"):
        raise NotConvertible("`device=` must be \"cpu\" or \"gpu\"")
    return ConstantBatch(data, len(values), numpy_type, shape, given.get("layout"), given.get("device"))


def batch_call(constant: ConstantBatch, ndd_alias: str, numpy_alias: str, batch_size: str | None) -> cst.Call:
    """The ndd call that makes the constant's batch (one Tensor where ``batch_size`` is None)."""
    placement = [keyword_arg(k, v) for k, v in (("layout", constant.layout), ("device", constant.device)) if v]
    if constant.count == 1:
        number = _only_number(constant.data)
        fill = cst.Call(ndd_expr(numpy_alias, constant.numpy_type), [cst.Arg(number)])
        shape = constant.shape or cst.List([cst.Element(cst.Integer("1"))])
        sized = [keyword_arg("batch_size", cst.Name(batch_size))] if batch_size else []
        return cst.Call(ndd_expr(ndd_alias, "full"), [cst.Arg(fill), keyword_arg("shape", shape), *sized, *placement])
    array = cst.Call(ndd_expr(numpy_alias, "array"), [
        cst.Arg(_as_list(constant.data)), keyword_arg("dtype", ndd_expr(numpy_alias, constant.numpy_type))])
    if constant.shape is not None:
        array = cst.Call(cst.Attribute(array, cst.Name("reshape")), [cst.Arg(constant.shape)])
    if batch_size is None:
        return cst.Call(ndd_expr(ndd_alias, "as_tensor"), [cst.Arg(array), *placement])
    repeated = cst.BinaryOperation(cst.List([cst.Element(array)]), cst.Multiply(), cst.Name(batch_size))
    return cst.Call(ndd_expr(ndd_alias, "batch"), [cst.Arg(repeated), *placement])


def _numbers(data: cst.BaseExpression) -> list[int | float]:
    """The values of data written as numbers, or as arithmetic on numbers (``1.0 / 255``:
    Python computes it in both modes, before DALI converts it)."""
    tree = ast.parse(code_of(data).strip(), mode="eval").body
    items = tree.elts if isinstance(tree, (ast.List, ast.Tuple)) else [tree]
    values = [_arithmetic(item) for item in items]
    if not values or None in values:
        raise NotConvertible("give its data as numbers written in the call")
    return values


ARITHMETIC = {ast.Add: lambda a, b: a + b, ast.Sub: lambda a, b: a - b, ast.Mult: lambda a, b: a * b,
              ast.Div: lambda a, b: a / b}


def _arithmetic(node: ast.expr) -> int | float | None:
    """A number, or ``+ - * /`` and signs applied to numbers; None for anything else."""
    if isinstance(node, ast.Constant):
        return node.value if isinstance(node.value, (int, float)) and not isinstance(node.value, bool) else None
    if isinstance(node, ast.UnaryOp) and isinstance(node.op, (ast.USub, ast.UAdd)):
        value = _arithmetic(node.operand)
        return None if value is None else (-value if isinstance(node.op, ast.USub) else value)
    if isinstance(node, ast.BinOp) and type(node.op) in ARITHMETIC:
        left, right = _arithmetic(node.left), _arithmetic(node.right)
        if left is None or right is None or isinstance(node.op, ast.Div) and right == 0:
            return None
        return ARITHMETIC[type(node.op)](left, right)
    return None


def _numpy_type(dtype: cst.BaseExpression | None, imports: ImportTable, floating: bool) -> str:
    if dtype is None:
        return "float32" if floating else "int32"
    member = (imports.resolve(dtype) or "").rsplit(".", 1)[-1]
    if member not in NUMPY_TYPES:
        raise NotConvertible("give `dtype=` as a numeric `types.<TYPE>` constant")
    return NUMPY_TYPES[member]


def _check_exact(values: list[int | float], numpy_type: str) -> None:
    if numpy_type.startswith("float"):
        return
    if not all(float(v).is_integer() for v in values):
        raise NotConvertible(f"DALI rounds fractional values to `{numpy_type}`, NumPy truncates them")
    bits = int(numpy_type.removeprefix("u").removeprefix("int"))
    low, high = (0, 2 ** bits - 1) if numpy_type.startswith("u") else (-(2 ** (bits - 1)), 2 ** (bits - 1) - 1)
    if not all(low <= v <= high for v in values):
        raise NotConvertible(f"DALI saturates values outside `{numpy_type}`, NumPy does not")


def _shape(shape: cst.BaseExpression) -> list[int]:
    try:
        dims = ast.literal_eval(code_of(shape))
    except (ValueError, SyntaxError):
        dims = None
    if not isinstance(dims, (list, tuple)) or not all(isinstance(d, int) and d >= 0 for d in dims):
        raise NotConvertible("give `shape=` as a list of whole numbers written in the call")
    return list(dims)


def _only_number(data: cst.BaseExpression) -> cst.BaseExpression:
    if isinstance(data, (cst.List, cst.Tuple)):
        return data.elements[0].value
    return data


def _as_list(data: cst.BaseExpression) -> cst.BaseExpression:
    if isinstance(data, cst.Tuple):
        return cst.List([e.with_changes(comma=cst.MaybeSentinel.DEFAULT) for e in data.elements])
    return data
