"""A pipeline a notebook runs once: its generator inlined where the one batch is taken.

NVIDIA's dynamic-mode notebooks take a single batch the plain way: the reader made in one
statement, ``jpegs, labels = next(reader.next_epoch(batch_size=...))``, then the operators.
A migrated generator made once and advanced once (``pipe = f(...)`` then ``out = next(pipe)``,
side by side at the top level) is rewritten to that form: its set-up statements replace
``pipe = f(...)``, the first batch and the loop's body replace ``out = next(pipe)``, and the
generator's ``def`` goes.

This is a plain Python refactoring of code that the audit has already passed, and it is made
only where it changes no value any other code can see:

- the generator has the exact shape the migration writes (set-up, ``while True:`` over one
  reader's ``next_epoch``, a body of simple statements, in ``with context:`` where the pipeline
  had a device of its own, one ``yield`` at its end), no docstring and no comment that would be
  lost;
- its name is used by nothing but that one call, and the pipeline variable by nothing but
  that one ``next()`` until it is bound again;
- every name the inlined code binds at the top level, other than what ``out = next(pipe)``
  bound anyway, is read by no function and by no top-level code after it, up to a plain
  rebinding;
- parameters become the arguments of the call (literals and names the inlined code does not
  bind; anything else is assigned once, first) or defaults that are literals or names bound
  once in the module.

Only notebooks get this form: a ``.py`` module's functions may be imported by files the run
does not see.
"""

from __future__ import annotations

import ast
import symtable
from dataclasses import dataclass

import libcst as cst

from ..notebook import CELL_MARKER
from .generator import unevaluated
from .names import all_params, is_docstring, scope_names, target_names, variable_names
from .ops import TIGHT_EQUAL, is_literal
from .pure import Substitution


@dataclass
class GeneratorParts:
    definition: cst.FunctionDef
    setup: list[cst.SimpleStatementLine]
    reader: str
    batch_size: cst.BaseExpression
    target: cst.BaseExpression
    body: list[cst.BaseStatement]  # simple statements, and ``with context:`` blocks of them
    yielded: cst.BaseExpression


@dataclass
class _Site:
    definition: int  # indices in the module's body
    made: int
    taken: int
    variable: str
    call: cst.Call
    outputs: cst.BaseExpression  # the target of ``out = next(pipe)``


def inline_one_shots(module: cst.Module, generators: list[str]) -> tuple[cst.Module, list[str]]:
    """``module`` with each generator of ``generators`` that is made and advanced once
    inlined; the names of those inlined. Later sites first: an inlined site's plain
    rebindings are what let an earlier one bind the same names (``reader``, ``pipe``)."""
    inlined: list[str] = []
    candidates = set(generators)
    while candidates:
        found = sorted(((site, name) for name in candidates if (site := _site(module, name)) is not None),
                       key=lambda item: -item[0].made)
        candidates.clear()
        for site, name in found:
            new = _inlined(module, site, name)
            if new is not None:
                module = new
                inlined.append(name)
                candidates = set(generators) - set(inlined)  # indices moved: look again
                break
    return module, inlined


def _site(module: cst.Module, name: str) -> _Site | None:
    body = module.body
    definition = next((i for i, s in enumerate(body) if isinstance(s, cst.FunctionDef) and s.name.value == name), None)
    made = [i for i, s in enumerate(body) if assigned_call(s, name) is not None]
    if definition is None or len(made) != 1:
        return None
    variable, call = assigned_call(body[made[0]], name)
    taken = made[0] + 1
    while taken < len(body) and is_cell_marker(body[taken]):
        taken += 1
    outputs = _next_of(body[taken], variable) if taken < len(body) else None
    if outputs is None:
        return None
    return _Site(definition, made[0], taken, variable, call, outputs)


def single(statement: cst.BaseStatement) -> cst.BaseSmallStatement | None:
    if isinstance(statement, cst.SimpleStatementLine) and len(statement.body) == 1:
        return statement.body[0]
    return None


def assigned_call(statement: cst.BaseStatement, function: str) -> tuple[str, cst.Call] | None:
    """``variable = function(...)``"""
    small = single(statement)
    if (isinstance(small, cst.Assign) and len(small.targets) == 1 and isinstance(small.targets[0].target, cst.Name)
            and isinstance(small.value, cst.Call) and isinstance(small.value.func, cst.Name)
            and small.value.func.value == function):
        return small.targets[0].target.value, small.value
    return None


