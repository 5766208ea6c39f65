"""``fn.external_source`` in a migrated graph (DM012): the source is called directly.

Pipeline mode calls a source once per iteration, with what its signature asks for: nothing, the
iteration index, or ``BatchInfo(iteration, epoch_idx)`` with ``batch_info=True``; a per-sample
source (``batch=False``) is called once per sample with ``SampleInfo``; a generator function is
iterated, and restarted at its end with ``cycle=True``. The migration does the same in the
generator, wraps the data with ``ndd.batch`` (which copies, as external_source does by default)
and ends the generator where the source raised ``StopIteration``, as ``run()`` did::

    data = fn.external_source(source=read_batch, batch_info=True, layout="HWC")

becomes, in the generator's loop::

    try:
        data = ndd.batch(read_batch(BatchInfo(iteration, 0)), layout="HWC")
    except StopIteration:
        return

What is not one of these shapes (a source whose kind cannot be told from this module, ``cycle``
on a callable, ``"raise"`` cycling, per-output layouts) keeps its DM012 TODO.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field, replace

import libcst as cst

from ..visitors import Visitor, walk

from ..analysis import DaliCall, ModuleFacts
from ..scopes import function_locals
from .names import all_params, scope_names, target_names
from .ops import NotALiteral, keyword_values, literal_value
from .self_sources import SelfSourceNotFollowed, assigned_value

KEPT_ARGS = ("layout", "dtype", "device")
# Tuning without effect on the data; `name` only names the operator.
DROPPED_ARGS = frozenset({"parallel", "prefetch_queue_depth", "no_copy", "blocking", "cuda_stream",
                          "use_copy_kernel", "name", "batch", "batch_info", "cycle", "num_outputs",
                          "source", "preserve", "bytes_per_sample_hint", "repeat_last"})


class NotMigratable(Exception):
    pass


PARAMETER = "parameter"


@dataclass(frozen=True)
class SourceArgs:
    """What an ``external_source`` call asks, whatever its source turns out to be."""
    source: cst.BaseExpression
    batch: object
    batch_info: bool
    cycle: object
    num_outputs: int | None
    kept: tuple[cst.Arg, ...]


@dataclass
class SourcePlan:
    call: DaliCall
    statement_index: int  # in the graph's body
    kind: str  # "batch" | "sample" | "iterator" | PARAMETER (not known until the callers are)
    source: cst.BaseExpression
    argument: str  # "" | "index" | "batch_info" | "sample_info"
    num_outputs: int | None
    cycle: bool
    kept: list[cst.Arg] = field(default_factory=list)
    iterable: bool = False  # iterated as it is (``iter(source)``), not called first
    binding_index: int | None = None  # the graph's ``source = Class(...)`` / ``def source():``, if it made it
    binding: cst.Assign | cst.FunctionDef | None = None
    # a graph parameter's name: the callers pass the source (``args`` until they are known)
    parameter: str | None = None
    args: SourceArgs | None = None
    # ``dtype=types.FLOAT`` (also in a list) among ``kept``, by node id -> ``float32``: written ``ndd.float32``
    ndd_dtypes: dict[int, str] = field(default_factory=dict)
    instance: str | None = None  # the name of an iterable made once and iterated again (``restarts_an_instance``)
    # ``cycle="raise"``: the source ends each epoch, and starts again after the reset that a
    # framework iterator makes; only a generator that marks epoch ends can do that (the plan
    # is blocked otherwise, ``block_unrestarted_sources``)
    restarts_each_epoch: bool = False

    @property
    def restarts_an_instance(self) -> bool:
        """``source=Epochs(...)`` with ``cycle``: DALI made the object once and calls ``iter()`` on
        it again at each end (a new object would start its count anew)."""
        return (self.kind == "iterator" and (self.cycle or self.restarts_each_epoch) and self.iterable
                and isinstance(self.source, (cst.Call, cst.Attribute)))

    def used_as(self) -> tuple:
        """What the generator does with the source: sources alike here are used alike."""
        return self.kind, self.argument, self.iterable, self.cycle

    def made_from(self) -> cst.BaseExpression | None:
        """What the migrated generator evaluates once to make the source: ``Class(...)``, given
        inline or bound to a name in the graph (None: a function or object of the module)."""
        if isinstance(self.source, cst.Call):
            return self.source
        return self.binding.value if isinstance(self.binding, cst.Assign) else None


def _literal(node: cst.BaseExpression | None):
    try:
        return literal_value(node)
    except NotALiteral:
        raise NotMigratable("give `batch`, `batch_info`, `cycle` and `num_outputs` as literals") from None


def _positional_count(function: cst.FunctionDef, skip_self: bool = False) -> int:
    params = [*function.params.posonly_params, *function.params.params]
    if skip_self:
        params = params[1:]
    if isinstance(function.params.star_arg, cst.Param):
        return 2  # *args: DALI passes the argument
    return len([p for p in params if p.default is None])


class _HasYield(Visitor):
    def __init__(self, root: cst.FunctionDef) -> None:
        self.root = root
        self.found = False

    def visit_FunctionDef(self, node: cst.FunctionDef) -> bool:
        return node is self.root  # a nested function's yield makes that one a generator

    def visit_Lambda(self, node: cst.Lambda) -> bool:
        return False

    def visit_Yield(self, node: cst.Yield) -> None:
        self.found = True


def _is_generator_function(function: cst.FunctionDef) -> bool:
    finder = _HasYield(function)
    walk(function, finder)
    return finder.found


def _methods(source: cst.BaseExpression, facts: ModuleFacts) -> dict[str, cst.FunctionDef]:
    """The methods of the module's class that ``source`` (``Class(...)``) instantiates."""
    if isinstance(source, cst.Call) and isinstance(source.func, cst.Name):
        classes = facts.module_classes.get(source.func.value, [])
        if len(classes) == 1:
            return {s.name.value: s for s in classes[0].body.body if isinstance(s, cst.FunctionDef)}
    return {}


