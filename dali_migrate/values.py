"""A model of dynamic-mode (ndd) values, built once per module, for the rules that find
pipeline-mode habits in ndd code and for the audit of every migrated file.

Flow-sensitive within each function (a rebinding ends the old value), with scopes: module code,
then each function with the kinds its callers pass, until the summaries settle (pyflakes defers
function bodies the same way). Kinds: a generator of ndd outputs (a function that yields
Batches, as the migration writes them), one iteration's outputs, a Batch, a sample Tensor, a
reader, an ``EvalContext``; anything else is not followed. Every value remembers the generator
functions it came from, so that a mistake can be charged to the pipeline that made it.

Built on CPython's ``ast`` (the engine has parsed every file with it already): the model needs
line numbers, not the concrete syntax LibCST keeps.
"""

from __future__ import annotations

import ast
from dataclasses import dataclass, field
from typing import Iterator

NDD = "nvidia.dali.experimental.dynamic"
PLUGINS = "nvidia.dali.plugin."  # framework iterators, which take Pipeline objects
PIPELINE_ONLY = ("nvidia.dali.fn.", "nvidia.dali.ops.", "nvidia.dali.auto_aug", "nvidia.dali.math.", PLUGINS)
GENERATOR, OUTPUTS, BATCH, TENSOR, READER, EPOCH, CONTEXT, OTHER, MIXED, DATANODE = (
    "generator", "outputs", "batch", "tensor", "reader", "epoch", "context", "other", "mixed", "datanode")
# ``[make(shard_id=i) for i in ...]``, ``{"train": make(...), ...}``: migrated pipelines kept
# in a list or dict; a subscript picks one, a loop over the list (or the dict's ``values()``)
# gives each in turn
GENERATOR_LIST, GENERATOR_DICT = "list of generators", "dict of generators"
GENERATOR_ITEMS = "items of a dict of generators"  # ``pipes.items()``: (key, generator) pairs
# a module function named, not called (``speedtest(simple_pipeline, 8)``): origins are its names
FUNCTION = "function"
# a migrated pipeline called with ``yield_reader_meta=True``: its first ``next()`` gives the
# reader's metadata (a dictionary), the ones after it outputs (migrate/reader_meta.py)
META_FIRST = "generator yielding its reader's metadata first"
READER_META_FLAG = "yield_reader_meta"  # the keyword that asks for it
EPOCH_ENDS_FLAG = "mark_epoch_ends"  # asks a generator to yield None where its sources end an epoch
NOT_DALI_MODULES = ("numpy.", "torch.", "math.", "random.", "PIL.", "cv2.")
NOT_DALI_METHODS = frozenset({"torch", "numpy", "tolist", "item"})
BATCH_ONLY_ATTRIBUTES = frozenset({"tensors", "slice", "batch_size", "select"})
DATA_KINDS = frozenset({OUTPUTS, BATCH, TENSOR})
GENERATOR_METHODS = frozenset({"send", "close", "throw", "__next__", "__iter__"})
SAME_KIND_METHODS = frozenset({"cpu", "gpu", "to_device", "evaluate"})
NOT_IN_NDD = ("nvidia.dali.experimental.dynamic.pytorch",)
# built from a migrated pipeline's outputs in a way the model does not follow (``dict(zip(names,
# outputs))``, a list of outputs tuples, what an unknown function returns for them): it may hold
# ndd Batches, so TensorList API on it is a mistake
MAYBE = "may hold ndd Batches"
# builtins whose results hold none of their arguments' data
NOT_DATA_BUILTINS = frozenset({"len", "str", "repr", "int", "float", "bool", "print", "isinstance", "type",
                               "id", "hash", "range", "format", "callable", "hasattr", "getattr", "issubclass"})


@dataclass(frozen=True)
class Value:
    kind: str
    origins: frozenset[str] = frozenset()  # generator functions it came from
    items: tuple["Value | None", ...] | None = None  # a tuple or list of known values


@dataclass(frozen=True)
class Problem:
    code: str
    message: str
    node: ast.AST
    origins: frozenset[str]

    @property
    def line(self) -> int:
        return self.node.lineno


@dataclass
class FunctionSummary:
    node: ast.FunctionDef | ast.AsyncFunctionDef
    params: dict[str, Value] = field(default_factory=dict)
    returns: Value | None = None
    yields: Value | None = None


def imports_of(tree: ast.Module) -> dict[str, str]:
    """Local name -> what it names, for every import in the module."""
    names: dict[str, str] = {}
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            for alias in node.names:
                if alias.asname:
                    names[alias.asname] = alias.name
                else:
                    top = alias.name.split(".")[0]
                    names[top] = top
        elif isinstance(node, ast.ImportFrom) and node.module and not node.level:
            for alias in node.names:
                names[alias.asname or alias.name] = f"{node.module}.{alias.name}"
    return names


def class_families(bases: dict[str, list[str]]) -> dict[str, str]:
    """Each class of a module -> the name of its family: classes that derive from one another
    there share ``self.`` attributes (``class Eval(Train)`` reads the ``self.pipe`` that
    ``Train.__init__`` binds); unrelated classes do not. ``bases``: class name -> the names
    its bases are spelled with."""
    family = {name: name for name in bases}

    def root(name: str) -> str:
        while family[name] != name:
            name = family[name]
        return name

    for name, spelled_bases in bases.items():
        for base in spelled_bases:
            if base in family:
                first, second = sorted((root(name), root(base)))
                family[second] = first
    return {name: root(name) for name in bases}


def attribute_key(name: str, class_name: str | None, families: dict[str, str]) -> str:
    """How a binding of ``name`` (as spelled) is known inside ``class_name``: ``self.pipe`` of
    one class family is not ``self.pipe`` of another (``self.pipe@TrainLoader``); anything
    else, and anything outside a class, by its spelling. ``spelled`` undoes it."""
    if class_name is None or not name.startswith("self."):
        return name
    return f"{name}@{families.get(class_name, class_name)}"


def spelled(key: str) -> str:
    """A variable's name as the code spells it, from its key (``self.pipe@TrainLoader``,
    ``pipe@train#3``: pipeline_scopes.py)."""
    return key.split("@", 1)[0]


def returned_by(function: str) -> str:
    """The key of what a call of ``function`` returns (``get_pipe()``), where no variable of
    the module holds it: a helper's pipeline, one made in another module."""
    return f"{function}()"


def returning_function(key: str) -> str | None:
    """``get_pipe`` for ``returned_by("get_pipe")``; None for any other key."""
    return key[:-2] if key.endswith("()") else None


def _dotted(node: ast.AST) -> str | None:
    parts = []
    while isinstance(node, ast.Attribute):
        parts.append(node.attr)
        node = node.value
    if not isinstance(node, ast.Name):
        return None
    parts.append(node.id)
    return ".".join(reversed(parts))