def is_cell_marker(statement: cst.BaseStatement) -> bool:
    small = single(statement)
    prefix = CELL_MARKER.split("(")[0]
    return (isinstance(small, cst.Expr) and isinstance(small.value, cst.Call)
            and isinstance(small.value.func, cst.Name) and small.value.func.value == prefix)


def _next_of(statement: cst.BaseStatement, variable: str) -> cst.BaseExpression | None:
    """The target of ``target = next(variable)``, where it is names only."""
    small = single(statement)
    if not (isinstance(small, cst.Assign) and len(small.targets) == 1):
        return None
    value, target = small.value, small.targets[0].target
    if not (isinstance(value, cst.Call) and isinstance(value.func, cst.Name) and value.func.value == "next"
            and len(value.args) == 1 and value.args[0].keyword is None and not value.args[0].star
            and isinstance(value.args[0].value, cst.Name) and value.args[0].value.value == variable):
        return None
    return target if _names_only(target) else None


def _names_only(target: cst.BaseExpression) -> bool:
    if isinstance(target, cst.Name):
        return True
    return isinstance(target, (cst.Tuple, cst.List)) and bool(target.elements) and all(
        isinstance(e, cst.Element) and _names_only(e.value) for e in target.elements)


def generator_parts(definition: cst.FunctionDef) -> GeneratorParts | None:
    """The parts of a generator in the migration's shape; None for any other function."""
    if definition.decorators or definition.asynchronous or _has_comments(definition.body):
        return None
    params = definition.params
    if isinstance(params.star_arg, cst.Param) or params.star_kwarg is not None:
        return None
    *setup, loop = definition.body.body
    if not all(isinstance(s, cst.SimpleStatementLine) for s in setup) or not _is_endless(loop):
        return None
    inner = loop.body.body
    if len(inner) != 1 or not isinstance(inner[0], cst.For) or inner[0].orelse or inner[0].asynchronous:
        return None
    epoch = _epoch_of(inner[0].iter)
    if epoch is None or _has_comments(inner[0].body) or _has_comments(loop.body):
        return None
    *body, last = inner[0].body.body
    yielded = single(last)
    if (not all(isinstance(s, cst.SimpleStatementLine) or _in_context(s) for s in body)
            or not isinstance(yielded, cst.Expr) or not isinstance(yielded.value, cst.Yield)
            or not isinstance(yielded.value.value, cst.BaseExpression)):
        return None
    if setup and is_docstring(setup[0]):
        return None
    outputs = unevaluated(yielded.value.value)  # a program's own names stand for results when it reads them
    generator = GeneratorParts(definition, setup, epoch[0], epoch[1], inner[0].target, body, outputs)
    if _leaves_early([*setup, *body]) or epoch[0] not in scope_names(setup).bound:
        return None
    return generator


def _in_context(statement: cst.BaseStatement) -> bool:
    """``with context:`` around simple statements: a pipeline's own device (its EvalContext)."""
    return (isinstance(statement, cst.With) and len(statement.items) == 1 and statement.items[0].asname is None
            and isinstance(statement.items[0].item, cst.Name) and not statement.asynchronous
            and isinstance(statement.body, cst.IndentedBlock) and not _has_comments(statement.body)
            and all(isinstance(s, cst.SimpleStatementLine) for s in statement.body.body))


def _is_endless(loop: cst.BaseStatement) -> bool:
    return (isinstance(loop, cst.While) and isinstance(loop.test, cst.Name) and loop.test.value == "True"
            and loop.orelse is None and isinstance(loop.body, cst.IndentedBlock))


def _epoch_of(iterated: cst.BaseExpression) -> tuple[str, cst.BaseExpression] | None:
    """``reader.next_epoch(batch_size=E)`` -> ("reader", E)."""
    if not (isinstance(iterated, cst.Call) and isinstance(iterated.func, cst.Attribute)
            and iterated.func.attr.value == "next_epoch" and isinstance(iterated.func.value, cst.Name)):
        return None
    args = iterated.args
    if len(args) != 1 or args[0].keyword is None or args[0].keyword.value != "batch_size":
        return None
    return iterated.func.value.value, args[0].value