def _calls_generator_function(source: cst.BaseExpression, facts: ModuleFacts) -> bool:
    if not (isinstance(source, cst.Call) and isinstance(source.func, cst.Name)):
        return False
    functions = facts.module_functions.get(source.func.value, [])
    return len(functions) == 1 and _is_generator_function(functions[0])


def source_kind(source: cst.BaseExpression, facts: ModuleFacts,
                binding: cst.Assign | cst.FunctionDef | None = None) -> tuple[str, int]:
    """("function", positional params) | ("generator", 0) | ("instance", params of __call__)
    | ("iterable", 0): an object pipeline mode iterates with ``iter()`` and ``next()``
    | ("generator object", 0): an iterable that cannot start again.
    ``binding``: the graph's one ``source = Class(...)``, where ``source`` is a name it binds."""
    if isinstance(binding, cst.FunctionDef):
        return ("generator", 0) if _is_generator_function(binding) else ("function", _positional_count(binding))
    if binding is not None:
        source = binding.value
    elif isinstance(source, cst.Name):
        functions = facts.module_functions.get(source.value, [])
        if len(functions) == 1:
            if _is_generator_function(functions[0]):
                return "generator", 0
            return "function", _positional_count(functions[0])
        values = facts.module_values.get(source.value, [])
        if len(values) == 1:
            source = values[0]  # ``eii = ExternalInputIterator(...)`` at the top of the module
    if _calls_generator_function(source, facts):  # ``source=batches(3, 4)``
        return "generator object", 0
    methods = _methods(source, facts)
    if "__call__" in methods:
        return "instance", _positional_count(methods["__call__"], skip_self=True)
    if "__iter__" in methods:
        return "iterable", 0
    raise NotMigratable("the source must be a function, generator function, callable class or iterable "
                        "class defined at the top of this module, or a function the graph defines")


def _graph_binding(source: cst.BaseExpression, graph_body,
                   before: int) -> tuple[int, cst.Assign | cst.FunctionDef] | None:
    """``source``'s one binding in the graph: ``name = Class(...)`` or ``def name(...):`` at its
    top, before ``before``, and nothing else there binds or deletes ``name`` (None: the graph
    does not bind it)."""
    if not isinstance(source, cst.Name):
        return None
    binders, assign = bindings(source.value, graph_body)
    if not binders:
        return None
    defined = graph_body[binders[0]]
    if len(binders) == 1 and binders[0] < before and _defines(defined, source.value):
        return binders[0], defined
    if assign is None or binders[0] >= before or not isinstance(assign.value, cst.Call):
        raise NotMigratable(f"`{source.value}` must be bound once, as `{source.value} = SourceClass(...)` at the "
                            "top of the graph, before the external_source")
    return binders[0], assign