def _defaults(args: ast.arguments) -> dict[str, ast.expr]:
    """Parameter -> its default expression."""
    positional = [*args.posonlyargs, *args.args]
    given = dict(zip([a.arg for a in positional[len(positional) - len(args.defaults):]], args.defaults))
    given.update((a.arg, d) for a, d in zip(args.kwonlyargs, args.kw_defaults) if d is not None)
    return given


def _merge(a: Value | None, b: Value | None) -> Value | None:
    """Either value: what may hold DALI data wins, so that a check that asks "may this be a
    Batch?" says yes, and one that asks "is this certainly not one?" says no."""
    if a is None or b is None:
        return None if OTHER in (getattr(a, "kind", None), getattr(b, "kind", None)) else a or b
    if a.kind != b.kind:
        return b if a.kind == OTHER else a
    return Value(a.kind, a.origins | b.origins, _merged_items(a.items, b.items))


def _merged_items(a: tuple | None, b: tuple | None) -> tuple | None:
    """Two tuples of one length: what each position may hold (a function's summary, met again
    with what its callers pass known)."""
    if a is None or b is None or len(a) != len(b):
        return None
    return a if a == b else tuple(_merge(x, y) for x, y in zip(a, b))


def _merged_env(*envs: dict[str, Value]) -> dict[str, Value]:
    """Names -> what each may hold after any of ``envs``."""
    merged: dict[str, Value] = {}
    for name in set().union(*envs):
        value = _merged([env.get(name) for env in envs])
        if value is not None:
            merged[name] = value
    return merged


def _merged(values: list[Value | None]) -> Value | None:
    merged = values[0] if values else None
    for value in values[1:]:
        merged = _merge(merged, value)
    return merged


def _element(value: Value | None) -> Value | None:
    """What iterating over ``value`` gives."""
    if value is None:
        return None
    if value.items is not None:
        known = [item for item in value.items if item is not None]
        return known[0] if known else None
    return {GENERATOR: Value(OUTPUTS, value.origins), OUTPUTS: Value(BATCH, value.origins),
            GENERATOR_LIST: Value(GENERATOR, value.origins),
            GENERATOR_ITEMS: Value("tuple", value.origins, (None, Value(GENERATOR, value.origins))),
            BATCH: Value(TENSOR, value.origins), EPOCH: Value(OUTPUTS, value.origins),
            MAYBE: value}.get(value.kind)