def _has_comments(block: cst.BaseSuite) -> bool:
    header = getattr(block, "header", None)
    footer = getattr(block, "footer", [])
    return (header is not None and header.comment is not None) or any(line.comment for line in footer)


def _leaves_early(statements: list[cst.BaseStatement]) -> bool:
    """A ``yield``/``return``/``global`` besides the last ``yield``, an ``await``, or a nested
    function or class: code whose meaning would change at the top level."""
    if scope_names(statements).escapes:
        return True
    tree = ast.parse(cst.Module(body=statements).code)
    return any(isinstance(n, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef, ast.Await)) for n in ast.walk(tree))


def _inlined(module: cst.Module, site: _Site, name: str) -> cst.Module | None:
    generator = generator_parts(module.body[site.definition])
    if generator is None or site.definition > site.made:
        return None
    analysis = TopLevel(module)
    if analysis.uses_of(name) != 1 or not analysis.bound_once(name):  # one ``def``, one call
        return None
    arguments = call_arguments(generator.definition.params, site.call)
    if arguments is None:
        return None
    generator = _named_as_outputs(generator, site.outputs, set(arguments))
    bound = scope_names([*generator.setup, *generator.body]).bound | {n.value for n in target_names(generator.target)}
    outputs = {n.value for n in target_names(site.outputs)}
    substitutions, assigned = {}, []
    for param, (value, is_default) in arguments.items():
        kind = _parameter_value(param, value, is_default, generator, bound, analysis)
        if kind is None:
            return None
        if kind == "substitute":
            substitutions[param] = value
        elif kind == "assign":
            assigned.append(param)
    fresh = (bound | set(assigned) | {site.variable}) - outputs
    if any(analysis.seen_after(n, site, exclude=name) for n in fresh):
        return None
    return _rewritten(module, site, generator, substitutions, {p: arguments[p][0] for p in assigned})


def call_arguments(params: cst.Parameters, call: cst.Call) -> dict[str, tuple[cst.BaseExpression, bool]] | None:
    """Parameter -> (its value at the call, whether it is the default); None where the call
    cannot be matched without running it (``*args``, ``**kwargs``, a missing argument)."""
    positional = [*params.posonly_params, *params.params]
    given: dict[str, tuple[cst.BaseExpression, bool]] = {}
    for index, arg in enumerate(call.args):
        if arg.star:
            return None
        if arg.keyword is None:
            if index >= len(positional):
                return None
            given[positional[index].name.value] = (arg.value, False)
        else:
            given[arg.keyword.value] = (arg.value, False)
    names = {p.name.value for p in all_params(params)}
    if not set(given) <= names:
        return None
    for param in all_params(params):
        if param.name.value not in given:
            if param.default is None:
                return None
            given[param.name.value] = (param.default, True)
    return given


def _parameter_value(param: str, value: cst.BaseExpression, is_default: bool, generator: GeneratorParts,
                     bound: set[str], analysis: "TopLevel") -> str | None:
    """How a parameter's value reaches the inlined code: "unused", "substitute" (written where
    the parameter was read), "assign" (``param = value`` first), or None: it cannot."""
    if is_default and not (is_literal(value) or isinstance(value, cst.Name) and analysis.bound_once(value.value)):
        return None  # computed when ``def`` ran, from values that may have changed since
    uses = _loads(generator, param)
    if uses == 0:
        return "unused"
    if uses is not None and (is_literal(value) or isinstance(value, cst.Name) and value.value not in bound):
        return "substitute"
    return "assign"


def _loads(generator: GeneratorParts, param: str) -> int | None:
    """How often the generator reads ``param``; None where it also binds it (or a nested
    scope does), so that a plain substitution would be wrong."""
    statements = [*generator.setup, *generator.body]
    names = scope_names(statements)
    targets = {n.value for n in target_names(generator.target)}
    if param in names.bound or param in targets:
        return None
    counter = LoadCounter(param)
    for statement in [*statements, cst.Expr(generator.batch_size), cst.Expr(generator.yielded)]:
        statement.visit(counter)
    return None if counter.shadowed else counter.count


