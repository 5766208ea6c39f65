"""``Pipeline`` subclasses that build legacy operators in ``__init__`` and wire them in
``define_graph``, in the decorator form the codemod migrates.

    class HybridPipe(Pipeline):
        def __init__(self, batch_size, num_threads, device_id, data_dir, crop=224):
            super().__init__(batch_size, num_threads, device_id, seed=12)
            self.input = ops.readers.File(file_root=data_dir)
            self.res = ops.Resize(resize_x=crop, resize_y=crop)

        def define_graph(self):
            jpegs, labels = self.input(name="Reader")
            return self.res(jpegs), labels

builds the same pipeline as

    @pipeline_def(seed=12)
    def HybridPipe(data_dir, crop=224):
        jpegs, labels = fn.readers.file(file_root=data_dir, name="Reader")
        return fn.resize(jpegs, resize_x=crop, resize_y=crop), labels

called with keywords (``HybridPipe(batch_size=8, num_threads=2, device_id=0, data_dir=...)``),
which is how calls of the class are rewritten. An operator object becomes one ``fn`` call per
call of it, its constructor's arguments merged with the call's. Helper methods that the graph
reaches become functions the graph defines (helpers.py migrates their operators), and an
``iter_setup`` that feeds external sources becomes their source function (iter_setup.py).
Anything else in the class (special or decorated methods, other uses of ``self``, a reader
called twice, arguments that cannot be placed) leaves the class as it is, with the reason in a
TODO.
"""

from __future__ import annotations

from dataclasses import dataclass, field

import libcst as cst

from ..visitors import Transformer, Visitor, walk

from ..analysis import PIPELINE_CLASS
from ..imports import ImportTable, dotted_name
from ..optable import OpTable
from .names import all_names, assigned_targets, is_docstring, scope_names, split_docstring
from .iter_setup import (SOURCE_FUNCTION, FedSources, NotFed, assigned_self_attributes, fed_sources, self_writes,
                         with_nonlocals)
from .ops import TIGHT_EQUAL, keyword_arg, keyword_values
from .pure import Substitution, evaluates_the_same_twice, folded
from .wrap import flatten, safe_to_reflow

# Pipeline.__init__'s leading positional parameters, in order
PIPELINE_POSITIONAL = ("batch_size", "num_threads", "device_id", "seed")
SYNTHETIC_FN = "__dali_migrate_fn__"  # bound to nvidia.dali.fn while the graph is analysed


class NotConvertible(Exception):
    pass


@dataclass
class Subclass:
    name: str
    class_def: cst.ClassDef
    define_graph: cst.FunctionDef
    function: cst.FunctionDef  # the decorated function that replaces the class
    call_params: list[str]  # __init__'s parameters after self, in order, for calls
    # pipeline arguments computed from __init__'s (``seed=12 + device_id``): each call passes them
    computed: dict[str, cst.BaseExpression] = field(default_factory=dict)
    defaults: dict[str, cst.BaseExpression] = field(default_factory=dict)  # __init__'s defaults


def is_pipeline_subclass(node: cst.ClassDef, imports: ImportTable) -> bool:
    return any(imports.resolve(base.value) == PIPELINE_CLASS for base in node.bases)


PIPELINE_METHODS = ("__init__", "define_graph", "iter_setup")
BATCH_SIZE_PROPERTIES = ("batch_size", "max_batch_size")  # the pipeline's, read on ``self``


def _methods(node: cst.ClassDef) -> dict[str, cst.FunctionDef]:
    methods: dict[str, cst.FunctionDef] = {}
    for index, statement in enumerate(node.body.body):
        if index == 0 and is_docstring(statement):
            continue
        if not isinstance(statement, cst.FunctionDef) or statement.decorators:
            code = cst.Module([]).code_for_node(statement).strip().splitlines()[0]
            raise NotConvertible(f"the class holds `{code}`: only methods without decorators are converted")
        if statement.name.value in methods:
            raise NotConvertible(f"the class defines `{statement.name.value}` twice")
        methods[statement.name.value] = statement
    if not {"__init__", "define_graph"} <= set(methods):
        raise NotConvertible("the class has no `__init__` or no `define_graph`")
    for name, method in methods.items():
        if name not in PIPELINE_METHODS and not _is_helper_method(method):
            raise NotConvertible(f"`{name}` is not a plain method `def {name}(self, ...)` (a special method, "
                                 "`*args`, `**kwargs` or keyword-only parameters)")
    return methods


def _is_helper_method(method: cst.FunctionDef) -> bool:
    params = method.params
    return (not method.name.value.startswith("__") and not params.posonly_params and not params.kwonly_params
            and not isinstance(params.star_arg, cst.Param) and params.star_kwarg is None
            and bool(params.params) and params.params[0].name.value == "self")


def _is_super_init(call: cst.BaseExpression) -> bool:
    if not (isinstance(call, cst.Call) and isinstance(call.func, cst.Attribute) and call.func.attr.value == "__init__"):
        return False
    owner = call.func.value
    return isinstance(owner, cst.Call) and dotted_name(owner.func) == "super"


def _pipeline_arguments(call: cst.Call, params: dict[str, cst.Param]) -> tuple[dict, set[str], dict]:
    """(decorator keyword -> expression, parameters of __init__ passed straight through,
    pipeline arguments computed from parameters: each call of the class computes them)."""
    positional = [a for a in call.args if a.keyword is None]
    if any(a.star for a in call.args) or len(positional) > len(PIPELINE_POSITIONAL):
        raise NotConvertible("pass the pipeline's arguments to `super().__init__` by keyword")
    named = list(zip(PIPELINE_POSITIONAL, [a.value for a in positional]))
    named += [(a.keyword.value, a.value) for a in call.args if a.keyword is not None]
    decorator, passed, computed = {}, set(), {}
    for name, value in named:
        if isinstance(value, cst.Name) and value.value in params:
            if value.value != name:
                raise NotConvertible(f"`{value.value}` is passed as the pipeline's `{name}`: name it `{name}`")
            passed.add(name)
            if params[name].default is not None:
                decorator[name] = params[name].default
        elif _names_in(value) & set(params):
            computed[name] = value
        else:
            decorator[name] = value
    return decorator, passed, computed


