"""Functions that only receive pipeline outputs: ``def show_images(image_batch): ...``.

NVIDIA's notebooks hand a batch to a display helper (``show_images(images)``) that calls
``image_batch.at(j)``. When every call of such a module-level function passes outputs of
pipelines for a parameter, and the function uses that parameter only through the TensorList API
(``.at()``, ``.as_cpu()``, ``.as_array()``, ``len()``, ``[i]``, ...) or iterates over it
(an ndd Batch gives its samples too, as Tensors, and the audit judges what is done with them),
its uses are rewritten with the call sites; the pipelines it takes outputs from are then
migrated together or kept together. Anything else (the function used as a value, the
parameter rebound, passed on, or read in a nested function) leaves the helper alone, and the
audit keeps the pipelines whose outputs would reach it.
"""

from __future__ import annotations

from dataclasses import dataclass

import libcst as cst

from .analysis import (FEED_NDARRAY, HASATTR_ANSWERED_ALIKE, HASATTR_SPELLINGS, TENSOR_METHODS, TENSORLIST_METHODS,
                       ModuleFacts, Site, zipped_parts)
from .imports import dotted_name
from .visitors import Visitor, walk


@dataclass
class OutputHelper:
    function: cst.FunctionDef
    params: list[str]
    origins: set[str]  # pipeline variables whose outputs reach it
    tuple_params: frozenset[str] = frozenset()  # given a whole ``pipe.run()`` tuple, not one output


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
    feeds = frozenset(id(call.node) for call in facts.calls if call.qualname == FEED_NDARRAY)
    for name, args in candidates.items():
        helper = _helper(facts.module_functions[name][0], references.calls.get(name, []), args,
                         references.other_uses.get(name, 0), frozenset(facts.tuple_escapes))
        if helper is None:
            continue
        uses = param_uses(helper, feeds)
        if uses is None:
            continue
        origin = sorted(helper.origins)[0]
        facts.tensorlist_uses += [Site(node, param, method, origin) for node, param, method in uses]
        copies = {id(node) for node, _, method in uses if method == "feed_ndarray"}
        facts.iterator_uses = [s for s in facts.iterator_uses if id(s.node) not in copies]
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

    def visit_ClassDef(self, node: cst.ClassDef) -> None:
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
            other_uses: int, tuple_escapes: frozenset[int] = frozenset()) -> OutputHelper | None:
    """The helper, when every call binds the same parameters to pipeline outputs."""
    if other_uses or not calls or not plain_signature(function):
        return None
    params = function.params
    names = [p.name.value for p in [*params.posonly_params, *params.params]]
    keyword_only = {p.name.value for p in params.kwonly_params}
    origin_of_arg = {id(arg): escape.origin for _, arg, escape in arguments}
    tuple_args = {id(arg) for _, arg, _ in arguments if id(arg.value) in tuple_escapes}
    bound_params: set[str] | None = None
    tuples: set[str] = set()
    origins: set[str] = set()
    for call in calls:
        outputs_here: set[str] = set()
        if _spreads_outputs(call, tuple_args, params):  # ``to_torch(*pipe.run())``: one output each
            if origin_of_arg[id(call.args[0])] is None:
                return None
            outputs_here = set(names)
            origins.add(origin_of_arg[id(call.args[0])])
        for position, arg in enumerate([] if outputs_here else call.args):
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
                if id(arg) in tuple_args:
                    tuples.add(param)
        if bound_params is None:
            bound_params = outputs_here
        elif bound_params != outputs_here:
            return None
    if not bound_params or (tuples and any(
            (id(arg.value) in tuple_escapes) != (param in tuples)
            for call in calls for param, arg in _bound(call, names))):
        return None  # a parameter given a tuple at one call and one output at another
    return OutputHelper(function, sorted(bound_params), origins, frozenset(tuples))


def _spreads_outputs(call: cst.Call, tuple_args: set[int], params: cst.Parameters) -> bool:
    """The call's one argument spreads a ``pipe.run()`` tuple over positional parameters with
    no default (a pipeline of as many outputs: DALI would raise a TypeError otherwise)."""
    positional = [*params.posonly_params, *params.params]
    return (len(call.args) == 1 and call.args[0].star == "*" and id(call.args[0]) in tuple_args
            and bool(positional) and all(p.default is None for p in positional))


def _bound(call: cst.Call, names: list[str]) -> list[tuple[str, cst.Arg]]:
    return [(arg.keyword.value if arg.keyword is not None else names[position], arg)
            for position, arg in enumerate(call.args) if arg.keyword is not None or position < len(names)]


def plain_signature(function: cst.FunctionDef) -> bool:
    """No decorator, ``async``, ``*args`` or ``**kwargs``: each argument binds one parameter."""
    params = function.params
    return not (function.asynchronous or function.decorators or isinstance(params.star_arg, cst.Param)
                or params.star_kwarg is not None)