class ValueModel(ast.NodeVisitor):
    """Walks a module once per round; rules read ``problems`` and ``values``."""

    def __init__(self, tree: ast.Module, imported_generators: frozenset[str] = frozenset(),
                 strict: bool = False) -> None:
        self.tree = tree
        # the audit of a migration: ``.tensors`` and ``.slice`` that the migration wrote must be
        # applied to values shown to be ndd Batches, not to values the model cannot see
        self.strict = strict
        # how this module spells generator functions that other modules of the project define,
        # and, as calls (``get_pipe()``), their functions that return a generator
        self.imported_generators = imported_generators
        self.imports = imports_of(tree)
        self.functions: dict[str, FunctionSummary] = {}
        self.lambdas: dict[str, ast.Lambda] = {}  # ``as_numpy = lambda tl: ...``: read where it is called
        self.lambda_defaults: dict[int, dict[str, Value]] = {}  # id(lambda) -> its defaults' values
        self.methods: set[str] = set()  # names of functions defined in class bodies (``self.x()``)
        self.attributes: dict[str, Value] = {}  # "self.x" and "module.x" bindings, by spelling
        self.filled_globals: dict[str, Value] = {}  # module containers functions put outputs in
        self.problems: list[Problem] = []
        self.env: dict[str, Value] = {}
        # what module code binds its names to, anywhere in the module: a function reads a global
        # when it runs (``if __name__ == "__main__": pipe = train_pipe()`` below its ``def``)
        self.module_globals: dict[str, Value] = {}
        self.function_stack: list[str] = []
        self.class_depth = 0
        self.class_names: list[str] = []  # the classes being read, innermost last
        # class -> its family: derived classes share the ``self.`` attributes of their bases
        self.class_families = class_families({node.name: [b for b in map(_dotted, node.bases) if b]
                                              for node in ast.walk(tree) if isinstance(node, ast.ClassDef)})
        self.class_outer: list[dict | None] = []  # per scope, innermost last: the env a class body began with
        self._names: dict[int, tuple[set[str], set[str]]] = {}  # per function: its locals, its globals
        self.global_stack: list[set[str]] = []  # names each function being read declares ``global``
        self.collecting = False

    # -- building -------------------------------------------------------------------------
    def build(self) -> "ValueModel":
        nodes = list(ast.walk(self.tree))
        for node in nodes:
            if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)):
                self.functions.setdefault(node.name, FunctionSummary(node))
            elif isinstance(node, ast.ClassDef):
                self.methods |= {s.name for s in node.body if isinstance(s, (ast.FunctionDef, ast.AsyncFunctionDef))}
        self.lambdas = _module_lambdas(nodes)
        for _ in range(4):  # summaries flow from callers to callees and back
            before = self._state()
            self._round(collect=False)
            if self._state() == before:
                break
        self._round(collect=True)
        return self

    def _state(self):
        return ({n: (s.params, s.returns, s.yields) for n, s in self.functions.items()}, dict(self.attributes),
                dict(self.module_globals), dict(self.filled_globals))

    def _round(self, collect: bool) -> None:
        self.collecting = collect
        self.problems = []
        self.env = {}
        self._block(self.tree.body)

    def _block(self, statements: list[ast.stmt]) -> None:
        for statement in statements:
            self.visit(statement)

    def qualname(self, node: ast.AST) -> str | None:
        dotted = _dotted(node)
        if dotted is None:
            return None
        head, _, rest = dotted.partition(".")
        base = self.imports.get(head)
        if base is None or head in self.env:
            return None
        return f"{base}.{rest}" if rest else base

    def report(self, code: str, message: str, node: ast.AST, value: Value | None = None) -> None:
        if self.collecting:
            origins = (value.origins if value else frozenset()) | frozenset(self.function_stack)
            self.problems.append(Problem(code, message, node, origins))

    # -- statements -----------------------------------------------------------------------
    def visit_FunctionDef(self, node: ast.FunctionDef) -> None:
        summary = self.functions.get(node.name)
        defaults = self._default_values(node.args)
        outer = self.env
        # a method does not see its class body's names: it starts from what the class began with
        in_class = self.class_outer[-1] if self.class_outer else None
        self.env = dict(outer if in_class is None else in_class)
        local_names, global_names = self._own_names(node)
        for name in set(self.module_globals) - local_names:
            self.env_merge(name, self.module_globals[name])
        collectors = [a for a in (node.args.vararg, node.args.kwarg) if a is not None]
        for arg in [*node.args.posonlyargs, *node.args.args, *node.args.kwonlyargs, *collectors]:
            self.env.pop(arg.arg, None)
            value = defaults.get(arg.arg)
            if summary is not None and summary.node is node and arg.arg in summary.params:
                value = _merge(value, summary.params[arg.arg]) if value is not None else summary.params[arg.arg]
            if value is not None:
                self.env[arg.arg] = value
        self.function_stack.append(node.name)
        self.global_stack.append(global_names)
        self.class_outer.append(None)
        self._block(node.body)
        self.class_outer.pop()
        self.global_stack.pop()
        self.function_stack.pop()
        self.env = outer
        self.env.pop(node.name, None)

    visit_AsyncFunctionDef = visit_FunctionDef

    def _own_names(self, function: ast.FunctionDef) -> tuple[set[str], set[str]]:
        found = self._names.get(id(function))
        if found is None:
            found = self._names[id(function)] = _own_names(function)
        return found

    def visit_ClassDef(self, node: ast.ClassDef) -> None:
        for base in node.bases:
            self.value(base)
        outer = self.env
        self.env = dict(outer)
        self.class_depth += 1
        self.class_names.append(node.name)
        self.class_outer.append(outer)
        self._block(node.body)
        self.class_outer.pop()
        self.class_names.pop()
        self.class_depth -= 1
        self.env = outer

    def visit_Assign(self, node: ast.Assign) -> None:
        value = self.value(node.value)
        for target in node.targets:
            self.bind(target, value)

    def visit_AnnAssign(self, node: ast.AnnAssign) -> None:
        if node.value is not None:
            self.bind(node.target, self.value(node.value))

    def visit_AugAssign(self, node: ast.AugAssign) -> None:
        self.value(node.value)
        if isinstance(node.target, ast.Name):
            self.env.pop(node.target.id, None)

    def visit_For(self, node: ast.For) -> None:
        self.bind(node.target, self._iterated(node.iter))
        self._block(node.body)
        self._block(node.body)  # a second pass sees what the first iteration bound
        self._block(node.orelse)

    visit_AsyncFor = visit_For

    def visit_While(self, node: ast.While) -> None:
        self.value(node.test)
        self._block(node.body)
        self._block(node.body)
        self._block(node.orelse)

    def visit_If(self, node: ast.If) -> None:
        self.value(node.test)
        before = dict(self.env)
        self._block(node.body)
        after_body = self.env
        self.env = dict(before)
        self._block(node.orelse)
        for name in set(after_body) | set(self.env):
            self.env_merge(name, after_body.get(name))

    def visit_Try(self, node: ast.Try) -> None:
        """A handler may start anywhere in the body, so it sees what held before the body or after
        it; past the statement a name may hold what any way through left in it."""
        before = dict(self.env)
        self._block(node.body)
        after_body = dict(self.env)  # the handlers do not see what ``else:`` binds
        self._block(node.orelse)
        ways_through = [self.env]
        for handler in node.handlers:
            self.env = _merged_env(before, after_body)
            if handler.name:
                self.env.pop(handler.name, None)
            self._block(handler.body)
            ways_through.append(self.env)
        self.env = _merged_env(*ways_through)
        self._block(node.finalbody)

    visit_TryStar = visit_Try

    def visit_Match(self, node: ast.Match) -> None:
        """Each ``case`` starts from what held before the ``match``; its captures are parts of the
        subject (``case (images, labels):``), or the subject itself as far as the model knows."""
        subject = self.value(node.subject)
        before = dict(self.env)
        ways_through = [before]
        for case in node.cases:
            self.env = dict(before)
            self._bind_pattern(case.pattern, subject)
            self.value(case.guard)
            self._block(case.body)
            ways_through.append(self.env)
        self.env = _merged_env(*ways_through)

    def _bind_pattern(self, pattern: ast.pattern, subject: Value | None) -> None:
        if isinstance(pattern, ast.MatchSequence) and not any(isinstance(p, ast.MatchStar) for p in pattern.patterns):
            for index, element in enumerate(pattern.patterns):
                self._bind_pattern(element, self._item(subject, index))
            return
        if isinstance(pattern, ast.MatchAs) and pattern.pattern is None:
            if pattern.name is not None:
                self.bind(ast.Name(pattern.name), subject)
            return
        held = Value(MAYBE, subject.origins) if subject is not None and _may_hold_data(subject) else None
        for child in ast.walk(pattern):
            for name in (getattr(child, "name", None), getattr(child, "rest", None)):
                if isinstance(name, str):
                    self.bind(ast.Name(name), held)

    def env_merge(self, name: str, other: Value | None) -> None:
        merged = _merge(self.env.get(name), other)
        if merged is not None:
            self.env[name] = merged

    def visit_With(self, node: ast.With) -> None:
        contexts = [self.value(item.context_expr) for item in node.items]
        for item, value in zip(node.items, contexts):
            if value is not None and value.kind == GENERATOR:
                self.report("DM021", "`with` on a generator: a migrated pipeline has no graph to build", item.context_expr, value)
            if item.optional_vars is not None:
                self.bind(item.optional_vars, None)
        if any(value is not None and value.kind == CONTEXT for value in contexts):
            for yielded in _own_yields(node.body):
                self.report("DM022", "the context stays current for the caller while it holds the `yield`: "
                                     "compute inside it, yield after it", yielded)
        self._block(node.body)

    visit_AsyncWith = visit_With

    def visit_Return(self, node: ast.Return) -> None:
        value = self.value(node.value) if node.value is not None else None
        summary = self._current_summary()
        if summary is not None and value is not None:
            summary.returns = _merge(summary.returns, value)

    def visit_Expr(self, node: ast.Expr) -> None:
        self.value(node.value)

    def generic_visit(self, node: ast.AST) -> None:
        for child in ast.iter_child_nodes(node):
            if isinstance(child, ast.stmt):
                self.visit(child)
            elif isinstance(child, ast.expr):
                self.value(child)
            else:
                self.generic_visit(child)

    def _current_summary(self) -> FunctionSummary | None:
        return self.functions.get(self.function_stack[-1]) if self.function_stack else None

    # -- bindings -------------------------------------------------------------------------
    def bind(self, target: ast.AST, value: Value | None) -> None:
        if isinstance(target, ast.Name):
            if value is None:
                self.env.pop(target.id, None)
            else:
                self.env[target.id] = value
                if (not self.function_stack and not self.class_depth
                        or self.global_stack and target.id in self.global_stack[-1]):
                    self.module_globals[target.id] = _merge(self.module_globals.get(target.id), value)
        elif isinstance(target, ast.Attribute):
            spelled = self._attribute_key(target)
            if spelled is not None:
                if value is None:
                    self.attributes.pop(spelled, None)
                else:
                    self.attributes[spelled] = _merge(self.attributes.get(spelled), value)
        elif isinstance(target, (ast.Tuple, ast.List)):
            for index, element in enumerate(target.elts):
                if isinstance(element, ast.Starred):  # ``first, *rest = outputs``
                    self.bind(element.value, _rest(value, index, len(target.elts) - index - 1))
                else:
                    self.bind(element, self._item(value, index))
        elif isinstance(target, ast.Subscript):
            self.value(target.slice)
            self._filled(target.value, [value])

    def _item(self, value: Value | None, index: int) -> Value | None:
        if value is None:
            return None
        if value.items is not None:
            return value.items[index] if index < len(value.items) else None
        return _element(value) if value.kind in (OUTPUTS, MAYBE) else None

    def _iterated(self, node: ast.expr) -> Value | None:
        """What a loop over ``node`` binds, through ``enumerate(zip(names, outputs))`` too."""
        if isinstance(node, ast.Call) and _dotted(node.func) == "enumerate" and node.args:
            return Value("tuple", frozenset(), (None, self._iterated(node.args[0])))
        if isinstance(node, ast.Call) and _dotted(node.func) == "zip":
            return Value("tuple", frozenset(), tuple(self._iterated(a) for a in node.args))
        return _element(self.value(node))

    # -- expressions ----------------------------------------------------------------------
    def value(self, node: ast.expr | None) -> Value | None:
        if node is None:
            return None
        method = getattr(self, f"value_{type(node).__name__}", None)
        if method is not None:
            return method(node)
        for child in ast.iter_child_nodes(node):
            if isinstance(child, ast.expr):
                self.value(child)
            elif isinstance(child, ast.comprehension):
                self._comprehension(child)
        return None

    def _comprehension(self, clause: ast.comprehension) -> None:
        self.bind(clause.target, self._iterated(clause.iter))
        for condition in clause.ifs:
            self.value(condition)

    def _comprehension_value(self, node) -> Value | None:
        """A list (or generator) of Batches holds outputs as a tuple of them does:
        ``images, labels = [ndd.batch(output) for output in zip(*samples)]``."""
        outer = dict(self.env)
        for clause in node.generators:
            self._comprehension(clause)
        parts = [self.value(getattr(node, part)) for part in ("elt", "key", "value") if hasattr(node, part)]
        self.env = outer
        element = parts[0] if isinstance(node, (ast.ListComp, ast.GeneratorExp)) else None
        if element is not None and element.kind == BATCH:
            return Value(OUTPUTS, element.origins)
        if isinstance(node, (ast.ListComp, ast.DictComp)) and parts[-1] is not None and parts[-1].kind == GENERATOR:
            return Value(GENERATOR_LIST if isinstance(node, ast.ListComp) else GENERATOR_DICT, parts[-1].origins)
        held = [part for part in parts if part is not None and _may_hold_data(part)]
        return Value(MAYBE, frozenset().union(*(part.origins for part in held))) if held else None

    value_ListComp = value_SetComp = value_GeneratorExp = value_DictComp = _comprehension_value

    def value_Constant(self, node: ast.Constant) -> Value:
        return Value(MIXED if node.value == "mixed" else OTHER)

    def value_NamedExpr(self, node: ast.NamedExpr) -> Value | None:
        """``(out := next(pipe))``: binds ``out`` and gives its value."""
        value = self.value(node.value)
        self.bind(node.target, value)
        return value

    def value_Lambda(self, node: ast.Lambda) -> None:
        # its body runs later, with arguments the model does not know; its defaults are read here
        self.lambda_defaults[id(node)] = self._default_values(node.args)
        return None

    def _default_values(self, args: ast.arguments) -> dict[str, Value]:
        """Parameter -> what its default holds, where known. A default is computed where the
        function or lambda is written: ``def last(out=out)``, ``lambda b=labels: ...``."""
        values = {name: self.value(default) for name, default in _defaults(args).items()}
        return {name: value for name, value in values.items() if value is not None}

    def value_Name(self, node: ast.Name) -> Value | None:
        if self._module_function(node):
            return Value(FUNCTION, frozenset({node.id}))
        if node.id in self.filled_globals and (not self.function_stack or self._not_local(node.id)):
            return _merge(self.env.get(node.id), self.filled_globals[node.id])
        return self.env.get(node.id)

    def _module_function(self, node: ast.expr) -> bool:
        """A name of a function the module defines, not rebound here: its summary is read."""
        return isinstance(node, ast.Name) and node.id in self.functions and node.id not in self.env

    def _attribute_key(self, node: ast.Attribute) -> str | None:
        """How an attribute binding is known: ``self.pipe`` of one class is not ``self.pipe``
        of another (``self.pipe@TrainLoader``); other attributes by their spelling."""
        spelled = _dotted(node)
        if spelled is None:
            return None
        return attribute_key(spelled, self.class_names[-1] if self.class_names else None, self.class_families)

    def value_Attribute(self, node: ast.Attribute) -> Value | None:
        receiver = self.value(node.value)
        spelled = self._attribute_key(node)
        self._check_attribute(node, receiver)
        if spelled in self.attributes:
            return self.attributes[spelled]
        return self._held_by_an_object(node)

    def _held_by_an_object(self, node: ast.Attribute) -> Value | None:
        """``data.pipe`` where a class holds a migrated pipeline as ``self.pipe``: the same
        generator, read through one of its objects (the audit must see ``data.pipe.run()``)."""
        if isinstance(node.value, ast.Name) and node.value.id == "self":
            return None
        held = [value for key, value in self.attributes.items()
                if spelled(key) == f"self.{node.attr}" and value is not None
                and value.kind in (GENERATOR, META_FIRST)]
        return held[0] if held else None

    def _check_attribute(self, node: ast.Attribute, receiver: Value | None) -> None:
        if receiver is None or receiver.kind == MAYBE:
            if self.strict and node.attr in ("tensors", "slice"):
                self.report("DM018", f"`.{node.attr}` on a value the audit cannot show to be an ndd Batch "
                                     "(the migration took it for a pipeline output)", node)
            return
        if receiver.kind == GENERATOR and node.attr not in GENERATOR_METHODS:
            self.report("DM021", f"`.{node.attr}`: a migrated pipeline is a generator of ndd Batches, "
                                 "with no pipeline methods", node, receiver)
        elif receiver.kind == OTHER and node.attr in BATCH_ONLY_ATTRIBUTES:
            self.report("DM018", f"`.{node.attr}` on a value that is not an ndd Batch here (a NumPy "
                                 "array, a tensor, a literal)", node, receiver)
        elif receiver.kind in (OUTPUTS, "tuple") and node.attr in BATCH_ONLY_ATTRIBUTES:
            self.report("DM018", f"`.{node.attr}` on a tuple of a pipeline's outputs, not on one ndd Batch: "
                                 "pick the output first", node, receiver)
        elif receiver.kind in (BATCH, TENSOR) and _not_an_ndd_attribute(node.attr, receiver.kind):
            what = "Batch" if receiver.kind == BATCH else "Tensor"
            self.report("DM018", f"`.{node.attr}` is not an attribute of an ndd {what} (TensorList API of "
                                 "pipeline mode?): see the dynamic-mode guide", node, receiver)

    def value_Tuple(self, node: ast.Tuple | ast.List) -> Value | None:
        items = tuple(self.value(e) for e in node.elts)
        if any(item is not None for item in items):
            origins = frozenset().union(*(item.origins for item in items if item is not None))
            return Value("tuple", origins, items)
        return None

    value_List = value_Tuple

    def value_Dict(self, node: ast.Dict | ast.Set) -> Value | None:
        """``{"images": images, "labels": labels}``: which entry a subscript picks is not
        followed, so the whole may hold ndd Batches."""
        entries = [*node.keys, *node.values] if isinstance(node, ast.Dict) else node.elts
        parts = [self.value(entry) for entry in entries if entry is not None]
        held = parts[len(node.keys):] if isinstance(node, ast.Dict) and None not in node.keys else []
        if held and all(part is not None and part.kind == GENERATOR for part in held):
            return Value(GENERATOR_DICT, frozenset().union(*(part.origins for part in held)))
        return _built_from(parts, {})

    value_Set = value_Dict

    def value_IfExp(self, node: ast.IfExp) -> Value | None:
        self.value(node.test)
        return _merge(self.value(node.body), self.value(node.orelse))

    def value_BoolOp(self, node: ast.BoolOp) -> Value | None:
        """``next(pipe) or None``: one of its operands."""
        return _merged([self.value(operand) for operand in node.values])

    def value_BinOp(self, node: ast.BinOp) -> Value | None:
        left, right = self.value(node.left), self.value(node.right)
        if isinstance(node.op, ast.Add) and any(v is not None and v.items is not None and _holds_data(v)
                                                for v in (left, right)):
            return Value(OUTPUTS, frozenset().union(*(v.origins for v in (left, right) if v is not None)))
        data = [v for v in (left, right) if v is not None and v.kind in (BATCH, TENSOR)]
        if data and any(v is not None and v.kind == DATANODE for v in (left, right)):
            self.report("DM020", "a pipeline-mode DataNode (an `fn` call, `types.Constant`) in arithmetic with ndd "
                                 "values", node, data[0])
        return data[0] if data else None

    def _check_datanodes(self, node: ast.AST, values, where: str) -> None:
        """A pipeline-mode DataNode (an ``fn`` call left in a helper, say) that reaches ndd."""
        for value in values:
            items = value.items if value is not None and value.items is not None else (value,)
            if any(item is not None and item.kind == DATANODE for item in items):
                self.report("DM020", f"a pipeline-mode DataNode (from an `fn` call) reaches {where}, which "
                                     "takes ndd Batches", node)
                return

    def value_Yield(self, node: ast.Yield) -> None:
        value = self.value(node.value)
        summary = self._current_summary()
        if summary is not None and summary.yields is not None:  # a generator of ndd outputs
            self._check_datanodes(node, [value], "what a generator of ndd Batches yields")
        if summary is not None and value is not None and _holds_data(value):
            summary.yields = _merge(summary.yields, value)
        return None

    def value_Await(self, node: ast.Await) -> None:
        self.value(node.value)
        return None

    def value_Subscript(self, node: ast.Subscript) -> Value | None:
        self.value(node.slice)  # for what the index itself does
        if isinstance(node.value, ast.Attribute) and node.value.attr in ("tensors", "slice"):
            owner = self.value(node.value.value)
            self._check_attribute(node.value, owner)
            if owner is not None and owner.kind == BATCH:
                picks_one = node.value.attr == "tensors" and not isinstance(node.slice, ast.Slice)
                return Value(TENSOR if picks_one else BATCH, owner.origins)
            return None
        owner = self.value(node.value)
        if owner is None:
            return None
        if owner.kind == MAYBE or (owner.kind == GENERATOR_LIST and isinstance(node.slice, ast.Slice)):
            return owner
        if owner.kind in (GENERATOR_LIST, GENERATOR_DICT):
            return Value(GENERATOR, owner.origins)
        if owner.kind == BATCH:
            self.report("DM018", "`[...]` on an ndd Batch (a TypeError): `.tensors[i]` picks samples, "
                                 "`.slice[...]` indexes inside each sample", node, owner)
            return None
        if owner.kind == TENSOR:
            return owner
        if isinstance(node.slice, ast.Slice):
            return owner
        if owner.items is not None and isinstance(node.slice, ast.Constant) and isinstance(node.slice.value, int):
            return self._item(owner, node.slice.value)
        return _element(owner) if owner.kind == OUTPUTS or owner.items is not None else None

    def value_Call(self, node: ast.Call) -> Value | None:
        value = self._call_value(node)
        if value is not None and value.kind == GENERATOR and any(
                k.arg == READER_META_FLAG and isinstance(k.value, ast.Constant) and k.value.value is True
                for k in node.keywords):
            return Value(META_FIRST, value.origins)
        return value

    def _call_value(self, node: ast.Call) -> Value | None:
        arguments, keywords = self._arguments(node)
        self._hand_data_to_callbacks(node, arguments, keywords)
        spelled = _dotted(node.func)
        # ``get_pipe()``: a function of another module that returns a migrated pipeline
        imported = next((name for name in (spelled, returned_by(spelled)) if name in self.imported_generators), None)
        if imported is not None and spelled.partition(".")[0] not in self.env:
            return Value(GENERATOR, frozenset({imported}))
        qualname = self.qualname(node.func)
        if qualname is not None:
            return self._library_call(node, qualname, arguments, keywords)
        if isinstance(node.func, ast.Attribute):
            if self._is_own_method(node.func):  # ``self.make_pipeline()``: summaries are by name
                return self._plain_call(node, node.func.attr, [None, *arguments], keywords)
            receiver = self.value(node.func.value)
            self._check_attribute(node.func, receiver)
            if node.func.attr in FILLING_METHODS:
                self._filled(node.func.value, [*arguments, *keywords.values()])
            if node.func.attr in NOT_DALI_METHODS:
                return Value(OTHER)
            return self._method_call(node, receiver, node.func.attr)
        if isinstance(node.func, ast.Name):
            return self._plain_call(node, node.func.id, arguments, keywords)
        self.value(node.func)
        return None

    def _arguments(self, node: ast.Call) -> tuple[list, dict]:
        """What a call passes, by position and by keyword. A literal ``*(a, b)`` or ``**{"k": v}``
        is spread; what another spread may hold goes to the keyword ``None``, which reaches
        every parameter (``show(*batches)``, ``show(**options)``)."""
        arguments, keywords, spread = [], {}, []
        for argument in node.args:
            if isinstance(argument, ast.Starred) and isinstance(argument.value, (ast.Tuple, ast.List)):
                arguments += [self.value(element) for element in argument.value.elts]
            elif isinstance(argument, ast.Starred):
                value = self.value(argument.value)
                spread.append(_element(value) or value)
            else:
                arguments.append(self.value(argument))
        for keyword in node.keywords:
            entries = _literal_entries(keyword.value) if keyword.arg is None else None
            if entries is not None:
                keywords.update((key, self.value(value)) for key, value in entries)
            elif keyword.arg is None:
                spread.append(self.value(keyword.value))
            else:
                keywords[keyword.arg] = self.value(keyword.value)
        unknown = _built_from(spread, {})
        if unknown is not None:
            keywords[None] = unknown
        return arguments, keywords

    def _hand_data_to_callbacks(self, node: ast.Call, arguments, keywords) -> None:
        """``Thread(target=show, args=(labels,))``, ``executor.submit(show, labels)``: a module
        function handed to a call the model does not read, with data, may be called with it."""
        if self._module_function(node.func):
            return  # read with its parameters bound (``_function_call``)
        given = [*arguments, *keywords.values()]
        callbacks = set().union(*(_functions_in(v) for v in given if v is not None))
        data = _built_from([v for v in given if v is not None and v.kind != FUNCTION], {})
        if data is None:
            return
        for name in sorted(callbacks & set(self.functions)):
            self._pass_arguments(self.functions[name], [], {None: data})

    def _filled(self, container: ast.expr, given) -> None:
        """``history.append(outputs)``, ``cache[key] = batch``: the container may hold them now."""
        before = self.value(container)
        held = _built_from(given, {})
        if held is None:
            return
        if before is not None:
            held = Value(MAYBE, before.origins | held.origins)
        if isinstance(container, ast.Subscript):  # ``cache[split][key] = batch``
            self._filled(container.value, [held])
        elif isinstance(container, ast.Attribute):
            self.bind(container, held)
        elif isinstance(container, ast.Name):
            self.bind(container, held)
            if self._not_local(container.id):  # filled by a function: module code may read it after a call
                self.module_globals[container.id] = _merge(self.module_globals.get(container.id), held)
                self.filled_globals[container.id] = _merge(self.filled_globals.get(container.id), held)

    def _not_local(self, name: str) -> bool:
        """Inside a function, a name it does not bind: a global (or an enclosing function's)."""
        function = self.function_stack and self.functions.get(self.function_stack[-1])
        return bool(function) and name not in self._own_names(function.node)[0]

    def _is_own_method(self, func: ast.Attribute) -> bool:
        return (isinstance(func.value, ast.Name) and func.value.id == "self" and func.attr in self.methods
                and func.attr in self.functions and "self" not in self.env)

    def _plain_call(self, node: ast.Call, name: str, arguments, keywords) -> Value | None:
        if name == "next" and arguments and arguments[0] is not None and arguments[0].kind == META_FIRST:
            self._metadata_taken(node.args[0], arguments[0])
            return Value(OTHER)
        if name == "next" and arguments and arguments[0] is not None and arguments[0].kind in (GENERATOR, EPOCH):
            return Value(OUTPUTS, arguments[0].origins)
        if name == "len" and arguments and arguments[0] is not None and arguments[0].kind == BATCH:
            self.report("DM018", "`len()` of an ndd Batch: use `.batch_size`", node, arguments[0])
            return None
        if name == "isinstance" and len(node.args) == 2 and arguments[0] is not None and arguments[0].kind in (BATCH, TENSOR):
            self._check_pipeline_class(node, arguments[0])
        if (name == "hasattr" and len(node.args) == 2 and arguments[0] is not None
                and arguments[0].kind in (BATCH, TENSOR) and isinstance(node.args[1], ast.Constant)
                and isinstance(node.args[1].value, str) and _lacks(node.args[1].value, arguments[0].kind)):
            what = "Batch" if arguments[0].kind == BATCH else "Tensor"
            self.report("DM018", f"`hasattr(..., {node.args[1].value!r})` is always False on an ndd {what} "
                                 "(TensorList API of pipeline mode?)", node, arguments[0])
        if name == "iter" and len(node.args) == 2:
            return self._called_until(node.args[0])
        if name in ("iter", "tuple", "list") and arguments and arguments[0] is not None:
            # a sequence keeps its elements; ``tuple(batch)`` is a tuple of sample Tensors
            return arguments[0] if name == "iter" or arguments[0].kind != BATCH else None
        called = self.env.get(name)
        if called is not None and called.kind == FUNCTION:  # a parameter given module functions
            return _merged([self._function_call(function, arguments, keywords) for function in sorted(called.origins)])
        if name in self.lambdas and name not in self.env:
            return self._lambda_call(self.lambdas[name], arguments, keywords)
        if self.functions.get(name) is None or name in self.env:
            return _built_from(arguments, keywords) if name not in NOT_DATA_BUILTINS else None
        return self._function_call(name, arguments, keywords)

    def _called_until(self, function: ast.expr) -> Value | None:
        """``iter(function, sentinel)``: what each call of ``function`` gives, until the sentinel."""
        if isinstance(function, ast.Attribute) and function.attr == "__next__":
            stream = self.value(function.value)  # ``iter(pipe.__next__, None)``: its batches, up to a mark
            return stream if stream is not None and stream.kind == GENERATOR else None
        if isinstance(function, ast.Lambda):
            each = self._lambda_call(function, [], {})
        elif self._module_function(function):
            each = self._function_call(function.id, [], {})
        else:
            self.value(function)
            return None
        if each is not None and each.kind == OUTPUTS:
            return Value(EPOCH, each.origins)  # ``next()`` of it, or a loop over it, gives outputs
        return _built_from([each], {}) if each is not None else None

    def _lambda_call(self, function: ast.Lambda, arguments, keywords) -> Value | None:
        """The lambda's body, read with its parameters bound to what this call gives them."""
        outer = self.env
        self.env = {**outer, **self.lambda_defaults.get(id(function), {})}
        params = [a.arg for a in [*function.args.posonlyargs, *function.args.args, *function.args.kwonlyargs]]
        for param, value in [*zip(params, arguments), *((k, v) for k, v in keywords.items() if k in params)]:
            if value is None:
                self.env.pop(param, None)
            else:
                self.env[param] = value
        try:
            return self.value(function.body)
        finally:
            self.env = outer

    def _check_pipeline_class(self, node: ast.Call, value: Value) -> None:
        """``isinstance(batch, TensorListGPU)``: always False on an ndd value."""
        classes = node.args[1].elts if isinstance(node.args[1], ast.Tuple) else [node.args[1]]
        for spelled in (self.qualname(c) or "" for c in classes):
            if spelled.startswith("nvidia.dali.") and not spelled.startswith(NDD):
                what = "Batch" if value.kind == BATCH else "Tensor"
                self.report("DM018", f"`isinstance(..., {spelled.rsplit('.', 1)[-1]})` is always False on an ndd "
                                     f"{what}: test `.device.device_type` instead", node, value)
                return

    def _function_call(self, name: str, arguments, keywords) -> Value | None:
        summary = self.functions[name]
        self._pass_arguments(summary, arguments, keywords)
        if summary.yields is not None:
            return Value(GENERATOR, summary.yields.origins | {name})
        return summary.returns

    def _metadata_taken(self, generator: ast.expr, value: Value) -> None:
        """After the first ``next()`` the generator gives outputs."""
        outputs_next = Value(GENERATOR, value.origins)
        if isinstance(generator, ast.Name):
            self.env[generator.id] = outputs_next
        elif isinstance(generator, ast.Attribute) and (spelled := self._attribute_key(generator)) is not None:
            self.attributes[spelled] = outputs_next

    def _pass_arguments(self, summary: FunctionSummary, arguments, keywords) -> None:
        args = summary.node.args
        params = [a.arg for a in [*args.posonlyargs, *args.args]]
        given = list(zip(params, arguments))
        given += [(k, v) for k, v in keywords.items() if k is not None]
        named = [*params, *(a.arg for a in args.kwonlyargs)]
        unnamed = [v for k, v in keywords.items() if k is not None and k not in named]
        for collector, held in ((args.vararg, arguments[len(params):]), (args.kwarg, unnamed)):
            if collector is not None and (bundle := _built_from(held, {})) is not None:
                given.append((collector.arg, bundle))  # ``def show(*batches)``: a tuple of them
        if keywords.get(None) is not None:  # a spread the model cannot take apart: any parameter
            collectors = [a.arg for a in (args.vararg, args.kwarg) if a is not None]
            given += [(param, keywords[None]) for param in [*named, *collectors]]
        for param, value in given:
            if value is not None and value.kind != OTHER:  # another caller may pass a Batch
                summary.params[param] = _merge(summary.params.get(param), value)

    def _method_call(self, node: ast.Call, receiver: Value | None, method: str) -> Value | None:
        if receiver is None:
            return None
        if receiver.kind == MAYBE:
            if method in TENSORLIST_ONLY:
                self.report("DM018", f"`.{method}()` is TensorList API, on a value built from a migrated "
                                     "pipeline's outputs (through a dict, a list or a call the audit does not "
                                     f"follow), which may be an ndd Batch: {NDD_SPELLING.get(method, 'see the dynamic-mode guide')}",
                            node, receiver)
                return None
            return receiver if method in ("get", "values", "items", "pop", "copy", "popleft", "get_nowait") else None
        if receiver.kind in (BATCH, TENSOR):
            if method in TENSORLIST_ONLY or (method in ("shape", "layout") and not node.args):
                what = "Batch" if receiver.kind == BATCH else "Tensor"
                self.report("DM018", f"`.{method}()` is TensorList API, not on an ndd {what}: "
                                     f"{NDD_SPELLING.get(method, 'see the dynamic-mode guide')}", node, receiver)
                return None
            if method in SAME_KIND_METHODS:
                return receiver
            if method == "select":
                return Value(TENSOR, receiver.origins)
            return None
        if receiver.kind in (OUTPUTS, "tuple") and method in SAME_KIND_METHODS and _holds_data(receiver):
            self.report("DM018", f"`.{method}()` on a tuple of a pipeline's outputs, not on one ndd Batch: "
                                 "call it on each output", node, receiver)
            return None
        if receiver.kind == READER and method == "next_epoch":
            return Value(EPOCH, receiver.origins)
        if receiver.kind == GENERATOR_DICT and method == "values" and not node.args:
            return Value(GENERATOR_LIST, receiver.origins)
        if receiver.kind == GENERATOR_DICT and method == "items" and not node.args:
            return Value(GENERATOR_ITEMS, receiver.origins)
        return None

    def _library_call(self, node: ast.Call, qualname: str, arguments, keywords) -> Value | None:
        if qualname.startswith(NOT_DALI_MODULES):
            return Value(OTHER)
        data = [v for v in [*arguments, *keywords.values()] if v is not None and _holds_data(v)]
        if qualname == "nvidia.dali.types.Constant":  # a DataNode of the pipeline graph
            return Value(DATANODE)
        if qualname.startswith(PIPELINE_ONLY):
            generators = [v for v in [*arguments, *keywords.values()] if v is not None and _holds_generator(v)]
            if qualname.startswith(PLUGINS) and generators:
                self.report("DM021", f"`{_dotted(node.func)}` iterates pipelines, and a migrated pipeline is a "
                                     "generator of ndd Batches: loop over it instead", node, generators[0])
            elif data:
                self.report("DM020", f"`{_dotted(node.func)}` builds a pipeline graph and does not take "
                                     "ndd Batches", node, data[0])
            return Value(DATANODE, frozenset(), None) if qualname.startswith("nvidia.dali.fn.") else None
        if not qualname.startswith(NDD + ".") or qualname.startswith(NOT_IN_NDD):
            return None
        origins = frozenset().union(*(v.origins for v in data)) if data else frozenset()
        self._check_ndd_arguments(node, qualname, keywords)
        self._check_datanodes(node, [*arguments, *keywords.values()], f"`{_dotted(node.func)}`")
        tail = qualname[len(NDD) + 1:]
        if tail == "EvalContext":
            return Value(CONTEXT)
        if tail.startswith("readers.") and tail[len("readers."):][:1].isupper():
            return Value(READER)
        if tail in ("batch", "as_batch"):
            return Value(BATCH, origins)
        if tail in ("tensor", "as_tensor"):
            return Value(TENSOR, origins)
        if tail[:1].isupper() or tail.startswith(("random.RNG", "checkpoint.", "set_", "get_")):
            return None
        batch_input = "batch_size" in keywords or any(v.kind in (BATCH, OUTPUTS) for v in data)
        return Value(BATCH if batch_input else TENSOR, origins)

    def _check_ndd_arguments(self, node: ast.Call, qualname: str, keywords: dict) -> None:
        for keyword in node.keywords:
            device = keywords.get(keyword.arg) if keyword.arg == "device" else None
            if device is not None and device.kind == MIXED:
                how = "" if isinstance(keyword.value, ast.Constant) else f", and `{_dotted(keyword.value)}` may be \"mixed\""
                self.report("DM019", f"a ValueError in dynamic mode{how}: use `device=\"gpu\"`", keyword.value)
            if keyword.arg == "batch_size" and ".readers." in qualname:
                self.report("DM023", "`batch_size=` goes to `reader.next_epoch(batch_size=...)`; "
                                     "here it is a TypeError", keyword.value)
            if keyword.arg == "seed" and qualname.rpartition(".")[2][:1].islower():
                # an ndd operator function: only readers (and ``ndd.random.RNG``), classes, take one
                self.report("DM024", "`seed=` is a TypeError on an ndd operator: a random operator takes "
                                     "`rng=ndd.random.RNG(seed=...)`, any other has no seed", keyword.value)


