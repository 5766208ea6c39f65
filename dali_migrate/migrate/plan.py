"""Decide, per pipeline, whether it can be migrated with certainty, and what the migration needs.

A pipeline is migrated whole or not at all: a half-migrated graph would mix DataNodes and
Batches. Each reason not to migrate is a ``Blocker`` that becomes a TODO comment.
"""

from __future__ import annotations

from dataclasses import dataclass, field, replace
from typing import TYPE_CHECKING, Callable

import libcst as cst

from ..scopes import function_locals, name_assignment
from ..visitors import Visitor, walk

from ..analysis import (DaliCall, Graph, ModuleFacts, container_elements, is_pipeline_target, iterated_pipeline,
                        iterator_decorator, paired_elements)
from ..pipeline_scopes import spelled
from ..imports import IMPORT_FROM_TYPES, IMPORT_TYPES, dotted_name
from ..rules.dm004_mixed_device import mixed_device_strings
from ..rules.dm012_python_source import PYTHON_OPS
from ..rules.dm014_serialize import autoserialize_decorators
from . import conditionals, python_function
from .external_source import NotMigratable, SourcePlan, plan_source
from .helpers import graph_helpers, nested_functions, random_helper_calls
from .names import all_params, assigned_targets, calls_named, scope_names, unique_name, variable_names
from .ops import MATH_MODULE, dtype_arguments, is_true, keyword_values, shapes_call_problem
from .places import node_ids
from ..pipeline_parameters import bound_values, returned_values
from .spread_arguments import spelled_spread

if TYPE_CHECKING:  # constants.py builds on this module
    from .constants import ConstantBatch

# A shape the migration does not follow yet: re-running after the other TODOs would keep it again.
NOT_FOLLOWED = "which the migration does not follow"

# Pipeline arguments that become parameters of the migrated generator.
MAPPED_PIPELINE_ARGS = ("batch_size", "num_threads", "device_id", "seed")
# Pipeline arguments that tune execution only; dropping them does not change the data.
EXECUTION_ONLY_ARGS = frozenset({
    "prefetch_queue_depth", "exec_async", "exec_pipelined", "exec_dynamic",
    "experimental_exec_dynamic", "set_affinity", "max_streams", "bytes_per_sample",
    "default_cuda_stream_priority", "enable_memory_stats", "py_num_workers", "py_start_method",
    "py_callback_pickler", "stream_policy", "concurrency", "output_dtype", "output_ndim",
    "output_layout",
    # debug mode runs the graph eagerly to the same data; its DataNodes' ``.get()`` is blocked below
    "debug",
})
# planned elsewhere: conditionals below, checkpointing in checkpointing.py
FLAG_ARGS = {"enable_conditionals": "DM011", "enable_checkpointing": "DM013"}
CALL_SITE_ARGS = frozenset({"enable_checkpointing", "checkpoint"})
# epoch_size/reader_meta are planned in reader_meta.py, which blocks what it cannot rewrite
# ``reset()`` restarts a pipeline only after its external sources raised StopIteration: without
# sources it does nothing, and goes with ``build()`` (a pipeline with sources is blocked)
# ``schedule_run()`` + ``outputs()`` is ``run()`` taken apart: the iterations come out in the
# order they were scheduled, so the stream is the generator's, and ``release_outputs()`` only
# frees what ``share_outputs()`` lent (mixed with ``run()``, which prefetches on its own, the
# order would shift: blocked below)
SUPPORTED_PIPE_METHODS = frozenset({"build", "reset", "run", "outputs", "share_outputs", "epoch_size",
                                    "reader_meta", "checkpoint", "schedule_run", "release_outputs"})
UNSUPPORTED_OUTPUT_METHODS = {
    "as_reshaped_tensor": "`as_reshaped_tensor()` on a pipeline output",
    "dtype_call": "`.dtype()` on a pipeline output gives the buffer format (such as \"=B\"), which no ndd value "
                  "gives: use the `.dtype` property (a `DALIDataType`)",
}
METHOD_RULES = {
    "schedule_run": "DM003", "release_outputs": "DM003", "checkpoint": "DM013", "serialize": "DM014", "feed_input": "DM012",
    "iter_setup": "DM012",
}


@dataclass(frozen=True)
class Blocker:
    code: str
    node: cst.CSTNode
    message: str


@dataclass
class PipelinePlan:
    graph: Graph
    function: cst.FunctionDef
    pipeline_args: dict[str, cst.BaseExpression]  # from the decorator
    pipe_vars: list[str] = field(default_factory=list)
    factory_calls: list[cst.Call] = field(default_factory=list)
    calls: list[DaliCall] = field(default_factory=list)
    readers: list[DaliCall] = field(default_factory=list)
    reader_statement_indices: list[int] = field(default_factory=list)
    params: list[str] = field(default_factory=list)  # mapped pipeline args, in order
    blockers: list[Blocker] = field(default_factory=list)
    sources: list[SourcePlan] = field(default_factory=list)  # external_source calls
    per_sample_ifs: list[conditionals.PerSampleIf] = field(default_factory=list)
    returns_sequence: bool = False  # ``return tuple(...)``: the outputs, not one output
    output_count: int | None = None  # how many outputs the graph returns (None: not known)
    checkpointing: bool = False  # the generator takes a `checkpoint=` to register its state with
    imported: bool = False  # defined (and migrated) in another module; only its uses are here
    mixed_strings: set[int] = field(default_factory=set)  # "mixed" literals that become "gpu"
    constants: dict[int, str | None] = field(default_factory=dict)  # id(types.Constant call) -> NumPy dtype
    fn_constants: dict[int, ConstantBatch] = field(default_factory=dict)  # id(fn.constant call) -> its NumPy batch
    helpers: set[str] = field(default_factory=set)  # module functions that build part of the graph
    # its callers read the reader's metadata: the generator yields it first when asked (reader_meta.py)
    yields_reader_meta: bool = False
    # its metadata carries the batch size, for a loader made where the caller's names are not in scope
    meta_has_batch_size: bool = False
    # a loader ends its epochs where the sources stop: the generator can yield None there (iterators.py)
    marks_epoch_ends: bool = False
    # ``@data_iterator`` (JAX): the loader's arguments (jax_data_iterator.py)
    jax_iterator: dict | None = None
    # pipeline variables reset by hand after their sources ended an epoch (manual_epochs.py)
    epochs_by_hand: set[str] = field(default_factory=set)
    # a legacy subclass (subclass.Subclass) the function was made from: other modules call the class
    subclass: object = None
    capture: bool = False  # its reader's epochs run with next_epoch(capture=True) (Config.capture)
    # ``Pipeline.current().max_batch_size`` reads (ids): the generator's ``batch_size``; and the
    # graph statements that only named the current pipeline or copied its batch size (dropped)
    current_reads: dict[int, str] = field(default_factory=dict)  # id(``Pipeline.current().x``) -> parameter
    dropped_statements: set[int] = field(default_factory=set)
    # names the graph reads from the module that its generator's parameters of the same name and
    # default stand for: a caller must not pass another value (``_check_generator_names``)
    fixed_params: set[str] = field(default_factory=set)
    # graph locals named like a generator parameter (``seed = random.randint(...)``) -> new name
    renamed: dict[str, str] = field(default_factory=dict)
    # a ``with pipe:`` graph's first lines that set state outside it (``self.length = ...``) and
    # those before them: they run where the ``with`` was, before the generator's ``def`` (ids)
    hoisted: list[int] = field(default_factory=list)

    @property
    def migratable(self) -> bool:
        return not self.blockers

    @property
    def reader(self) -> DaliCall | None:
        """The reader of a one-reader pipeline (metadata lookups need exactly one)."""
        return self.readers[0] if len(self.readers) == 1 else None

    @property
    def random_calls(self) -> list[DaliCall]:
        return [c for c in self.calls if c.op is not None and c.op.random]

    def block(self, code: str, node: cst.CSTNode, message: str) -> None:
        self.blockers.append(Blocker(code, node, message))


def decorator_args(graph: Graph) -> tuple[dict[str, cst.BaseExpression], list[cst.Arg]]:
    decorator = graph.decorator.decorator
    if not isinstance(decorator, cst.Call):
        return {}, []
    keywords = {a.keyword.value: a.value for a in decorator.args if a.keyword is not None}
    positional = [a for a in decorator.args if a.keyword is None]
    return keywords, positional


