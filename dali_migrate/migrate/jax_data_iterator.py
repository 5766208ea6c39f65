"""JAX's ``@data_iterator`` graphs (DM010): the graph becomes a generator, and a function of the
graph's name makes the loader over it, as the decorator made DALI's JAX iterator::

    @data_iterator(output_map=["images", "labels"], reader_name="Reader")
    def eval_iterator(file_root):
        ...

    for batch in eval_iterator(root, batch_size=8, device_id=None):

becomes ::

    def eval_iterator_batches(file_root, *, batch_size, ..., yield_reader_meta=False):
        ...  # the migrated graph

    def eval_iterator(file_root, *, batch_size, ...):
        batches = eval_iterator_batches(file_root, batch_size=batch_size, ..., yield_reader_meta=True)
        return DALIJaxLoader(batches, ["images", "labels"], batch_size=batch_size,
                             reader_meta=next(batches))

so its callers stay as they are. The decorator made its pipeline on device 0 unless given
``device_id=``: so does the generator. Only what one device and the loader reproduce is
migrated: no ``sharding=``, ``devices=`` or ``pmap_compatible=``, an epoch counted by the
reader named in ``reader_name=``, no PARTIAL policy (which DALI's JAX iterator refuses), and
the iterator used only by iterating it (and ``reset()``/``len()``, which the loader has).
"""

from __future__ import annotations

import ast

import libcst as cst

from ..analysis import ITERATOR_DECORATORS, ModuleFacts
from .iterators import POLICIES
from .names import unique_name
from .ops import keyword_arg
from .reader_meta import reader_name_node

DATA_ITERATOR = ITERATOR_DECORATORS[0]
ONE_DEVICE = ("sharding", "devices", "pmap_compatible")
LOADER_ARGUMENTS = frozenset({"output_map", "reader_name", "auto_reset", "last_batch_policy", "prepare_first_batch",
                              "size", "last_batch_padded", *ONE_DEVICE})


def plan_iterator_decorator(plan, facts: ModuleFacts, keywords: dict[str, cst.BaseExpression],
                            positional: list[cst.Arg]) -> None:
    """``plan.jax_iterator``: the loader's arguments, or blockers naming what stops it."""
    where = plan.graph.decorator
    if facts.imports.resolve(_called(where.decorator)) != DATA_ITERATOR:
        plan.block("DM010", where, "`@peekable_data_iterator` (JAX): the migrated loader has no `peek()`; "
                                   "migrate it by hand")
        return
    if positional:
        plan.block("DM010", where, "`@data_iterator` with positional arguments: pass them by keyword")
        return
    for name, value in keywords.items():
        if name not in LOADER_ARGUMENTS:
            plan.block("DM010", value, f"`@data_iterator({name}=...)` is not an argument of DALI's JAX iterator")
        elif name in ONE_DEVICE and not _none_or_false(value):
            plan.block("DM010", value, f"`{name}=` spreads the batches over JAX devices; the migrated loader gives "
                                       "each batch on the device that made it")
    try:
        arguments = {name: _literal(value) for name, value in keywords.items()
                     if name in ("output_map", "reader_name", "auto_reset", "size", "last_batch_padded")}
    except ValueError:
        plan.block("DM010", where, "`@data_iterator` arguments must be literals for the migration to read them")
        return
    policy = _policy(keywords.get("last_batch_policy"))
    if policy is None or policy == "partial":
        plan.block("DM010", keywords.get("last_batch_policy", where),
                   "a last-batch policy the loader reproduces for JAX: FILL or DROP, written "
                   "`LastBatchPolicy.FILL`/`.DROP`")
    output_map = arguments.get("output_map")
    if not isinstance(output_map, list) or not all(isinstance(n, str) for n in output_map):
        plan.block("DM010", where, "`output_map=` must be a list of names written out")
    reader = arguments.get("reader_name")
    names = [reader_name_node(r.node) for r in plan.readers]
    if reader is None or reader not in [n.evaluated_value for n in names if n is not None]:
        plan.block("DM010", where, "the loader counts an epoch by the reader named in `reader_name=`: name one of "
                                   "the graph's readers (`size=` and sources that end epochs are not migrated here)")
    if arguments.get("size", -1) != -1 or arguments.get("last_batch_padded", False):
        plan.block("DM010", where, "`size=` / `last_batch_padded=` with `reader_name=`: migrate by hand")
    if any(p.star for p in plan.function.params.params) or plan.function.params.star_kwarg is not None \
            or isinstance(plan.function.params.star_arg, cst.Param):
        plan.block("DM010", where, "the graph takes `*args` or `**kwargs`, which its loader function cannot pass on")
    for site in facts.pipeline_method_calls:
        if site.origin in plan.pipe_vars and site.detail not in ("reset",):
            plan.block("DM010", site.node, f"`{site.name}.{site.detail}()` on DALI's JAX iterator: the loader "
                                           "has no such method")
    plan.jax_iterator.update({"output_map": output_map, "reader_name": reader, "policy": policy,
                         "auto_reset": bool(arguments.get("auto_reset", False))})
    plan.yields_reader_meta = True


