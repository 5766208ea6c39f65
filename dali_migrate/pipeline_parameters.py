"""Functions of a module that take a pipeline as a parameter, as notebooks and test scripts
write them::

    def show(pipe, iterations):
        pipe.build()
        for i in range(iterations):
            images, labels = pipe.run()
            ...

    show(plain(ROOT), 2)
    show(gray(ROOT), 1)

    pipe = gray(ROOT)
    show(pipe, 1)

When every call of ``show`` passes for ``pipe`` a call of a pipeline function of the module, or
a variable that the caller's scope binds once, to such a call, and ``show`` is used nowhere
else, ``pipe`` is a pipeline variable as ``pipe = plain(ROOT)`` would make it: its
``build()``/``run()`` and outputs are migrated with those pipelines, and the calls passed for it
are their factory calls. Found before the module's one analysis pass, which must know ``pipe``
when it reaches the function's body.
"""

from __future__ import annotations

from dataclasses import dataclass

import libcst as cst

from .analysis import pipeline_def_decorator
from .imports import ImportTable, dotted_name
from .output_helpers import References
from .scopes import all_params, name_assignment, target_names
from .visitors import Visitor, walk


@dataclass(frozen=True)
class PipelineParameter:
    function: cst.FunctionDef
    name: cst.Name  # the parameter's name, in the ``def``
    calls: tuple[cst.Call, ...]  # the pipeline function calls passed for it
    variables: tuple[cst.Name, ...] = ()  # the variables passed for it (``show(pipe, 1)``)
    variable_calls: tuple[cst.Call, ...] = ()  # the calls that made the pipelines they hold
    # each variable is read nowhere but in its one call of the function (and ``pipe.build()``):
    # the function is the first to read the pipelines they hold
    handed_fresh: bool = True


@dataclass(frozen=True)
class FactoryParameter:
    """``def speedtest(pipeline, batch): pipe = pipeline(batch_size=batch)``, called as
    ``speedtest(shuffled_pipeline, 32)`` (DALI's getting-started notebook): in the function,
    ``pipeline`` stands for the pipeline functions its calls pass."""

    function: cst.FunctionDef
    name: cst.Name  # the parameter's name, in the ``def``
    factories: tuple[str, ...]  # the pipeline functions passed for it
    passed: tuple[cst.Name, ...]  # where the calls pass them


def _factory_parameters(function: cst.FunctionDef, calls: list[cst.Call],
                        decorated: set[str]) -> list[FactoryParameter]:
    """Parameters of ``function`` that every call fills with a pipeline function's name and
    that the function only calls, in its own body."""
    found = []
    for param in all_params(function.params):
        passed = [passed_argument(call, function, param.name.value) for call in calls]
        if all(isinstance(p, cst.Name) and p.value in decorated for p in passed) and _only_called(
                function, param.name.value):
            found.append(FactoryParameter(function, param.name, tuple(sorted({p.value for p in passed})),
                                          tuple(passed)))
    return found


def _only_called(function: cst.FunctionDef, name: str) -> bool:
    """``name`` appears in the function's body only as what its own statements call (not in a
    function or lambda it defines, which would read it later)."""
    uses = _CallsAndNames(name)
    walk(function.body, uses)
    return 0 < uses.calls == uses.names


class _CallsAndNames(Visitor):
    """How often ``name`` is called outside nested functions, and how often it is spelled."""

    def __init__(self, name: str) -> None:
        self.name = name
        self.calls = self.names = self.depth = 0

    def visit_FunctionDef(self, node: cst.FunctionDef) -> None:
        self.depth += 1

    def leave_FunctionDef(self, original_node: cst.FunctionDef) -> None:
        self.depth -= 1

    visit_Lambda, leave_Lambda = visit_FunctionDef, leave_FunctionDef

    def visit_Call(self, node: cst.Call) -> None:
        self.calls += self.depth == 0 and isinstance(node.func, cst.Name) and node.func.value == self.name

    def visit_Name(self, node: cst.Name) -> None:
        self.names += node.value == self.name


