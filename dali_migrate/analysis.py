"""One pass over a module that records every pipeline-mode construct the rules and fixes need.

Rules never walk the tree themselves: they read the facts gathered here, so the parse and the
traversal are paid once per file however many rules run.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field

import libcst as cst

from .visitors import Visitor, walk

from .imports import ImportTable, code_of, dotted_name, import_table
from .optable import OPS_PREFIX, Op, OpTable, load_op_table
from .pipeline_scopes import PipelineScopes, module_class_bases, spelled
from .values import class_families, returned_by, returning_function
from .positions import order_kind
from .scopes import class_locals, function_locals

PIPELINE_DEF = "nvidia.dali.pipeline_def"
ITERATOR_DECORATORS = ("nvidia.dali.plugin.jax.data_iterator", "nvidia.dali.plugin.jax.peekable_data_iterator")
PIPELINE_CLASS = "nvidia.dali.Pipeline"
FEED_NDARRAY = "nvidia.dali.plugin.pytorch.feed_ndarray"
MATH_MODULE = "nvidia.dali.math."  # its functions build graph nodes, as ``fn`` calls do
RUN_METHODS = frozenset({"run", "outputs", "share_outputs"})
# Built-ins that take any object and whose result does not depend on the TensorList API.
SAFE_CONSUMERS = frozenset({"print", "len", "isinstance", "type", "id", "repr", "str", "next", "iter",
                            "list", "tuple", "enumerate", "zip", "hasattr"})
# Called on a dict of pipelines, these give its keys: no pipeline.
KEY_COPIES = frozenset({"sorted", "list", "tuple", "set", "frozenset"})
# Pipeline methods that rules other than DM003 report (serialization, checkpoints, feeding,
# reader metadata); DM003 reports every other method called on a pipeline.
METHODS_OF_OTHER_RULES = frozenset({"serialize", "checkpoint", "feed_input", "iter_setup", "epoch_size",
                                    "reader_meta"})
TENSORLIST_METHODS = frozenset(
    {"at", "as_cpu", "as_array", "as_tensor", "as_reshaped_tensor", "shape", "layout",
     "is_dense_tensor"}
)


# readers whose output is a dict of DataNodes by feature name (``inputs["image/encoded"]``)
TFRECORD_READERS = frozenset({"nvidia.dali.fn.readers.tfrecord", "nvidia.dali.fn.tfrecord_reader"})


@dataclass
class Graph:
    """A body of pipeline-mode graph code: a decorated function, ``define_graph`` or ``with pipe:``."""

    kind: str  # "decorator" | "define_graph" | "with"
    node: cst.CSTNode
    name: str
    decorator: cst.Decorator | None = None
    datanodes: set[str] = field(default_factory=set)
    feature_dicts: set[str] = field(default_factory=set)  # names of a TFRecord reader's dict of outputs


@dataclass
class DaliCall:
    node: cst.Call
    qualname: str
    op: Op | None
    graph: Graph | None


@dataclass
class Site:
    """A node of interest with the name it was found through (for messages)."""

    node: cst.CSTNode
    name: str
    detail: str = ""
    origin: str | None = None  # the pipeline variable an output came from


@dataclass
class ModuleFacts:
    imports: ImportTable
    optable: OpTable
    top_level: dict[int, int] = field(default_factory=dict)  # id(node) -> its top-level statement
    # for positions.Positions: id(node) -> its rank among the nodes of its kind in its top-level
    # statement, and (statement, kind) -> how many there are
    ordinals: dict[int, int] = field(default_factory=dict)
    with_statements: int = 0  # every ``with``: only they can hold a ``with pipe:`` graph
    kind_totals: dict[tuple[int, str], int] = field(default_factory=dict)
    module_functions: dict[str, list[cst.FunctionDef]] = field(default_factory=dict)  # by name
    # id(a graph's node: a ``with pipe:`` in a function, a pipeline function defined in one) -> that function
    enclosing_functions: dict[int, cst.FunctionDef] = field(default_factory=dict)
    module_classes: dict[str, list[cst.ClassDef]] = field(default_factory=dict)
    module_values: dict[str, list[cst.BaseExpression]] = field(default_factory=dict)  # `name = value` at top level
    graphs: list[Graph] = field(default_factory=list)
    calls: list[DaliCall] = field(default_factory=list)
    pipeline_functions: set[str] = field(default_factory=set)
    pipeline_classes: set[str] = field(default_factory=set)
    pipeline_subclass_defs: list[Site] = field(default_factory=list)
    # pipeline variables by key (pipeline_scopes.py: ``pipe``, ``self.pipe``, ``pipe@train#3``)
    pipeline_vars: set[str] = field(default_factory=set)
    # id(name node) -> the pipeline variable it reads, or None where a function's own name hides one
    pipeline_refs: dict[int, str | None] = field(default_factory=dict)
    # pipeline variable -> every factory a binding of that name calls ("Pipeline" for objects)
    pipeline_var_factories: dict[str, set[str]] = field(default_factory=dict)
    # helper functions that return a pipeline: name -> the variable they return
    pipeline_helpers: dict[str, str] = field(default_factory=dict)
    pipeline_returns: list[cst.BaseExpression] = field(default_factory=list)
    # What names hold pipeline outputs, while the module is read: a function's own names are
    # its own (a parameter ``images`` is not the ``images`` another function took from ``run()``)
    output_origin: dict[str, str] = field(default_factory=dict)  # output name -> pipeline var
    output_tuples: set[str] = field(default_factory=set)
    output_tuples_seen: set[str] = field(default_factory=set)  # every name that held run()'s tuple somewhere
    tuple_escapes: set[int] = field(default_factory=set)  # ids of escaping values that are run()'s whole tuple
    tensorlists: set[str] = field(default_factory=set)
    dense_tensors: set[str] = field(default_factory=set)  # names bound to ``output.as_tensor()`` or ``output[i]``
    pipeline_method_calls: list[Site] = field(default_factory=list)
    # ``for p in (train_pipe, val_pipe): p.build()``: one site per pipeline built (its node: the
    # element), and the loops by id
    build_loop_sites: list[Site] = field(default_factory=list)
    build_loops: dict[int, cst.For] = field(default_factory=dict)
    # ``for p in (train_pipe, val_pipe): out = p.run()``, ``pipe = pipes["train"]``: variables
    # that hold one of several pipelines -> the variables they take them from
    picked_from: dict[str, set[str]] = field(default_factory=dict)
    # ids of the names these loops, picks and lists or dicts read or bind (``len(pipes)`` too):
    # uses the migration follows
    pipeline_loop_reads: set[int] = field(default_factory=set)
    # ``pipes = {"train": make(...), "val": make(...)}``, ``[make(shard_id=i) for i in ...]``:
    # keys of names holding a list or dict of pipelines, read by subscripts and loops
    pipeline_containers: dict[str, type] = field(default_factory=dict)  # key -> list or dict
    container_values: dict[str, list[cst.BaseExpression]] = field(default_factory=dict)  # key -> each binding's value
    pipeline_loops: dict[int, str] = field(default_factory=dict)  # id(loop) -> the variable it binds
    # ``pipe.max_batch_size`` outside graphs: the settings a pipeline was made with (detail: the attribute)
    pipeline_attribute_reads: list[Site] = field(default_factory=list)
    pipeline_factory_calls: list[cst.Call] = field(default_factory=list)
    spread_calls: list[cst.Call] = field(default_factory=list)  # calls passing a ``**mapping``
    pipeline_binding_targets: list[cst.BaseExpression] = field(default_factory=list)
    # ``self.pipe = None``, ``pipe = None``: a placeholder, the same in both modes (ids of targets)
    none_targets: set[int] = field(default_factory=set)
    pipeline_parameters: list[cst.Name] = field(default_factory=list)  # ``def show(pipe, ...)``: see pipeline_parameters.py
    # the key of such a parameter (``pipe@show#p0``) -> its pipeline_parameters.PipelineParameter
    parameter_pipelines: dict[str, object] = field(default_factory=dict)
    tensorlist_uses: list[Site] = field(default_factory=list)
    # outputs handed to code the migration does not see: call arguments, return values
    escaping_outputs: list[Site] = field(default_factory=list)
    datanode_subscripts: list[Site] = field(default_factory=list)
    datanode_shapes: list[Site] = field(default_factory=list)  # ``images.shape()`` in a graph
    # ``out.at(i)`` calls only read for their ``.shape``: an ndd Tensor has the same tuple
    sample_shapes: set[int] = field(default_factory=set)
    iterator_uses: list[Site] = field(default_factory=list)
    iterator_subclasses: list[Site] = field(default_factory=list)  # ``class X(DALIGenericIterator)``
    # module-level subclasses of a framework iterator: name -> the iterator's qualname; their
    # calls are ``iterator_uses`` with the class's name as ``detail``
    iterator_classes: dict[str, str] = field(default_factory=dict)
    # functions that only receive outputs (``show_images(images)``): name -> output_helpers.OutputHelper
    output_helpers: dict[str, object] = field(default_factory=dict)
    # outputs passed to calls of a plain name (``show_images(images)``): (call, argument, escape)
    output_arguments: list[tuple[cst.Call, cst.Arg, Site]] = field(default_factory=list)
    # legacy operator objects bound to a name: ``decode = ops.decoders.Image(...)`` (the name, as
    # spelled: ``decode``, ``self.decode``) -> the constructor call
    operator_objects: dict[str, cst.Call] = field(default_factory=dict)
    # ``def speedtest(pipeline, ...)`` called with pipeline functions (pipeline_parameters.py):
    # (function, parameter) -> the helper name its calls make pipelines through
    factory_parameters: dict[tuple[str, str], str] = field(default_factory=dict)
    aliased_calls: dict[int, str] = field(default_factory=dict)  # id(``pipeline(...)``) -> that name

    @property
    def uses_dali(self) -> bool:
        return self.imports.uses_dali

    def graph_scope(self, node: cst.CSTNode) -> cst.CSTNode:
        """Where a graph's names may be given values: the function it stands in (a ``with
        pipe:`` graph, a pipeline function defined in a function), else the graph itself."""
        return self.enclosing_functions.get(id(node), node)

    def key_of(self, node: cst.BaseExpression | None) -> str | None:
        """The pipeline variable ``node`` (a name or ``self.pipe``) reads, or None."""
        if node is None:
            return None
        if id(node) in self.pipeline_refs:
            return self.pipeline_refs[id(node)]
        name = dotted_name(node)
        return name if name in self.pipeline_vars else None

    def pipeline_var_names(self) -> set[str]:
        """Pipeline variables as the code spells them."""
        return {spelled(key) for key in self.pipeline_vars}

    def graphs_of(self, var: str, seen: frozenset[str] = frozenset()) -> set[str]:
        """The pipelines a variable may hold: its factories, looked through helper functions and
        through the list, dict or loop it takes one of several from."""
        graphs: set[str] = set()
        for source in self.picked_from.get(var, set()) - seen:  # ``for p in pipes``: what ``pipes`` holds
            graphs |= self.graphs_of(source, seen | {var})
        for factory in self.pipeline_var_factories.get(var, ()):
            helper_var = self.pipeline_helpers.get(factory)
            if helper_var is None:
                graphs.add(factory)
            elif factory not in seen:
                graphs |= self.graphs_of(helper_var, seen | {factory})
        return graphs

    def output_helper_graphs(self, name: str) -> set[str]:
        """The pipelines whose outputs the output helper ``name`` takes (none if it is not one)."""
        helper = self.output_helpers.get(name)
        return set().union(*(self.graphs_of(var) for var in helper.origins)) if helper is not None else set()

    def pipeline_method_sites(self, methods: frozenset[str]) -> list[Site]:
        return [site for site in self.pipeline_method_calls if site.detail in methods]

    def pipeline_arguments(self) -> list[cst.Arg]:
        """Keyword arguments given to a pipeline: in ``@pipeline_def(...)``, ``Pipeline(...)``
        or a call of a pipeline function."""
        calls = [g.decorator.decorator for g in self.graphs if g.kind == "decorator"]
        calls += [c.node for c in self.calls if c.qualname == PIPELINE_CLASS]
        calls += self.pipeline_factory_calls
        unique = {id(call): call for call in calls}
        return [
            arg
            for call in unique.values()
            if isinstance(call, cst.Call)
            for arg in call.args
            if arg.keyword is not None
        ]


def pipeline_def_decorator(function: cst.FunctionDef, imports: ImportTable,
                           names: tuple[str, ...] = (PIPELINE_DEF,)) -> cst.Decorator | None:
    """``@pipeline_def`` or ``@pipeline_def(...)`` on ``function``, however it is imported
    (``names``: the decorators looked for)."""
    for decorator in function.decorators:
        target = decorator.decorator
        target = target.func if isinstance(target, cst.Call) else target
        if imports.resolve(target) in names:
            return decorator
    return None


def iterator_decorator(function: cst.FunctionDef, imports: ImportTable) -> cst.Decorator | None:
    """JAX's ``@data_iterator(...)``: the function is a pipeline graph that DALI wraps in its
    JAX iterator."""
    return pipeline_def_decorator(function, imports, ITERATOR_DECORATORS)


def _defaults(params: cst.Parameters) -> dict[str, cst.BaseExpression]:
    return {p.name.value: p.default for p in [*params.posonly_params, *params.params, *params.kwonly_params]
            if p.default is not None}


NO_OUTPUT = ((False, False, False), None)


def _call_name(node: cst.BaseExpression) -> str | None:
    return dotted_name(node.func) if isinstance(node, cst.Call) else None


def _assigned_names(target: cst.BaseExpression) -> list[str]:
    if isinstance(target, (cst.Name, cst.Attribute)):
        name = dotted_name(target)
        return [name] if name else []
    if isinstance(target, (cst.Tuple, cst.List)):
        names: list[str] = []
        for element in target.elements:
            names.extend(_assigned_names(element.value))
        return names
    return []


def is_pipeline_target(node: cst.BaseExpression | None) -> bool:
    """A name, or an attribute of ``self`` (``self.pipe``): what a pipeline is held in where its
    uses can be followed within one function."""
    if isinstance(node, cst.Name):
        return True
    return isinstance(node, cst.Attribute) and isinstance(node.value, cst.Name) and node.value.value == "self"


def _is_method_call(node: cst.BaseExpression, method: str) -> bool:
    return isinstance(node, cst.Call) and isinstance(node.func, cst.Attribute) and node.func.attr.value == method


def paired_elements(target: cst.BaseExpression, value: cst.BaseExpression):
    """The (target, value) pairs of ``a, b = x, y``; None unless both sides are tuples or lists
    of as many elements, none starred."""
    if not isinstance(target, (cst.Tuple, cst.List)) or not isinstance(value, (cst.Tuple, cst.List)):
        return None
    sides = (target.elements, value.elements)
    if len(sides[0]) != len(sides[1]) or any(isinstance(e, cst.StarredElement) for side in sides for e in side):
        return None
    return [(t.value, v.value) for t, v in zip(*sides)]


def zipped_parts(target: cst.BaseExpression, iterable: cst.BaseExpression):
    """``for i, out in enumerate(outputs)`` -> [(out, outputs)]; ``for a, b in zip(x, y)`` ->
    [(a, x), (b, y)]. None for any other loop (starred or keyword arguments included)."""
    if not isinstance(target, (cst.Tuple, cst.List)) or not isinstance(iterable, cst.Call):
        return None
    targets = [e.value for e in target.elements]
    if any(isinstance(e, cst.StarredElement) for e in target.elements) or any(
            a.star or a.keyword is not None for a in iterable.args):
        return None
    arguments = [a.value for a in iterable.args]
    name = dotted_name(iterable.func)
    if name == "enumerate" and len(arguments) == 1 and len(targets) == 2:
        return [(targets[1], arguments[0])]
    if name == "zip" and len(arguments) == len(targets):
        return list(zip(targets, arguments))
    return None


def container_elements(node: cst.CSTNode) -> list[cst.BaseExpression]:
    """The elements a list, tuple, set or dict display or comprehension is made of (a dict's
    values); empty for any other node."""
    if isinstance(node, (cst.ListComp, cst.SetComp, cst.GeneratorExp)):
        return [node.elt]
    if isinstance(node, cst.DictComp):
        return [node.value]
    if isinstance(node, (cst.List, cst.Tuple, cst.Set)):
        return [element.value for element in node.elements]
    if isinstance(node, cst.Dict):
        return [element.value for element in node.elements if isinstance(element, cst.DictElement)]
    return []


def _list_or_dict(value: cst.BaseExpression) -> type | None:
    """``list`` or ``dict`` for a display or comprehension of one with no starred part, which a
    list or dict of pipelines may be; None for anything else."""
    if isinstance(value, (cst.List, cst.Dict)) and any(
            isinstance(e, (cst.StarredElement, cst.StarredDictElement)) for e in value.elements):
        return None
    if isinstance(value, (cst.List, cst.ListComp)):
        return list
    return dict if isinstance(value, (cst.Dict, cst.DictComp)) else None


def _is_slice(subscript: cst.Subscript) -> bool:
    return any(isinstance(element.slice, cst.Slice) for element in subscript.slice)


def _only_builds(loop: cst.For) -> bool:
    """The loop's body is ``target.build()`` statements, nothing else."""
    body = loop.body.body if isinstance(loop.body, cst.IndentedBlock) else []
    target = loop.target.value
    return bool(body) and all(
        isinstance(line, cst.SimpleStatementLine) and len(line.body) == 1 and isinstance(line.body[0], cst.Expr)
        and _is_method_call(line.body[0].value, "build") and not line.body[0].value.args
        and dotted_name(line.body[0].value.func.value) == target
        for line in body)