def plan_decorated_pipeline(graph: Graph, facts: ModuleFacts, strays: dict[str, list],
                            helpers: dict | None = None) -> PipelinePlan:
    """``helpers``: the module's graph helpers (helpers.graph_helpers), found here if not given."""
    keywords, positional = decorator_args(graph)
    jax_iterator = iterator_decorator(graph.node, facts.imports) is not None
    if jax_iterator:  # the decorator's arguments are the iterator's; it made the pipeline on device 0
        iterator_keywords, iterator_positional = keywords, positional
        keywords, positional = {"device_id": cst.Integer("0")}, []
    plan = PipelinePlan(graph, graph.node, keywords, jax_iterator={} if jax_iterator else None)
    helpers = graph_helpers(facts) if helpers is None else helpers
    plan.calls = ([c for c in facts.calls if c.graph is graph] + _nested_random_calls(graph, facts)
                  + random_helper_calls(graph.node, helpers))
    for arg in positional:
        given = "positional `@pipeline_def` arguments" if not arg.star else \
            f"`@pipeline_def({spelled_spread(arg)})`: the migration reads the pipeline's arguments by name"
        plan.block("DM001", arg, f"{given}: pass them by keyword")
    _check_pipeline_args(plan, keywords, graph.decorator)
    _plan_current_pipeline(plan)
    _check_serialized(plan, facts)
    _check_calls(plan, facts)
    _check_auto_aug_helpers(plan, facts)
    _check_operator_objects(plan, facts)
    _check_called_parameters(plan, facts)
    _check_body(plan, facts)
    _check_outside_state(plan)
    _check_source_setup(plan)
    _check_conditionals(plan, keywords)
    _check_device_variables(plan, facts.graph_scope(plan.function))
    _check_call_sites(plan, facts, strays)
    plan.params = _mapped_params(plan, keywords)
    _check_generator_names(plan)
    _check_op_seeds(plan)
    if jax_iterator:
        from .jax_data_iterator import plan_iterator_decorator

        plan_iterator_decorator(plan, facts, iterator_keywords, iterator_positional)
    return plan


def plan_imported_pipeline(defined: PipelinePlan, local: str, facts: ModuleFacts,
                           strays: dict[str, list]) -> PipelinePlan:
    """A pipeline that another module defines, as this module uses it under ``local``: its
    graph was planned there; here only the call sites are."""
    plan = replace(defined, graph=replace(defined.graph, name=local), blockers=[], pipe_vars=[],
                   factory_calls=[], imported=True)
    _check_call_sites(plan, facts, strays)
    for call in plan.factory_calls:
        for arg in call.args:
            if arg.keyword is not None and arg.keyword.value in defined.fixed_params:
                plan.block("DM001", arg, f"a call passes `{arg.keyword.value}=`, and the graph reads its module's "
                                         f"`{arg.keyword.value}`, which that value does not change in pipeline mode "
                                         "and would replace once migrated")
    if defined.subclass is not None:  # calls that keyword_calls could not name stay as the class took them
        for call in plan.factory_calls:
            if any(a.keyword is None for a in call.args):
                plan.block("DM002", call, f"`{local}(...)` passes arguments this run cannot name for the "
                                          "function the class becomes (*args, extra arguments, or a value "
                                          "computed from names of its module)")
    _check_device_kept(plan)
    if plan.checkpointing and not defined.checkpointing:
        plan.block("DM013", plan.factory_calls[0] if plan.factory_calls else defined.function,
                   f"checkpointing is enabled only where `{local}` is called: add `enable_checkpointing=True` "
                   "to its `@pipeline_def`")
    return plan


def _check_device_kept(plan: PipelinePlan) -> None:
    """A device chosen where an imported pipeline is called must reach its EvalContext."""
    if "device_id" in plan.params:
        return
    for call in plan.factory_calls:
        for arg in call.args:
            if arg.keyword is not None and arg.keyword.value == "device_id" and not (
                    isinstance(arg.value, cst.Name) and arg.value.value == "None"):
                plan.block("DM001", arg, f"`device_id=` is given here, but `{plan.graph.name}` is migrated "
                                         "without a device parameter: migrate this file with the one that "
                                         "defines it, or pass the device there")


def _check_serialized(plan: PipelinePlan, facts: ModuleFacts) -> None:
    """``@autoserialize`` hands the pipeline graph to Triton's DALI backend: it stays a graph."""
    from .todo import KEPT

    for decorator in autoserialize_decorators(plan.function, facts.imports):
        plan.block("DM014", decorator, f"{KEPT}: `@autoserialize` serializes it for Triton's DALI backend, "
                                       "which runs pipeline graphs")


def _check_pipeline_args(plan: PipelinePlan, keywords: dict, where: cst.CSTNode) -> None:
    at_decorator = where is plan.graph.decorator
    for name, value in keywords.items():
        if name in FLAG_ARGS and at_decorator and not (isinstance(value, cst.Name) and value.value in ("True", "False")):
            plan.block(FLAG_ARGS[name], where, f"give `{name}=` as True or False")
        elif name in FLAG_ARGS and at_decorator or name in CALL_SITE_ARGS and not at_decorator:
            continue
        elif name in FLAG_ARGS or name in CALL_SITE_ARGS:
            plan.block(FLAG_ARGS.get(name, "DM013"), where, f"`{name}=` has no safe automatic migration here")
        elif name not in MAPPED_PIPELINE_ARGS and name not in EXECUTION_ONLY_ARGS:
            plan.block("DM001", where, f"unknown pipeline argument `{name}=`")
        elif name == "debug":
            _check_debug_reads(plan)


def _check_debug_reads(plan: PipelinePlan) -> None:
    """Debug mode's ``images.get()`` gives a TensorList of a DataNode; once migrated, ``images``
    is an ndd Batch, which has no ``get``."""
    blocked = {id(blocker.node) for blocker in plan.blockers}  # ``debug=`` at the decorator and a call
    for call in _argumentless_get_calls(plan.function):
        if id(call) not in blocked:
            plan.block("DM001", call, f"`{cst.Module([]).code_for_node(call)}` reads a debug-mode DataNode; once "
                                      "migrated it is an ndd Batch already: use it as one (`.tensors[i]`, "
                                      "`np.asarray(...)`) instead of `.get()`, then re-run")


def _argumentless_get_calls(function: cst.FunctionDef) -> list[cst.Call]:
    found: list[cst.Call] = []

    class GetCalls(Visitor):
        def visit_Call(self, call: cst.Call) -> None:
            if isinstance(call.func, cst.Attribute) and call.func.attr.value == "get" and not call.args:
                found.append(call)

    walk(function, GetCalls())
    return found


def _nested_random_calls(graph: Graph, facts: ModuleFacts) -> list[DaliCall]:
    """Random operators of the functions the graph defines: the graph's RNG feeds them."""
    inside = set().union(*(node_ids(f) for f in nested_functions(graph.node)))
    return [c for c in facts.calls if c.graph is None and id(c.node) in inside and c.op is not None and c.op.random]


def _check_calls(plan: PipelinePlan, facts: ModuleFacts) -> None:
    readers = []
    for call in plan.calls:
        if call.qualname == CONSTANT:
            _check_constant(plan, call.node, facts)
            continue
        if not call.qualname.startswith("nvidia.dali.fn."):
            if call.qualname.startswith(AUTO_AUG_MODULE):
                _block_auto_aug(plan, call.node)
            elif call.qualname.startswith("nvidia.dali.ops."):
                plan.block("DM009", call.node, "legacy `ops` object inside the graph")
            elif call.qualname.startswith(MATH_MODULE) and call.qualname.removeprefix(MATH_MODULE) not in facts.optable.ndd_math:
                plan.block("DM015", call.node, f"`{call.qualname}` has no `ndd.math` equivalent")
            continue
        op = call.op
        if op is None:
            plan.block("DM015", call.node, f"`{call.qualname}` is not in the op table")
        elif op.fn == "external_source":
            index = _source_statement_index(plan.function.body.body, call.node)
            try:
                source = plan_source(call, index, facts, plan.function)
                source.ndd_dtypes = dtype_arguments(call.node, facts.imports, facts.optable)
                plan.sources.append(source)
            except NotMigratable as reason:
                plan.block("DM012", call.node, f"`fn.external_source`: {reason}")
        elif op.fn == "python_function":
            try:
                python_function.check(call)
            except python_function.NotMigratable as reason:
                plan.block("DM012", call.node, f"`fn.python_function`: {reason}")
        elif op.fn in PYTHON_OPS:
            plan.block("DM012", call.node, f"`fn.{op.fn}` needs a manual migration")
        elif op.fn == "shapes":
            _check_shapes_call(plan, call.node)
        elif op.fn == "constant":
            _check_fn_constant(plan, call.node, facts)
        elif facts.optable.ndd_target(op) is None:
            plan.block("DM015", call.node, f"`fn.{op.fn}` has no ndd equivalent")
        elif op.is_reader:
            readers.append(call)
    plan.readers = readers
    for reader in readers:
        for keyword in _per_batch_arguments(reader.node, plan.graph.datanodes, facts):
            plan.block("DM005", reader.node,
                       f"the reader's `{keyword}=` is computed by the graph for every batch, {NOT_FOLLOWED}: "
                       "an ndd reader takes its arguments once, when it is made; migrate by hand")
    inside = node_ids(plan.function) if facts.datanode_shapes else set()
    for site in facts.datanode_shapes:
        if id(site.node) not in inside:
            continue
        keywords = {a.keyword.value for a in site.node.args if a.keyword is not None}
        if not isinstance(site.node.func.value, cst.Name) or keywords - {"dtype", "device"} or any(
                a.keyword is None for a in site.node.args):
            plan.block("DM015", site.node, "`.shape()` of a DataNode: call it on a name, with `dtype=`/`device=` "
                                           "only")