def find_parameters(module: cst.Module, imports: ImportTable, pipeline_functions: frozenset[str] = frozenset()
                    ) -> tuple[list[PipelineParameter], list[FactoryParameter]]:
    """The module's parameters that stand for pipelines, and those that stand for pipeline
    functions (one walk for the calls of both). ``pipeline_functions``: names of pipeline
    functions other modules define."""
    functions = _plain_functions(module)
    constructors = _plain_constructors(module, set(functions))
    if not functions and not constructors:
        return [], []
    pipelines = set(pipeline_functions) | _decorated_pipelines(module, imports)
    if not pipelines:
        return [], []
    decorated = set(pipeline_functions) | {
        s.name.value for s in module.body
        if isinstance(s, cst.FunctionDef) and s.decorators and pipeline_def_decorator(s, imports) is not None}
    uses = References(set(functions) | set(constructors))
    walk(module, uses)
    passes = _Passes(module, pipelines)
    found: list[PipelineParameter] = []
    factories: list[FactoryParameter] = []
    for name, function in [*functions.items(), *constructors.items()]:
        calls = uses.calls.get(name, [])
        if not calls or uses.other_uses.get(name):
            continue
        found += [p for param in all_params(function.params)
                  if (p := passes.parameter(function, param.name, calls)) is not None]
        if name in functions:
            factories += _factory_parameters(function, calls, decorated)
    return found, factories


class _Passes:
    """What the calls of a function pass for one of its parameters, followed to the pipeline
    calls that made it: a call itself, or a variable bound only to such calls."""

    def __init__(self, module: cst.Module, pipelines: set[str]) -> None:
        self.module = module
        self.pipelines = pipelines
        # names some statement binds to a pipeline: only those are worth following to their scope
        self.candidates = {name for statement in _statements(module.body) for name, value in _assignments(statement)
                           if isinstance(value, cst.Call) and dotted_name(value.func) in pipelines}
        self._scopes: _CallScopes | None = None

    def parameter(self, function: cst.FunctionDef, name: cst.Name, calls: list[cst.Call]) -> "PipelineParameter | None":
        passed = [passed_argument(call, function, name.value) for call in calls]
        if not all(isinstance(p, cst.Call) or isinstance(p, cst.Name) and p.value in self.candidates for p in passed):
            return None
        made = [[p] if isinstance(p, cst.Call) else _made_by(p, self.scopes().of(call), self.module)
                for p, call in zip(passed, calls)]
        if not all(m and all(dotted_name(c.func) in self.pipelines for c in m) for m in made):
            return None
        direct = tuple(p for p in passed if isinstance(p, cst.Call))
        variables = tuple(p for p in passed if isinstance(p, cst.Name))
        through = tuple(c for p, m in zip(passed, made) if isinstance(p, cst.Name) for c in m)
        fresh = all(_read_only_there(p, self.scopes().of(call), self.module, len(m))
                    for p, call, m in zip(passed, calls, made) if isinstance(p, cst.Name))
        return PipelineParameter(function, name, direct, variables, through, fresh)

    def scopes(self) -> "_CallScopes":
        if self._scopes is None:  # a walk of the module, for variables only
            self._scopes = _CallScopes()
            walk(self.module, self._scopes)
        return self._scopes


class _CallScopes(Visitor):
    """The function each call is made in (None: the module's own code)."""

    def __init__(self) -> None:
        self.functions: list[cst.FunctionDef] = []
        self.scope: dict[int, cst.FunctionDef | None] = {}

    def visit_FunctionDef(self, node: cst.FunctionDef) -> None:
        self.functions.append(node)

    def leave_FunctionDef(self, original_node: cst.FunctionDef) -> None:
        self.functions.pop()

    def visit_Call(self, node: cst.Call) -> None:
        self.scope[id(node)] = self.functions[-1] if self.functions else None

    def of(self, call: cst.Call) -> cst.FunctionDef | None:
        return self.scope.get(id(call))


def _made_by(passed: cst.BaseExpression | None, scope: cst.FunctionDef | None,
             module: cst.Module) -> list[cst.Call]:
    """The calls whose value a variable passed as ``passed`` may hold: every statement of its
    scope that binds it is ``name = call(...)`` (the module's scope, where the function that
    passes it binds it nowhere). Empty: it may hold anything else."""
    if not isinstance(passed, cst.Name):
        return []
    if scope is not None:
        if passed.value in {p.name.value for p in all_params(scope.params)}:
            return []
        bindings = _Bindings(passed.value)
        walk(scope.body, bindings)
        if bindings.values or bindings.other:
            return [] if bindings.other else bindings.values
    bindings = _Bindings(passed.value)
    walk(module, bindings)
    if bindings.other or _declared_global_somewhere(module, passed.value):
        return []  # a function may bind it to anything (``global pipe; pipe = None``)
    return bindings.values