def _defines(statement: cst.BaseStatement, name: str) -> bool:
    """``def name(...):`` without decorators: a function the graph made, called once per batch."""
    return isinstance(statement, cst.FunctionDef) and statement.name.value == name and not statement.decorators


def bindings(name: str, body) -> tuple[list[int], cst.Assign | None]:
    """The indices of the statements of ``body`` that bind or delete ``name``, and, when there
    is one and it is a plain ``name = value`` statement, that assignment."""
    binders = [i for i, statement in enumerate(body) if name in _bound_or_deleted(statement)]
    if len(binders) != 1:
        return binders, None
    statement = body[binders[0]]
    assign = statement.body[0] if isinstance(statement, cst.SimpleStatementLine) and len(statement.body) == 1 else None
    if (isinstance(assign, cst.Assign) and len(assign.targets) == 1 and isinstance(assign.targets[0].target, cst.Name)
            and assign.targets[0].target.value == name):
        return binders, assign
    return binders, None


def _bound_or_deleted(statement: cst.BaseStatement) -> set[str]:
    names = scope_names([statement])
    deleted = {n.value for d in _deletes(statement) for n in target_names(d.target)}
    return names.bound | deleted


def _deletes(statement: cst.BaseStatement) -> list[cst.Del]:
    found: list[cst.Del] = []

    class Deletes(Visitor):
        def visit_Del(self, node: cst.Del) -> None:
            found.append(node)

    walk(statement, Deletes())
    return found


def _source_args(call: DaliCall) -> SourceArgs:
    keywords = keyword_values(call.node)
    positional = [a.value for a in call.node.args if a.keyword is None]
    source = keywords.get("source", positional[0] if positional else None)
    if source is None or len(positional) > 1:
        raise NotMigratable("no `source=`: data fed with `feed_input` needs a manual migration")
    unknown = set(keywords) - DROPPED_ARGS - set(KEPT_ARGS)
    if unknown:
        raise NotMigratable(f"`{sorted(unknown)[0]}=` has no automatic migration")
    num_outputs = _literal(keywords.get("num_outputs"))
    lists = [keywords[k] for k in KEPT_ARGS if isinstance(keywords.get(k), (cst.List, cst.Tuple))]
    if lists and (num_outputs is None or any(len(value.elements) != num_outputs for value in lists)):
        raise NotMigratable("give one `layout`/`dtype` per output, and `num_outputs`")
    kept = tuple(a for a in call.node.args if a.keyword is not None and a.keyword.value in KEPT_ARGS)
    return SourceArgs(source, _literal(keywords.get("batch")), _literal(keywords.get("batch_info")) or False,
                      _literal(keywords.get("cycle")), num_outputs, kept)


def graph_parameter(source: cst.BaseExpression, graph: cst.FunctionDef | None) -> str | None:
    """The name of the graph's parameter that ``source`` is, if it is one."""
    if graph is None or not isinstance(source, cst.Name):
        return None
    return source.value if source.value in {p.name.value for p in all_params(graph.params)} else None


def plan_source(call: DaliCall, statement_index: int | None, facts: ModuleFacts,
                graph: cst.FunctionDef | None = None) -> SourcePlan:
    """``graph``: the graph function (``statement_index`` counts its top-level statements). A
    source that is one of the graph's parameters is planned as ``PARAMETER``: what it is is
    known only where the pipeline is called (``plan_parameter_source``)."""
    if statement_index is None:
        raise NotMigratable("assign the external_source to a name at the top of the graph")
    args = _source_args(call)
    parameter = graph_parameter(args.source, graph)
    if parameter is not None:
        return SourcePlan(call, statement_index, PARAMETER, args.source, "", args.num_outputs, False,
                          list(args.kept), parameter=parameter, args=args)
    try:
        held = assigned_value(args.source, graph, facts) if graph is not None else None
    except SelfSourceNotFollowed as reason:
        raise NotMigratable(str(reason)) from None
    if held is not None:
        kind, params = source_kind(held, facts)
        return _plan_of_kind(call, statement_index, args, kind, params)
    binding = _graph_binding(args.source, graph.body.body if graph is not None else (), statement_index)
    local = None if binding else _enclosing_assignment(args.source, graph, facts)
    kind, params = source_kind(args.source, facts, binding[1] if binding else local)
    bound = {"binding_index": binding[0], "binding": binding[1]} if binding else {}
    return _plan_of_kind(call, statement_index, args, kind, params, **bound)


