"""Sources a pipeline takes as a parameter (DM012): ``def pipe(source): fn.external_source(source)``.

What the migrated generator does with its source (call it with nothing, the iteration or
``BatchInfo``, call it per sample, or iterate it) depends on what the source is, and a parameter
does not say: the calls of the pipeline do. Each call's argument is followed to a class,
function or generator function of this module, given inline (``pipe(Reader(files))``) or as a
name bound once to one, in the calling function or at the top of the module. Every call must
pass a source that is used the same way; when one passes something this module does not
define, or two pass different kinds, the pipeline stays, with a TODO naming the call::

    pipe = parallel_pipeline(ExternalInputCallable(batch_size))  # a per-sample callable

makes ``source`` in the generator a per-sample callable: ``source(SampleInfo(...))``.
"""

from __future__ import annotations

import libcst as cst

from ..analysis import ModuleFacts
from ..imports import dotted_name
from ..pipeline_parameters import passed_argument
from ..visitors import walk
from .external_source import NotMigratable, bindings, plan_parameter_source, source_kind
from .names import all_params
from .places import Places


class ArgumentNotFollowed(Exception):
    def __init__(self, call: cst.Call, message: str) -> None:
        super().__init__(message)
        self.call = call


def resolve_parameter_sources(module: cst.Module, facts: ModuleFacts, plans: list) -> None:
    """Plans each parameter source from the calls of its pipeline in this module; a pipeline
    whose callers cannot be followed is blocked. An imported pipeline's sources were planned
    where it is defined: the calls here must pass sources used the same way."""
    pending = [(plan, index) for plan in plans if plan.migratable
               for index, source in enumerate(plan.sources) if source.parameter is not None]
    if not pending:
        return
    calls = {id(plan): _pipeline_calls(plan, facts) for plan, _ in pending}
    places = Places({id(call) for found in calls.values() for call in found})
    walk(module, places)
    for plan, index in pending:
        source = plan.sources[index]
        if plan.imported and not calls[id(plan)]:
            continue
        try:
            passed = [_kind_passed(call, plan.function, source.parameter, facts, places, module)
                     for call in calls[id(plan)]]
            resolved = plan_parameter_source(source, passed)
        except ArgumentNotFollowed as reason:
            plan.block("DM012", reason.call, f"`fn.external_source` takes the graph's parameter "
                                             f"`{source.parameter}`, and {reason}")
            continue
        except NotMigratable as reason:
            plan.block("DM012", source.call.node, f"`fn.external_source`: {reason}")
            continue
        if not plan.imported:
            plan.sources[index] = resolved
        elif resolved.used_as() != source.used_as():
            plan.block("DM012", calls[id(plan)][0], f"`{plan.graph.name}` is given a `{source.parameter}` here "
                                                    "that its generator would use another way than the sources "
                                                    "of the module that defines it")


def _pipeline_calls(plan, facts: ModuleFacts) -> list[cst.Call]:
    """``pipe = train_pipe(...)`` and ``return train_pipe(...)``: any other use of the pipeline
    function is planned elsewhere (and blocks it when it cannot be migrated)."""
    returned = [r for r in facts.pipeline_returns if isinstance(r, cst.Call)]
    return [c for c in [*facts.pipeline_factory_calls, *returned] if dotted_name(c.func) == plan.graph.name]


def _argument(call: cst.Call, graph: cst.FunctionDef, parameter: str) -> cst.BaseExpression:
    if any(arg.star for arg in call.args):
        raise ArgumentNotFollowed(call, f"`{dotted_name(call.func)}(...)` passes `*args`/`**kwargs`")
    passed = passed_argument(call, graph, parameter)
    if passed is not None:
        return passed
    default = next(p.default for p in all_params(graph.params) if p.name.value == parameter)
    if default is None:
        raise ArgumentNotFollowed(call, f"`{dotted_name(call.func)}(...)` does not pass it")
    return default


def _kind_passed(call: cst.Call, graph: cst.FunctionDef, parameter: str, facts: ModuleFacts,
                 places: Places, module: cst.Module) -> tuple[str, int, str]:
    argument = _argument(call, graph, parameter)
    shown = module.code_for_node(argument)
    if isinstance(argument, cst.Name):
        argument = binding_in_caller(argument, call, places.scope(call), module)
    try:
        return (*source_kind(argument, facts), shown)
    except NotMigratable:
        raise ArgumentNotFollowed(call, f"`{dotted_name(call.func)}(...)` passes `{shown}`, which is not a "
                                        "function, generator function, callable class or iterable class of "
                                        "this module (given inline, or a name bound once to one)") from None


def binding_in_caller(name: cst.Name, call: cst.Call, caller: cst.FunctionDef | None,
                       module: cst.Module) -> cst.BaseExpression:
    """What the calling function binds ``name`` to, when it binds it once: ``name = Class(...)``
    in its body. A name it does not bind is the module's (``source_kind`` looks it up there)."""
    if caller is None:
        return name
    if name.value in {p.name.value for p in all_params(caller.params)}:
        raise ArgumentNotFollowed(call, f"`{dotted_name(call.func)}(...)` passes `{name.value}`, a parameter of "
                                        f"`{caller.name.value}`: what it is is known only where that is called")
    binders, assign = bindings(name.value, caller.body.body)
    if not binders:
        if not _at_module_level(caller, module):
            raise ArgumentNotFollowed(call, f"`{name.value}` comes from an enclosing function")
        return name
    if assign is None:
        raise ArgumentNotFollowed(call, f"`{name.value}` must be bound once in `{caller.name.value}`, as "
                                        f"`{name.value} = SourceClass(...)`")
    return assign.value


def _at_module_level(function: cst.FunctionDef, module: cst.Module) -> bool:
    """A function of the module or a method of one of its classes: a name it does not bind is
    the module's."""
    if function in module.body:
        return True
    return any(isinstance(s, cst.ClassDef) and function in s.body.body for s in module.body)