def _literal(node: cst.BaseExpression):
    """A literal argument's value (ValueError for anything else)."""
    return ast.literal_eval(cst.Module([]).code_for_node(node))


def _called(decorator: cst.BaseExpression) -> cst.BaseExpression:
    return decorator.func if isinstance(decorator, cst.Call) else decorator


def _none_or_false(value: cst.BaseExpression) -> bool:
    return isinstance(value, cst.Name) and value.value in ("None", "False")


def _policy(node: cst.BaseExpression | None) -> str | None:
    """"fill", "drop" or "partial"; None where it cannot be read."""
    if node is None:
        return "fill"
    if isinstance(node, cst.Attribute) and node.attr.value in POLICIES:
        return POLICIES[node.attr.value]
    if isinstance(node, cst.SimpleString) and node.evaluated_value.lower() in POLICIES.values():
        return node.evaluated_value.lower()
    return None


def with_loader_function(plan, generator: cst.FunctionDef, loader_class: str,
                         taken: set[str]) -> cst.FlattenSentinel:
    """The migrated graph under a new name, and a function of its old name that makes the loader."""
    name = generator.name.value
    batches_name = unique_name(f"{name}_batches", taken)
    renamed = generator.with_changes(name=cst.Name(batches_name))
    params = generator.params
    forwarded = [p for p in [*params.posonly_params, *params.params]]
    kwonly = [p for p in params.kwonly_params if p.name.value != "yield_reader_meta"]
    arguments = [cst.Arg(cst.Name(p.name.value)) for p in forwarded]
    arguments += [keyword_arg(p.name.value, cst.Name(p.name.value)) for p in kwonly]
    arguments.append(keyword_arg("yield_reader_meta", cst.Name("True")))
    made = cst.Call(cst.Name(batches_name), arguments)
    loader = [cst.Arg(cst.Name("batches")),
              cst.Arg(cst.List([cst.Element(cst.SimpleString(repr(n).replace("'", '"')))
                                for n in plan.jax_iterator["output_map"]])),
              keyword_arg("batch_size", cst.Name("batch_size")),
              keyword_arg("reader_meta", cst.parse_expression("next(batches)"))]
    if plan.jax_iterator["policy"] != "fill":
        loader.append(keyword_arg("last_batch_policy", cst.SimpleString(f'"{plan.jax_iterator["policy"]}"')))
    if plan.jax_iterator["auto_reset"]:
        loader.append(keyword_arg("auto_reset", cst.Name("True")))
    body = [
        cst.SimpleStatementLine([cst.Expr(cst.SimpleString(
            '"""DALI\'s JAX iterator over the pipeline, as `@data_iterator` made it."""'))]),
        cst.SimpleStatementLine([cst.Assign([cst.AssignTarget(cst.Name("batches"))], made)]),
        cst.SimpleStatementLine([cst.Return(cst.Call(cst.Name(loader_class), loader))]),
    ]
    wrapper = cst.FunctionDef(
        name=cst.Name(name),
        params=params.with_changes(kwonly_params=kwonly),
        body=cst.IndentedBlock(body),
        leading_lines=[cst.EmptyLine(), cst.EmptyLine()],
    )
    return cst.FlattenSentinel([renamed, wrapper])