def _enclosing_assignment(source: cst.BaseExpression, graph: cst.FunctionDef | None,
                          facts: ModuleFacts) -> cst.Assign | None:
    """``source = SourceClass(...)`` in the function whose body defines the graph (a ``with
    pipe:`` block of ``make()``, after ``source = Source(...)``): the name's one binding there,
    a statement of that body before the graph. The generator, defined in the same place, reads
    the same object. None where ``source`` is not such a name."""
    if graph is None or not isinstance(source, cst.Name):
        return None
    outer = _enclosing_function(graph, facts)
    if outer is None or source.value not in function_locals(outer):
        return None
    if source.value in {p.name.value for p in all_params(outer.params)}:
        return None
    body = list(outer.body.body)
    at = next(i for i, statement in enumerate(body) if statement is graph)
    binders, assign = bindings(source.value, body)
    if assign is None or binders[0] >= at or not isinstance(assign.value, cst.Call):
        return None
    return assign


def _enclosing_function(graph: cst.FunctionDef, facts: ModuleFacts) -> cst.FunctionDef | None:
    """The module's function or method whose body holds the graph's ``def`` as a statement."""
    functions = [f for found in facts.module_functions.values() for f in found]
    functions += [s for classes in facts.module_classes.values() for c in classes for s in c.body.body
                  if isinstance(s, cst.FunctionDef)]
    return next((f for f in functions
                 if isinstance(f.body, cst.IndentedBlock) and any(s is graph for s in f.body.body)), None)


def plan_parameter_source(pending: SourcePlan, passed: list[tuple[str, int, str]]) -> SourcePlan:
    """A parameter source, given what every call of the pipeline passes for it: (kind, params)
    as ``source_kind`` tells, and the argument as written. They must all be used alike, or the
    generator could not call them."""
    plans = [_plan_of_kind(pending.call, pending.statement_index, pending.args, kind, params)
             for kind, params, _ in passed]
    if not plans:
        raise NotMigratable(f"the source is the graph's parameter `{pending.parameter}`, and no call of the "
                            "pipeline in this module passes it: what it is is known only where it is called")
    if len({plan.used_as() for plan in plans}) > 1:
        described = ", ".join(f"`{shown}` ({_described(kind, params)})" for kind, params, shown in passed)
        raise NotMigratable(f"the calls of the pipeline pass `{pending.parameter}` sources that are used in "
                            f"different ways: {described}")
    return replace(plans[0], parameter=pending.parameter, args=pending.args, ndd_dtypes=pending.ndd_dtypes)


def _described(kind: str, params: int) -> str:
    if kind in ("function", "instance"):
        what = "a function" if kind == "function" else "a callable object"
        return f"{what} taking {'no argument' if params == 0 else f'{params} argument(s)'}"
    return {"generator": "a generator function", "iterable": "an iterable object",
            "generator object": "a generator object"}[kind]


def _plan_of_kind(call: DaliCall, statement_index: int, args: SourceArgs, kind: str, params: int,
                  **bound) -> SourcePlan:
    kept = list(args.kept)
    if kind in ("generator", "iterable", "generator object"):
        if args.cycle not in (None, False, "no", True, "quiet", "raise"):
            raise NotMigratable(f"`cycle={args.cycle!r}` needs a manual migration")
        if kind == "generator object" and args.cycle not in (None, False, "no"):
            raise NotMigratable("`cycle=` on a generator object, which cannot start again once it is exhausted")
        return SourcePlan(call, statement_index, "iterator", args.source, "", args.num_outputs,
                          args.cycle in (True, "quiet"), kept, iterable=kind != "generator",
                          restarts_each_epoch=args.cycle == "raise", **bound)
    if args.cycle not in (None, False, "no"):
        raise NotMigratable("`cycle=` on a callable source")
    if params > 1:
        raise NotMigratable("the source takes more than one argument")
    if args.batch is False:
        if params != 1:
            raise NotMigratable("a per-sample source must take the SampleInfo argument")
        return SourcePlan(call, statement_index, "sample", args.source, "sample_info", args.num_outputs, False,
                          kept, **bound)
    argument = ("batch_info" if args.batch_info else "index") if params == 1 else ""
    return SourcePlan(call, statement_index, "batch", args.source, argument, args.num_outputs, False, kept, **bound)