AUTO_AUG_MODULE = "nvidia.dali.auto_aug."


def _block_auto_aug(plan: PipelinePlan, call: cst.Call) -> None:
    """``nvidia.dali.auto_aug`` builds its policies from DataNodes and per-sample conditionals:
    the pipeline has to stay a graph until DALI gives it a dynamic-mode version."""
    from .todo import KEPT

    plan.block("DM020", call, f"{KEPT}: `{dotted_name(call.func)}` (`nvidia.dali.auto_aug`) builds its "
                              "augmentations as a pipeline graph, and dynamic mode has no version of it")


def _check_auto_aug_helpers(plan: PipelinePlan, facts: ModuleFacts) -> None:
    """A function of the module that applies ``nvidia.dali.auto_aug``, called by the graph."""
    from .todo import KEPT

    loose = [c for c in facts.calls if c.graph is None and c.qualname.startswith(AUTO_AUG_MODULE)]
    if not loose:
        return
    applying: dict[str, DaliCall] = {}
    for name, functions in facts.module_functions.items():
        inside = set().union(*(node_ids(f) for f in functions))
        applying.update({name: c for c in loose if id(c.node) in inside})
    for call in calls_named(plan.function, set(applying)):
        plan.block("DM020", call, f"{KEPT}: `{dotted_name(call.func)}` applies "
                                  f"`{dotted_name(applying[dotted_name(call.func)].node.func)}` "
                                  "(`nvidia.dali.auto_aug`), which builds its augmentations as a pipeline "
                                  "graph; dynamic mode has no version of it")


CONSTANT = "nvidia.dali.types.Constant"
NUMPY_DTYPES = {"UINT8": "uint8", "UINT16": "uint16", "UINT32": "uint32", "UINT64": "uint64", "INT8": "int8",
                "INT16": "int16", "INT32": "int32", "INT64": "int64", "FLOAT16": "float16", "FLOAT": "float32",
                "FLOAT64": "float64", "BOOL": "bool_"}


def _check_constant(plan: PipelinePlan, call: cst.Call, facts: ModuleFacts) -> None:
    """``types.Constant(2)`` in a graph is a DataNode; in dynamic mode the number itself is the
    operand (``2`` is int32 there too, ``0.5`` float32); ``dtype=types.UINT8`` is ``np.uint8(2)``."""
    inputs = [a for a in call.args if a.keyword is None]
    keywords = keyword_values(call)
    number = inputs[0].value if len(inputs) == 1 and not inputs[0].star else None
    if isinstance(number, cst.UnaryOperation) and isinstance(number.operator, cst.Minus):
        number = number.expression
    if not isinstance(number, (cst.Integer, cst.Float)) or set(keywords) - {"dtype"}:
        plan.block("DM015", call, "`types.Constant`: only a number, with or without `dtype=`, has a "
                                  "dynamic-mode form (the number itself)")
        return
    dtype = None
    if "dtype" in keywords:
        dtype = NUMPY_DTYPES.get((facts.imports.resolve(keywords["dtype"]) or "").rsplit(".", 1)[-1])
        if dtype is None:
            plan.block("DM015", call, "`types.Constant`: give `dtype=` as a `types.<TYPE>` constant")
            return
    plan.constants[id(call)] = dtype


def _check_fn_constant(plan: PipelinePlan, call: cst.Call, facts: ModuleFacts) -> None:
    """``fn.constant(fdata=0.5)`` becomes a batch made from NumPy (constants.py)."""
    from .constants import NotConvertible, constant_batch

    try:
        plan.fn_constants[id(call)] = constant_batch(call, facts.imports)
    except NotConvertible as reason:
        plan.block("DM015", call, f"`fn.constant`: {reason}")


def _check_shapes_call(plan: PipelinePlan, call: cst.Call) -> None:
    problem = shapes_call_problem(call)
    if problem:
        plan.block("DM015", call, problem)


def _check_body(plan: PipelinePlan, facts: ModuleFacts) -> None:
    body = plan.function.body.body
    if not body or not _is_return(body[-1]):
        plan.block("DM001", plan.function, "the graph does not end with `return`")
        return
    shape = _returned_outputs(body[-1].body[0].value, plan.graph, facts)
    plan.output_count = _output_count(body[-1].body[0].value, plan.function, facts)
    if shape is None:
        returned = cst.Module([]).code_for_node(body[-1].body[0].value)
        plan.block("DM001", body[-1], f"the graph returns `{returned}`: one output or several cannot be told "
                                      "apart; return a tuple of outputs")
    plan.returns_sequence = shape == "sequence"
    counter = _ReturnYieldCounter()
    walk(plan.function.body, counter)
    if counter.returns != 1 or counter.yields:
        plan.block("DM001", plan.function, "`return` inside branches, or `yield`, in the graph")
    for reader in plan.readers:
        index = _top_level_assignment_index(body, reader.node)
        if index is None:
            plan.block("DM005", reader.node, "the reader must be assigned at the top of the graph")
        plan.reader_statement_indices.append(index)
    taken = {p.name.value for p in all_params(plan.function.params)}
    for name in MAPPED_PIPELINE_ARGS:
        if name in taken:
            plan.block("DM001", plan.function, f"the graph already has a parameter `{name}`")


def _check_generator_names(plan: PipelinePlan) -> None:
    """The generator takes ``batch_size=``, ``seed=``, ... as parameters and reads them for its
    reader, RNG and context: a graph that binds one of those names itself would change what they
    read, and one that reads it from the module would read the parameter instead."""
    # lines moved before the generator (plan.hoisted) read the names around it, as they did
    body = [s for s in plan.function.body.body if id(s) not in plan.dropped_statements | set(plan.hoisted)]
    graph = plan.function.with_changes(body=plan.function.body.with_changes(body=body))
    local = function_locals(graph)
    # ``batch_size = Pipeline.current().max_batch_size`` is dropped, and what reads it reads the parameter
    with_dropped = function_locals(plan.function)
    loaded = scope_names([graph.body]).loaded
    params = {p.name.value for p in all_params(plan.function.params)}
    for name in plan.params:
        if name in local - params:
            reason = _why_not_renamed(plan, name)
            if reason is None:
                plan.renamed[name] = unique_name(f"{name}_", variable_names(plan.function))
                continue
            plan.block("DM001", plan.function, f"the graph binds `{name}`, the name of the migrated generator's "
                                               f"`{name}=` parameter, which its reader and RNG read, and {reason}: "
                                               "rename it")
        elif name in loaded - with_dropped and not _reads_its_own_parameter(plan, name):
            plan.block("DM001", plan.function, f"the graph reads `{name}` from outside it, and the migrated "
                                               f"generator's `{name}=` parameter would hide that value: rename it")


def _why_not_renamed(plan: PipelinePlan, name: str) -> str | None:
    """A graph's own ``seed`` (``seed = random.randint(...)``) becomes ``seed_`` in the generator,
    where it cannot be the generator's parameter; None where that rename is safe, else why not."""
    if name in {n.value for s in _declarations(plan.function) for n in s.names}:
        return "declares it `global` or `nonlocal`"
    for nested in nested_scopes(plan.function):
        if name in scope_names([nested]).bound or name in {p.name.value for p in _scope_params(nested)}:
            return "a function or comprehension inside it binds that name too"
    if any(name in scope_names([source.call.node]).loaded for source in plan.sources):
        return "an external source's arguments read it"
    return None


def _declarations(function: cst.FunctionDef) -> list:
    found = []

    class Declarations(Visitor):
        def visit_Global(self, node: cst.Global) -> None:
            found.append(node)

        visit_Nonlocal = visit_Global

    walk(function.body, Declarations())
    return found


def nested_scopes(function: cst.FunctionDef) -> list[cst.CSTNode]:
    """Functions, lambdas, classes and comprehensions inside ``function``'s body."""
    found = []

    class Scopes(Visitor):
        def visit_FunctionDef(self, node) -> None:
            found.append(node)

        visit_Lambda = visit_ClassDef = visit_ListComp = visit_SetComp = visit_DictComp = visit_GeneratorExp = (
            visit_FunctionDef)

    walk(function.body, Scopes())
    return found


def _scope_params(node: cst.CSTNode) -> list[cst.Param]:
    params = getattr(node, "params", None)
    return all_params(params) if isinstance(params, cst.Parameters) else []