# methods that put their arguments into the container they are called on
FILLING_METHODS = frozenset({"append", "extend", "insert", "add", "update", "setdefault", "appendleft",
                             "extendleft", "put", "put_nowait"})
TENSORLIST_ONLY = frozenset({"at", "as_array", "as_cpu", "as_tensor", "as_reshaped_tensor", "is_dense_tensor"})


def _lacks(name: str, kind: str) -> bool:
    """An ndd Batch/Tensor has no attribute ``name``, TensorList method or not."""
    return not name.startswith("_") and (name in TENSORLIST_ONLY or _not_an_ndd_attribute(name, kind))


def _not_an_ndd_attribute(name: str, kind: str) -> bool:
    """``name`` is public and the installed ndd's Batch/Tensor lacks it (op table). TensorList
    methods are reported where they are called, with their ndd spelling."""
    from .optable import load_op_table

    if name.startswith("_") or name in TENSORLIST_ONLY:
        return False
    table = load_op_table()
    known = table.ndd_batch_attributes if kind == BATCH else table.ndd_tensor_attributes
    return bool(known) and name not in known


NDD_SPELLING = {
    "at": "`np.asarray(batch.select(i))`",
    "as_array": "`np.asarray(ndd.as_tensor(batch))`",
    "as_cpu": "`.cpu()`",
    "as_tensor": "`ndd.as_tensor(batch)`",
    "shape": "the `.shape` property",
    "layout": "the `.layout` property",
    "is_dense_tensor": "`len(set(batch.shape)) <= 1`",
}