def restart_statement(plan: SourcePlan, holder: str) -> cst.SimpleStatementLine:
    """What the reset at an epoch's end did to a ``cycle="raise"`` source: iterate it anew."""
    return _assign(holder, _new_iterator(plan))


def block_unrestarted_sources(plans) -> None:
    """``cycle="raise"`` restarts the source only at a reset, which a framework iterator makes at
    each epoch's end (the generator then marks epoch ends); run by hand, the pipeline stays."""
    for plan in (p for p in plans if not p.marks_epoch_ends):
        for source in (s for s in plan.sources if s.restarts_each_epoch):
            plan.block("DM012", source.call.node, "`cycle='raise'`: the source starts again only after "
                                                  "`pipe.reset()`, which a framework iterator over the pipeline "
                                                  "makes; run by hand, it needs a manual migration")


def uses_iteration(plans: list[SourcePlan]) -> bool:
    return any(p.argument for p in plans)


def names_needed(plans: list[SourcePlan]) -> set[str]:
    """``BatchInfo`` / ``SampleInfo`` from nvidia.dali.types."""
    return {{"batch_info": "BatchInfo", "sample_info": "SampleInfo"}[p.argument]
            for p in plans if p.argument in ("batch_info", "sample_info")}


def setup_statements(plan: SourcePlan, holder: str) -> list[cst.BaseStatement]:
    """Created once, before the loop: the iterator of a generator source, a callable instance."""
    if plan.kind == "iterator" and plan.instance:
        return [_assign(plan.instance, plan.source), _assign(holder, _new_iterator(plan))]
    if plan.kind == "iterator":
        return [_assign(holder, _new_iterator(plan))]
    if isinstance(plan.source, (cst.Call, cst.Attribute)):  # ``self.source``: read once, as at build
        return [_assign(holder, plan.source)]
    return []


def holder_name(plan: SourcePlan) -> str:
    """``batches`` -> ``batches_iterator``; ``SampleReader(...)`` -> ``sample_reader``."""
    if plan.kind == "iterator" and isinstance(plan.source, cst.Name):
        return f"{plan.source.value}_iterator"
    if isinstance(plan.source, cst.Attribute):
        return plan.source.attr.value + ("_iterator" if plan.kind == "iterator" else "")
    class_name = plan.source.func.value
    snake = re.sub(r"(?<!^)(?=[A-Z])", "_", class_name).lower()
    return f"{snake}_iterator" if snake == class_name else snake  # ``batches(3, 4)``: not ``batches``


def needs_holder(plan: SourcePlan) -> bool:
    return plan.kind == "iterator" or isinstance(plan.source, (cst.Call, cst.Attribute))


def _new_iterator(plan: SourcePlan) -> cst.Call:
    iterable = plan.source if plan.iterable else cst.Call(func=plan.source)
    if plan.instance:
        iterable = cst.Name(plan.instance)
    return cst.Call(func=cst.Name("iter"), args=[cst.Arg(iterable)])


def _assign(name: str, value: cst.BaseExpression) -> cst.SimpleStatementLine:
    return cst.SimpleStatementLine(body=[cst.Assign(targets=[cst.AssignTarget(cst.Name(name))], value=value)])


def _ndd_dtype(value: cst.BaseExpression, dtypes: dict[int, str], ndd: str) -> cst.BaseExpression:
    """``types.FLOAT`` -> ``ndd.float32``, also inside a list of per-output types."""
    if id(value) in dtypes:
        return cst.parse_expression(f"{ndd}.{dtypes[id(value)]}")
    if isinstance(value, (cst.List, cst.Tuple)):
        return value.with_changes(elements=[e.with_changes(value=_ndd_dtype(e.value, dtypes, ndd))
                                            for e in value.elements])
    return value