def _plain_prefix(plan: PipelinePlan, operator_calls: set[int]) -> list[cst.BaseStatement]:
    """The first lines of a ``with pipe:`` graph (not a converted subclass) that build nothing
    and bind names the rest does not rebind: moved before the generator, they run where the
    ``with`` was, as in pipeline mode, and the generator reads what they bind."""
    from .normalize import SYNTHETIC_DECORATOR

    decorator = plan.graph.decorator.decorator if plan.graph.decorator is not None else None
    decorator = decorator.func if isinstance(decorator, cst.Call) else decorator
    if not (isinstance(decorator, cst.Name) and decorator.value == SYNTHETIC_DECORATOR):  # not a converted class
        return []
    body = list(plan.function.body.body)
    prefix = []
    for index, statement in enumerate(body):
        if (not isinstance(statement, cst.SimpleStatementLine) or operator_calls & node_ids(statement)
                or set(plan.constants) & node_ids(statement) or id(statement) in plan.dropped_statements
                or any(isinstance(small, (cst.Return, cst.Global, cst.Nonlocal)) for small in statement.body)
                or scope_names([statement]).bound & scope_names(body[index + 1:]).bound):
            break
        prefix.append(statement)
    return prefix


def _check_op_seeds(plan: PipelinePlan) -> None:
    """An operator's own ``seed=`` becomes an RNG made before the loop: a name of the graph it
    reads must be computed by plain lines of the graph's body (``s = 42``), which also run
    before the loop, so that the RNG can be made right after them."""
    body = list(plan.function.body.body)
    operator_ids = {id(call.node) for call in plan.calls}
    plain = [s for s in body if isinstance(s, cst.SimpleStatementLine) and not operator_ids & node_ids(s)]
    elsewhere = scope_names([s for s in body if all(s is not p for p in plain)]).bound
    for call in plan.random_calls:
        seed = next((a.value for a in call.node.args if a.keyword is not None and a.keyword.value == "seed"), None)
        if seed is None:
            continue
        computed = scope_names([seed]).loaded & function_locals(plan.function)
        late = sorted(computed & elsewhere)
        if late:
            plan.block("DM016", call.node, f"the `seed=` of `{call.qualname.rsplit('.', 1)[-1]}` reads `{late[0]}`, "
                                           "which the graph computes in a block or from an operator: compute it "
                                           "in a line of its own before the operator")


def _reads_its_own_parameter(plan: PipelinePlan, name: str) -> bool:
    """What the graph reads as ``name`` is what the generator's parameter holds: a converted
    subclass read ``self.batch_size`` there; or every call gives the pipeline that very name
    (``@pipeline_def(batch_size=batch_size)``, or ``p(batch_size=batch_size)`` at each call:
    ``block_hidden_module_reads`` checks that no function around a call binds it)."""
    from .normalize import SYNTHETIC_CLASS_DECORATOR

    default = plan.pipeline_args.get(name)
    decorator = plan.graph.decorator.decorator if plan.graph.decorator is not None else None
    decorator = decorator.func if isinstance(decorator, cst.Call) else decorator
    if default is None and isinstance(decorator, cst.Name) and decorator.value == SYNTHETIC_CLASS_DECORATOR:
        return True  # a converted subclass's ``self.batch_size``, read as the generator's own
    for call in plan.factory_calls:  # (none here: importers are checked against fixed_params)
        given = next((a.value for a in call.args if a.keyword is not None and a.keyword.value == name), default)
        if not (isinstance(given, cst.Name) and given.value == name):
            return False
    if not plan.factory_calls and not (isinstance(default, cst.Name) and default.value == name):
        return False
    plan.fixed_params.add(name)
    return True


def block_hidden_module_reads(plans: list[PipelinePlan], module: cst.Module) -> None:
    """A call ``p(batch_size=batch_size)`` inside a function that binds ``batch_size`` gives the
    generator that local, where the graph read the module's: such a pipeline stays."""
    suspects = {id(call): plan for plan in plans if plan.migratable and not plan.imported
                for call in plan.factory_calls if plan.fixed_params}
    if not suspects:
        return
    finder = _CallsUnderLocals(suspects)
    walk(module, finder)
    for call, plan, name in finder.found:
        plan.block("DM001", call, f"the graph reads its module's `{name}`, and this call passes `{name}=` from a "
                                  "function that binds its own: the migrated generator's parameter would hold that")


class _CallsUnderLocals(Visitor):
    def __init__(self, suspects: dict[int, PipelinePlan]) -> None:
        self.suspects = suspects
        self.locals: list[set[str]] = []
        self.found: list[tuple[cst.Call, PipelinePlan, str]] = []

    def visit_FunctionDef(self, node: cst.FunctionDef) -> None:
        self.locals.append(function_locals(node))

    def leave_FunctionDef(self, original_node: cst.FunctionDef) -> None:
        self.locals.pop()

    def visit_Call(self, node: cst.Call) -> None:
        plan = self.suspects.get(id(node))
        if plan is None or not self.locals:
            return
        bound = set().union(*self.locals) & plan.fixed_params
        if bound:
            self.found.append((node, plan, sorted(bound)[0]))


CURRENT_PIPELINE = frozenset({"nvidia.dali.Pipeline.current", "nvidia.dali.pipeline.Pipeline.current"})
# what the pipeline being defined tells, and the generator parameter that holds it (device_id
# is None in both modes where none is given; num_threads is resolved by DALI, so it is not here)
CURRENT_ATTRIBUTES = {"max_batch_size": "batch_size", "batch_size": "batch_size", "device_id": "device_id"}


def _plan_current_pipeline(plan: PipelinePlan) -> None:
    """``Pipeline.current()`` in a graph is the pipeline being defined, which dynamic mode does not
    have. Its ``max_batch_size`` is the generator's ``batch_size`` and its ``device_id`` the
    generator's ``device_id``: read directly, or through a name the graph binds to it once at
    its top and uses for nothing else."""
    current = [c for c in plan.calls if c.qualname in CURRENT_PIPELINE]
    if not current:
        return
    plan.calls = [c for c in plan.calls if c not in current]
    uses = _CurrentPipelineUses({id(c.node) for c in current})
    walk(plan.function.body, uses)
    reads, aliases = set(uses.direct_reads), {}
    for statement in plan.function.body.body:
        alias = _current_pipeline_alias(statement, uses.calls)
        if alias is not None:
            aliases[alias] = statement
    alias_reads = {name: uses.alias_reads(name) for name in aliases}
    for call in current:
        alias = next((n for n, s in aliases.items() if id(call.node) in node_ids(s)), None)
        if id(call.node) in uses.read_calls or alias is not None and alias_reads[alias] is not None:
            continue
        plan.block("DM001", call.node, "`Pipeline.current()` is the pipeline being defined, which dynamic mode "
                                       "does not have: only its `max_batch_size` and `device_id` (the "
                                       "generator's `batch_size` and `device_id`) have a migration")
        return
    for name, statement in aliases.items():
        reads |= alias_reads[name]
        plan.dropped_statements.add(id(statement))
    plan.current_reads = {read: CURRENT_ATTRIBUTES[uses.attribute_names[read]] for read in reads}
    for statement in plan.function.body.body:  # ``batch_size = pipe.max_batch_size``: it is already
        if _copies_a_parameter(statement, plan.current_reads):
            plan.dropped_statements.add(id(statement))


def _current_pipeline_alias(statement: cst.BaseStatement, calls: set[int]) -> str | None:
    assigned = name_assignment(statement)
    return assigned[0] if assigned is not None and id(assigned[1]) in calls else None


def _copies_a_parameter(statement: cst.BaseStatement, reads: dict[int, str]) -> bool:
    assigned = name_assignment(statement)
    return assigned is not None and reads.get(id(assigned[1])) == assigned[0]


class _CurrentPipelineUses(Visitor):
    """``Pipeline.current().max_batch_size`` reads, and every name read with the attributes read
    from it, so that an alias of the current pipeline can be checked for other uses."""

    def __init__(self, calls: set[int]) -> None:
        self.calls = calls
        self.direct_reads: list[int] = []
        self.read_calls: set[int] = set()
        self.names: dict[str, list[cst.Name]] = {}
        self.attributes: dict[int, cst.Attribute] = {}  # id(name read) -> its attribute
        self.attribute_names: dict[int, str] = {}  # id(attribute read) -> ``max_batch_size``, ...

    def visit_Attribute(self, node: cst.Attribute) -> None:
        if node.attr.value not in CURRENT_ATTRIBUTES:
            return
        self.attribute_names[id(node)] = node.attr.value
        if id(node.value) in self.calls:
            self.direct_reads.append(id(node))
            self.read_calls.add(id(node.value))
        elif isinstance(node.value, cst.Name):
            self.attributes[id(node.value)] = node

    def visit_Name(self, node: cst.Name) -> None:
        self.names.setdefault(node.value, []).append(node)

    def alias_reads(self, name: str) -> set[int] | None:
        """The attribute reads of ``name`` (None: it is used some other way too). Its binding is
        one of the names seen, and an attribute's own name is another."""
        seen = self.names.get(name, [])
        reads = {id(self.attributes[id(n)]) for n in seen if id(n) in self.attributes}
        attribute_names = {id(a.attr) for a in self.attributes.values()}
        others = [n for n in seen if id(n) not in self.attributes and id(n) not in attribute_names]
        return reads if len(others) == 1 else None