def _read_only_there(passed: cst.Name, scope: cst.FunctionDef | None, module: cst.Module, bindings: int) -> bool:
    """``passed`` is spelled in its scope only where it is bound (``bindings`` times), built
    (``pipe.build()``) and passed, once."""
    spellings = _Spellings(passed.value)
    walk(scope.body if scope is not None else module, spellings)
    return spellings.names == bindings + spellings.builds + 1


class _Spellings(Visitor):
    def __init__(self, name: str) -> None:
        self.name = name
        self.names = self.builds = 0

    def visit_Name(self, node: cst.Name) -> None:
        self.names += node.value == self.name

    def visit_Call(self, node: cst.Call) -> None:
        func = node.func
        self.builds += (isinstance(func, cst.Attribute) and func.attr.value == "build" and not node.args
                        and isinstance(func.value, cst.Name) and func.value.value == self.name)


def _declared_global_somewhere(module: cst.Module, name: str) -> bool:
    return any(isinstance(small, cst.Global) and any(item.name.value == name for item in small.names)
               for statement in _statements(module.body) for small in _small_statements(statement))


class _Bindings(Visitor):
    """Where one scope binds ``name`` (nested functions and classes are scopes of their own):
    ``values``, the calls of ``name = call(...)``; ``other``, any other binding."""

    def __init__(self, name: str) -> None:
        self.name = name
        self.values: list[cst.Call] = []
        self.other = False

    def visit_FunctionDef(self, node: cst.FunctionDef) -> bool:
        self.other |= node.name.value == self.name
        return False

    def visit_ClassDef(self, node: cst.ClassDef) -> bool:
        self.other |= node.name.value == self.name
        return False

    def visit_Lambda(self, node: cst.Lambda) -> bool:
        return False

    def visit_Assign(self, node: cst.Assign) -> bool:
        plain = [t.target for t in node.targets if isinstance(t.target, cst.Name) and t.target.value == self.name]
        if plain and len(node.targets) == 1 and isinstance(node.value, cst.Call):
            self.values.append(node.value)
            return True
        self.other |= bool(plain) or any(self.name in _target_names(t.target) for t in node.targets)
        return True

    def on_visit(self, node: cst.CSTNode) -> bool:
        if isinstance(node, (cst.AugAssign, cst.AnnAssign, cst.For, cst.AsName, cst.NamedExpr, cst.Del)):
            target = getattr(node, "target", None) or getattr(node, "name", None)
            self.other |= target is not None and self.name in _target_names(target)
        elif isinstance(node, (cst.Global, cst.Nonlocal)):
            self.other |= any(item.name.value == self.name for item in node.names)
        elif isinstance(node, (cst.ImportAlias,)):
            bound = node.asname.name if node.asname else node.name
            self.other |= isinstance(bound, cst.Name) and bound.value == self.name
        return super().on_visit(node)


def _target_names(target: cst.CSTNode) -> set[str]:
    return {name.value for name in target_names(target)}


def _plain_functions(module: cst.Module) -> dict[str, cst.FunctionDef]:
    """Top-level functions defined once, without decorators or ``*args``/``**kwargs``."""
    defined: dict[str, list[cst.FunctionDef]] = {}
    for statement in module.body:
        if isinstance(statement, cst.FunctionDef):
            defined.setdefault(statement.name.value, []).append(statement)
    return {name: defs[0] for name, defs in defined.items()
            if len(defs) == 1 and not defs[0].decorators and not isinstance(defs[0].params.star_arg, cst.Param)
            and defs[0].params.star_kwarg is None}