def _names_in(node: cst.CSTNode) -> set[str]:
    return scope_names([node]).loaded


def _self_attribute(target: cst.BaseExpression) -> str | None:
    if isinstance(target, cst.Attribute) and isinstance(target.value, cst.Name) and target.value.value == "self":
        return target.attr.value
    return None


def _init_members(init: cst.FunctionDef, imports: ImportTable, optable: OpTable, changing: set[str]):
    """(the ``super().__init__`` call, operators by attribute, values by attribute, the prelude:
    ``__init__``'s other statements, in order, ``self.x = value`` as ``x = value``).
    ``changing``: attributes ``iter_setup`` assigns, which stay variables of the graph.
    ``stored_at``: for each value, how many prelude statements come before its assignment."""
    statements = split_docstring(list(init.body.body))[1]
    if not statements or not (isinstance(statements[0], cst.SimpleStatementLine)
                              and isinstance(statements[0].body[0], cst.Expr)
                              and _is_super_init(statements[0].body[0].value)):
        raise NotConvertible("`__init__` must start with `super().__init__(...)`")
    operators, values, prelude, made, stored_at = {}, {}, [], set(), {}
    for statement in statements[1:]:
        name, small = _self_assignment(statement)
        if name is None and isinstance(statement, cst.If) and _builds_operators(statement, imports):
            plain, built = _operators_in_branches(statement, imports, optable)
            if plain is not None:
                prelude.append(_plain_statement(plain, imports))
            operators.update({attr: (op, call, len(prelude)) for attr, (op, call) in built.items()})
            continue
        if name is None:
            prelude.append(_plain_statement(statement, imports))
            continue
        value = small.value
        qualname = imports.resolve(value.func) if isinstance(value, cst.Call) else None
        if qualname is not None and qualname.startswith("nvidia.dali.ops."):
            op = optable.lookup(qualname)
            if op is None or any(a.keyword is None for a in value.args):
                raise NotConvertible(f"`self.{name}` is an operator without a known `fn` form")
            operators[name] = (op, value, len(prelude))
        elif name not in changing and (isinstance(value, (cst.Integer, cst.Float, cst.SimpleString)) or (
                isinstance(value, cst.Name) and value.value in (name, "True", "False", "None"))):
            values[name] = value  # ``self.crop = crop``: the name itself
            stored_at[name] = len(prelude)
        else:
            values[name] = cst.Name(name)
            made.add(name)
            prelude.append(statement.with_changes(body=[small.with_changes(
                targets=[cst.AssignTarget(cst.Name(name))])]))
    return statements[0].body[0].value, operators, values, prelude, made, stored_at


def _self_assignment(statement: cst.BaseStatement) -> tuple[str | None, cst.Assign | None]:
    """(``x``, the assignment) for a line ``self.x = value``; (None, None) for anything else."""
    small = statement.body[0] if isinstance(statement, cst.SimpleStatementLine) and len(statement.body) == 1 else None
    if isinstance(small, cst.Assign) and len(small.targets) == 1:
        name = _self_attribute(small.targets[0].target)
        if name is not None:
            return name, small
    return None, None


def _builds_operators(statement: cst.CSTNode, imports: ImportTable) -> bool:
    return any(q.startswith("nvidia.dali.ops.") for q in _qualnames(statement, imports))


def _operators_in_branches(statement: cst.If, imports: ImportTable, optable: OpTable):
    """``if dali_cpu: ...; self.decode = ops.X(device="cpu", ...) else: ...; self.decode =
    ops.X(device="mixed", ...)``: (the ``if`` without the operators, or None when nothing is left;
    attribute -> (op, one constructor whose arguments differ by ``a if test else b``)). An
    argument given in one branch only takes the operator's default in the other."""
    first_line = cst.Module([]).code_for_node(statement).splitlines()[0]
    orelse = statement.orelse
    if not isinstance(orelse, cst.Else):
        raise NotConvertible(f"`{first_line}` builds operators without an `else` (or with `elif`)")
    branches = [_split_branch(statement.body, imports, first_line), _split_branch(orelse.body, imports, first_line)]
    (kept_if, built_if), (kept_else, built_else) = branches
    if set(built_if) != set(built_else):
        missing = sorted(set(built_if) ^ set(built_else))[0]
        raise NotConvertible(f"`self.{missing}` is built in one branch of `{first_line}` only")
    built = {}
    for attr, call in built_if.items():
        other = built_else[attr]
        qualname = imports.resolve(call.func)
        if qualname != imports.resolve(other.func):
            raise NotConvertible(f"`self.{attr}` is a different operator in each branch of `{first_line}`")
        op = optable.lookup(qualname)
        if op is None or any(a.keyword is None or a.star for a in [*call.args, *other.args]):
            raise NotConvertible(f"`self.{attr}` is an operator without a known `fn` form")
        built[attr] = (op, call.with_changes(args=_merged_arguments(op, statement.test, call, other, attr)))
    if not kept_if and not kept_else:
        return None, built
    plain = statement.with_changes(body=statement.body.with_changes(body=kept_if or [cst.SimpleStatementLine([cst.Pass()])]),
                                   orelse=orelse.with_changes(body=orelse.body.with_changes(
                                       body=kept_else or [cst.SimpleStatementLine([cst.Pass()])])))
    return plain, built