def _module_lambdas(nodes: list[ast.AST]) -> dict[str, ast.Lambda]:
    """Names bound once in the module (``nodes``: all of its nodes), to a lambda, by a plain
    assignment. Most modules assign no lambda: they are not read further."""
    if not any(isinstance(node, ast.Assign) and isinstance(node.value, ast.Lambda) for node in nodes):
        return {}
    bound: dict[str, list[ast.expr | None]] = {}
    for node in nodes:
        if isinstance(node, ast.Assign):
            for target in node.targets:
                for name in (n for n in ast.walk(target) if isinstance(n, ast.Name)):
                    bound.setdefault(name.id, []).append(node.value if target is name else None)
        elif isinstance(node, (ast.AugAssign, ast.AnnAssign, ast.NamedExpr, ast.For, ast.comprehension)):
            for name in (n for n in ast.walk(node.target) if isinstance(n, ast.Name)):
                bound.setdefault(name.id, []).append(None)
        elif isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
            bound.setdefault(node.name, []).append(None)
        elif isinstance(node, ast.arg):  # a parameter of that name hides it
            bound.setdefault(node.arg, []).append(None)
    return {name: values[0] for name, values in bound.items()
            if len(values) == 1 and isinstance(values[0], ast.Lambda)}


def _own_names(function: ast.FunctionDef) -> tuple[set[str], set[str]]:
    """Names ``function`` binds itself (parameters included), less ``global``/``nonlocal`` ones;
    and the names it declares ``global``."""
    args = function.args
    bound = {a.arg for a in [*args.posonlyargs, *args.args, *args.kwonlyargs, args.vararg, args.kwarg] if a}
    declared: set[str] = set()
    global_names: set[str] = set()
    pending = list(function.body)
    while pending:
        node = pending.pop()
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
            bound.add(node.name)
            continue
        if isinstance(node, ast.Lambda):
            continue
        if isinstance(node, (ast.Global, ast.Nonlocal)):
            declared.update(node.names)
            if isinstance(node, ast.Global):
                global_names.update(node.names)
        elif isinstance(node, ast.Name) and isinstance(node.ctx, (ast.Store, ast.Del)):
            bound.add(node.id)
        elif isinstance(node, ast.alias):
            bound.add((node.asname or node.name).split(".")[0])
        pending.extend(ast.iter_child_nodes(node))
    return bound - declared, global_names