class LoadCounter(cst.CSTVisitor):
    def __init__(self, name: str) -> None:
        super().__init__()
        self.name = name
        self.count = 0
        self.shadowed = False
        self.not_loads: set[int] = set()

    def visit_Attribute(self, node: cst.Attribute) -> None:
        self.not_loads.add(id(node.attr))

    def visit_Arg(self, node: cst.Arg) -> None:
        if node.keyword is not None:
            self.not_loads.add(id(node.keyword))

    def visit_Param(self, node: cst.Param) -> None:
        self.shadowed |= node.name.value == self.name

    def visit_Name(self, node: cst.Name) -> None:
        if id(node) not in self.not_loads and node.value == self.name:
            self.count += 1

    @classmethod
    def count_in(cls, statements: list, name: str) -> int:
        counter = cls(name)
        for statement in statements:
            statement.visit(counter)
        return counter.count


def _named_as_outputs(generator: GeneratorParts, outputs: cst.BaseExpression, params: set[str]) -> GeneratorParts:
    """The generator with each local it yields named as the caller names that output
    (``yield (images,)`` taken as ``(gray_images,) = next(pipe)``: ``gray_images`` is bound
    where ``images`` was), so that the inlined code binds the caller's names and no more."""
    everywhere = set().union(*(variable_names(node) for node in _parts(generator)))
    locals_ = scope_names([*generator.setup, *generator.body]).bound | {
        n.value for n in target_names(generator.target)}
    pairs = _paired_names(outputs, generator.yielded)
    yielded = [value for _, value in pairs]
    renames = {value: target for target, value in pairs
               if value != target and value in locals_ and value not in params and yielded.count(value) == 1
               and target not in everywhere and list(target for target, _ in pairs).count(target) == 1}
    if not renames:
        return generator
    rename = Substituted({old: cst.Name(new) for old, new in renames.items()})
    return GeneratorParts(generator.definition, [s.visit(rename) for s in generator.setup], generator.reader,
                      generator.batch_size, generator.target.visit(rename),
                      [s.visit(rename) for s in generator.body], generator.yielded.visit(rename))


def _parts(generator: GeneratorParts) -> list[cst.CSTNode]:
    return [*generator.setup, *generator.body, generator.target, generator.batch_size, generator.yielded]


def _paired_names(target: cst.BaseExpression, value: cst.BaseExpression) -> list[tuple[str, str]]:
    """(target name, value name) for the positions where both sides are plain names."""
    if isinstance(target, cst.Name) and isinstance(value, cst.Name):
        return [(target.value, value.value)]
    if isinstance(target, (cst.Tuple, cst.List)) and isinstance(value, cst.Tuple) and len(
            target.elements) == len(value.elements):
        return [(t.value.value, v.value.value) for t, v in zip(target.elements, value.elements)
                if isinstance(t.value, cst.Name) and isinstance(v.value, cst.Name)]
    return []


class Substituted(Substitution):
    def __init__(self, values: dict[str, cst.BaseExpression]) -> None:
        super().__init__()
        self.values = values

    def leave_Name(self, original_node: cst.Name, updated_node: cst.Name) -> cst.BaseExpression:
        if not self.is_variable(original_node) or original_node.value not in self.values:
            return updated_node
        return self.copy_of(self.values[original_node.value])


class TopLevel:
    """Where names are read in a module: by top-level statement, and by functions and
    classes (which may run at any time)."""

    def __init__(self, module: cst.Module) -> None:
        self.code = module.code
        self.tree = ast.parse(self.code)
        self.statement_of = _statement_indices(module, self.tree)
        self.global_uses = _global_uses(symtable.symtable(self.code, "<notebook>", "exec"))

    def uses_of(self, name: str) -> int:
        return sum(isinstance(n, ast.Name) and n.id == name for n in ast.walk(self.tree))

    def bound_once(self, name: str) -> bool:
        """Bound once at the top level (``name = ...``), and declared global by no function."""
        bindings = 0
        for node in (n for statement in self.tree.body for n in _top_level_nodes(statement)):
            if isinstance(node, ast.Name) and node.id == name and not isinstance(node.ctx, ast.Load):
                bindings += 1
            elif isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef, ast.alias)):
                bindings += name in _names_bound_by(node)
        declared = any(isinstance(n, ast.Global) and name in n.names for n in ast.walk(self.tree))
        return bindings == 1 and not declared

    def seen_after(self, name: str, site: _Site, exclude: str) -> bool:
        """Whether code other than the site reads ``name`` where the inlined binding would show:
        a function or class that uses it as a global, or a top-level statement after the site
        and before a plain rebinding."""
        if any(name in uses for owner, uses in self.global_uses.items() if owner != exclude):
            return True
        for statement in self.tree.body:
            index = self.statement_of[id(statement)]
            if index <= site.made or index == site.taken or index == site.definition:
                continue
            if _rebinds(statement, name) and index > site.taken:
                return False
            if any(isinstance(n, ast.Name) and n.id == name for n in _top_level_nodes(statement)):
                return True
        return False


