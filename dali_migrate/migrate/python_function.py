"""``fn.python_function`` in a migrated graph (DM012): the function is simply called.

Pipeline mode calls the function once per sample (``batch_processing=False``, the default) with
each input sample as a NumPy array, and batches what it returns. Dynamic mode is Python already::

    images = fn.python_function(images, function=brighten)

becomes::

    images = ndd.batch([brighten(np.asarray(sample)) for sample in images])

bit for bit (checked on DALI 2.4). Several outputs, ``batch_processing=True`` and GPU inputs
keep their DM012 TODO.
"""

from __future__ import annotations

import libcst as cst

from ..analysis import DaliCall
from .names import all_names, unique_name
from .ops import keyword_values

ALLOWED = frozenset({"function", "num_outputs", "batch_processing", "output_layouts", "device", "name",
                     "preserve", "bytes_per_sample_hint"})


class NotMigratable(Exception):
    pass


def check(call: DaliCall) -> None:
    """NotMigratable names what keeps ``call`` from the per-sample form."""
    keywords = keyword_values(call.node)
    inputs = [a for a in call.node.args if a.keyword is None]
    if not inputs or any(a.star for a in call.node.args) or "function" not in keywords:
        raise NotMigratable("give the inputs by position and `function=` by keyword")
    unknown = set(keywords) - ALLOWED
    if unknown:
        raise NotMigratable(f"`{sorted(unknown)[0]}=` has no automatic migration")
    if not _is_literal(keywords.get("num_outputs"), ("1",)) or not _is_literal(keywords.get("batch_processing"), ("False",)):
        raise NotMigratable("several outputs or `batch_processing=True` need a manual migration")
    if not _is_literal(keywords.get("device"), ('"cpu"', "'cpu'")):
        raise NotMigratable("a GPU Python function needs a manual migration")
    layouts = keywords.get("output_layouts")
    if layouts is not None and not isinstance(layouts, cst.SimpleString):
        raise NotMigratable("give `output_layouts` as one string")


def _is_literal(node: cst.BaseExpression | None, allowed: tuple[str, ...]) -> bool:
    return node is None or cst.Module([]).code_for_node(node) in allowed


def per_sample_call(updated: cst.Call, ndd: str, numpy: str) -> cst.Call:
    """``fn.python_function(a, b, function=f)`` -> ``ndd.batch([f(np.asarray(x), np.asarray(y))
    for x, y in zip(a, b)])``."""
    keywords = keyword_values(updated)
    inputs = [a.value for a in updated.args if a.keyword is None]
    taken = all_names(updated)
    names = [unique_name("sample", taken) for _ in inputs]
    arrays = [cst.Arg(cst.parse_expression(f"{numpy}.asarray({name})")) for name in names]
    element = cst.Call(func=keywords["function"], args=arrays)
    if len(inputs) == 1:
        loop = cst.CompFor(target=cst.Name(names[0]), iter=inputs[0])
    else:
        target = cst.Tuple([cst.Element(cst.Name(n)) for n in names], lpar=[], rpar=[])
        loop = cst.CompFor(target=target, iter=cst.Call(func=cst.Name("zip"), args=[cst.Arg(i) for i in inputs]))
    args = [cst.Arg(cst.ListComp(elt=element, for_in=loop))]
    if "output_layouts" in keywords:
        args.append(cst.Arg(keywords["output_layouts"], keyword=cst.Name("layout"),
                            equal=cst.AssignEqual(cst.SimpleWhitespace(""), cst.SimpleWhitespace(""))))
    return cst.Call(func=cst.parse_expression(f"{ndd}.batch"), args=args)