def param_uses(helper: OutputHelper, feeds: frozenset[int] = frozenset()) -> list[tuple[cst.CSTNode, str, str]] | None:
    """(node, parameter, method) of every use of the output parameters, or None when one of them
    is used any other way. ``feeds``: the ids of the module's ``feed_ndarray`` calls."""
    taken = _taken_apart(helper.function.body, helper.tuple_params)
    if taken is None:
        return None
    derived, accounted = taken
    params = set(helper.params) - helper.tuple_params | derived
    dense = _DenseTensors(params)
    walk(helper.function.body, dense)
    finder = _ParamUses(params, dense.of_param, feeds)
    finder.accounted |= accounted
    walk(helper.function.body, finder)
    if finder.unsupported or finder.all_names != finder.accounted:
        return None
    return finder.uses


def _taken_apart(body: cst.BaseSuite, tuple_params: frozenset[str]) -> tuple[set[str], set[int]] | None:
    """The names a helper takes a pipeline's outputs tuple apart into (``images, labels = out``,
    ``images = out[0]``), each an output, and the ids of the names those lines bind and read;
    None where a tuple parameter is used any other way."""
    if not tuple_params:
        return set(), set()
    lines = _Unpacking(tuple_params)
    walk(body, lines)
    names = _NameNodes(tuple_params)
    walk(body, names)
    if lines.other or names.ids != lines.tuple_reads:
        return None
    return lines.derived, lines.target_ids


class _Unpacking(Visitor):
    def __init__(self, tuple_params: frozenset[str]) -> None:
        self.tuple_params = tuple_params
        self.derived: set[str] = set()
        self.target_ids: set[int] = set()
        self.tuple_reads: set[int] = set()
        self.other = False

    def visit_Assign(self, node: cst.Assign) -> None:
        value = node.value
        source = value.value if isinstance(value, cst.Subscript) and _literal_index(value) else value
        if not (isinstance(source, cst.Name) and source.value in self.tuple_params):
            return
        unpacks = not isinstance(value, cst.Subscript)
        targets = [node.targets[0].target] if len(node.targets) == 1 else []
        if unpacks and targets and isinstance(targets[0], (cst.Tuple, cst.List)):
            targets = [element.value for element in targets[0].elements]
        if not targets or not all(isinstance(t, cst.Name) for t in targets) or (unpacks and len(targets) < 2):
            self.other = True
            return
        self.derived |= {t.value for t in targets}
        self.target_ids |= {id(t) for t in targets}
        self.tuple_reads.add(id(source))

    def visit_For(self, node: cst.For) -> None:
        self._loop(node.target, node.iter)

    def visit_CompFor(self, node: cst.CompFor) -> None:
        self._loop(node.target, node.iter)

    def _loop(self, target: cst.BaseAssignTargetExpression, iterated: cst.BaseExpression) -> None:
        """``for output in out`` / ``for index, output in enumerate(out)``: one output each turn."""
        counted = isinstance(iterated, cst.Call) and dotted_name(iterated.func) == "enumerate"
        source = iterated.args[0].value if counted and iterated.args else iterated
        if not (isinstance(source, cst.Name) and source.value in self.tuple_params):
            return
        parts = zipped_parts(target, iterated) if counted else [(target, source)]
        target = parts[0][0] if parts else None
        if not isinstance(target, cst.Name):
            self.other = True
            return
        self.derived.add(target.value)
        self.target_ids.add(id(target))
        self.tuple_reads.add(id(source))


def _literal_index(subscript: cst.Subscript) -> bool:
    return (len(subscript.slice) == 1 and isinstance(subscript.slice[0].slice, cst.Index)
            and isinstance(subscript.slice[0].slice.value, cst.Integer))


class _NameNodes(Visitor):
    def __init__(self, names: frozenset[str]) -> None:
        self.names = names
        self.ids: set[int] = set()

    def visit_Name(self, node: cst.Name) -> None:
        if node.value in self.names:
            self.ids.add(id(node))


class _DenseTensors(Visitor):
    """Names bound to ``p.as_tensor()`` of an output parameter ``p``: a DALI Tensor, whose
    ``shape()`` and ``layout()`` are an ndd Tensor's properties (a name bound more than once is
    left out, and its other uses then make the helper unsupported)."""

    def __init__(self, params: set[str]) -> None:
        self.params = params
        self.of_param: dict[str, str] = {}
        self._seen: set[str] = set()

    def visit_Assign(self, node: cst.Assign) -> None:
        target = node.targets[0].target if len(node.targets) == 1 else None
        if not isinstance(target, cst.Name) or target.value in self.params:
            return
        param = _dense_of(node.value, self.params)
        if param is not None and target.value not in self._seen:
            self.of_param[target.value] = param
        else:
            self.of_param.pop(target.value, None)
        self._seen.add(target.value)