def _names_bound_by(node: ast.AST) -> set[str]:
    if isinstance(node, ast.alias):
        return {(node.asname or node.name).split(".")[0]}
    return {node.name}


def _statement_indices(module: cst.Module, tree: ast.Module) -> dict[int, int]:
    """id(top-level ast statement) -> index of the LibCST statement it belongs to (``a; b`` is
    one LibCST statement and two ast ones), by line."""
    line = len(module.header) + 1
    last_lines = []
    for statement in module.body:
        line += module.code_for_node(statement).count("\n")
        last_lines.append(line - 1)
    indices, position = {}, 0
    for statement in tree.body:
        while position < len(last_lines) - 1 and statement.lineno > last_lines[position]:
            position += 1
        indices[id(statement)] = position
    return indices


def _global_uses(table: symtable.SymbolTable) -> dict[str, set[str]]:
    """Per top-level function or class (by name; "" for deeper ones), the module globals its
    code (nested code included) reads or writes."""
    uses: dict[str, set[str]] = {}
    for child in table.get_children():
        found: set[str] = set()
        _collect_globals(child, found)
        uses.setdefault(child.get_name() if child.get_type() in ("function", "class") else "", set()).update(found)
    return uses


def _collect_globals(table: symtable.SymbolTable, found: set[str]) -> None:
    found |= {s.get_name() for s in table.get_symbols() if s.is_global()}
    for child in table.get_children():
        _collect_globals(child, found)


def _rebinds(statement: ast.stmt, name: str) -> bool:
    """``name = value`` (or ``a, name = value``) where ``value`` does not read ``name``."""
    if not (isinstance(statement, ast.Assign) and len(statement.targets) == 1):
        return False
    target = statement.targets[0]
    names = [target] if isinstance(target, ast.Name) else list(getattr(target, "elts", []))
    return (all(isinstance(n, ast.Name) for n in names) and any(n.id == name for n in names)
            and not any(isinstance(n, ast.Name) and n.id == name for n in ast.walk(statement.value)))


def _top_level_nodes(statement: ast.stmt):
    """The nodes of a top-level statement that run at the top level: not the bodies of the
    functions, classes, lambdas and comprehensions in it (``_global_uses`` sees those)."""
    stack = [statement]
    while stack:
        node = stack.pop()
        yield node
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef, ast.Lambda)):
            stack.extend([*node.decorator_list] if not isinstance(node, ast.Lambda) else [])
            continue
        stack.extend(ast.iter_child_nodes(node))


def _rewritten(module: cst.Module, site: _Site, generator: GeneratorParts, substitutions: dict,
               assigned: dict[str, cst.BaseExpression]) -> cst.Module:
    substitute = Substituted(substitutions)
    setup = [s.visit(substitute) for s in generator.setup]
    body = [s.visit(substitute) for s in generator.body]
    setup, body = _context_inline(setup, body)
    batch_size = generator.batch_size.visit(substitute)
    yielded = generator.yielded.visit(substitute)
    made_line, taken_line = module.body[site.made], module.body[site.taken]
    first = [cst.SimpleStatementLine([cst.Assign([cst.AssignTarget(cst.Name(p))], v)]) for p, v in assigned.items()]
    made = with_leading(made_line, [*first, *setup])
    epoch = cst.Call(cst.Attribute(cst.Name(generator.reader), cst.Name("next_epoch")),
                     [cst.Arg(batch_size, keyword=cst.Name("batch_size"), equal=TIGHT_EQUAL)])
    batch = cst.Call(cst.Name("next"), [cst.Arg(epoch)])
    taken = [cst.SimpleStatementLine([cst.Assign([cst.AssignTarget(generator.target)], batch)]), *body]
    assignment = _without_self_assignments(site.outputs, yielded)
    if assignment is not None:
        taken.append(cst.SimpleStatementLine([cst.Assign([cst.AssignTarget(assignment[0])], _bare(assignment[1]))]))
    taken = with_leading(taken_line, taken)
    statements = list(module.body)
    statements[site.taken:site.taken + 1] = taken
    statements[site.made:site.made + 1] = made
    definition = statements.pop(site.definition)
    if site.definition < len(statements):
        following = statements[site.definition]
        statements[site.definition] = following.with_changes(
            leading_lines=[*definition.leading_lines, *_without_leading_blanks(following.leading_lines)])
    return module.with_changes(body=statements)


