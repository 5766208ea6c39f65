"""``fn.python_function`` in a migrated graph (DM012): the function is simply called.

Pipeline mode calls the function once per sample (``batch_processing=False``, the default) with
each input sample as a NumPy array, and batches what it returns; with ``batch_processing=True``
it calls it once with a list of NumPy arrays per input. Dynamic mode is Python already::

    images = fn.python_function(images, function=brighten)
    images = ndd.batch([brighten(np.asarray(sample)) for sample in images])

    red, gray = fn.python_function(images, function=split, num_outputs=2)
    red, gray = [ndd.batch(list(outputs)) for outputs in zip(*[split(np.asarray(sample)) for sample in images])]

    images = fn.python_function(images, function=normalize, batch_processing=True)
    images = ndd.batch(normalize([np.asarray(sample) for sample in images]))

bit for bit (checked on DALI 2.4). GPU functions and per-output layout lists keep their DM012 TODO.
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
    """NotMigratable names what keeps ``call`` from the migrated form."""
    keywords = keyword_values(call.node)
    inputs = [a for a in call.node.args if a.keyword is None]
    if not inputs or any(a.star for a in call.node.args) or "function" not in keywords:
        raise NotMigratable("give the inputs by position and `function=` by keyword")
    unknown = set(keywords) - ALLOWED
    if unknown:
        raise NotMigratable(f"`{sorted(unknown)[0]}=` has no automatic migration")
    if not isinstance(keywords.get("num_outputs", cst.Integer("1")), cst.Integer):
        raise NotMigratable("give `num_outputs` as an integer")
    if not _is_literal(keywords.get("batch_processing"), ("False", "True")):
        raise NotMigratable("give `batch_processing` as True or False")
    if not _is_literal(keywords.get("device"), ('"cpu"', "'cpu'")):
        raise NotMigratable("a GPU Python function needs a manual migration")
    layouts = keywords.get("output_layouts")
    if layouts is not None and not isinstance(layouts, cst.SimpleString):
        raise NotMigratable("give `output_layouts` as one string")


def _is_literal(node: cst.BaseExpression | None, allowed: tuple[str, ...]) -> bool:
    return node is None or cst.Module([]).code_for_node(node) in allowed


def _atom_code(node: cst.BaseExpression) -> str:
    """The code of ``node``, in parentheses unless it binds tighter than a call or ``for ... in``."""
    text = cst.Module([]).code_for_node(node)
    atoms = (cst.Name, cst.Attribute, cst.Call, cst.Subscript, cst.List, cst.Tuple, cst.SimpleString, cst.Integer)
    return text if isinstance(node, atoms) or node.lpar else f"({text})"


def per_sample_call(updated: cst.Call, ndd: str, numpy: str) -> cst.BaseExpression:
    """The call's outputs: one Batch, or a list of Batches for ``num_outputs`` > 1."""
    keywords = keyword_values(updated)
    inputs = [a.value for a in updated.args if a.keyword is None]
    taken = all_names(updated)
    names = [unique_name("sample", taken) for _ in inputs]
    code = _atom_code
    function = code(keywords["function"])  # ``(lambda x: x + 1)(...)``, not ``lambda x: x + 1(...)``
    if _is_literal(keywords.get("batch_processing"), ("True",)) and "batch_processing" in keywords:
        lists = [f"[{numpy}.asarray({name}) for {name} in {code(i)}]" for name, i in zip(names, inputs)]
        results = f"{function}({', '.join(lists)})"
    else:
        arrays = ", ".join(f"{numpy}.asarray({name})" for name in names)
        samples = code(inputs[0]) if len(inputs) == 1 else f"zip({', '.join(code(i) for i in inputs)})"
        results = f"[{function}({arrays}) for {', '.join(names)} in {samples}]"
    layout = f", layout={code(keywords['output_layouts'])}" if "output_layouts" in keywords else ""
    if int(keywords.get("num_outputs", cst.Integer("1")).value) == 1:
        return cst.parse_expression(f"{ndd}.batch({results}{layout})")
    outputs = unique_name("outputs", taken)
    if "batch_processing" in keywords and _is_literal(keywords["batch_processing"], ("True",)):
        return cst.parse_expression(f"[{ndd}.batch(list({outputs}){layout}) for {outputs} in {results}]")
    return cst.parse_expression(f"[{ndd}.batch(list({outputs}){layout}) for {outputs} in zip(*{results})]")