def _dense_of(value: cst.BaseExpression, params: set[str]) -> str | None:
    """``p`` for ``p.as_tensor()``."""
    if _is_call_of(value, "as_tensor") and not value.args and isinstance(value.func.value, cst.Name):
        return value.func.value.value if value.func.value.value in params else None
    return None


class _ParamUses(Visitor):
    def __init__(self, params: set[str], dense: dict[str, str] | None = None,
                 feeds: frozenset[int] = frozenset()) -> None:
        self.params = params
        self.dense = dense or {}  # a dense tensor's name -> the parameter it was made of
        self.feeds = feeds
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
        names = _Names(self.params | set(self.dense))
        walk(node, names)
        self.unsupported |= names.found
        return False

    def visit_Name(self, node: cst.Name) -> None:
        if node.value in self.params or node.value in self.dense:
            self.all_names.add(id(node))

    def visit_Assign(self, node: cst.Assign) -> None:
        """``images = images.as_cpu()`` (or ``... if hasattr(images, "as_cpu") else images``):
        still the output, on the host; ``dense = images.as_tensor()``: a DALI Tensor."""
        target = node.targets[0].target if len(node.targets) == 1 else None
        if isinstance(target, cst.Name) and target.value in self.dense and _dense_of(node.value, self.params):
            self.accounted.add(id(target))
        if isinstance(target, cst.Name) and target.value in self.params and _moved(node.value, target.value):
            self.accounted.add(id(target))
            if isinstance(node.value, cst.IfExp):
                kept = node.value.orelse if isinstance(node.value.orelse, cst.Name) else node.value.body
                self.accounted.add(id(kept))

    def visit_Call(self, node: cst.Call) -> None:
        asked = _hasattr_name(node)
        if asked in HASATTR_SPELLINGS or asked in HASATTR_ANSWERED_ALIKE:
            param = self._receiver_param(node.args[0].value)
            if param is not None and asked in HASATTR_SPELLINGS:  # the others need no change
                self.uses.append((node, param, "hasattr"))
            return
        if id(node) in self.feeds:
            self._fed(node)
        elif (isinstance(node.func, cst.Attribute) and node.func.attr.value in TENSOR_METHODS and not node.args
                and (param := self._dense_param(node.func.value)) is not None):
            self.uses.append((node, param, TENSOR_METHODS[node.func.attr.value]))
        elif isinstance(node.func, cst.Attribute) and node.func.attr.value in TENSORLIST_METHODS:
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

    def _fed(self, node: cst.Call) -> None:
        """``feed_ndarray(images, t)`` (or of ``images.as_tensor()`` or its dense name): the
        output copied into a torch tensor, which ``t.copy_(....torch())`` does on an ndd value."""
        if len(node.args) != 2 or any(a.keyword is not None or a.star for a in node.args):
            return
        given = node.args[0].value
        param = self._dense_param(given) or self._receiver_param(given)
        if param is not None:
            self.uses.append((node, param, "feed_ndarray"))

    def _dense_param(self, node: cst.BaseExpression) -> str | None:
        if isinstance(node, cst.Name) and node.value in self.dense:
            self.accounted.add(id(node))
            return self.dense[node.value]
        return None

    def visit_For(self, node: cst.For) -> None:
        self._iterated(node.target, node.iter)

    def visit_CompFor(self, node: cst.CompFor) -> None:
        self._iterated(node.target, node.iter)

    def _iterated(self, target: cst.BaseAssignTargetExpression, iterated: cst.BaseExpression) -> None:
        """``for sample in images``: an ndd Batch iterates over its samples too, as Tensors; the
        audit judges what the loop does with them."""
        if isinstance(target, cst.Name) and isinstance(iterated, cst.Name) and iterated.value in self.params:
            self.accounted.add(id(iterated))

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


def _hasattr_name(node: cst.Call) -> str | None:
    """``"as_cpu"`` for ``hasattr(images, "as_cpu")``."""
    if dotted_name(node.func) == "hasattr" and len(node.args) == 2 and isinstance(node.args[1].value, cst.SimpleString):
        return node.args[1].value.evaluated_value
    return None


def _moved(value: cst.BaseExpression, name: str) -> bool:
    """``name.as_cpu()``, or that and ``name`` itself as the two branches of an ``if``."""
    if isinstance(value, cst.IfExp):
        branches = [value.body, value.orelse]
        return any(_moved(b, name) for b in branches) and any(isinstance(b, cst.Name) and b.value == name
                                                             for b in branches)
    return _is_call_of(value, "as_cpu") and isinstance(value.func.value, cst.Name) and value.func.value.value == name


class _Names(Visitor):
    def __init__(self, names: set[str]) -> None:
        self.names = names
        self.found = False

    def visit_Name(self, node: cst.Name) -> None:
        self.found |= node.value in self.names


def _is_call_of(node: cst.BaseExpression, method: str) -> bool:
    return (isinstance(node, cst.Call) and isinstance(node.func, cst.Attribute)
            and node.func.attr.value == method)