def _holds_generator(value: Value) -> bool:
    """A migrated pipeline, or a list of them (``DALIGenericIterator([pipe], ...)``)."""
    if value.kind in (GENERATOR, META_FIRST, GENERATOR_LIST, GENERATOR_DICT, GENERATOR_ITEMS):
        return True
    return value.items is not None and any(item is not None and _holds_generator(item) for item in value.items)


def _may_hold_data(value: Value) -> bool:
    return value.kind == MAYBE or _holds_data(value)


def _built_from(arguments, keywords: dict) -> Value | None:
    """What an unknown call makes of its arguments: maybe their data."""
    held = [v for v in [*arguments, *keywords.values()] if v is not None and _may_hold_data(v)]
    return Value(MAYBE, frozenset().union(*(v.origins for v in held))) if held else None


def _rest(value: Value | None, index: int, after: int) -> Value | None:
    """What ``*rest`` at ``index`` of an unpacking target takes, ``after`` targets following it."""
    if value is None:
        return None
    if value.items is not None:
        rest = value.items[index: len(value.items) - after]
        return Value("tuple", value.origins, rest)
    return value if value.kind in (OUTPUTS, MAYBE) else None


def _literal_entries(node: ast.expr) -> list[tuple[str, ast.expr]] | None:
    """``{"batch": labels}`` spread as keywords: its string keys and values."""
    if isinstance(node, ast.Dict) and all(isinstance(k, ast.Constant) and isinstance(k.value, str) for k in node.keys):
        return [(key.value, value) for key, value in zip(node.keys, node.values)]
    return None