def _split_branch(block: cst.BaseSuite, imports: ImportTable, first_line: str):
    kept, built = [], {}
    for statement in block.body:
        name, small = _self_assignment(statement)
        if name is not None and isinstance(small.value, cst.Call) and (
                imports.resolve(small.value.func) or "").startswith("nvidia.dali.ops."):
            built[name] = small.value
        elif name is not None or not isinstance(statement, cst.SimpleStatementLine):
            raise NotConvertible(f"`{first_line}` holds more than operators and plain statements")
        else:
            kept.append(statement)
    return kept, built


def _merged_arguments(op, test: cst.BaseExpression, first: cst.Call, second: cst.Call, attr: str) -> list[cst.Arg]:
    given = [{a.keyword.value: a.value for a in call.args} for call in (first, second)]
    code = cst.Module([]).code_for_node
    merged = []
    for keyword in dict.fromkeys([*given[0], *given[1]]):
        values = []
        for branch in given:
            if keyword in branch:
                values.append(branch[keyword])
            elif keyword in op.defaults:
                values.append(cst.parse_expression(repr(op.defaults[keyword])))
            else:
                raise NotConvertible(f"`{keyword}=` is given to `self.{attr}` in one branch only, and its default "
                                     "cannot be written exactly")
        same = code(values[0]) == code(values[1])
        value = values[0] if same else cst.IfExp(test=test, body=values[0], orelse=values[1],
                                                 lpar=[], rpar=[])
        layout = next((a for a in first.args if a.keyword.value == keyword), None)
        merged.append(layout.with_changes(value=value) if layout is not None else keyword_arg(keyword, value))
    # the first branch's line breaks between arguments, for the arguments it did not have too
    commas = [a.comma for a in first.args[:-1] if isinstance(a.comma, cst.Comma)]
    separator = next((c for c in commas if isinstance(c.whitespace_after, cst.ParenthesizedWhitespace)),
                     cst.Comma(whitespace_after=cst.SimpleWhitespace(" ")))
    return [a if isinstance(a.comma, cst.Comma) or i == len(merged) - 1 else a.with_changes(comma=separator)
            for i, a in enumerate(merged)]


def _plain_statement(statement: cst.BaseStatement, imports: ImportTable) -> cst.BaseStatement:
    """A statement of ``__init__`` that moves into the graph function as it is: Python that
    only prepares the graph (a lookup, a device choice, a print), without ``self``."""
    code = cst.Module([]).code_for_node(statement).strip().splitlines()[0]
    if "self" in all_names(statement):
        raise NotConvertible(f"`{code}` in `__init__` uses `self` other than as `self.name = ...`")
    if _builds_operators(statement, imports):
        raise NotConvertible(f"`{code}` in `__init__` builds an operator inside a statement: build each "
                             "operator with `self.name = ops.X(...)` on its own line")
    return statement


def _qualnames(node: cst.CSTNode, imports: ImportTable) -> set[str]:
    """The DALI names ``node`` calls."""
    found: set[str] = set()

    class Calls(Visitor):
        def visit_Call(self, call: cst.Call) -> None:
            qualname = imports.resolve(call.func)
            if qualname:
                found.add(qualname)

    walk(node, Calls())
    return found


class _GraphRewriter(Transformer):
    """``self.op(x, k=v)`` -> ``fn.op_path(x, <constructor arguments>, k=v)``; ``self.value`` ->
    the parameter or literal it was set to."""

    def __init__(self, operators: dict, values: dict, params: set[str]) -> None:
        super().__init__()
        self.operators, self.values, self.params = operators, values, params
        self.calls: dict[str, int] = {}
        self.graph_locals: set[str] = set()  # ``self.jpegs, self.labels = ...`` in define_graph
        self.method = "define_graph"  # the method being rewritten, for messages
        self.read_as: set[str] = set()  # the names ``self.x`` reads became
        self.helpers: set[str] = set()  # helper methods, called as functions the graph defines

    def leave_Call(self, original_node: cst.Call, updated_node: cst.Call) -> cst.BaseExpression:
        name = _self_attribute(original_node.func)
        if name is None or name not in self.operators:
            return updated_node
        op, constructor, _ = self.operators[name]
        self.calls[name] = self.calls.get(name, 0) + 1
        if self.calls[name] > 1 and op.is_reader:
            raise NotConvertible(f"`self.{name}` is called twice: one reader, two calls")
        given = {a.keyword.value for a in updated_node.args if a.keyword is not None}
        clash = given & {a.keyword.value for a in constructor.args}
        if clash:
            raise NotConvertible(f"`{sorted(clash)[0]}=` is given both to `self.{name}` and to its call")
        inputs = [a for a in updated_node.args if a.keyword is None]
        keywords = [a for a in updated_node.args if a.keyword is not None]
        path = op.replacement or op.fn
        first = [*inputs, *keywords]  # the call's own arguments, then the constructor's in their layout
        opening = constructor.whitespace_before_args
        merged = cst.Call(func=cst.parse_expression(f"{SYNTHETIC_FN}.{path}"),
                          args=_joined(first, list(constructor.args), opening),
                          whitespace_before_args=opening if not first else cst.SimpleWhitespace(""))
        # two layouts joined read as neither: on one line, wrapped to the project's length later
        return flatten(merged) if first and safe_to_reflow(merged) else merged

    def leave_Attribute(self, original_node: cst.Attribute, updated_node: cst.Attribute) -> cst.BaseExpression:
        name = _self_attribute(original_node)
        if name is None or name in self.operators:
            return updated_node
        if name in self.helpers:  # a helper method: a function of the graph now
            return cst.Name(name)
        if name in BATCH_SIZE_PROPERTIES and name not in self.values and name not in self.graph_locals:
            self.read_as.add("batch_size")  # the generator's own ``batch_size`` parameter
            return cst.Name("batch_size")
        if name in self.graph_locals:
            self.read_as.add(name)
            return cst.Name(name)
        value = self.values.get(name)
        if value is not None:
            if isinstance(value, cst.Name):
                self.read_as.add(value.value)
            return value
        raise NotConvertible(f"`self.{name}` in `{self.method}` is not set in `__init__`")