def _unpacks(target: cst.BaseExpression) -> bool:
    return isinstance(target, (cst.Tuple, cst.List))


class _FactCollector(Visitor):
    def __init__(self, facts: ModuleFacts, parameter_keys: dict[int, str],
                 find_families: Callable[[], dict[str, str]]) -> None:
        self.facts = facts
        self.graph_stack: list[Graph | None] = []
        self.class_stack: list[bool] = []
        self.scope_kinds: list[str] = []  # "class" | "function", innermost last
        self.class_views: list[tuple[set[str], dict[str, tuple]]] = []  # per class: its names, their meaning outside
        self.method_views: list[dict[str, tuple]] = []  # per method: what its class's names meant in the class body
        self.function_stack: list[str] = []
        self.function_nodes: list[cst.FunctionDef] = []  # the functions of function_stack
        self.statement_index = -1
        self.output_arguments: list[tuple[cst.Call, cst.Arg, Site]] = []  # outputs passed to plain calls
        self.output_assignments: set[int] = set()  # ids of ``x = ...`` that bind pipeline outputs
        self.shadowed: list[dict[str, tuple] | None] = []  # per function: what its names meant outside it
        self.pipelines = PipelineScopes(parameter_keys, find_families)
        self.factory_names: set[str] = set()  # the module's pipeline functions and classes
        self.dtype_calls: set[int] = set()  # ids of ``x.dtype`` called as ``x.dtype()``

    def on_visit(self, node: cst.CSTNode) -> bool:
        self.facts.top_level[id(node)] = self.statement_index  # for positions.Positions
        kind = order_kind(node)
        if kind is not None:
            key = (self.statement_index, kind)
            rank = self.facts.ordinals[id(node)] = self.facts.kind_totals.get(key, 0)
            self.facts.kind_totals[key] = rank + 1
        return super().on_visit(node)

    # -- helpers ---------------------------------------------------------------------------
    @property
    def graph(self) -> Graph | None:
        return self.graph_stack[-1] if self.graph_stack else None

    def resolve(self, node: cst.BaseExpression) -> str | None:
        return self.facts.imports.resolve(node)

    def is_pipeline_factory(self, call: cst.Call) -> bool:
        name = dotted_name(call.func)
        if self.resolve(call.func) == PIPELINE_CLASS or self._factory_parameter(call) is not None:
            return True
        return (name in self.facts.pipeline_functions or name in self.facts.pipeline_classes
                or name in self.facts.pipeline_helpers)

    def is_datanode_expr(self, node: cst.BaseExpression) -> bool:
        graph = self.graph
        if graph is None:
            return False
        if isinstance(node, cst.Name):
            return node.value in graph.datanodes
        if isinstance(node, cst.Call):
            if _is_method_call(node, "shape"):  # ``images.shape()``: a DataNode of shapes
                return self.is_datanode_expr(node.func.value)
            qualname = self.resolve(node.func)
            return qualname is not None and qualname.startswith("nvidia.dali.fn.")
        if isinstance(node, cst.BinaryOperation):
            return self.is_datanode_expr(node.left) or self.is_datanode_expr(node.right)
        if isinstance(node, cst.UnaryOperation):
            return self.is_datanode_expr(node.expression)
        if isinstance(node, cst.Subscript):
            return self.is_datanode_expr(node.value)
        return False

    # -- definitions -----------------------------------------------------------------------
    def visit_FunctionDef(self, node: cst.FunctionDef) -> None:
        if not self.function_stack and not self.class_stack:
            self.facts.module_functions.setdefault(node.name.value, []).append(node)
        self.function_stack.append(node.name.value)
        self.function_nodes.append(node)
        self.pipelines.enter(node)
        if self._in_class_body:
            self.method_views.append(self._outside_the_class())
        self.scope_kinds.append("function")
        self._enter_scope(node)
        decorator = pipeline_def_decorator(node, self.facts.imports) or iterator_decorator(node, self.facts.imports)
        if decorator is not None:
            self.facts.pipeline_functions.add(node.name.value)
            self._push(Graph("decorator", node, node.name.value, decorator))
            return
        if node.name.value == "define_graph" and self._in_pipeline_class:
            self._push(Graph("define_graph", node, node.name.value))
            return
        self.graph_stack.append(None)  # a plain function hides any enclosing graph

    def leave_FunctionDef(self, original_node: cst.FunctionDef) -> None:
        self.graph_stack.pop()
        self.function_stack.pop()
        self.function_nodes.pop()
        self.pipelines.leave()
        self._leave_scope(original_node)
        self.scope_kinds.pop()
        if self._in_class_body:
            for name, meaning in self.method_views.pop().items():
                self._set_meaning(name, meaning)

    @property
    def _in_class_body(self) -> bool:
        return bool(self.scope_kinds) and self.scope_kinds[-1] == "class"

    def _outside_the_class(self) -> dict[str, tuple]:
        """A method does not see the names of its class's body: they mean there what they meant
        outside the class. Returns their meaning in the class body, restored past the method."""
        names, outside = self.class_views[-1]
        if not self._holds_outputs() and not outside:
            return {}
        in_class = {name: self._meaning_of(cst.Name(name)) for name in names}
        self._give_outside_meanings(names, outside)
        return in_class

    def _give_outside_meanings(self, names: set[str], outside: dict[str, tuple]) -> None:
        """A class body's names mean what they meant outside it (no output where nothing was)."""
        for name in names:
            self._set_meaning(name, outside.get(name, NO_OUTPUT))

    def _output_sets(self) -> tuple[set[str], ...]:
        return self.facts.tensorlists, self.facts.output_tuples, self.facts.dense_tensors

    def _enter_scope(self, function: cst.FunctionDef) -> None:
        """A function's local names hold no output until the function binds one to them, but
        for parameters whose default is one (``def last(out=out)``, ``def f(images=out[0])``):
        a default is computed where the function is defined. While no name holds an output,
        there is nothing to hide (most functions of a module: its graphs and helpers)."""
        given = {param: meaning for param, default in _defaults(function.params).items()
                 if (meaning := self._meaning_of(default)) != NO_OUTPUT}
        if not given and not self._holds_outputs():
            self.shadowed.append(None)  # its names are looked up when it is left, if it bound outputs
            return
        local_names = function_locals(function)
        outside = {name: self._meaning_of(cst.Name(name)) for name in local_names}
        for name in local_names:
            self._set_meaning(name, given.get(name, NO_OUTPUT))
        self.shadowed.append(outside)

    def _holds_outputs(self) -> bool:
        return any(self._output_sets()) or bool(self.facts.output_origin)

    def _meaning_of(self, value: cst.BaseExpression) -> tuple:
        """(whether it is a TensorList, an output tuple, a dense tensor), and its pipeline."""
        name = dotted_name(value)
        if name is not None:
            return tuple(name in names for names in self._output_sets()), self.facts.output_origin.get(name)
        if self._is_tensorlist(value):
            return (True, False, False), self._tensorlist_origin(value)[1]
        return NO_OUTPUT

    def _set_meaning(self, name: str, meaning: tuple) -> None:
        membership, origin = meaning
        for names, member in zip(self._output_sets(), membership):
            (names.add if member else names.discard)(name)
        self.facts.output_origin.pop(name, None)
        if origin is not None:
            self.facts.output_origin[name] = origin

    def _leave_scope(self, function: cst.FunctionDef) -> None:
        """Past the function, its local names mean what they meant before it."""
        outside = self.shadowed.pop()
        if outside is None:  # no name held an output when it began
            outside = dict.fromkeys(function_locals(function), NO_OUTPUT) if self._holds_outputs() else {}
        for name, meaning in outside.items():
            self._set_meaning(name, meaning)

    def _push(self, graph: Graph) -> None:
        self.facts.graphs.append(graph)
        outer = [function for function in self.function_nodes if function is not graph.node]
        if outer:
            self.facts.enclosing_functions[id(graph.node)] = outer[-1]
        self.graph_stack.append(graph)

    @property
    def _in_pipeline_class(self) -> bool:
        return bool(self.class_stack) and self.class_stack[-1]

    def visit_ClassDef(self, node: cst.ClassDef) -> None:
        if not self.function_stack and not self.class_stack:
            self.facts.module_classes.setdefault(node.name.value, []).append(node)
        is_pipeline = any(
            self.resolve(base.value) == PIPELINE_CLASS
            or dotted_name(base.value) in self.facts.pipeline_classes
            for base in node.bases
        )
        if is_pipeline:
            self.facts.pipeline_classes.add(node.name.value)
            self.facts.pipeline_subclass_defs.append(Site(node, node.name.value))
        for base in node.bases:
            qualname = self.resolve(base.value)
            if qualname is not None and qualname.startswith("nvidia.dali.plugin."):
                self.facts.iterator_subclasses.append(Site(base.value, qualname, node.name.value))
                if not self.function_stack and not self.class_stack and len(node.bases) == 1:
                    self.facts.iterator_classes[node.name.value] = qualname
        self.class_stack.append(is_pipeline)
        self.pipelines.enter_class(node)
        self._enter_class_scope(node)

    def leave_ClassDef(self, original_node: cst.ClassDef) -> None:
        self.class_stack.pop()
        self.pipelines.leave()
        self.scope_kinds.pop()
        names, outside = self.class_views.pop()
        if self._holds_outputs() or outside:
            self._give_outside_meanings(names, outside)

    def _enter_class_scope(self, node: cst.ClassDef) -> None:
        """A class body's names hold no output until the body binds one; past the class they
        mean what they meant before it."""
        names = class_locals(node)
        outside = {}
        if self._holds_outputs():
            outside = {name: meaning for name in names if (meaning := self._meaning_of(cst.Name(name))) != NO_OUTPUT}
            for name in outside:
                self._set_meaning(name, NO_OUTPUT)
        self.class_views.append((names, outside))
        self.scope_kinds.append("class")

    def visit_With(self, node: cst.With) -> None:
        self.facts.with_statements += 1
        for item in node.items:
            if self._pipeline_key(item.item) is not None:
                self._push(Graph("with", node, dotted_name(item.item)))
                return
            if isinstance(item.item, cst.Call) and self.is_pipeline_factory(item.item):
                self._push(Graph("with", node, _call_name(item.item) or "pipeline"))
                return
        self.graph_stack.append(self.graph)

    def leave_With(self, original_node: cst.With) -> None:
        self.graph_stack.pop()

    # -- data flow (flow-insensitive, by name) ---------------------------------------------
    def visit_Assign(self, node: cst.Assign) -> None:
        if isinstance(node.value, cst.Name) and node.value.value == "None":
            self.facts.none_targets.update(id(t.target) for t in node.targets)
        if isinstance(node.value, cst.Call) and (self.resolve(node.value.func) or "").startswith(OPS_PREFIX):
            for target in node.targets:
                name = dotted_name(target.target)
                if name is not None:
                    self.facts.operator_objects[name] = node.value
        for target in node.targets:
            if self._record_binding(target.target, node.value):
                self.output_assignments.add(id(node))
            if not self.function_stack and not self.class_stack and isinstance(target.target, cst.Name):
                self.facts.module_values.setdefault(target.target.value, []).append(node.value)

    def leave_Assign(self, original_node: cst.Assign) -> None:
        """``x = x.as_cpu().as_array()``: after the value is read (its uses of the old ``x`` are
        recorded), ``x`` no longer holds an output, unless this binding gave it one."""
        if id(original_node) in self.output_assignments:
            return
        for target in original_node.targets:
            if isinstance(target.target, cst.Name):
                for names in self._output_sets():
                    names.discard(target.target.value)

    def visit_AnnAssign(self, node: cst.AnnAssign) -> None:
        if node.value is not None:
            self._record_binding(node.target, node.value)

    def visit_NamedExpr(self, node: cst.NamedExpr) -> None:
        """``if (out := pipe.run()) is not None:``: ``out`` holds the outputs as after ``out = ...``."""
        self._record_binding(node.target, node.value)

    def visit_For(self, node: cst.For) -> None:
        if is_pipeline_target(node.iter) and self._container_key(node.iter, whole=True, kinds=(dict,)):
            self.facts.pipeline_loop_reads.add(id(node.iter))  # ``for split in pipes:``: its keys
        elif not self._note_build_loop(node):
            self._bind_loop_target(node.target, node.iter)
            self._note_pipeline_loop(node)

    def _note_pipeline_loop(self, loop: cst.For) -> None:
        """A loop that binds a pipeline variable (``for split, pipe in pipes.items()``) goes
        where its body only built them."""
        targets = [loop.target] if isinstance(loop.target, cst.Name) else [
            e.value for e in getattr(loop.target, "elements", ())]
        keys = [self.facts.pipeline_refs.get(id(target)) for target in targets]
        bound = [key for key in keys if key in self.facts.picked_from]
        if bound:
            self.facts.pipeline_loops[id(loop)] = bound[0]

    def _note_build_loop(self, loop: cst.For) -> bool:
        """``for p in (train_pipe, val_pipe): p.build()``: a loop over pipeline variables whose
        body only builds them. True where it is one."""
        if not isinstance(loop.iter, (cst.Tuple, cst.List)) or not isinstance(loop.target, cst.Name):
            return False
        if loop.orelse is not None or not _only_builds(loop):
            return False
        keys = self._iterated_pipeline_keys(loop.iter)
        if not keys:
            return False
        self.facts.build_loops[id(loop)] = loop
        self.facts.build_loop_sites += [Site(e.value, dotted_name(e.value), "build", key)
                                        for e, key in zip(loop.iter.elements, keys)]
        return True

    def _iterated_pipeline_keys(self, iterable: cst.BaseExpression) -> list[str]:
        """The pipeline variables of ``(train_pipe, val_pipe)``, a tuple or list of nothing
        else; empty for any other value."""
        if not isinstance(iterable, (cst.Tuple, cst.List)) or not iterable.elements:
            return []
        elements = [e.value if isinstance(e, cst.Element) else None for e in iterable.elements]
        keys = [self._pipeline_key(e) if e is not None and is_pipeline_target(e) else None for e in elements]
        return [] if None in keys else keys

    def _bind_pipeline_loop_target(self, target: cst.BaseExpression, iterable: cst.BaseExpression) -> bool:
        """``for p in (train_pipe, val_pipe):``, ``for p in pipes.values():``, ``for split, p in
        pipes.items():``: ``p`` holds each pipeline in turn, a pipeline variable of their
        factories. True where the loop is one."""
        if _is_method_call(iterable, "items") and not iterable.args and isinstance(target, cst.Tuple) and len(
                target.elements) == 2 and not isinstance(target.elements[1], cst.StarredElement):
            key = self._container_key(iterable.func.value, whole=True, kinds=(dict,))
            target = target.elements[1].value
            keys = [] if key is None else [key]
        elif isinstance(iterable, (cst.Tuple, cst.List)):
            keys = self._iterated_pipeline_keys(iterable)
        else:
            key = self._container_key(iterable, whole=True)
            keys = [] if key is None else [key]
        if not keys or not isinstance(target, cst.Name):
            return False
        reads = [e.value for e in iterable.elements] if isinstance(iterable, (cst.Tuple, cst.List)) else [iterable]
        self._bind_pipeline_from(target, keys, reads)
        return True

    def _bind_pipeline_from(self, target: cst.BaseExpression, keys: list[str], reads: list[cst.CSTNode]) -> None:
        """``target`` holds one of the pipelines of these variables, read by ``reads``."""
        key = self.pipelines.bind(dotted_name(target))
        self.facts.pipeline_vars.add(key)
        self.facts.pipeline_refs[id(target)] = key
        self.facts.pipeline_var_factories.setdefault(key, set())
        self.facts.picked_from.setdefault(key, set()).update(keys)  # a global may be bound below
        self.facts.pipeline_loop_reads |= {id(target), *(id(node) for node in reads)}

    def _bind_pipeline_container(self, target: cst.BaseExpression, value: cst.BaseExpression) -> bool:
        """``pipes = [make(shard_id=i) for i in range(n)]``, ``{"train": make(...), ...}``: a
        list or dict of pipelines, each made by a call bound to no statement of its own."""
        kind, calls = _list_or_dict(value), container_elements(value)
        if kind is None or not calls or not all(isinstance(c, cst.Call) and self.is_pipeline_factory(c) for c in calls):
            return False
        key = self.pipelines.bind(dotted_name(target))
        self.facts.pipeline_vars.add(key)
        self.facts.pipeline_containers[key] = kind
        self.facts.pipeline_refs[id(target)] = key
        self.facts.pipeline_loop_reads.add(id(target))
        self.facts.container_values.setdefault(key, []).append(value)
        for call in calls:
            self.facts.pipeline_factory_calls.append(call)
            self.facts.pipeline_binding_targets.append(call)
            self.facts.pipeline_var_factories.setdefault(key, set()).add(self._factory_name(call))
        return True

    def _container_key(self, node: cst.BaseExpression, whole: bool = False,
                       kinds: tuple[type, ...] = (list,)) -> str | None:
        """The list or dict of pipelines ``pipes[i]`` picks from (``whole``: that ``pipes`` is,
        a list of them, or ``pipes.values()``; ``kinds``: of the first), or None."""
        if whole and _is_method_call(node, "values") and not node.args:
            node, kinds = node.func.value, (dict,)
        elif not whole:
            if not (isinstance(node, cst.Subscript) and len(node.slice) == 1
                    and isinstance(node.slice[0].slice, cst.Index)):
                return None
            node, kinds = node.value, (list, dict)
        key = self._pipeline_key(node) if is_pipeline_target(node) else None
        return key if self.facts.pipeline_containers.get(key) in kinds else None

    def _bind_comprehension(self, node: cst.BaseComp) -> None:
        self.pipelines.enter_comprehension(node)
        # the element is visited before its ``for`` clauses, so bind their targets first
        clause = node.for_in
        while clause is not None:
            self._bind_loop_target(clause.target, clause.iter)
            clause = clause.inner_for_in

    visit_ListComp = visit_SetComp = visit_GeneratorExp = visit_DictComp = _bind_comprehension

    def _leave_scope_of_names(self, original_node: cst.CSTNode) -> None:
        self.pipelines.leave()

    leave_ListComp = leave_SetComp = leave_GeneratorExp = leave_DictComp = _leave_scope_of_names
    leave_Lambda = _leave_scope_of_names

    def visit_Lambda(self, node: cst.Lambda) -> None:
        self.pipelines.enter_lambda(node)

    def _bind_loop_target(self, target: cst.BaseExpression, iterable: cst.BaseExpression) -> None:
        """``for out in pipe.run()`` and ``for o in outputs`` bind single TensorLists; so do
        ``for i, out in enumerate(outputs)`` and ``for name, out in zip(names, outputs)``."""
        parts = zipped_parts(target, iterable)
        if parts is not None:
            for part_target, part_iterable in parts:
                self._bind_loop_target(part_target, part_iterable)
        elif self._bind_pipeline_loop_target(target, iterable):
            pass
        elif self._is_run_call(iterable):
            self._bind_outputs(target, iterable, unpacked=True)
        elif dotted_name(iterable) in self.facts.output_tuples:
            self._bind_tensorlists(_assigned_names(target), dotted_name(iterable))
        elif (isinstance(iterable, cst.Subscript) and _is_slice(iterable)
              and dotted_name(iterable.value) in self.facts.output_tuples):  # ``for out in outputs[:-1]``
            self._bind_tensorlists(_assigned_names(target), dotted_name(iterable.value))
        elif (isinstance(target, cst.Name) and isinstance(iterable, (cst.Tuple, cst.List)) and iterable.elements
              and all(isinstance(e, cst.Element) and dotted_name(e.value) in self.facts.tensorlists
                      for e in iterable.elements)):
            # ``for out in (images, labels)``: each one a TensorList
            origins = {self.facts.output_origin.get(dotted_name(e.value)) for e in iterable.elements}
            self.facts.tensorlists.add(target.value)
            if len(origins) == 1 and None not in origins:
                self.facts.output_origin[target.value] = origins.pop()

    def _bind_output_tuples(self, names: list[str], output_tuple: str) -> None:
        """Names that hold (part of) an output tuple: TensorLists of the same pipeline."""
        self.facts.output_tuples.update(names)
        self.facts.output_tuples_seen.update(names)
        origin = self.facts.output_origin.get(output_tuple)
        self.facts.output_origin.update((name, origin) for name in names)

    def _is_moved_tensorlist(self, value: cst.BaseExpression) -> bool:
        if isinstance(value, cst.IfExp):
            return all(self._is_moved_tensorlist(branch) or self._is_tensorlist(branch)
                       for branch in (value.body, value.orelse))
        return _is_method_call(value, "as_cpu") and self._is_tensorlist(value.func.value)

    def _bind_tensorlists(self, names: list[str], output_tuple: str) -> None:
        """Names taken out of an output tuple are TensorLists of the same pipeline."""
        self.facts.tensorlists.update(names)
        origin = self.facts.output_origin.get(output_tuple)
        self.facts.output_origin.update((name, origin) for name in names)

    def _record_binding(self, target: cst.BaseExpression, value: cst.BaseExpression) -> bool:
        """Records what ``target = value`` binds; True where it binds pipeline outputs."""
        pairs = paired_elements(target, value)
        if pairs is not None and not any(isinstance(v, cst.Call) and self.is_pipeline_factory(v) for _, v in pairs):
            # ``images, labels = out[0], out[1]``: each name its own value (pipelines made so stay
            # "in a container": their metadata and setup are placed after a binding of their own)
            return any([self._record_binding(name, element) for name, element in pairs])
        names = _assigned_names(target)
        outputs = True
        if len(names) == 1 and is_pipeline_target(target) and self._bind_pipeline_container(target, value):
            outputs = False
        elif len(names) == 1 and is_pipeline_target(target) and (picked := self._container_key(value)):
            # ``pipe = pipes["train"]``: one of them, whichever
            self._bind_pipeline_from(target, [picked], reads=[value])
            outputs = False
        elif isinstance(value, cst.Call) and self.is_pipeline_factory(value):
            keys = [self.pipelines.bind(name) for name in names]
            self.facts.pipeline_vars.update(keys)
            self.facts.pipeline_factory_calls.append(value)
            self.facts.pipeline_binding_targets.append(target)
            if is_pipeline_target(target):
                self.facts.pipeline_refs[id(target)] = keys[0]
            for key in keys:
                self.facts.pipeline_var_factories.setdefault(key, set()).add(self._factory_name(value))
            outputs = False
        elif self._is_run_call(value):
            self._bind_outputs(target, value, unpacked=_unpacks(target))
        elif isinstance(value, cst.Subscript) and self._is_run_call(value.value) and (
                _is_slice(value) or not _unpacks(target)):
            # ``images = pipe.run()[0]``: a TensorList; ``rest = pipe.run()[1:]``: outputs still
            self._bind_outputs(target, value.value, unpacked=_unpacks(target) or not _is_slice(value))
        elif (
            isinstance(value, cst.Subscript)
            and dotted_name(value.value) in self.facts.output_tuples
        ):
            if _is_slice(value) and not _unpacks(target):  # ``rest = outputs[1:]``: outputs still
                self._bind_output_tuples(names, dotted_name(value.value))
            else:
                self._bind_tensorlists(names, dotted_name(value.value))
        elif len(names) == 1 and self._is_dali_tensor(value):
            # ``labels_tensor = labels.as_tensor()`` or ``sample = images[i]``: a DALI Tensor
            self.facts.dense_tensors.add(names[0])
            origin = self._tensorlist_origin(value.func.value if isinstance(value, cst.Call) else value.value)[1]
            if origin is not None:
                self.facts.output_origin[names[0]] = origin
        elif len(names) == 1 and self._is_moved_tensorlist(value):
            # ``batch_cpu = pipe_out[0].as_cpu()``: the same TensorList, on the CPU; also
            # ``x = x.as_cpu() if hasattr(x, "as_cpu") else x``
            self.facts.tensorlists.add(names[0])
            origin = self._tensorlist_origin(value.body if isinstance(value, cst.IfExp) else value)[1]
            if origin is not None:
                self.facts.output_origin[names[0]] = origin
        elif dotted_name(value) in self.facts.output_tuples:  # ``images, labels = pipe_out``
            if _unpacks(target):
                self._bind_tensorlists(names, dotted_name(value))
            else:
                self._bind_output_tuples(names, dotted_name(value))
        else:
            outputs = False
        if self.graph is not None and self.is_datanode_expr(value):
            self.graph.datanodes.update(n for n in names if "." not in n)
            if isinstance(target, cst.Name) and isinstance(value, cst.Call) and self.resolve(value.func) in TFRECORD_READERS:
                self.graph.feature_dicts.add(target.value)
        return outputs

    def _bind_outputs(self, target: cst.BaseExpression, run_call: cst.Call, unpacked: bool) -> None:
        names = _assigned_names(target)
        (self.facts.tensorlists if unpacked else self.facts.output_tuples).update(names)
        if not unpacked:
            self.facts.output_tuples_seen.update(names)
        origin = self._pipeline_key(run_call.func.value)
        self.facts.output_origin.update((name, origin) for name in names)

    def _is_run_call(self, node: cst.BaseExpression) -> bool:
        return (
            isinstance(node, cst.Call)
            and isinstance(node.func, cst.Attribute)
            and node.func.attr.value in RUN_METHODS
            and self._pipeline_key(node.func.value) is not None
        )

    def _pipeline_key(self, node: cst.BaseExpression) -> str | None:
        """The pipeline variable ``node`` reads: ``pipe``, ``self.pipe``, or ``pipes[split]``
        (the list or dict of pipelines it picks from)."""
        if isinstance(node, cst.Subscript):
            return self._container_key(node)
        return self.pipelines.key(node)

    def visit_Name(self, node: cst.Name) -> None:
        """Where a name is spelled like a pipeline variable, which one it reads (for stray uses)."""
        if node.value in self.pipelines.spelled:
            self.facts.pipeline_refs[id(node)] = self.pipelines.key(node)
        elif node.value in self.factory_names and self.pipelines.is_local(node.value):
            self.facts.pipeline_refs[id(node)] = None  # ``labels = ...`` inside ``def labels():``

    # -- uses --------------------------------------------------------------------------------
    def visit_Call(self, node: cst.Call) -> None:
        self._note_escaping_arguments(node)
        if any(arg.star == "**" for arg in node.args):
            self.facts.spread_calls.append(node)
        qualname = self.resolve(node.func)
        if qualname is not None:
            op = self.facts.optable.lookup(qualname)
            self.facts.calls.append(DaliCall(node, qualname, op, self.graph))
            if qualname == FEED_NDARRAY and self._feeds_an_output(node):
                self._tensorlist_use(node, node.args[0].value, "feed_ndarray")
            elif qualname.startswith("nvidia.dali.plugin."):
                self.facts.iterator_uses.append(Site(node, qualname))
            return
        if isinstance(node.func, cst.Name) and node.func.value in self.facts.iterator_classes:
            self.facts.iterator_uses.append(Site(node, self.facts.iterator_classes[node.func.value], node.func.value))
            return
        if not isinstance(node.func, cst.Attribute):
            self._check_len(node)
            return
        if self.graph is not None and node.func.attr.value == "shape" and self.is_datanode_expr(node.func.value):
            self.facts.datanode_shapes.append(Site(node, dotted_name(node.func.value) or "DataNode"))
        receiver = dotted_name(node.func.value) or code_of(node.func.value)
        method = node.func.attr.value
        key = self._pipeline_key(node.func.value)
        if key in self.facts.pipeline_containers and method == "keys" and not node.args:
            self.facts.pipeline_loop_reads.add(id(node))  # the dict's keys: no pipeline
        elif key in self.facts.pipeline_containers and method in ("values", "items") and not node.args:
            pass  # a loop over them binds a pipeline variable; anything else reads ``pipes`` as a value
        elif key is not None:
            self.facts.pipeline_method_calls.append(Site(node, receiver, method, key))
        elif isinstance(node.func.value, cst.Call) and self.is_pipeline_factory(node.func.value):
            # ``train_pipe(...).serialize()``: a method of a pipeline never bound to a name
            self.facts.pipeline_method_calls.append(Site(node, f"{dotted_name(node.func.value.func)}()", method))
        elif self._is_tensorlist(node.func.value) and method in TENSORLIST_METHODS:
            self._tensorlist_use(node, node.func.value, method)
        elif method == "dtype" and self._holds_dali_dtype(node.func.value):
            # ``out[0].dtype()``: the deprecated call gives the buffer format ("=B"), not the type
            self.dtype_calls.add(id(node.func))
            self._tensorlist_use(node, node.func.value, "dtype_call")
        elif method == "as_cpu" and isinstance(node.func.value, cst.Subscript) and self._is_tensorlist(
                node.func.value.value):  # ``out[0][0].as_cpu()``: a sample, which ndd moves with ``.cpu()``
            self._tensorlist_use(node, node.func.value, method)
        elif method in TENSOR_METHODS and not node.args and (
                receiver in self.facts.dense_tensors or self._is_dali_tensor(node.func.value)):
            # only a DALI tensor has a shape() to call: ``t = out.as_tensor()`` then ``t.shape()``,
            # or ``images[i].shape()``
            self._tensorlist_use(node, node.func.value, TENSOR_METHODS[method])

    def _note_escaping_arguments(self, node: cst.Call) -> None:
        callee = dotted_name(node.func) or "a function"
        if self.graph is not None or callee in SAFE_CONSUMERS or _is_method_call(node, "append"):
            return
        for arg in node.args:
            site = self._note_escape(arg.value, f"is passed to `{callee}`")
            if site is not None and isinstance(node.func, cst.Name):
                self.output_arguments.append((node, arg, site))

    def visit_Return(self, node: cst.Return) -> None:
        """``return pipe`` in a plain function makes that function a pipeline factory; returning
        an output hands a Batch to the caller."""
        returned = self._pipeline_key(node.value) if node.value is not None else None
        if returned in self.facts.pipeline_containers:  # ``return pipes``: not followed to the caller
            returned = None
        if self.graph is None and self.function_stack and returned is not None:
            self.facts.pipeline_helpers[self._helper_name()] = returned
            self.facts.pipeline_returns.append(node.value)
        elif (self.graph is None and self.function_stack and isinstance(node.value, cst.Call)
              and self.is_pipeline_factory(node.value)):
            # ``return train_pipe(...)``: the result is held by a name of its own
            held = returned_by(self._helper_name())
            self.facts.pipeline_var_factories.setdefault(held, set()).add(self._factory_name(node.value))
            self.facts.pipeline_helpers[self._helper_name()] = held
            self.facts.pipeline_returns.append(node.value)
        elif self.graph is None and node.value is not None:
            self._note_escape(node.value, "is returned")

    def _factory_name(self, call: cst.Call) -> str:
        helper = self._factory_parameter(call)
        if helper is not None:
            self.facts.aliased_calls[id(call)] = helper
            return helper
        return "Pipeline" if self.resolve(call.func) == PIPELINE_CLASS else dotted_name(call.func)

    def _factory_parameter(self, call: cst.Call) -> str | None:
        """The helper a call of a factory parameter stands for, in its own function's body."""
        if not self.function_stack or not isinstance(call.func, cst.Name):
            return None
        return self.facts.factory_parameters.get((self.function_stack[-1], call.func.value))

    def _helper_name(self) -> str:
        """How callers spell the function being visited: ``self.make`` for a method."""
        name = self.function_stack[-1]
        return f"self.{name}" if self.class_stack and len(self.function_stack) == 1 else name

    def _note_escape(self, value: cst.BaseExpression, how: str) -> Site | None:
        name = dotted_name(value)
        if isinstance(value, cst.Call) and self._is_run_call(value):  # ``show(pipe.run())``: the outputs tuple
            site = Site(value, cst.Module([]).code_for_node(value), how, self._pipeline_key(value.func.value))
            self.facts.escaping_outputs.append(site)
            self.facts.tuple_escapes.add(id(value))
            return site
        if name in self.facts.tensorlists or name in self.facts.output_tuples or self._is_tensorlist(value):
            origin = self.facts.output_origin.get(name) if name else None
            if origin is None and isinstance(value, cst.Subscript) and self._is_run_call(value.value):
                origin = self._pipeline_key(value.value.func.value)
            elif origin is None and isinstance(value, cst.Subscript):  # ``out[0]`` of ``out = pipe.run()``
                origin = self.facts.output_origin.get(dotted_name(value.value))
            site = Site(value, name or "output", how, origin)
            self.facts.escaping_outputs.append(site)
            if name in self.facts.output_tuples:
                self.facts.tuple_escapes.add(id(value))
            return site
        return None

    def _check_len(self, node: cst.Call) -> None:
        if dotted_name(node.func) == "len" and len(node.args) == 1:
            if self._container_key(node.args[0].value, whole=True, kinds=(list, dict)):  # as many generators
                self.facts.pipeline_loop_reads.add(id(node.args[0].value))
            elif self._is_tensorlist(node.args[0].value):
                self._tensorlist_use(node, node.args[0].value, "len")
        elif (dotted_name(node.func) in KEY_COPIES and len(node.args) == 1 and not node.args[0].star
              and self._container_key(node.args[0].value, whole=True, kinds=(dict,))):
            self.facts.pipeline_loop_reads.add(id(node.args[0].value))  # ``sorted(pipes)``: a dict's keys
        elif (dotted_name(node.func) == "hasattr" and len(node.args) == 2 and not any(a.star for a in node.args)
              and isinstance(node.args[1].value, cst.SimpleString) and self._is_tensorlist(node.args[0].value)
              and node.args[1].value.evaluated_value in HASATTR_SPELLINGS):
            # ``hasattr(images, "as_cpu")`` guards a TensorList call: asked of the ndd spelling (any
            # other name an ndd Batch answers differently is the audit's: it keeps the pipeline)
            self._tensorlist_use(node, node.args[0].value, "hasattr")
        elif dotted_name(node.func) == "isinstance" and len(node.args) == 2 and not any(a.star for a in node.args):
            device = self._tensorlist_class_device(node.args[1].value)
            if device is not None and self._is_tensorlist(node.args[0].value):
                # ``isinstance(images, TensorListGPU)``: an ndd Batch is never one; its device says it
                self._tensorlist_use(node, node.args[0].value, f"isinstance_{device}")

    def _tensorlist_class_device(self, node: cst.BaseExpression) -> str | None:
        """"gpu" or "cpu" for ``TensorListGPU``/``TensorListCPU`` of ``nvidia.dali``."""
        qualname = self.resolve(node) or ""
        member = qualname.rsplit(".", 1)[-1]
        if qualname.startswith("nvidia.dali.") and member in ("TensorListGPU", "TensorListCPU"):
            return member[-3:].lower()
        return None

    def _is_dali_tensor(self, node: cst.BaseExpression) -> bool:
        """``out.as_tensor()`` or one sample, ``out[i]``: a ``TensorCPU``, whose ``shape()`` is a list."""
        if _is_method_call(node, "as_tensor"):
            return self._is_tensorlist(node.func.value)
        return isinstance(node, cst.Subscript) and not _is_slice(node) and self._is_tensorlist(node.value)

    def _is_tensorlist(self, node: cst.BaseExpression) -> bool:
        if dotted_name(node) in self.facts.tensorlists:
            return True
        if _is_method_call(node, "as_cpu") or _is_method_call(node, "as_tensor"):
            return self._is_tensorlist(node.func.value)
        return isinstance(node, cst.Subscript) and (
            dotted_name(node.value) in self.facts.output_tuples or self._is_run_call(node.value))

    def visit_Attribute(self, node: cst.Attribute) -> None:
        if is_pipeline_target(node) and dotted_name(node) in self.pipelines.spelled:
            self.facts.pipeline_refs[id(node)] = self.pipelines.key(node)  # keyed by its class
        if node.attr.value in PIPELINE_SETTINGS and self.graph is None:
            key = self._pipeline_key(node.value)
            if key is not None:
                self.facts.pipeline_attribute_reads.append(Site(node, dotted_name(node.value), node.attr.value, key))
        if node.attr.value == "shape" and _is_method_call(node.value, "at") and self._is_tensorlist(node.value.func.value):
            self.facts.sample_shapes.add(id(node.value))
        elif node.attr.value == "dtype" and id(node) not in self.dtype_calls and self._holds_dali_dtype(node.value):
            self._tensorlist_use(node, node.value, "dtype")

    def _holds_dali_dtype(self, value: cst.BaseExpression) -> bool:
        """An output, one of its samples (``out[i]``) or its dense tensor: their ``dtype`` is a
        ``DALIDataType``, where an ndd Batch's or Tensor's is an ndd type (``.type_id`` is it)."""
        if isinstance(value, cst.Subscript) and self._is_tensorlist(value.value):
            return True
        return self._is_tensorlist(value) or dotted_name(value) in self.facts.dense_tensors

    def visit_Subscript(self, node: cst.Subscript) -> None:
        if self.graph is not None and isinstance(node.value, cst.Name) and node.value.value in self.graph.feature_dicts:
            return  # ``inputs["image/encoded"]``: a feature by name, in both modes
        if self.graph is not None and self.is_datanode_expr(node.value):
            self.facts.datanode_subscripts.append(Site(node, dotted_name(node.value) or "DataNode"))
        elif self._is_tensorlist(node.value):
            self._tensorlist_use(node, node.value, "[]")

    def _feeds_an_output(self, call: cst.Call) -> bool:
        """``feed_ndarray(out.as_tensor(), t)``: a pipeline output copied into a torch tensor,
        with no ``cuda_stream``."""
        if len(call.args) != 2 or any(a.keyword is not None or a.star for a in call.args):
            return False
        given = call.args[0].value
        return self._is_tensorlist(given) or dotted_name(given) in self.facts.dense_tensors

    def _tensorlist_origin(self, receiver: cst.BaseExpression) -> tuple[str, str | None]:
        """The name a TensorList expression starts from, and the pipeline it came from."""
        base = receiver
        while isinstance(base, (cst.Subscript, cst.Call)):
            if self._is_run_call(base):  # ``pipe.run()[0].at(1)``: the pipeline itself
                return dotted_name(base) or "output", self._pipeline_key(base.func.value)
            base = base.value if isinstance(base, cst.Subscript) else base.func.value
        name = dotted_name(base) or "output"
        return name, self.facts.output_origin.get(name)

    def _tensorlist_use(self, node: cst.CSTNode, receiver: cst.BaseExpression, method: str) -> None:
        name, origin = self._tensorlist_origin(receiver)
        if method == "shape" and _is_method_call(receiver, "as_tensor"):
            method = "tensor_shape"  # a dense Tensor's shape() is a list, ndd's .shape a tuple
        self.facts.tensorlist_uses.append(Site(node, name, method, origin))


