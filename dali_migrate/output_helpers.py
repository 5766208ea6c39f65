"""Functions that only receive pipeline outputs: ``def show_images(image_batch): ...``.

NVIDIA's notebooks hand a batch to a display helper (``show_images(images)``) that calls
``image_batch.at(j)``. When every call of such a module-level function passes outputs of
pipelines for a parameter, and the function uses that parameter only through the TensorList API
(``.at()``, ``.as_cpu()``, ``.as_array()``, ``len()``, ``[i]``, ...), its uses are rewritten with
the call sites; the pipelines it takes outputs from are then migrated together or kept together.
Anything else (the function used as a value, the parameter rebound, passed on, iterated, or
read in a nested function) leaves the helper alone, and the audit keeps the pipelines whose
outputs would reach it.
"""

from __future__ import annotations

from dataclasses import dataclass

import libcst as cst

from .analysis import TENSORLIST_METHODS, ModuleFacts, Site
from .imports import dotted_name
from .visitors import Visitor, walk


@dataclass
class OutputHelper:
    function: cst.FunctionDef
    params: list[str]
    origins: set[str]  # pipeline variables whose outputs reach it


def find_output_helpers(module: cst.Module, facts: ModuleFacts,
                        arguments: list[tuple[cst.Call, cst.Arg, Site]]) -> None:
    """``arguments``: outputs passed to plain calls (``show_images(images)``), each with the
    escape the analysis noted for it. Adds the helpers' uses to ``facts.tensorlist_uses`` and the
    helpers to ``facts.output_helpers``; their calls' arguments no longer count as escaping."""
    by_function: dict[str, list[tuple[cst.Call, cst.Arg, Site]]] = {}
    for argument in arguments:
        by_function.setdefault(dotted_name(argument[0].func) or "", []).append(argument)
    candidates = {name: args for name, args in by_function.items() if _plain_function(name, facts)}
    if not candidates:
        return
    references = References(set(candidates))
    walk(module, references)
    for name, args in candidates.items():
        helper = _helper(facts.module_functions[name][0], references.calls.get(name, []), args,
                         references.other_uses.get(name, 0))
        if helper is None:
            continue
        uses = param_uses(helper)
        if uses is None:
            continue
        origin = sorted(helper.origins)[0]
        facts.tensorlist_uses += [Site(node, param, method, origin) for node, param, method in uses]
        facts.output_helpers[name] = helper
        accounted = {id(escape) for _, _, escape in args}
        facts.escaping_outputs = [s for s in facts.escaping_outputs if id(s) not in accounted]


def _plain_function(name: str, facts: ModuleFacts) -> bool:
    return (name.isidentifier() and len(facts.module_functions.get(name, [])) == 1
            and name not in facts.pipeline_functions and name not in facts.pipeline_helpers
            and not any(g.name == name for g in facts.graphs))


class References(Visitor):
    """Calls of the candidate functions, and any other use of their names."""

    def __init__(self, names: set[str]) -> None:
        self.names = names
        self.calls: dict[str, list[cst.Call]] = {}
        self.other_uses: dict[str, int] = {}
        self._call_funcs: set[int] = set()
        self._definitions: set[int] = set()

    def visit_FunctionDef(self, node: cst.FunctionDef) -> None:
        self._definitions.add(id(node.name))

    def visit_Attribute(self, node: cst.Attribute) -> None:
        self._definitions.add(id(node.attr))  # ``pipe.run()`` does not use a function ``run``

    def visit_Call(self, node: cst.Call) -> None:
        if isinstance(node.func, cst.Name) and node.func.value in self.names:
            self.calls.setdefault(node.func.value, []).append(node)
            self._call_funcs.add(id(node.func))

    def visit_Name(self, node: cst.Name) -> None:
        if node.value in self.names and id(node) not in self._call_funcs and id(node) not in self._definitions:
            self.other_uses[node.value] = self.other_uses.get(node.value, 0) + 1