def _check_values_hold(operators: dict, values: dict, prelude: list[cst.BaseStatement], stored_at: dict) -> None:
    """An operator's arguments are read where ``define_graph`` calls it, after all of the
    prelude: a name they read must not change after the operator was built, nor a name
    stored as ``self.x = x`` after that line (a base class's default bound before it is fine)."""
    for name, (_, constructor, position) in operators.items():
        rebound = scope_names(prelude[position:]).bound & scope_names([constructor]).loaded
        if rebound:
            raise NotConvertible(f"`{sorted(rebound)[0]}` changes after `self.{name}` is built from it")
    for name, value in values.items():
        if (isinstance(value, cst.Name) and value.value == name
                and name in scope_names(prelude[stored_at[name]:]).bound):
            raise NotConvertible(f"`{name}` changes after `self.{name} = {name}`")


def _check_graph_writes(graph: cst.FunctionDef, set_in_init: set[str]) -> None:
    """``define_graph`` runs once, at build; its body becomes the generator's, run for every
    batch. A graph may name its own values ``self.x``, but must not change what ``__init__``
    set, nor change a value it has not assigned."""
    assigned = _self_assigned(graph)
    for name, statement in self_writes(graph.body, into_functions=True).items():
        if name in set_in_init or name not in assigned:
            written = cst.Module([]).code_for_node(statement).strip()
            raise NotConvertible(f"`define_graph` changes `self.{name}` (`{written}`), a value set outside it: "
                                 "it would change once per batch instead of once")


def _self_assigned(graph: cst.FunctionDef) -> set[str]:
    """``self.x`` names that ``define_graph`` assigns (``self.jpegs, self.labels = self.input()``)."""
    found: set[str] = set()

    class Targets(Visitor):
        def visit_AssignTarget(self, target: cst.AssignTarget) -> None:
            for element in assigned_targets(target.target):
                name = _self_attribute(element)
                if name is not None:
                    found.add(name)

    walk(graph.body, Targets())
    return found


def _joined(first: list[cst.Arg], constructed: list[cst.Arg],
            opening: cst.BaseParenthesizableWhitespace) -> list[cst.Arg]:
    """``first``, then the constructor's arguments in their own layout; a comma wherever one is
    now needed. A line break after the constructor's "(" now follows ``first``."""
    if first and constructed:
        space = opening if "\n" in cst.Module([]).code_for_node(opening) else cst.SimpleWhitespace(" ")
        first = [*first[:-1], first[-1].with_changes(comma=cst.Comma(whitespace_after=space))]
    args = [*first, *constructed]
    joined = []
    for index, arg in enumerate(args):
        last = index == len(args) - 1
        if not last and not isinstance(arg.comma, cst.Comma):
            arg = arg.with_changes(comma=cst.Comma(whitespace_after=cst.SimpleWhitespace(" ")))
        elif last and not constructed and isinstance(arg.comma, cst.Comma):
            arg = arg.with_changes(comma=cst.MaybeSentinel.DEFAULT)
        joined.append(arg)
    return joined


def _commas(args: list[cst.Arg]) -> list[cst.Arg]:
    if not args:
        return args
    fixed = [a.with_changes(comma=cst.Comma(whitespace_after=cst.SimpleWhitespace(" "))) for a in args[:-1]]
    return [*fixed, args[-1].with_changes(comma=cst.MaybeSentinel.DEFAULT)]