# methods of a DALI Tensor (a sample, or a dense output) -> their TensorList-use kinds: an ndd
# Tensor has the properties (``shape`` a tuple where ``shape()`` gave a list)
TENSOR_METHODS = {"shape": "tensor_shape", "layout": "layout"}


# ``Pipeline`` properties that only give back how the pipeline was made
PIPELINE_SETTINGS = frozenset({"max_batch_size", "batch_size", "num_threads", "device_id"})


# ``hasattr(out, name)``: the ndd spelling of a TensorList method, and the names both answer alike
HASATTR_SPELLINGS = {"as_cpu": "cpu"}
HASATTR_ANSWERED_ALIKE = frozenset({"shape", "layout"})


def iterated_pipeline(call: cst.Call, by_keyword: bool = True) -> cst.BaseExpression | None:
    """The pipeline a framework iterator is built over: its first argument, or ``pipelines=``/
    ``pipeline=`` unless ``by_keyword`` is False; ``[pipe]`` (one pipeline in a list) is ``pipe``."""
    for arg in call.args:
        if arg.keyword is None and not arg.star:
            return single_element(arg.value)
        if not by_keyword:
            return None  # only a first positional argument counts
        if arg.keyword is not None and arg.keyword.value in ("pipelines", "pipeline"):
            return single_element(arg.value)
    return None