def _check_operator_objects(plan: PipelinePlan, facts: ModuleFacts) -> None:
    """A graph that calls a legacy operator object made outside it (``decode = ops.decoders.
    Image(...)`` before ``with pipe:``): migrated, the call would still build a graph node."""
    if not facts.operator_objects:
        return
    for call in calls_named(plan.function, set(facts.operator_objects)):
        name = dotted_name(call.func)
        made = cst.Module([]).code_for_node(facts.operator_objects[name].func)
        plan.block("DM009", call, f"`{name}(...)` calls a legacy operator object made outside the graph "
                                  f"(`{name} = {made}(...)`): call its `fn` function in the graph instead")


def _check_called_parameters(plan: PipelinePlan, facts: ModuleFacts) -> None:
    """``return augmentation(images), labels`` with ``augmentation`` a parameter: what the callers
    pass (``lambda images: fn.flip(images)``) builds graph nodes, and migrated it would be called
    with Batches."""
    params = {p.name.value for p in all_params(plan.function.params)}
    for call in calls_named(plan.function.body, params):
        if _per_batch_arguments(call, plan.graph.datanodes, facts):
            plan.block("DM015", call, f"`{call.func.value}` is a parameter the graph calls with its data, "
                                      f"{NOT_FOLLOWED}: in pipeline mode it builds part of the graph (with `fn`); "
                                      "migrate by hand, passing functions that take Batches and call `ndd`")


def _per_batch_arguments(reader: cst.Call, datanodes: set[str], facts: ModuleFacts) -> list[str]:
    """The keywords of ``reader`` given a DataNode (``roi_start=start``, ``fn.random.uniform(...)``)."""
    found = []
    for arg in reader.args:
        finder = _DataNodeUse(datanodes, facts)
        walk(arg.value, finder)
        if finder.found:
            found.append(arg.keyword.value if arg.keyword else "*")
    return found


class _DataNodeUse(Visitor):
    def __init__(self, datanodes: set[str], facts: ModuleFacts) -> None:
        self.datanodes = datanodes
        self.facts = facts
        self.found = False

    def visit_Name(self, node: cst.Name) -> None:
        self.found |= node.value in self.datanodes

    def visit_Call(self, node: cst.Call) -> None:
        self.found |= (self.facts.imports.resolve(node.func) or "").startswith("nvidia.dali.fn.")


class _NameLoads(Visitor):
    """How often each of ``names`` is read, and how often as a ``device=`` argument."""

    def __init__(self, names: set[str]) -> None:
        self.names = names
        self.not_loads: set[int] = set()
        self.loads: dict[str, int] = dict.fromkeys(names, 0)
        self.as_device: dict[str, int] = dict.fromkeys(names, 0)

    def visit_Arg(self, node: cst.Arg) -> None:
        if node.keyword is not None:
            self.not_loads.add(id(node.keyword))
            if node.keyword.value == "device" and isinstance(node.value, cst.Name) and node.value.value in self.names:
                self.as_device[node.value.value] += 1

    def visit_AssignTarget(self, node: cst.AssignTarget) -> None:
        self.not_loads.add(id(node.target))

    def visit_Attribute(self, node: cst.Attribute) -> None:
        self.not_loads.add(id(node.attr))

    def visit_Name(self, node: cst.Name) -> None:
        if node.value in self.names and id(node) not in self.not_loads:
            self.loads[node.value] += 1


def _check_device_variables(plan: PipelinePlan, scope: cst.CSTNode) -> None:
    """``"mixed"`` given to a name the graph passes as ``device=``: fixed to ``"gpu"`` where
    the name serves nothing else; ``scope``: the graph, or the function it is defined in
    (``decoder_device = "cpu" if dali_cpu else "mixed"`` above a ``with pipe:`` graph)."""
    found = mixed_device_strings(scope, plan.calls)
    if not found.strings:
        return
    uses = _NameLoads(found.names)
    walk(scope, uses)
    for name in sorted(found.names):
        if uses.loads[name] != uses.as_device[name] + found.compared.get(name, 0):
            plan.block("DM004", plan.function, f"`{name}` holds \"mixed\" and is used for more than `device=`; "
                                               "use `\"gpu\"` where it is a device")
    plan.mixed_strings = {id(string) for string in found.strings}


def _check_conditionals(plan: PipelinePlan, keywords: dict) -> None:
    flag = keywords.get("enable_conditionals")
    try:
        plan.per_sample_ifs = conditionals.plan_conditionals(plan.function, plan.graph, plan.calls)
    except conditionals.NotMigratable as reason:
        plan.block("DM011", flag or plan.function, f"conditionals: {reason}")
        return
    if plan.per_sample_ifs and not (isinstance(flag, cst.Name) and flag.value == "True"):
        plan.block("DM011", plan.per_sample_ifs[0].statement.test,
                   "`if` on a DataNode without `enable_conditionals=True` fails in pipeline mode")


def _check_outside_state(plan: PipelinePlan) -> None:
    """Pipeline mode runs the graph's Python once, when the pipeline is built; the generator
    runs it when its first batch is asked for. State set outside the graph (``self.length =
    len(source) // batch_size``, ``stats["steps"] = ...``, ``global``) would be missing or old
    until then: such a graph stays."""
    local = scope_names(plan.function.body.body).bound - {p.name.value for p in all_params(plan.function.params)}
    finder = _OutsideState(local)
    walk(plan.function.body, finder)
    operator_calls = {id(call.node) for call in plan.calls}
    prefix = _plain_prefix(plan, operator_calls)
    outside = [node for node in finder.found if not operator_calls & node_ids(node)]
    in_prefix = [next((k for k, s in enumerate(prefix) if id(node) in node_ids(s)), None) for node in outside]
    if outside and None not in in_prefix:  # all of it runs where the ``with`` was, as in pipeline mode
        plan.hoisted = [id(s) for s in prefix[:max(in_prefix) + 1]]
        return
    for node in finder.found:
        shown = cst.Module([]).code_for_node(node).strip().splitlines()[0]
        if operator_calls & node_ids(node):  # ``self.labels = fn...``: a graph node kept on the object
            plan.block("DM001", node, f"`{shown}` keeps a graph node on an object; the migration makes such an "
                                      "attribute a local of the graph only where nothing else can read it (no other "
                                      "method or class, no other object's attribute of that name): keep the node "
                                      "in a local variable of the graph")
            continue
        plan.block("DM001", node, f"`{shown}` changes state outside the graph: pipeline mode ran it once, when "
                                  "the pipeline was built, and the migrated generator would run it only when its "
                                  "first batch is asked for; compute it outside the graph, before creating the "
                                  "pipeline")


class _OutsideState(Visitor):
    """Statements of a graph that set an attribute or item of an object the graph did not
    make, or declare ``global``/``nonlocal`` names (nested functions are left alone)."""

    def __init__(self, local: set[str]) -> None:
        self.local = local
        self.found: list[cst.CSTNode] = []

    def visit_FunctionDef(self, node: cst.FunctionDef) -> bool:
        return False

    def visit_Lambda(self, node: cst.Lambda) -> bool:
        return False

    def _outside(self, target: cst.BaseExpression) -> bool:
        return any(self._sets_outside(leaf) for leaf in assigned_targets(target))

    def _sets_outside(self, target: cst.BaseExpression) -> bool:
        if not isinstance(target, (cst.Attribute, cst.Subscript)):
            return False
        root = target
        while isinstance(root, (cst.Attribute, cst.Subscript)):
            root = root.value
        return not (isinstance(root, cst.Name) and root.value in self.local)

    def visit_Assign(self, node: cst.Assign) -> None:
        if any(self._outside(t.target) for t in node.targets):
            self.found.append(node)

    def visit_AugAssign(self, node: cst.AugAssign) -> None:
        if self._outside(node.target):
            self.found.append(node)

    def visit_AnnAssign(self, node: cst.AnnAssign) -> None:
        if node.value is not None and self._outside(node.target):
            self.found.append(node)

    def visit_Del(self, node: cst.Del) -> None:
        if self._outside(node.target):
            self.found.append(node)

    def visit_Global(self, node: cst.Global) -> None:
        self.found.append(node)

    def visit_Nonlocal(self, node: cst.Nonlocal) -> None:
        self.found.append(node)


def _check_source_setup(plan: PipelinePlan) -> None:
    """A source object is made once, before the generator's loop, as the graph made it once:
    what makes it must not be computed from data, which the migrated loop computes per batch."""
    body = list(plan.function.body.body)
    data_statements = _statements_with_data(plan, body)
    for source in plan.sources:
        made_from = source.made_from()
        if made_from is None:
            continue
        before = source.binding_index if source.binding_index is not None else source.statement_index
        name = _name_from_data(made_from, body[:before], data_statements)
        if name is not None:
            plan.block("DM012", source.call.node, f"`fn.external_source`: the source is made from `{name}`, "
                                                  "which the graph computes from its data, inside a block or "
                                                  "after the external_source: make the source from parameters "
                                                  "and plain statements before it")


def _statements_with_data(plan: PipelinePlan, body: list[cst.BaseStatement]) -> set[int]:
    """Top-level statements of the graph that call an operator or leave it (return, yield)."""
    operator_calls = {id(call.node) for call in plan.calls}
    return {index for index, statement in enumerate(body)
            if operator_calls & node_ids(statement) or scope_names([statement]).escapes}