def convert(node: cst.ClassDef, imports: ImportTable, optable: OpTable, decorator_name: str) -> Subclass:
    """The decorated function for a subclass; NotConvertible says why there is none."""
    if node.decorators or node.keywords or len(node.bases) != 1:
        raise NotConvertible("class decorators, keywords or several bases")
    methods = _methods(node)
    init, graph = methods["__init__"], methods["define_graph"]
    init_params = [*init.params.posonly_params, *init.params.params]
    keyword_only = {p.name.value for p in init.params.kwonly_params}  # ``def __init__(self, *, file_root, ...)``
    if isinstance(init.params.star_arg, cst.Param) or init.params.star_kwarg:
        raise NotConvertible("`__init__` takes *args or **kwargs")
    init_params += init.params.kwonly_params
    if not init_params or init_params[0].name.value != "self" or len(graph.params.params) != 1:
        raise NotConvertible("`__init__(self, ...)` and `define_graph(self)` are expected")
    params = {p.name.value: p for p in init_params[1:]}
    fed = _fed(methods.get("iter_setup"))
    helpers = _used_helpers(methods)
    graph, helpers = _inlined_reader_helpers(graph, helpers, imports, optable)
    changing = fed.written if fed is not None else set()
    super_call, operators, values, prelude, made, stored_at = _init_members(init, imports, optable, changing)
    if fed is not None:
        graph = _with_fed_source(graph, fed, operators)
        _check_changing([graph, *helpers.values()], changing, made)
    _check_helpers_only_read(helpers)
    _check_graph_writes(graph, set(operators) | set(values))
    decorator_args, passed, computed = _pipeline_arguments(super_call, params)
    _check_values_hold(operators, {k: v for k, v in values.items() if k not in made}, prelude, stored_at)
    _check_rebound_parameters(prelude, operators, made & set(params))
    rewriter = _GraphRewriter(operators, values, set(params))
    rewriter.helpers = set(helpers)
    rewriter.graph_locals = _self_assigned(graph) - set(operators) - set(values)
    clashes = rewriter.graph_locals & (set(params) | scope_names(prelude).bound)
    if clashes:
        raise NotConvertible(f"`self.{sorted(clashes)[0]}` in `define_graph` has the name of a local of `__init__`")
    rewriter.operators = {name: (op, constructor.visit(rewriter), position)
                          for name, (op, constructor, position) in operators.items()}
    body = graph.body.visit(rewriter)
    body = body.with_changes(body=[s for s in body.body if not _copies_itself(s, None)])  # ``jpegs = self.jpegs``
    prelude = _values_read_in_init(prelude, values, made)
    if "batch_size" in rewriter.read_as and "batch_size" in scope_names(prelude).bound:
        raise NotConvertible("`__init__` assigns `batch_size`, and the graph reads the pipeline's `self.batch_size`")
    # blank lines around them come with the generator (generator._spaced_after_definitions)
    functions = [f.with_changes(leading_lines=[]) for f in [*_helper_functions(helpers, rewriter, body),
                                                             *_source_function(fed, rewriter, body)]]
    body = body.with_changes(body=[*prelude, *functions, *body.body])
    if "self" in all_names(body):
        raise NotConvertible("`define_graph` uses `self` for more than its operators")
    kept = [p for name, p in params.items() if name not in passed and name not in keyword_only]
    kept_keyword_only = [p for name, p in params.items() if name not in passed and name in keyword_only]
    if kept:
        kept[-1] = kept[-1].with_changes(comma=cst.MaybeSentinel.DEFAULT)
    if kept_keyword_only:
        kept_keyword_only[-1] = kept_keyword_only[-1].with_changes(comma=cst.MaybeSentinel.DEFAULT)
    decorator = cst.Decorator(decorator=cst.Call(
        func=cst.Name(decorator_name),
        args=_commas([keyword_arg(k, v) for k, v in decorator_args.items()])))
    docstring = [node.body.body[0]] if is_docstring(node.body.body[0]) else []
    graph_body = list(body.body)
    if docstring and graph_body and is_docstring(graph_body[0]):
        graph_body = graph_body[1:]
    function = cst.FunctionDef(
        name=node.name, params=cst.Parameters(params=kept, kwonly_params=kept_keyword_only,
                                              star_arg=cst.ParamStar() if kept_keyword_only else cst.MaybeSentinel.DEFAULT),
        decorators=[decorator],
        body=body.with_changes(body=[*docstring, *graph_body]), leading_lines=node.leading_lines,
    )
    defaults = {name: p.default for name, p in params.items() if p.default is not None}
    return Subclass(node.name.value, node, graph, function, list(params), computed, defaults)


def _check_rebound_parameters(prelude: list[cst.BaseStatement], operators: dict, rebound: set[str]) -> None:
    """``self.window_size = int(window_size * sample_rate)`` becomes ``window_size = int(window_size
    * sample_rate)`` in the generator: the parameter is rebound, so ``__init__`` must not read the
    parameter itself after that line (its reads of ``self.window_size`` are the new value)."""
    for name in sorted(rebound):
        first = next(i for i, statement in enumerate(prelude) if name in scope_names([statement]).bound)
        later = [*prelude[first + 1:], *(call for _, call, position in operators.values() if position > first)]
        if name in scope_names(later).loaded:
            raise NotConvertible(f"`__init__` sets `self.{name}` from its parameter `{name}`, then reads the "
                                 f"parameter again; give `self.{name}` another name")


def _values_read_in_init(prelude: list[cst.BaseStatement], values: dict, made: set[str]) -> list[cst.BaseStatement]:
    """``__init__``'s own reads of what it stored (``self.iterator = iter(self.external_data)``):
    a variable it computed or a parameter it stored, read as that name."""

    class Reads(Transformer):
        def leave_Attribute(self, original_node: cst.Attribute, updated_node: cst.Attribute) -> cst.BaseExpression:
            name = _self_attribute(original_node)
            if name is None:
                return updated_node
            value = values.get(name)
            if name in made or (isinstance(value, cst.Name) and value.value == name):
                return cst.Name(name)
            raise NotConvertible(f"`self.{name}` is read in `__init__`")

    return [statement.visit(Reads()) for statement in prelude]


def _fed(method: cst.FunctionDef | None) -> FedSources | None:
    if method is None:
        return None
    try:
        return fed_sources(method)
    except NotFed as reason:
        raise NotConvertible(f"`iter_setup`: {reason}") from None


def _check_changing(methods: list[cst.FunctionDef], changing: set[str], made: set[str]) -> None:
    """What ``iter_setup`` assigns is a variable of its own: computed in ``__init__``, and not
    read by the graph or its helper methods (which pipeline mode ran once, when it built it)."""
    for name in sorted(changing):
        if name not in made:
            raise NotConvertible(f"`iter_setup` assigns `self.{name}`, which `__init__` does not compute")
        for method in methods:
            if name in _self_attributes(method.body):
                raise NotConvertible(f"`iter_setup` assigns `self.{name}`, which `{method.name.value}` reads")


