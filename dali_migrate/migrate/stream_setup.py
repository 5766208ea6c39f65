"""A stream a notebook makes once: the reader made where the call was, the loop left in a ``def``.

NVIDIA's dynamic-mode notebooks make the reader (and the RNG) once, in a cell, and read its
metadata from it; a generator that yields batch after batch reads those objects as globals.
A migrated generator that a notebook calls once at the top level (``pipe = augment(ROOT)``)
and advances as a stream gets that form: its set-up statements (reader, RNG, context) replace
the call, with the call's arguments in place of the parameters, and the generator keeps only
its loop and no parameters. Where the caller asked for the reader's metadata first
(``yield_reader_meta=True``, then ``meta = next(pipe)``), ``meta`` is read from the reader.

Made only where no other code can tell:

- the generator has the exact shape the migration writes (see ``one_shot``), is defined and
  called once, and the call is a top-level ``variable = f(...)``;
- every parameter's value is a literal or a name bound once in the module (the loop reads
  it later, when batches are taken), or, where only the set-up reads it, an expression that
  evaluates the same twice;
- the set-up's names become module globals that no other code uses: where a name is taken
  (another ``reader``), the hoisted one is called ``<generator>_<name>``.

Only notebooks get this form: a ``.py`` module's functions may be imported by files the run
does not see.
"""

from __future__ import annotations

from dataclasses import dataclass

import libcst as cst

from ..values import READER_META_FLAG
from .names import scope_names, target_names, unique_name, variable_names
from .one_shot import (Substituted, TopLevel, assigned_call, call_arguments, generator_parts, is_cell_marker,
                       single, with_leading)
from .ops import is_literal
from .pure import evaluates_the_same_twice


@dataclass
class _Stream:
    definition: int  # indices in the module's body
    made: int
    meta_taken: int | None  # ``meta = next(pipe)`` where the call asked for the metadata first
    variable: str
    call: cst.Call


def hoist_stream_setups(module: cst.Module, generators: list[str]) -> tuple[cst.Module, list[str]]:
    """``module`` with the set-up of each generator of ``generators`` that a notebook makes
    once made where it is called; the names of those generators."""
    hoisted = []
    for name in generators:
        new = _hoisted(module, name)
        if new is not None:
            module = new
            hoisted.append(name)
    return module, hoisted


def _hoisted(module: cst.Module, name: str) -> cst.Module | None:
    stream = _stream(module, name)
    if stream is None:
        return None
    definition = module.body[stream.definition]
    meta, loop_definition = _without_metadata_first(definition)
    parts = generator_parts(loop_definition)
    arguments = call_arguments(definition.params, stream.call)
    if parts is None or arguments is None or not _metadata_matches(arguments, meta, stream):
        return None
    values = _parameter_values(parts, arguments, meta, TopLevel(module))
    if values is None:
        return None
    setup_names = scope_names(parts.setup).bound
    loop_names = scope_names(parts.body).bound | {n.value for n in target_names(parts.target)}
    if setup_names & loop_names:
        return None  # the loop would shadow what it reads
    taken = set().union(*(variable_names(s) for i, s in enumerate(module.body) if i != stream.definition))
    renames = {n: cst.Name(unique_name(f"{name}_{n}", taken) if n in taken else n) for n in sorted(setup_names)}
    substitute = Substituted({**values, **renames})
    return _rewritten(module, stream, parts, meta, substitute)


def _stream(module: cst.Module, name: str) -> _Stream | None:
    body = module.body
    definitions = [i for i, s in enumerate(body) if isinstance(s, cst.FunctionDef) and s.name.value == name]
    made = [i for i, s in enumerate(body) if assigned_call(s, name) is not None]
    top_level = TopLevel(module)
    if len(definitions) != 1 or len(made) != 1 or definitions[0] > made[0]:
        return None
    if top_level.uses_of(name) != 1 or not top_level.bound_once(name):
        return None
    variable, call = assigned_call(body[made[0]], name)
    return _Stream(definitions[0], made[0], _metadata_taken(body, made[0], variable), variable, call)