def _name_from_data(expression: cst.BaseExpression, earlier: list[cst.BaseStatement],
                    data_statements: set[int]) -> str | None:
    """A name ``expression`` reads, directly or through the ``earlier`` statements that bind
    what it reads, that a data statement (or a statement nested in a block) binds; None when
    every name comes from the function's parameters, the module or plain top-level statements."""
    names = [scope_names([statement]) for statement in earlier]
    pending, seen = list(scope_names([expression]).loaded), set()
    while pending:
        name = pending.pop()
        if name in seen:
            continue
        seen.add(name)
        for index, statement in enumerate(earlier):
            if name not in names[index].bound:
                continue
            if index in data_statements or not isinstance(statement, cst.SimpleStatementLine):
                return name
            pending += names[index].loaded
    return None


def _returned_outputs(value: cst.BaseExpression, graph: Graph, facts: ModuleFacts) -> str | None:
    """"outputs" for a tuple or list written out, "sequence" for one built by a call or a
    concatenation, "single" for one DataNode; None when the migration cannot tell."""
    return _outputs_of(value, facts, 0, lambda name: name in graph.datanodes)


def _outputs_of(value: cst.BaseExpression | None, facts: ModuleFacts, depth: int,
                one_output: Callable[[str], bool]) -> str | None:
    """``one_output``: whether a name holds one output."""
    if isinstance(value, cst.Name):
        return "single" if one_output(value.value) else None
    if isinstance(value, cst.IfExp):
        kinds = {_outputs_of(branch, facts, depth, one_output) for branch in (value.body, value.orelse)}
        return kinds.pop() if len(kinds) == 1 else None
    if isinstance(value, (cst.Tuple, cst.List)):
        return "outputs"
    if isinstance(value, cst.Call) and dotted_name(value.func) in ("tuple", "list"):
        return "sequence"
    if isinstance(value, cst.BinaryOperation) and isinstance(value.operator, cst.Add) and (
            isinstance(value.left, (cst.Tuple, cst.List)) or isinstance(value.right, (cst.Tuple, cst.List))):
        return "sequence"
    helper = _module_function_called(value, facts)
    if helper is not None:
        return _helper_outputs(helper, facts, depth + 1)
    if isinstance(value, (cst.Call, cst.Subscript, cst.BinaryOperation, cst.UnaryOperation, cst.Attribute)):
        return "single"
    return None


def _output_count(value: cst.BaseExpression, function: cst.FunctionDef, facts: ModuleFacts) -> int | None:
    """How many outputs the graph returns: the elements of the tuple it returns, or of the one
    every ``return`` of the module function it returns the call of gives (``return
    common_pipeline(jpegs, labels)``, as DALI's examples share a graph's tail)."""
    helper = _module_function_called(value, facts)
    if helper is not None and helper is not function:
        counts = {_elements_returned(returned) for returned in returned_values(helper)}
        return counts.pop() if len(counts) == 1 else None
    return _elements_returned(value)


def _elements_returned(value: cst.BaseExpression | None) -> int | None:
    if isinstance(value, (cst.Tuple, cst.List)):
        return None if any(isinstance(e, cst.StarredElement) for e in value.elements) else len(value.elements)
    return None if value is None else 1


def _module_function_called(value: cst.BaseExpression | None, facts: ModuleFacts) -> cst.FunctionDef | None:
    """The function of the module that ``value`` calls by its name, where one ``def`` defines it."""
    if not (isinstance(value, cst.Call) and isinstance(value.func, cst.Name)):
        return None
    definitions = facts.module_functions.get(value.func.value, [])
    return definitions[0] if len(definitions) == 1 else None


def _helper_outputs(helper: cst.FunctionDef, facts: ModuleFacts, depth: int) -> str | None:
    """What the graph returns when it returns a call of ``helper``, a function of the module
    (``return common_pipeline(jpegs, labels)``): "sequence" where each of its ``return``s gives
    several outputs, "single" where each gives one; None where they differ or cannot be told."""
    if depth > 3:
        return None

    def one_output(name: str) -> bool:  # a parameter, or bound to one output only
        return all(_outputs_of(value, facts, depth, lambda _: True) == "single"
                   for bound, value in bound_values(helper) if bound == name)

    kinds = {_outputs_of(value, facts, depth, one_output) for value in returned_values(helper)}
    kinds = {"sequence" if kind == "outputs" else kind for kind in kinds}
    return kinds.pop() if len(kinds) == 1 else None


def _is_return(statement: cst.BaseStatement) -> bool:
    return (
        isinstance(statement, cst.SimpleStatementLine)
        and len(statement.body) == 1
        and isinstance(statement.body[0], cst.Return)
        and statement.body[0].value is not None
    )


def _top_level_assignment_index(body, call: cst.Call) -> int | None:
    """The index of ``target = call`` among the graph's top-level statements."""
    for index, statement in enumerate(body):
        if (
            isinstance(statement, cst.SimpleStatementLine)
            and len(statement.body) == 1
            and isinstance(statement.body[0], cst.Assign)
            and len(statement.body[0].targets) == 1
            and statement.body[0].value is call
        ):
            return index
    return None


def _source_statement_index(body, call: cst.Call) -> int | None:
    """``target = fn.external_source(...)`` at the graph's top, or ``return fn.external_source(...)``
    ending it (one output: pipeline mode rejects the list that ``num_outputs`` returns)."""
    index = _top_level_assignment_index(body, call)
    if index is None and body and _is_return(body[-1]) and body[-1].body[0].value is call:
        if not any(a.keyword is not None and a.keyword.value == "num_outputs" for a in call.args):
            return len(body) - 1
    return index


class _ReturnYieldCounter(Visitor):
    def __init__(self) -> None:
        self.returns = 0
        self.yields = 0

    def visit_FunctionDef(self, node: cst.FunctionDef) -> bool:
        return False  # nested functions have returns of their own

    def visit_Lambda(self, node: cst.Lambda) -> bool:
        return False

    def visit_Return(self, node: cst.Return) -> None:
        self.returns += 1

    def visit_Yield(self, node: cst.Yield) -> None:
        self.yields += 1


def _check_call_sites(plan: PipelinePlan, facts: ModuleFacts, strays: dict[str, list]) -> None:
    name = plan.graph.name
    plan.pipe_vars = [v for v in facts.pipeline_var_factories if name in facts.graphs_of(v)]
    plan.factory_calls = [c for c in facts.pipeline_factory_calls if dotted_name(c.func) == name
                          or name in facts.graphs_of(facts.aliased_calls.get(id(c), "") + "()")]
    for call in plan.factory_calls:
        for arg in call.args:
            if arg.keyword is not None and _is_pipeline_kwarg(plan, arg):
                _check_pipeline_args(plan, {arg.keyword.value: arg.value}, arg)
    plan.checkpointing = any(
        any(a.keyword is not None and a.keyword.value in CALL_SITE_ARGS for a in call.args)
        for call in plan.factory_calls) or is_true(plan.pipeline_args.get("enable_checkpointing"))
    if plan.checkpointing and plan.sources:
        plan.block("DM013", plan.function, "checkpointing a pipeline with `external_source`: ndd keeps no "
                                           "state of the source; save its position yourself")
    for site in facts.pipeline_method_calls:
        if (site.origin in plan.pipe_vars and site.detail == "reset" and plan.sources
                and not _epochs_end_at_sources(site.origin, plan, facts)):
            from .manual_epochs import may_run_epochs_by_hand

            if may_run_epochs_by_hand(site.origin, plan, facts):
                plan.epochs_by_hand.add(site.origin)  # manual_epochs.py plans it, or blocks
            else:
                plan.block("DM003", site.node, f"`{site.name}.reset()` starts the sources' next epoch after "
                                               "they ended one: needs a manual migration")
        elif site.origin in plan.pipe_vars and site.detail not in SUPPORTED_PIPE_METHODS:
            code = METHOD_RULES.get(site.detail, "DM003")
            plan.block(code, site.node, _method_reason(site))
        elif site.origin in plan.pipe_vars and site.detail == "schedule_run" and _also_runs(site, facts):
            plan.block("DM003", site.node, f"`{site.name}.schedule_run()` next to `{site.name}.run()`, which "
                                           "prefetches on its own: needs a manual migration")
        elif site.name == f"{name}()":  # ``train_pipe().serialize()``: a pipeline never bound
            reason = (_method_reason(site) if site.detail == "serialize"
                      else f"`{site.name}.{site.detail}()`: bind the pipeline to a name first")
            plan.block(METHOD_RULES.get(site.detail, "DM003"), site.node, reason)
    for site in facts.tensorlist_uses:
        if site.origin in plan.pipe_vars and site.detail in UNSUPPORTED_OUTPUT_METHODS:
            plan.block("DM007", site.node, UNSUPPORTED_OUTPUT_METHODS[site.detail])
    # a ``@data_iterator`` call makes the loader: what holds it is used as any object
    holders = plan.pipe_vars if plan.jax_iterator is None else []
    stray_nodes = [n for key in [name, *holders] for n in strays.get(key, [])]
    if plan.jax_iterator is not None:
        called = getattr(strays, "called", {})
        known = {id(call) for call in plan.factory_calls}
        # wherever it is called (``for batch in eval_iterator(...)``), its arguments are planned
        plan.factory_calls += [called[id(n)] for n in stray_nodes if id(n) in called and id(called[id(n)]) not in known]
        stray_nodes = [n for n in stray_nodes if id(n) not in called]
    consumed = _block_graph_consumers(plan, facts, {id(n) for n in stray_nodes})
    in_containers = getattr(strays, "in_containers", set())
    in_iterators = getattr(strays, "in_iterators", {})
    in_pairs = getattr(strays, "in_pairs", set())
    for node in (n for n in stray_nodes if id(n) not in consumed):
        if id(node) in in_iterators:
            plan.block("DM003", node, f"`{dotted_name(node)}(...)` is made inside the arguments of "
                                      f"`{in_iterators[id(node)]}`: it gets a line of its own (`pipe = "
                                      f"{dotted_name(node)}(...)`) when the pipeline migrates and the iterator "
                                      "call is the whole value of an assignment, `return` or expression")
        elif id(node) in in_pairs:
            plan.block("DM003", node, f"`{dotted_name(node)}(...)` makes a pipeline bound in one assignment with "
                                      "other values (`a, b = ..., ...`), which the migration does not follow: give "
                                      f"it an assignment of its own (`a = {dotted_name(node)}(...)`)")
        elif id(node) in in_containers:
            plan.block("DM003", node, f"`{dotted_name(node)}(...)` makes pipelines stored in a list or dict, "
                                      f"{NOT_FOLLOWED}; move them by hand: store a generator for each "
                                      "instead (read several together with `zip`)")
        else:
            context = getattr(strays, "context", {}).get(id(node))
            where = f" in `{context}`" if context else ""
            if facts.key_of(node) in facts.pipeline_containers:
                plan.block("DM003", node, f"`{dotted_name(node)}`, a list or dict of pipelines, is used as a value{where}, "
                                          f"{NOT_FOLLOWED}: read its pipelines in the function that makes it (a "
                                          "subscript, a loop, `len`), or make each one there")
            else:
                plan.block("DM003", node, f"`{dotted_name(node)}` is used as a value{where}; migrate that use by hand")