def single_element(value: cst.BaseExpression) -> cst.BaseExpression:
    """``x`` for ``[x]`` or ``(x,)``; ``value`` itself otherwise."""
    if isinstance(value, (cst.List, cst.Tuple)) and len(value.elements) == 1 and isinstance(value.elements[0], cst.Element):
        return value.elements[0].value
    return value


def collect_facts(module: cst.Module, optable: OpTable | None = None, imports: ImportTable | None = None,
                  imported_pipelines: frozenset[str] = frozenset()) -> ModuleFacts:
    """``imported_pipelines``: names (``train_pipe``, ``pipelines.train_pipe``) that stand for
    pipeline functions another module of the project defines, and, spelled as a call
    (``get_pipe()``), functions of another module that make one and return it."""
    facts = _collected(module, optable, imports, imported_pipelines, {})
    methods = {name: key for name, key in facts.pipeline_helpers.items() if name.startswith("self.")}
    if methods:  # ``self.pipe = self._create_pipeline()`` in ``__init__``, above that method: once more
        facts = _collected(module, facts.optable, facts.imports, imported_pipelines, methods)
    return facts


def _collected(module: cst.Module, optable: OpTable | None, imports: ImportTable | None,
               imported_pipelines: frozenset[str], known_helpers: dict[str, str]) -> ModuleFacts:
    """One pass of the collector; ``known_helpers``: methods that return pipelines, found by an
    earlier pass (a call may come before the method in the class)."""
    facts = ModuleFacts(imports=imports or import_table(module), optable=optable or load_op_table())
    facts.pipeline_helpers.update(known_helpers)
    returning = {key: function for key in imported_pipelines if (function := returning_function(key))}
    functions = imported_pipelines - set(returning)
    facts.pipeline_functions |= functions
    for held, function in returning.items():
        _bind_imported_helper(facts, function, held)
    if facts.uses_dali or imported_pipelines:
        from .pipeline_parameters import find_parameters

        pipeline_parameters, factory_parameters = find_parameters(module, facts.imports, functions)
        parameter_keys = _bind_pipeline_parameters(facts, pipeline_parameters)
        _bind_factory_parameters(facts, factory_parameters)
        collector = _FactCollector(facts, parameter_keys, lambda: class_families(module_class_bases(module)))
        factories, variables, containers = module_pipeline_names(module, facts.imports,
                                                                 functions | set(returning.values()))
        collector.pipelines.declare_module_names(variables | set(containers))
        facts.pipeline_containers.update(containers)
        collector.factory_names = factories
        for index, statement in enumerate(module.body):
            collector.statement_index = index
            walk(statement, collector)
        facts.output_arguments = collector.output_arguments
        if collector.output_arguments:
            from .output_helpers import find_output_helpers

            find_output_helpers(module, facts, collector.output_arguments)
    return facts