def _data_expression(plan: SourcePlan, callee: cst.BaseExpression, batch_size: str,
                     iteration: str, epoch: str) -> cst.BaseExpression:
    if plan.kind == "iterator":
        return cst.Call(func=cst.Name("next"), args=[cst.Arg(callee)])
    if plan.kind == "sample":
        # the comprehension's own name must not hide the source (the other names are the generator's)
        index = "sample_index" if isinstance(callee, cst.Name) and callee.value == "index" else "index"
        info = f"SampleInfo({iteration} * {batch_size} + {index}, {index}, {iteration}, {epoch})"
        sample = cst.Call(func=callee, args=[cst.Arg(cst.parse_expression(info))])
        return cst.ListComp(elt=sample, for_in=cst.CompFor(
            target=cst.Name(index), iter=cst.parse_expression(f"range({batch_size})")))
    argument = {"": [], "index": [cst.Arg(cst.Name(iteration))],
                "batch_info": [cst.Arg(cst.parse_expression(f"BatchInfo({iteration}, {epoch})"))]}[plan.argument]
    return cst.Call(func=callee, args=argument)


def _per_output(plan: SourcePlan, data: cst.BaseExpression, batch: cst.BaseExpression,
                kept: list[cst.Arg]) -> cst.ListComp:
    """``[ndd.batch(output, ...) for output in ...]``: one Batch per output, with its own
    ``layout``/``dtype`` where those were given as lists."""
    samples = plan.kind == "sample"  # one tuple per sample: the samples of each output go together
    outputs = cst.Call(func=cst.Name("zip"), args=[cst.Arg(data, star="*")]) if samples else data
    listed = [a for a in kept if isinstance(a.value, (cst.List, cst.Tuple))]
    names = [f"output_{a.keyword.value}" for a in listed]
    args = [cst.Arg(cst.parse_expression("list(output)" if samples else "output"))]
    args += [a for a in kept if a not in listed]
    args += [a.with_changes(value=cst.Name(name)) for a, name in zip(listed, names)]
    target: cst.BaseExpression = cst.Name("output")
    if listed:
        target = cst.Tuple([cst.Element(cst.Name(n)) for n in ["output", *names]], lpar=[], rpar=[])
        outputs = cst.Call(func=cst.Name("zip"), args=[cst.Arg(outputs), *(cst.Arg(a.value) for a in listed)])
    return cst.ListComp(elt=cst.Call(func=batch, args=args), for_in=cst.CompFor(target=target, iter=outputs))


def migrated_statement(plan: SourcePlan, line: cst.SimpleStatementLine, ndd: str, holder: str | None,
                       batch_size: str, iteration: str, epoch: str | None = None) -> cst.Try:
    """``target = fn.external_source(...)`` -> ``try: target = ndd.batch(...) except StopIteration: return``;
    with ``epoch`` (the variable counting epochs), ``break`` ends the epoch instead of the stream."""
    assign: cst.Assign = line.body[0]
    callee = cst.Name(holder) if holder else plan.source
    data = _data_expression(plan, callee, batch_size, iteration, epoch or "0")
    batch = cst.parse_expression(f"{ndd}.batch")
    kept = [a.with_changes(comma=cst.MaybeSentinel.DEFAULT, value=_ndd_dtype(a.value, plan.ndd_dtypes, ndd))
            for a in plan.kept]
    if plan.num_outputs is None:
        value = cst.Call(func=batch, args=[cst.Arg(data), *kept])
    else:
        value = _per_output(plan, data, batch, kept)
    body = cst.IndentedBlock(body=[line.with_changes(body=[assign.with_changes(value=value)], leading_lines=[])])
    if plan.kind == "iterator" and plan.cycle:
        restart = [_assign(holder, _new_iterator(plan)),
                   line.with_changes(body=[assign.with_changes(value=value)], leading_lines=[])]
        handler_body = cst.IndentedBlock(body=restart)  # cycle: start the generator again
    else:
        end = cst.Break() if epoch else cst.Return()
        handler_body = cst.IndentedBlock(body=[cst.SimpleStatementLine(body=[end])])
    handler = cst.ExceptHandler(body=handler_body, type=cst.Name("StopIteration"))
    return cst.Try(body=body, handlers=[handler], leading_lines=line.leading_lines)