def _plain_constructors(module: cst.Module, functions: set[str]) -> dict[str, cst.FunctionDef]:
    """Top-level classes of no base class (a wrapper: ``class Loader: def __init__(self,
    pipeline, ...)``) defined once, undecorated, by their ``__init__``, which takes ``self``
    and no ``*args``/``**kwargs``: calling the class passes its arguments to ``__init__``."""
    defined: dict[str, list[cst.ClassDef]] = {}
    for statement in module.body:
        if isinstance(statement, cst.ClassDef):
            defined.setdefault(statement.name.value, []).append(statement)
    found = {}
    for name, classes in defined.items():
        node = classes[0]
        bases = [dotted_name(base.value) for base in node.bases]
        if len(classes) != 1 or name in functions or node.decorators or node.keywords or bases not in ([], ["object"]):
            continue
        inits = [s for s in node.body.body if isinstance(s, cst.FunctionDef) and s.name.value == "__init__"]
        if len(inits) != 1 or inits[0].decorators:
            continue
        params = inits[0].params
        if (isinstance(params.star_arg, cst.Param) or params.star_kwarg is not None or params.posonly_params
                or not params.params or params.params[0].name.value != "self"):
            continue
        found[name] = inits[0]
    return found


def _decorated_pipelines(module: cst.Module, imports: ImportTable) -> set[str]:
    """Pipeline functions, top-level or not (a ``with pipe:`` graph in a function or under
    ``if __name__ == "__main__":`` becomes one there), and the module's functions that return
    what one of them makes (``def build(...): ...; return pipe``)."""
    pipelines = {s.name.value for s in _statements(module.body)
                 if isinstance(s, cst.FunctionDef) and s.decorators and pipeline_def_decorator(s, imports) is not None}
    if not pipelines:
        return pipelines
    return pipelines | {statement.name.value for statement in module.body
                        if isinstance(statement, cst.FunctionDef) and _returns_a_pipeline(statement, pipelines)}


def _statements(statements, into_functions: bool = True):
    """Every statement of ``statements`` and of the blocks inside them, expressions unread
    (cheaper than a walk of every node); not the bodies of functions unless ``into_functions``."""
    for statement in statements:
        yield statement
        if into_functions or not isinstance(statement, (cst.FunctionDef, cst.ClassDef)):
            yield from _statements(_inner_statements(statement), into_functions)


def _inner_statements(node: cst.CSTNode) -> list:
    """The statements of a compound statement's blocks (``else``, handlers and ``elif`` too)."""
    if isinstance(node, cst.SimpleStatementLine):
        return []
    inner = []
    body = getattr(node, "body", None)
    if isinstance(body, (cst.IndentedBlock, cst.SimpleStatementSuite)):
        inner += body.body
    for part in (getattr(node, "orelse", None), getattr(node, "finalbody", None)):
        if part is not None:
            inner += _inner_statements(part)
    for part in [*getattr(node, "handlers", ()), *getattr(node, "cases", ())]:
        inner += _inner_statements(part)
    return inner


def _small_statements(statement) -> list:
    return list(statement.body) if isinstance(statement, cst.SimpleStatementLine) else [statement]


def _assignments(statement) -> list[tuple[str, cst.BaseExpression]]:
    """``name = value`` in a statement (one target, a plain name)."""
    return [assigned for small in _small_statements(statement) if (assigned := name_assignment(small))]


def returned_values(function: cst.FunctionDef) -> list[cst.BaseExpression | None]:
    """What each ``return`` of ``function`` gives (None: a bare ``return``), not those of the
    functions it defines."""
    return [small.value for statement in _statements(function.body.body, into_functions=False)
            for small in _small_statements(statement) if isinstance(small, cst.Return)]


def bound_values(function: cst.FunctionDef) -> list[tuple[str, cst.BaseExpression]]:
    """``(name, value)`` for each ``name = value`` of ``function``, not of the functions it defines."""
    return [assigned for statement in _statements(function.body.body, into_functions=False)
            for assigned in _assignments(statement)]


def _returns_a_pipeline(function: cst.FunctionDef, pipelines: set[str]) -> bool:
    returned = returned_values(function)
    if not returned:
        return False
    for value in returned:
        made = _made_by(value, function, cst.Module([])) if isinstance(value, cst.Name) else [value]
        if not made or not all(isinstance(c, cst.Call) and dotted_name(c.func) in pipelines for c in made):
            return False
    return True


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
    if function.name.value == "__init__":  # called through its class: ``self`` is not passed
        names = names[1:]
    index = names.index(name) if name in names else len(positional)
    return positional[index] if index < len(positional) else None
