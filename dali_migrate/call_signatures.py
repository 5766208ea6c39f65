"""Calls a module makes of its own functions that their signatures refuse: where the migration
changed a function's parameters (a pipeline that became a generator, a ``@data_iterator``
that became a loader function) and a call still passes what it no longer takes, the migrated
code would raise TypeError.

Only module-level functions whose parameters differ from the original's are judged, and only
plain calls by name that pass no ``*args``/``**kwargs``.
"""

from __future__ import annotations

import ast


def refused_calls(tree: ast.Module, original: ast.Module | None) -> list[tuple[str, int, str]]:
    """(function, line, why) for each call the function's new signature refuses."""
    before = {name: _shape(args) for name, args in _signatures(original).items()} if original is not None else {}
    changed = {name: args for name, args in _signatures(tree).items() if before.get(name) != _shape(args)}
    found = []
    for node in ast.walk(tree):
        if isinstance(node, ast.Call) and isinstance(node.func, ast.Name) and node.func.id in changed:
            why = _refusal(changed[node.func.id], node)
            if why:
                found.append((node.func.id, node.lineno, why))
    return found


def _signatures(tree: ast.Module) -> dict[str, ast.arguments]:
    """Module-level functions defined once, by name."""
    defined: dict[str, list[ast.arguments]] = {}
    for node in tree.body:
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)):
            defined.setdefault(node.name, []).append(node.args)
    return {name: args[0] for name, args in defined.items() if len(args) == 1}


def _shape(args: ast.arguments):
    return ast.dump(args)


def _refusal(args: ast.arguments, call: ast.Call) -> str:
    if any(isinstance(a, ast.Starred) for a in call.args) or any(k.arg is None for k in call.keywords):
        return ""
    positional = [*args.posonlyargs, *args.args]
    if len(call.args) > len(positional) and args.vararg is None:
        return f"takes {len(positional)} positional argument(s), and is given {len(call.args)}"
    named = {a.arg for a in [*args.args, *args.kwonlyargs]}
    for keyword in call.keywords:
        if keyword.arg not in named and args.kwarg is None:
            return f"takes no `{keyword.arg}=` argument"
    given = {a.arg for a in positional[:len(call.args)]} | {k.arg for k in call.keywords}
    required = [a.arg for a in positional[:len(positional) - len(args.defaults)]]
    required += [a.arg for a, default in zip(args.kwonlyargs, args.kw_defaults) if default is None]
    missing = [name for name in required if name not in given]
    return f"needs `{missing[0]}`, which this call does not give" if missing else ""