def _used_helpers(methods: dict[str, cst.FunctionDef]) -> dict[str, cst.FunctionDef]:
    """The helper methods the graph runs: named on ``self`` by ``define_graph``, ``iter_setup``
    or a helper they use. Pipeline mode never runs the others (a base class's unused ones)."""
    helpers = {name: method for name, method in methods.items() if name not in PIPELINE_METHODS}
    used: set[str] = set()
    todo = [methods[name] for name in ("define_graph", "iter_setup") if name in methods]
    while todo:
        named = _self_attributes(todo.pop().body) & set(helpers)
        todo += [helpers[name] for name in named - used]
        used |= named
    return {name: method for name, method in helpers.items() if name in used}


def _inlined_reader_helpers(graph: cst.FunctionDef, helpers: dict[str, cst.FunctionDef], imports: ImportTable,
                            optable: OpTable) -> tuple[cst.FunctionDef, dict[str, cst.FunctionDef]]:
    """A helper method that creates readers (``img, lbl = self.load_data(shuffle=True)``), its
    body put in place of the line that calls it: a reader is created once, where the graph
    function starts, and a function the graph calls per batch would create one per batch."""
    remaining = dict(helpers)
    for name, method in helpers.items():
        if not any((op := optable.lookup(q)) is not None and op.is_reader for q in _qualnames(method, imports)):
            continue
        graph = graph.with_changes(body=graph.body.with_changes(
            body=_with_helper_inlined(graph, name, method, [m for n, m in helpers.items() if n != name])))
        del remaining[name]
    return graph, remaining


def _with_helper_inlined(graph: cst.FunctionDef, name: str, method: cst.FunctionDef,
                         others: list[cst.FunctionDef]) -> list[cst.BaseStatement]:
    why = f"the helper method `{name}` creates a reader: "
    statements = list(graph.body.body)
    callers = [i for i, statement in enumerate(statements) if name in _self_attributes(statement)]
    if len(callers) != 1 or any(name in _self_attributes(other) for other in others):
        raise NotConvertible(why + "the graph must call it once, and no other helper may")
    line = statements[callers[0]]
    small = line.body[0] if isinstance(line, cst.SimpleStatementLine) and len(line.body) == 1 else None
    call = small.value if isinstance(small, cst.Assign) and len(small.targets) == 1 else None
    if not (isinstance(call, cst.Call) and _self_attribute(call.func) == name):
        raise NotConvertible(why + f"call it on a line of its own, `outputs = self.{name}(...)`")
    body, returned = _straight_body(method, why)
    bindings = _parameter_bindings(method, call, why)
    target = small.targets[0].target
    local = scope_names([*bindings, *body]).bound
    graph_names = scope_names(statements[:callers[0]] + statements[callers[0] + 1:])
    clash = local & (graph_names.bound | graph_names.loaded) - set(scope_names([line]).bound)
    free = scope_names(body).loaded - local - {"self"}
    if clash or free & graph_names.bound:
        raise NotConvertible(why + f"its `{sorted(clash or free & graph_names.bound)[0]}` is also a name of the graph")
    result = cst.SimpleStatementLine([cst.Assign([cst.AssignTarget(target)], returned)])
    same = returned.deep_equals(target) or (  # ``img, lbl = img, lbl``: nothing to assign
        isinstance(returned, cst.Tuple) and isinstance(target, cst.Tuple)
        and [dotted_name(e.value) for e in returned.elements] == [dotted_name(e.value) for e in target.elements])
    inlined = [*bindings, *body, *([] if same else [result])]
    inlined[0] = inlined[0].with_changes(leading_lines=line.leading_lines)
    return [*statements[:callers[0]], *inlined, *statements[callers[0] + 1:]]


def _straight_body(method: cst.FunctionDef, why: str) -> tuple[list[cst.BaseStatement], cst.BaseExpression]:
    """The method's lines before its final ``return value``, and that value."""
    body = [s for s in method.body.body if not is_docstring(s)]
    last = body[-1].body[0] if body and isinstance(body[-1], cst.SimpleStatementLine) else None
    if not isinstance(last, cst.Return) or last.value is None or len(body[-1].body) != 1:
        raise NotConvertible(why + "it must end with `return ...`")
    for statement in body[:-1]:
        if not isinstance(statement, cst.SimpleStatementLine) or any(
                isinstance(small, (cst.Return, cst.Global, cst.Nonlocal)) for small in statement.body):
            raise NotConvertible(why + "its body must be plain lines (no blocks, no early `return`)")
    return body[:-1], last.value


def _parameter_bindings(method: cst.FunctionDef, call: cst.Call, why: str) -> list[cst.BaseStatement]:
    """``param = argument`` for each parameter, in order; a default where the call gives none."""
    params = method.params
    if params.star_arg not in (cst.MaybeSentinel.DEFAULT, None) or params.star_kwarg or params.kwonly_params:
        raise NotConvertible(why + "it takes *args, **kwargs or keyword-only arguments")
    names = [p.name.value for p in params.params[1:]]
    if any(a.star for a in call.args) or len([a for a in call.args if a.keyword is None]) > len(names):
        raise NotConvertible(why + "its call passes *args, **kwargs or too many arguments")
    given = dict(zip(names, (a.value for a in call.args if a.keyword is None)))
    given.update((a.keyword.value, a.value) for a in call.args if a.keyword is not None)
    bindings = []
    for param in params.params[1:]:
        value = given.get(param.name.value, param.default)
        literal = isinstance(value, (cst.Integer, cst.Float, cst.SimpleString)) or (
            isinstance(value, cst.Name) and value.value in ("True", "False", "None"))
        if value is None or (param.name.value not in given and not literal):
            raise NotConvertible(why + f"its call must pass `{param.name.value}` (or its default be a literal)")
        bindings.append(cst.SimpleStatementLine([cst.Assign([cst.AssignTarget(param.name)], value)]))
    return bindings