def _context_inline(setup: list, body: list) -> tuple[list, list]:
    """``context = ndd.EvalContext(...)`` entered by one ``with context:`` becomes
    ``with ndd.EvalContext(...):`` (making a context does nothing until it is entered)."""
    blocks = [s for s in body if isinstance(s, cst.With)]
    if len(blocks) != 1:
        return setup, body
    name = blocks[0].items[0].item.value
    made = [s for s in setup if _assigned_context(s, name) is not None]
    if len(made) != 1 or LoadCounter.count_in(body, name) != 1 or LoadCounter.count_in(setup, name) != 1:
        return setup, body
    item = blocks[0].items[0].with_changes(item=_assigned_context(made[0], name))
    entered = blocks[0].with_changes(items=[item])
    return [s for s in setup if s is not made[0]], [entered if s is blocks[0] else s for s in body]


def _assigned_context(statement: cst.BaseStatement, name: str) -> cst.Call | None:
    small = single(statement)
    if (isinstance(small, cst.Assign) and len(small.targets) == 1 and isinstance(small.targets[0].target, cst.Name)
            and small.targets[0].target.value == name and isinstance(small.value, cst.Call)
            and isinstance(small.value.func, cst.Attribute) and small.value.func.attr.value == "EvalContext"):
        return small.value
    return None


def with_leading(original: cst.SimpleStatementLine, statements: list) -> list:
    if not statements:  # nothing to set up: the comments above the line stay, on a `pass`
        return [original.with_changes(body=[cst.Pass()])] if any(
            line.comment for line in original.leading_lines) else []
    return [statements[0].with_changes(leading_lines=original.leading_lines), *statements[1:]]


def _without_leading_blanks(lines) -> list:
    lines = list(lines)
    while lines and lines[0].comment is None:
        lines.pop(0)
    return lines


def _bare(value: cst.BaseExpression) -> cst.BaseExpression:
    return value.with_changes(lpar=[], rpar=[]) if isinstance(value, cst.Tuple) and len(value.elements) > 1 else value


def _without_self_assignments(target: cst.BaseExpression, value: cst.BaseExpression):
    """``target = value`` less the positions that assign a name to itself (``batch, labels =
    flip(...), labels`` is ``batch = flip(...)``); None where nothing is left. Positions stay
    together where a target name repeats: then the order of the stores matters."""
    if _same_names(target, value):
        return None
    if not (isinstance(target, (cst.Tuple, cst.List)) and isinstance(value, cst.Tuple)
            and len(target.elements) == len(value.elements)):
        return target, value
    stores = [n.value for n in target_names(target)]
    if len(stores) != len(set(stores)) or any(isinstance(e, cst.StarredElement) for e in target.elements):
        return target, value
    kept = [(t, v) for t, v in zip(target.elements, value.elements) if not _same_names(t.value, v.value)]
    if len(kept) == 1:
        return kept[0][0].value, kept[0][1].value
    return (target.with_changes(elements=_commas([t for t, _ in kept])),
            value.with_changes(elements=_commas([v for _, v in kept])))


def _commas(elements: list) -> list:
    return [e.with_changes(comma=cst.MaybeSentinel.DEFAULT) for e in elements]


def _same_names(target: cst.BaseExpression, value: cst.BaseExpression) -> bool:
    """``a, b = a, b``: an assignment that changes nothing."""
    if isinstance(target, cst.Name) or isinstance(value, cst.Name):
        return isinstance(target, cst.Name) and isinstance(value, cst.Name) and target.value == value.value
    if not isinstance(target, (cst.Tuple, cst.List)) or not isinstance(value, cst.Tuple):
        return False
    return len(target.elements) == len(value.elements) and all(
        _same_names(t.value, v.value) for t, v in zip(target.elements, value.elements))