GRAPH_CONSUMERS = {"tf": "TensorFlow", "mxnet": "MXNet", "paddle": "PaddlePaddle"}


def _block_graph_consumers(plan: PipelinePlan, facts: ModuleFacts, stray_ids: set[int]) -> set[int]:
    """TensorFlow's ``DALIDataset`` and the MXNet and Paddle iterators run the pipeline graph in
    their framework: the pipeline stays. Returns the ids of the pipeline expressions they take."""
    from ..rules.dm010_framework_iterator import GUIDANCE, plugin_name
    from .todo import KEPT

    consumed: set[int] = set()
    for site in facts.iterator_uses:
        plugin, pipeline = plugin_name(site.name), iterated_pipeline(site.node)
        if plugin not in GRAPH_CONSUMERS or pipeline is None:
            continue
        if isinstance(pipeline, cst.Call) and dotted_name(pipeline.func) == plan.graph.name:
            pipeline = pipeline.func  # ``DALIDataset(pipeline=mnist_pipeline(path), ...)``
        if id(pipeline) in stray_ids or dotted_name(pipeline) == plan.graph.name or facts.key_of(pipeline) in plan.pipe_vars:
            consumed.add(id(pipeline))
            short = site.name.rsplit(".", 1)[-1]
            plan.block("DM010", site.node, (
                f"{KEPT}: `{short}` (`nvidia.dali.plugin.{plugin}`) runs the pipeline graph inside "
                f"{GRAPH_CONSUMERS[plugin]}, and dynamic mode has no graph to give it; to move off it, "
                f"{GUIDANCE[plugin]}"))
    return consumed


def block_mixed_factory_calls(plans: list[PipelinePlan], facts: ModuleFacts) -> None:
    """``pipeline(...)`` in ``def speedtest(pipeline, ...)`` makes the pipelines of several
    functions: their migrated functions must take the call's arguments alike, or all stay."""
    from .callsites import dropped_factory_args

    for call_id, helper in facts.aliased_calls.items():
        makers = [p for p in plans if p.migratable and any(id(c) == call_id for c in p.factory_calls)]
        call = next((c for p in makers for c in p.factory_calls if id(c) == call_id), None)
        if call is None or len({frozenset(dropped_factory_args(p, call)) for p in makers}) <= 1:
            continue
        names = ", ".join(f"`{p.graph.name}`" for p in makers)
        for plan in makers:
            plan.block("DM003", call, f"`{helper.split('@')[0]}(...)` makes pipelines of {names}, whose migrated "
                                      "functions take its arguments differently: call each one by name")


def block_shared_variables(plans: list[PipelinePlan], facts: ModuleFacts) -> None:
    """A variable name that may hold a pipeline left in pipeline mode keeps every pipeline it
    may hold in pipeline mode: its ``run()`` calls must stay as they are."""
    changed = True
    while changed:
        changed = False
        migratable = {p.graph.name for p in plans if p.migratable}
        for plan in [p for p in plans if p.migratable]:
            for var in plan.pipe_vars:
                others = facts.graphs_of(var) - migratable
                if others:
                    other = sorted(others)[0]
                    held = "a `Pipeline` object" if other == "Pipeline" else f"`{other}`"
                    plan.block("DM003", plan.function, f"`{spelled(var)}` also holds {held}, which is not migrated")
                    changed = True
                    break


def _epochs_end_at_sources(var: str, plan: PipelinePlan, facts: ModuleFacts) -> bool:
    """``pipe.reset()`` before each epoch of a framework iterator that ends its epochs where the
    sources stop (PhysicsNeMo's ``__iter__``): the migrated generator yields None there and goes
    on with the sources' next epoch, as the reset made DALI do; nothing runs the pipeline by hand
    (iterators.py and reader_meta.py check the iterators themselves)."""
    from ..analysis import RUN_METHODS, iterated_pipeline
    from .iterators import PARAMETERS, NotMigratable, _bind, _literal

    if plan.readers or any(s.origin == var and s.detail in RUN_METHODS for s in facts.pipeline_method_calls):
        return False
    sites = [s for s in facts.iterator_uses if facts.key_of(iterated_pipeline(s.node)) == var]
    for site in sites:
        try:
            bound = _bind(site.node, PARAMETERS[site.name]) if site.name in PARAMETERS else None
            if bound is None or _literal(bound.get("reader_name")) is not None or _literal(bound.get("size")) not in (None, -1):
                return False
        except NotMigratable:
            return False
    return bool(sites)


def _also_runs(site, facts: ModuleFacts) -> bool:
    return any(other.origin == site.origin and other.detail == "run" for other in facts.pipeline_method_calls)


def _method_reason(site) -> str:
    if site.detail == "serialize":
        from .todo import KEPT

        return (f"{KEPT}: `{site.name}.serialize()` needs the pipeline graph (for Triton's DALI backend or "
                "C++), which dynamic mode does not have")
    return f"`{site.name}.{site.detail}()` needs a manual migration"


def block_imported_graph_helpers(plans: list[PipelinePlan], helpers: dict[str, str]) -> None:
    """A graph calling a function of another project file that runs operators stays: migrated,
    it would hand that function ndd Batches, and its random operators would get no RNG."""
    if not helpers:
        return
    for plan in (p for p in plans if not p.imported):
        called = {dotted_name(call.func) for call in calls_named(plan.function, set(helpers))}
        for name in sorted(called):
            plan.block("DM015", plan.function,
                       f"`{name}()` comes from `{helpers[name]}` and builds part of the graph with `fn`, "
                       f"{NOT_FOLLOWED} across files (migrated alone, the graph would call it with ndd "
                       "Batches): migrate it to `ndd` by hand (random operators take `batch_size=` and "
                       "`rng=`), then re-run")


def block_mixed_output_helpers(plans: list[PipelinePlan], facts: ModuleFacts) -> None:
    """A function that takes outputs of several pipelines (``show_images``) is rewritten for
    ndd Batches or not at all: when one of those pipelines stays, they all stay."""
    for name in facts.output_helpers:
        graphs = facts.output_helper_graphs(name)
        migratable = {p.graph.name for p in plans if p.migratable}
        kept = graphs - migratable
        if not kept:
            continue
        held = "a `Pipeline` object" if sorted(kept)[0] == "Pipeline" else f"`{sorted(kept)[0]}`"
        for plan in plans:
            if plan.migratable and plan.graph.name in graphs:
                plan.block("DM007", plan.function, f"`{name}` also takes outputs of {held}, which is not migrated")


def _is_pipeline_kwarg(plan: PipelinePlan, arg: cst.Arg) -> bool:
    params = {p.name.value for p in all_params(plan.function.params)}
    return arg.keyword.value not in params