def _check_helpers_only_read(helpers: dict[str, cst.FunctionDef]) -> None:
    for name, method in helpers.items():
        assigned = assigned_self_attributes(method.body, into_functions=True)
        if assigned:
            raise NotConvertible(f"`{name}` assigns `self.{sorted(assigned)[0]}`: a helper method may only read `self`")


def _helper_functions(helpers: dict[str, cst.FunctionDef], rewriter: "_GraphRewriter",
                      body: cst.BaseSuite) -> list[cst.FunctionDef]:
    """Each helper method as a function the graph defines: ``self`` gone, its values read as the graph's."""
    taken = scope_names(body.body).bound | rewriter.params | rewriter.graph_locals | {SOURCE_FUNCTION}
    functions = []
    for name, method in helpers.items():
        if name in taken:
            raise NotConvertible(f"the helper method `{name}` has the name of a variable of the graph")
        rewriter.method, rewriter.read_as = name, set()
        function = _one_variable_per_name(method.visit(rewriter), rewriter.read_as, name)
        params = function.params.with_changes(params=function.params.params[1:])
        functions.append(function.with_changes(params=params))
    return functions


def _self_attributes(node: cst.CSTNode) -> set[str]:
    found: set[str] = set()

    class Attributes(Visitor):
        def visit_Attribute(self, attribute: cst.Attribute) -> None:
            name = _self_attribute(attribute)
            if name is not None:
                found.add(name)

    walk(node, Attributes())
    return found


def _source_statement(statement: cst.BaseStatement, operators: dict) -> tuple[str, str] | None:
    """(``jpegs``, ``input``) for a line ``self.jpegs = self.input()`` calling an ExternalSource."""
    name, small = _self_assignment(statement)
    if name is None or not isinstance(small.value, cst.Call):
        return None
    source = _self_attribute(small.value.func)
    if source not in operators or operators[source][0].ops_class != "ExternalSource":
        return None
    if any(a.keyword is None or a.keyword.value != "name" for a in small.value.args):
        raise NotConvertible(f"`self.{name} = self.{source}(...)`: call a fed external source without arguments")
    return name, source


def _with_fed_source(graph: cst.FunctionDef, fed: FedSources, operators: dict) -> cst.FunctionDef:
    """``define_graph`` with its fed external sources read as one ``external_source`` of the
    ``iter_setup`` function, where the first of them was read."""
    statements = list(graph.body.body)
    found = {}
    for index, statement in enumerate(statements):
        pair = _source_statement(statement, operators)
        if pair is not None:
            found[pair[0]] = (index, pair[1])
    outputs = [feed.output for feed in fed.feeds]
    missing = [name for name in outputs if name not in found]
    if missing:
        raise NotConvertible(f"`iter_setup` feeds `self.{missing[0]}`, which `define_graph` does not set "
                             "with `self.{missing[0]} = self.<external source>()`")
    args = [keyword_arg("source", cst.Name(SOURCE_FUNCTION))]
    if len(outputs) > 1:
        args.append(keyword_arg("num_outputs", cst.Integer(str(len(outputs)))))
    args += _merged_source_arguments(fed, [operators[found[name][1]][1] for name in outputs])
    call = cst.Call(func=cst.parse_expression(f"{SYNTHETIC_FN}.external_source"), args=_commas(args))
    targets = [cst.parse_expression(f"self.{name}") for name in outputs]
    target = targets[0] if len(targets) == 1 else cst.Tuple([cst.Element(t) for t in targets], lpar=[], rpar=[])
    first = min(found[name][0] for name in outputs)
    dropped = {found[name][0] for name in outputs}
    line = statements[first].with_changes(body=[cst.Assign([cst.AssignTarget(target)], call)])
    body = [line if i == first else s for i, s in enumerate(statements) if i == first or i not in dropped]
    return graph.with_changes(body=graph.body.with_changes(body=body))


def _merged_source_arguments(fed: FedSources, constructors: list[cst.Call]) -> list[cst.Arg]:
    """The sources' constructor arguments (and ``feed_input``'s ``layout=``) as one call's: one
    value for all outputs, or a list of one per output (``layout``, ``dtype``)."""
    given = [{a.keyword.value: a.value for a in c.args} for c in constructors]
    for feed, arguments in zip(fed.feeds, given):
        if feed.layout is not None:
            if "layout" in arguments:
                raise NotConvertible(f"`self.{feed.output}` gets `layout=` both when built and when fed")
            arguments["layout"] = feed.layout
    code = cst.Module([]).code_for_node
    merged = []
    for keyword in dict.fromkeys(k for arguments in given for k in arguments):
        values = [arguments.get(keyword) for arguments in given]
        if keyword == "layout" and len(values) > 1:  # no layout is the empty one, as DALI reports it
            values = [cst.SimpleString('""') if v is None else v for v in values]
        if None not in values and len({code(v) for v in values}) == 1:
            merged.append(keyword_arg(keyword, values[0]))
        elif None not in values and keyword in ("layout", "dtype"):
            merged.append(keyword_arg(keyword, cst.List([cst.Element(v) for v in values])))
        else:
            raise NotConvertible(f"the fed external sources differ in `{keyword}=`")
    return merged


def _source_function(fed: FedSources | None, rewriter: _GraphRewriter, body: cst.BaseSuite) -> list[cst.FunctionDef]:
    """``def iter_setup():``, its ``self.`` values read as the graph's, before the graph's body."""
    if fed is None:
        return []
    if SOURCE_FUNCTION in scope_names(body.body).bound | rewriter.params | rewriter.graph_locals:
        raise NotConvertible(f"`{SOURCE_FUNCTION}` is also a name of the graph")
    rewriter.method, rewriter.read_as = "iter_setup", set()
    # what it assigns on ``self`` is the graph's variable (``nonlocal``), not one of its own
    function = _one_variable_per_name(fed.function.visit(rewriter), rewriter.read_as - fed.written, "iter_setup")
    return [with_nonlocals(function, fed.written)]