def _functions_in(value: Value) -> set[str]:
    """Module functions named in ``value`` (``target=show``, ``(show, labels)``)."""
    found = set(value.origins) if value.kind == FUNCTION else set()
    for item in value.items or ():
        if item is not None:
            found |= _functions_in(item)
    return found


def _holds_data(value: Value) -> bool:
    if value.kind in DATA_KINDS:
        return True
    return value.items is not None and any(item is not None and item.kind in DATA_KINDS for item in value.items)


def _own_yields(statements: list[ast.stmt]) -> Iterator[ast.AST]:
    """``yield`` expressions of these statements, not of functions defined in them."""
    stack: list[ast.AST] = list(statements)
    while stack:
        node = stack.pop()
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.Lambda, ast.ClassDef)):
            continue
        if isinstance(node, (ast.Yield, ast.YieldFrom)):
            yield node
        stack.extend(ast.iter_child_nodes(node))


def build_model(tree: ast.Module, imported_generators: frozenset[str] = frozenset(),
                strict: bool = False) -> ValueModel:
    return ValueModel(tree, imported_generators, strict).build()


def generator_functions(model: ValueModel) -> list[str]:
    """Top-level functions that yield ndd values: what importers must not use as pipelines."""
    top_level = {s.name for s in model.tree.body if isinstance(s, (ast.FunctionDef, ast.AsyncFunctionDef))}
    return sorted(name for name, summary in model.functions.items()
                  if name in top_level and summary.yields is not None)
