"""Functions of a module that take a pipeline as a parameter, as notebooks and test scripts
write them::

    def show(pipe, iterations):
        pipe.build()
        for i in range(iterations):
            images, labels = pipe.run()
            ...

    show(plain(ROOT), 2)
    show(gray(ROOT), 1)

When every call of ``show`` passes a call of a pipeline function of the module for ``pipe``, and
``show`` is used nowhere else, ``pipe`` is a pipeline variable as ``pipe = plain(ROOT)`` would
make it: its ``build()``/``run()`` and outputs are migrated with those pipelines, and the calls
passed for it are their factory calls. Found before the module's one analysis pass, which must
know ``pipe`` when it reaches the function's body.
"""

from __future__ import annotations

from dataclasses import dataclass

import libcst as cst

from .analysis import pipeline_def_decorator
from .imports import ImportTable, dotted_name
from .output_helpers import References
from .scopes import all_params
from .visitors import walk


@dataclass(frozen=True)
class PipelineParameter:
    function: cst.FunctionDef
    name: cst.Name  # the parameter's name, in the ``def``
    calls: tuple[cst.Call, ...]  # the pipeline function calls passed for it


def find_pipeline_parameters(module: cst.Module, imports: ImportTable,
                             pipeline_functions: frozenset[str] = frozenset()) -> list[PipelineParameter]:
    """``pipeline_functions``: names of pipeline functions other modules define."""
    functions = _plain_functions(module)
    pipelines = set(pipeline_functions) | _decorated_pipelines(module, imports)
    if not functions or not pipelines:
        return []
    uses = References(set(functions))
    walk(module, uses)
    found = []
    for name, function in functions.items():
        calls = uses.calls.get(name, [])
        if not calls or uses.other_uses.get(name):
            continue
        for param in all_params(function.params):
            passed = [passed_argument(call, function, param.name.value) for call in calls]
            if all(isinstance(p, cst.Call) and dotted_name(p.func) in pipelines for p in passed):
                found.append(PipelineParameter(function, param.name, tuple(passed)))
    return found


def _plain_functions(module: cst.Module) -> dict[str, cst.FunctionDef]:
    """Top-level functions defined once, without decorators or ``*args``/``**kwargs``."""
    defined: dict[str, list[cst.FunctionDef]] = {}
    for statement in module.body:
        if isinstance(statement, cst.FunctionDef):
            defined.setdefault(statement.name.value, []).append(statement)
    return {name: defs[0] for name, defs in defined.items()
            if len(defs) == 1 and not defs[0].decorators and not isinstance(defs[0].params.star_arg, cst.Param)
            and defs[0].params.star_kwarg is None}


def _decorated_pipelines(module: cst.Module, imports: ImportTable) -> set[str]:
    return {statement.name.value for statement in module.body
            if isinstance(statement, cst.FunctionDef) and pipeline_def_decorator(statement, imports) is not None}


def passed_argument(call: cst.Call, function: cst.FunctionDef, name: str) -> cst.BaseExpression | None:
    """What ``call`` passes for ``function``'s parameter ``name``, by keyword or position (None:
    nothing, or it cannot be told: ``*args``/``**kwargs`` in the call)."""
    if any(arg.star for arg in call.args):
        return None
    for arg in call.args:
        if arg.keyword is not None and arg.keyword.value == name:
            return arg.value
    positional = [a.value for a in call.args if a.keyword is None]
    names = [p.name.value for p in [*function.params.posonly_params, *function.params.params]]
    index = names.index(name) if name in names else len(positional)
    return positional[index] if index < len(positional) else None