def _one_variable_per_name(function: cst.FunctionDef, read_as: set[str], method: str) -> cst.FunctionDef:
    """A method's ``crop = self.crop`` is ``crop = crop`` once ``self.crop`` is the graph's
    ``crop``: dropped, the function reads the graph's variable; any other variable of its own
    with the name of a value it reads from ``self`` would hide that value (one name, two
    variables), and keeps the class."""
    body = [s for s in function.body.body if not _copies_itself(s, function)]
    function = function.with_changes(body=function.body.with_changes(body=body))
    own = scope_names([function.params, function.body]).bound - {"self"}
    if own & read_as:
        raise NotConvertible(f"`{method}` has a variable `{sorted(own & read_as)[0]}` and reads a value of that "
                             "name from `self`: rename its variable")
    return function


def _copies_itself(statement: cst.BaseStatement, function: cst.FunctionDef | None) -> bool:
    """``x = x`` on a line of its own, without comments, and (in a ``function`` the graph
    defines, where it would make ``x`` local) ``x`` bound nowhere else in it."""
    if not isinstance(statement, cst.SimpleStatementLine) or len(statement.body) != 1:
        return False
    assign = statement.body[0]
    if not (isinstance(assign, cst.Assign) and len(assign.targets) == 1 and isinstance(assign.value, cst.Name)
            and isinstance(assign.targets[0].target, cst.Name)
            and assign.targets[0].target.value == assign.value.value):
        return False
    if any(line.comment for line in statement.leading_lines) or statement.trailing_whitespace.comment:
        return False
    if function is None:  # in the graph's own scope: a no-op
        return True
    others = [s for s in function.body.body if s is not statement]
    return assign.value.value not in scope_names([function.params, *others]).bound


def keyword_call(call: cst.Call, subclass: Subclass) -> cst.Call:
    """``HybridPipe(8, 2, 0, root)`` -> ``HybridPipe(batch_size=8, num_threads=2, device_id=0, data_dir=root)``;
    a pipeline argument the class computed (``seed=12 + device_id``) is computed at the call."""
    positional = [a for a in call.args if a.keyword is None]
    named = [a.with_changes(keyword=cst.Name(name), equal=TIGHT_EQUAL) for name, a in zip(subclass.call_params, positional)]
    args = [*named, *call.args[len(positional):]]
    given = {**subclass.defaults, **{a.keyword.value: a.value for a in args}}
    computed = [keyword_arg(name, _substituted(value, given)) for name, value in subclass.computed.items()]
    if not positional and not computed:
        return call
    return call.with_changes(args=_commas([*args, *computed]) if computed else args)


def calls_fit(call: cst.Call, subclass: Subclass) -> bool:
    return unfit_call_reason(call, subclass) is None


def unfit_call_reason(call: cst.Call, subclass: Subclass) -> str | None:
    """Why ``call`` cannot become a call of the function the class becomes, or None."""
    positional = [a for a in call.args if a.keyword is None]
    if any(a.star for a in call.args):
        return f"`{subclass.name}` is called with *args or **kwargs"
    if len(positional) > len(subclass.call_params):
        return f"`{subclass.name}` is called with more positional arguments than `__init__` takes"
    given = {**subclass.defaults, **dict(zip(subclass.call_params, (a.value for a in positional))),
             **keyword_values(call)}
    for name, value in subclass.computed.items():
        written = f"`{name}={cst.Module([]).code_for_node(value)}`"
        if name in given:
            return (f"`{subclass.name}` passes {written} to `Pipeline.__init__`, and its callers give "
                    f"`{name}` too: rename `__init__`'s parameter `{name}` (the migrated function takes "
                    f"`{name}=` itself), then re-run")
        needed = _names_in(value) & set(subclass.call_params)
        if any(n not in given or not evaluates_the_same_twice(given[n]) for n in needed):
            return (f"`{subclass.name}` passes {written} to `Pipeline.__init__`, computed from what a call "
                    "gives, and a call gives it no value that may be read twice")
    return None


def fits_in_another_module(call: cst.Call, subclass: Subclass) -> bool:
    """``calls_fit``, and the pipeline arguments the class computed use only what the call
    gives: names of the class's own module mean nothing where it is imported."""
    own = set(subclass.call_params)
    return calls_fit(call, subclass) and all(_names_in(value) <= own for value in subclass.computed.values())


def keyword_calls(module: cst.Module, subclasses: dict[str, Subclass]) -> cst.Module:
    """Calls of imported pipeline classes (by the names this module gives them) with their
    arguments named, where they fit the function each class becomes; the others as they were."""

    class Naming(Transformer):
        def leave_Call(self, original_node: cst.Call, updated_node: cst.Call) -> cst.Call:
            subclass = subclasses.get(dotted_name(original_node.func) or "")
            if subclass is None or not fits_in_another_module(original_node, subclass):
                return updated_node
            return keyword_call(updated_node, subclass)

    return module.visit(Naming())


def _substituted(value: cst.BaseExpression, given: dict[str, cst.BaseExpression]) -> cst.BaseExpression:
    class Substitute(Substitution):
        def leave_Name(self, original_node, updated_node):
            if not self.is_variable(original_node) or original_node.value not in given:
                return updated_node
            return self.copy_of(given[original_node.value])

    return folded(value.visit(Substitute()))