def _helper(function: cst.FunctionDef, calls: list[cst.Call], arguments: list[tuple[cst.Call, cst.Arg, Site]],
            other_uses: int) -> OutputHelper | None:
    """The helper, when every call binds the same parameters to pipeline outputs."""
    if other_uses or not calls or not plain_signature(function):
        return None
    params = function.params
    names = [p.name.value for p in [*params.posonly_params, *params.params]]
    keyword_only = {p.name.value for p in params.kwonly_params}
    origin_of_arg = {id(arg): escape.origin for _, arg, escape in arguments}
    bound_params: set[str] | None = None
    origins: set[str] = set()
    for call in calls:
        outputs_here: set[str] = set()
        for position, arg in enumerate(call.args):
            if arg.star:
                return None
            param = arg.keyword.value if arg.keyword is not None else (names[position] if position < len(names) else None)
            if param is None or (arg.keyword is not None and param not in names and param not in keyword_only):
                return None
            if id(arg) in origin_of_arg:
                origin = origin_of_arg[id(arg)]
                if origin is None:
                    return None
                outputs_here.add(param)
                origins.add(origin)
        if bound_params is None:
            bound_params = outputs_here
        elif bound_params != outputs_here:
            return None
    if not bound_params:
        return None
    return OutputHelper(function, sorted(bound_params), origins)


def plain_signature(function: cst.FunctionDef) -> bool:
    """No decorator, ``async``, ``*args`` or ``**kwargs``: each argument binds one parameter."""
    params = function.params
    return not (function.asynchronous or function.decorators or isinstance(params.star_arg, cst.Param)
                or params.star_kwarg is not None)


def param_uses(helper: OutputHelper) -> list[tuple[cst.CSTNode, str, str]] | None:
    """(node, parameter, method) of every use of the output parameters, or None when one of them
    is used any other way."""
    finder = _ParamUses(set(helper.params))
    walk(helper.function.body, finder)
    if finder.unsupported or finder.all_names != finder.accounted:
        return None
    return finder.uses


class _ParamUses(Visitor):
    def __init__(self, params: set[str]) -> None:
        self.params = params
        self.uses: list[tuple[cst.CSTNode, str, str]] = []
        self.all_names: set[int] = set()
        self.accounted: set[int] = set()
        self.unsupported = False

    def visit_FunctionDef(self, node: cst.FunctionDef) -> bool:
        return self._nested(node)

    def visit_Lambda(self, node: cst.Lambda) -> bool:
        return self._nested(node)

    def visit_ClassDef(self, node: cst.ClassDef) -> bool:
        return self._nested(node)

    def _nested(self, node: cst.CSTNode) -> bool:
        """A nested scope that names a parameter (a closure, or a rebinding) is not followed."""
        names = _Names(self.params)
        walk(node, names)
        self.unsupported |= names.found
        return False

    def visit_Name(self, node: cst.Name) -> None:
        if node.value in self.params:
            self.all_names.add(id(node))

    def visit_Call(self, node: cst.Call) -> None:
        if isinstance(node.func, cst.Attribute) and node.func.attr.value in TENSORLIST_METHODS:
            param = self._receiver_param(node.func.value)
            if param is not None:
                method = node.func.attr.value
                if method == "shape" and _is_call_of(node.func.value, "as_tensor"):
                    method = "tensor_shape"
                self.uses.append((node, param, method))
        elif dotted_name(node.func) == "len" and len(node.args) == 1 and not node.args[0].star:
            param = self._receiver_param(node.args[0].value)
            if param is not None:
                self.uses.append((node, param, "len"))

    def visit_Subscript(self, node: cst.Subscript) -> None:
        param = self._receiver_param(node.value)
        if param is not None:
            self.uses.append((node, param, "[]"))

    def _receiver_param(self, node: cst.BaseExpression) -> str | None:
        """The parameter a TensorList receiver stands for: ``p``, ``p.as_cpu()``, ``p.as_tensor()``."""
        if isinstance(node, cst.Name) and node.value in self.params:
            self.accounted.add(id(node))
            return node.value
        if _is_call_of(node, "as_cpu") or _is_call_of(node, "as_tensor"):
            inner = node.func.value
            if isinstance(inner, cst.Name) and inner.value in self.params:
                return inner.value  # the inner call is a use of its own, which accounts the name
        return None


class _Names(Visitor):
    def __init__(self, names: set[str]) -> None:
        self.names = names
        self.found = False

    def visit_Name(self, node: cst.Name) -> None:
        self.found |= node.value in self.names


def _is_call_of(node: cst.BaseExpression, method: str) -> bool:
    return (isinstance(node, cst.Call) and isinstance(node.func, cst.Attribute)
            and node.func.attr.value == method)