class _ModuleBindings(Visitor):
    """``name = factory(...)`` in the module's own statements, outside functions and classes."""

    def __init__(self, imports: ImportTable, factories: set[str]) -> None:
        self.imports = imports
        self.factories = factories
        self.names: set[str] = set()
        self.containers: dict[str, type] = {}  # ``PIPES = [make(...) for ...]``: name -> list or dict

    def visit_FunctionDef(self, node: cst.FunctionDef) -> bool:
        return False

    def visit_ClassDef(self, node: cst.ClassDef) -> bool:
        return False

    def visit_Lambda(self, node: cst.Lambda) -> bool:
        return False

    def visit_Assign(self, node: cst.Assign) -> None:
        value = node.value
        if isinstance(value, cst.Call) and (self.imports.resolve(value.func) == PIPELINE_CLASS
                                            or dotted_name(value.func) in self.factories):
            self.names.update(t.target.value for t in node.targets if isinstance(t.target, cst.Name))
        kind, made = _list_or_dict(value), container_elements(value)
        if kind and made and all(isinstance(c, cst.Call) and dotted_name(c.func) in self.factories for c in made):
            self.containers.update((t.target.value, kind) for t in node.targets if isinstance(t.target, cst.Name))


def module_pipeline_names(module: cst.Module, imports: ImportTable,
                          imported_pipelines: frozenset[str]) -> tuple[set[str], set[str], dict[str, type]]:
    """The module's pipeline functions and classes, the names its own code binds to a
    pipeline, and those it binds to a list or dict of them, known before any function body is
    read: a function reads a global when it runs, so ``pipe.run()`` in a function defined above
    ``if __name__ == "__main__": pipe = train_pipe()`` reads that pipeline."""
    factories = set(imported_pipelines)
    for statement in module.body:
        if isinstance(statement, cst.FunctionDef) and pipeline_def_decorator(statement, imports) is not None:
            factories.add(statement.name.value)
        elif isinstance(statement, cst.ClassDef) and any(imports.resolve(b.value) == PIPELINE_CLASS
                                                          for b in statement.bases):
            factories.add(statement.name.value)
    bindings = _ModuleBindings(imports, factories)
    walk(module, bindings)
    return factories, bindings.names, bindings.containers