def _mapped_params(plan: PipelinePlan, keywords: dict) -> list[str]:
    given = set(keywords)
    for call in plan.factory_calls:
        given |= {a.keyword.value for a in call.args if a.keyword is not None}
    params = ["batch_size"]
    if "num_threads" in given:
        params.append("num_threads")
    # a pipeline called only from other modules may be given a device there, unless its
    # decorator fixes one (importers that pass another are kept: _check_device_kept)
    called_elsewhere = not plan.factory_calls and "device_id" not in plan.pipeline_args
    reads_device = "device_id" in plan.current_reads.values()  # ``Pipeline.current().device_id``
    if "device_id" in given and not _all_none(plan, "device_id") or called_elsewhere or reads_device:
        params.append("device_id")
    if "seed" in given or plan.random_calls or any(reader_needs_pipeline_seed(r.node) for r in plan.readers):
        params.append("seed")
    return params


SHUFFLE_ARGS = ("random_shuffle", "shuffle_after_epoch")


def safety(plan: PipelinePlan) -> tuple[str, str]:
    """(level, why) of the pipeline's migration as a whole; see ``rules.base.SAFETY_LEVELS``."""
    if plan.checkpointing:
        return "behaviour change", "checkpoints move to `ndd.checkpoint`: states saved in pipeline mode do not load"
    if plan.random_calls:
        return "equivalent", "its random operators draw from a new ndd RNG stream"
    if any(reader_needs_pipeline_seed(reader.node) for reader in plan.readers):  # a seed of its own: same order
        return "equivalent", "its reader shuffles with another seed than DALI derived in pipeline mode"
    return "exact", "the same data, bit for bit"


def _shuffles(reader_call: cst.Call) -> bool:
    keywords = keyword_values(reader_call)
    return any(name in keywords and not (isinstance(keywords[name], cst.Name) and keywords[name].value == "False")
               for name in SHUFFLE_ARGS)


def reader_needs_pipeline_seed(reader_call: cst.Call) -> bool:
    """A reader that shuffles without a ``seed=`` of its own takes the pipeline's seed."""
    return "seed" not in keyword_values(reader_call) and _shuffles(reader_call)


def _all_none(plan: PipelinePlan, name: str) -> bool:
    values = [plan.pipeline_args[name]] if name in plan.pipeline_args else []
    for call in plan.factory_calls:
        values += [a.value for a in call.args if a.keyword is not None and a.keyword.value == name]
    return all(isinstance(v, cst.Name) and v.value == "None" for v in values)



class _StrayReferenceFinder(Visitor):
    """Found by key: a pipeline function's name, or the pipeline variable a name reads there."""

    def __init__(self, names: set[str], accounted: set[int], facts: ModuleFacts) -> None:
        self.names = names
        self.accounted = accounted
        self.facts = facts
        self.found: dict[str, list[cst.CSTNode]] = Strays()
        self.stack: list[cst.CSTNode] = []

    def on_visit(self, node: cst.CSTNode) -> bool:
        self.stack.append(node)
        if id(node) in self.accounted:
            return False
        if isinstance(node, cst.Call) and isinstance(node.func, cst.Name) and node.func.value in self.names:
            self.found.called[id(node.func)] = node
        for element in container_elements(node):  # ``[make(shard_id=i) for i in range(n)]``
            if isinstance(element, cst.Call):
                self.found.in_containers.add(id(element.func))
        if isinstance(node, cst.Assign) and len(node.targets) == 1:  # ``train, val = make(0), make(1)``
            for _, value in paired_elements(node.targets[0].target, node.value) or []:
                if isinstance(value, cst.Call):
                    self.found.in_pairs.add(id(value.func))
        if isinstance(node, (*IMPORT_TYPES, *IMPORT_FROM_TYPES, cst.Global, cst.Nonlocal)):
            return False  # ``global pipe`` declares the name; it uses no value
        if isinstance(node, cst.Del):  # ``del pipe`` frees a generator as it freed the pipeline
            self.accounted |= {id(target) for target in _deleted(node.target)}
        if isinstance(node, cst.FunctionDef) and node.name.value in self.names:
            self.accounted.add(id(node.name))
        if isinstance(node, cst.Arg) and node.keyword is not None:  # ``show(pipe=...)`` names no variable
            self.accounted.add(id(node.keyword))
        if isinstance(node, cst.Name) and node.value in self.names:
            key = self.facts.pipeline_refs.get(id(node), node.value)
            if key is not None:  # None: a function's own name, not the pipeline variable
                self.found.setdefault(key, []).append(node)
                self.found.context[id(node)] = _use_context(self.stack)
        if isinstance(node, cst.Attribute) and dotted_name(node) in self.names:  # ``pipelines.train``
            key = self.facts.pipeline_refs.get(id(node), dotted_name(node))  # ``self.pipe`` of its class
            self.found.setdefault(key or dotted_name(node), []).append(node)
            return False
        held = f"self.{node.attr.value}" if isinstance(node, cst.Attribute) else ""
        if held in self.names and not (isinstance(node.value, cst.Name) and node.value.value == "self"):
            # ``data.pipe.run()`` outside the class that holds ``self.pipe``: not rewritten with
            # it; which class's, the code does not say
            for key in (k for k in self.facts.pipeline_vars if spelled(k) == held):
                self.found.setdefault(key, []).append(node)
            self.found.context[id(node)] = _use_context(self.stack)
            return False
        if isinstance(node, cst.Attribute):
            self.accounted.add(id(node.attr))  # ``data.pipe`` reads an attribute, not the variable
        return True

    def on_leave(self, original_node: cst.CSTNode) -> None:
        self.stack.pop()


def _deleted(target: cst.BaseDelTargetExpression) -> list[cst.BaseExpression]:
    if isinstance(target, (cst.Tuple, cst.List)):
        return [element.value for element in target.elements]
    return [target]


def _use_context(stack: list[cst.CSTNode]) -> str:
    """The call or simple statement a stray name is part of (``stats(pipe)``), as code, for a
    TODO that may be written elsewhere (above a ``with pipe:`` graph)."""
    for node in reversed(stack[:-1]):
        if isinstance(node, cst.BaseCompoundStatement):
            return ""
        if isinstance(node, cst.Call) and node.func is stack[-1]:
            continue  # the pipeline function called: where its pipeline goes says more
        if isinstance(node, (cst.Call, cst.BaseSmallStatement)):
            code = " ".join(cst.Module([]).code_for_node(node).split())
            return code if len(code) <= 60 else code[:57] + "..."
    return ""


class Strays(dict):
    """Stray references by key; ``in_containers``: ids of pipeline functions called to fill a
    list, tuple or dict (one pipeline per device or shard)."""

    def __init__(self) -> None:
        super().__init__()
        self.in_containers: set[int] = set()
        self.in_pairs: set[int] = set()  # of those, the ones bound to names of their own: ``a, b = f(), f()``
        self.in_iterators: dict[int, str] = {}  # id(name) -> the iterator it is made in
        self.context: dict[int, str] = {}  # id(name) -> the code it is used in (_use_context)
        self.called: dict[int, cst.Call] = {}  # id(name) of the names called (``f(...)`` anywhere) -> the call


def find_stray_references(module: cst.Module, facts: ModuleFacts) -> dict[str, list[cst.CSTNode]]:
    """Uses of pipeline functions and pipeline variables that the migration does not rewrite:
    anything but ``pipe = f(...)``, ``pipe.build()`` and ``pipe.run()``."""
    accounted = {id(call.func) for call in facts.pipeline_factory_calls}
    accounted |= {id(target) for target in facts.pipeline_binding_targets} | facts.none_targets
    accounted |= {id(name) for name in facts.pipeline_parameters}
    accounted |= {id(site.node.func.value) for site in facts.pipeline_method_calls}
    accounted |= {id(site.node) for site in facts.build_loop_sites}  # callsites.py removes them
    accounted |= facts.pipeline_loop_reads
    accounted |= {id(site.node.value) for site in facts.pipeline_attribute_reads}  # pipeline_settings.py
    accounted |= {id(graph.decorator) for graph in facts.graphs if graph.decorator is not None}
    accounted |= {id(returned) for returned in facts.pipeline_returns}
    # iterators over a pipeline are planned in iterators.py, which blocks what it cannot rewrite
    accounted |= {id(argument) for s in facts.iterator_uses
                  if is_pipeline_target(argument := iterated_pipeline(s.node))}
    names = facts.pipeline_functions | facts.pipeline_var_names() | set(facts.pipeline_helpers)
    finder = _StrayReferenceFinder(names, accounted, facts)
    for site in facts.iterator_uses:  # ``DALIGenericIterator([make(...)], ...)``
        made = iterated_pipeline(site.node)
        if isinstance(made, cst.Call) and isinstance(made.func, cst.Name):
            finder.found.in_iterators[id(made.func)] = site.name.rsplit(".", 1)[-1]
    walk(module, finder)
    return finder.found