def _metadata_taken(body, made: int, variable: str) -> int | None:
    """The index of ``meta = next(variable)`` right after the call (cell markers between)."""
    taken = made + 1
    while taken < len(body) and is_cell_marker(body[taken]):
        taken += 1
    small = single(body[taken]) if taken < len(body) else None
    if not (isinstance(small, cst.Assign) and len(small.targets) == 1
            and isinstance(small.targets[0].target, cst.Name) and isinstance(small.value, cst.Call)):
        return None
    call = small.value
    if (isinstance(call.func, cst.Name) and call.func.value == "next" and len(call.args) == 1
            and isinstance(call.args[0].value, cst.Name) and call.args[0].value.value == variable):
        return taken
    return None


def _without_metadata_first(definition: cst.FunctionDef) -> tuple[cst.BaseExpression | None, cst.FunctionDef]:
    """(what ``if yield_reader_meta: yield ...`` yields, the definition without that statement)."""
    statements = list(definition.body.body)
    for index, statement in enumerate(statements):
        yielded = _metadata_yielded(statement)
        if yielded is not None:
            del statements[index]
            return yielded, definition.with_changes(body=definition.body.with_changes(body=statements))
    return None, definition


def _metadata_yielded(statement: cst.BaseStatement) -> cst.BaseExpression | None:
    if not (isinstance(statement, cst.If) and statement.orelse is None and isinstance(statement.test, cst.Name)
            and statement.test.value == READER_META_FLAG and isinstance(statement.body, cst.IndentedBlock)
            and len(statement.body.body) == 1):
        return None
    small = single(statement.body.body[0])
    if isinstance(small, cst.Expr) and isinstance(small.value, cst.Yield) and isinstance(
            small.value.value, cst.BaseExpression):
        return small.value.value
    return None


def _metadata_matches(arguments: dict, meta: cst.BaseExpression | None, stream: _Stream) -> bool:
    """The metadata is asked for (``True``) and taken right after the call, or not asked for."""
    if READER_META_FLAG not in arguments:
        return meta is None
    value, _ = arguments.pop(READER_META_FLAG)
    if not (isinstance(value, cst.Name) and value.value in ("True", "False")) or meta is None:
        return False
    if value.value == "False":
        stream.meta_taken = None
        return True
    return stream.meta_taken is not None


def _parameter_values(parts, arguments: dict, meta, top_level: TopLevel) -> dict | None:
    """Parameter -> the expression written where it is read; None where one cannot be."""
    later = [*parts.body, cst.Expr(parts.batch_size), cst.Expr(parts.yielded), parts.target]
    at_the_call = [*parts.setup, *([cst.Expr(meta)] if meta is not None else [])]
    bound = scope_names([*parts.setup, *parts.body]).bound | {n.value for n in target_names(parts.target)}
    values = {}
    for param, (value, is_default) in arguments.items():
        read_later = any(param in variable_names(s) for s in later)
        read_at_call = any(param in variable_names(s) for s in at_the_call)
        if not (read_later or read_at_call):
            continue
        if param in bound:
            return None
        fixed = is_literal(value) or isinstance(value, cst.Name) and top_level.bound_once(value.value)
        if is_default and not fixed:
            return None  # computed when ``def`` ran
        if not (fixed or not read_later and evaluates_the_same_twice(value)):
            return None
        if isinstance(value, cst.Name) and value.value in bound:
            return None
        values[param] = value
    return values


def _rewritten(module: cst.Module, stream: _Stream, parts, meta, substitute: Substituted) -> cst.Module:
    statements = list(module.body)
    definition = statements[stream.definition]
    loop = definition.body.body[-1].visit(substitute)
    statements[stream.definition] = definition.with_changes(
        params=cst.Parameters(), body=definition.body.with_changes(body=[loop]))
    if stream.meta_taken is not None:
        line = statements[stream.meta_taken]
        assign = single(line).with_changes(value=meta.visit(substitute))
        statements[stream.meta_taken] = line.with_changes(body=[assign])
    made_line = statements[stream.made]
    call = single(made_line).value.with_changes(args=[])
    made = [*(s.visit(substitute) for s in parts.setup), made_line.with_changes(body=[single(made_line).with_changes(value=call)])]
    statements[stream.made:stream.made + 1] = with_leading(made_line, made)
    return module.with_changes(body=statements)