def _bind_imported_helper(facts: ModuleFacts, function: str, held: str) -> None:
    """``pipe = get_pipe(...)`` holds the pipeline that ``function`` of another module makes and
    returns. Its graph is planned there; here it goes by ``held`` (``get_pipe()``), the name its
    imported plan is given (crossmodule.py), and the call's arguments are the function's own."""
    facts.pipeline_helpers[function] = held
    facts.pipeline_var_factories.setdefault(held, set()).add(held)


def _bind_factory_parameters(facts: ModuleFacts, parameters: list) -> None:
    """``pipe = pipeline(batch_size=...)`` in ``def speedtest(pipeline, ...)``, called with
    pipeline functions: ``pipeline`` is a helper that makes the pipelines of those functions
    (``pipeline@speedtest``, through a variable of its own)."""
    for parameter in parameters:
        helper = f"{parameter.name.value}@{parameter.function.name.value}"
        held = returned_by(helper)
        facts.pipeline_helpers[helper] = held
        facts.pipeline_var_factories.setdefault(held, set()).update(parameter.factories)
        facts.factory_parameters[(parameter.function.name.value, parameter.name.value)] = helper
        facts.pipeline_parameters.append(parameter.name)
        facts.pipeline_parameters.extend(parameter.passed)  # the functions named where it is called


def _bind_pipeline_parameters(facts: ModuleFacts, parameters: list) -> dict[int, str]:
    """Parameters that every call fills with a pipeline (``show(plain(ROOT), 2)``) are pipeline
    variables; the calls passed are their factory calls, bound to no statement (so nothing is
    placed after them). Returns id(parameter name) -> its key."""
    keys: dict[int, str] = {}
    for number, parameter in enumerate(parameters):
        name = keys[id(parameter.name)] = f"{parameter.name.value}@{parameter.function.name.value}#p{number}"
        facts.parameter_pipelines[name] = parameter
        facts.pipeline_refs[id(parameter.name)] = name
        facts.pipeline_vars.add(name)
        made = [*parameter.calls, *parameter.variable_calls]
        facts.pipeline_var_factories.setdefault(name, set()).update(dotted_name(c.func) for c in made)
        facts.pipeline_factory_calls.extend(parameter.calls)  # the variables' calls are their own
        facts.pipeline_binding_targets.extend(parameter.calls)
        facts.pipeline_parameters.append(parameter.name)
        facts.pipeline_parameters.extend(parameter.variables)  # passed on, as the parameter reads them
    return keys
