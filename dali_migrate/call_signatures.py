"""Calls a module makes of its own functions that their signatures refuse: where the migration
changed a function's parameters (a pipeline that became a generator, a ``@data_iterator``
that became a loader function) and a call still passes what it no longer takes, the migrated
code would raise TypeError.

Only module-level functions whose parameters differ from the original's are judged, and only
plain calls by name that pass no ``*args``. A ``**mapping`` counts as its keys where it is a
dict display with string keys bound once at the top of the module; any other is refused, since
what it holds may no longer fit.
"""

from __future__ import annotations

import ast


def refused_calls(tree: ast.Module, original: ast.Module | None) -> list[tuple[str, int, str]]:
    """(function, line, why) for each call the function's new signature refuses."""
    before = {name: _shape(args) for name, args in _signatures(original).items()} if original is not None else {}
    changed = {name: args for name, args in _signatures(tree).items() if before.get(name) != _shape(args)}
    found = []
    mappings = _module_dict_keys(tree)
    for node in ast.walk(tree):
        if isinstance(node, ast.Call) and isinstance(node.func, ast.Name) and node.func.id in changed:
            why = _refusal(changed[node.func.id], node, mappings)
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


def _module_dict_keys(tree: ast.Module) -> dict[str, list[str]]:
    """``NAME = {"key": ...}`` at the top of the module, NAME bound nowhere else there -> its keys."""
    bound: dict[str, list[ast.expr]] = {}
    for node in tree.body:
        for target in node.targets if isinstance(node, ast.Assign) else []:
            if isinstance(target, ast.Name):
                bound.setdefault(target.id, []).append(node.value)
    keys = {}
    for name, values in bound.items():
        if len(values) == 1 and isinstance(values[0], ast.Dict) and all(
                isinstance(k, ast.Constant) and isinstance(k.value, str) for k in values[0].keys):
            keys[name] = [k.value for k in values[0].keys]
    return keys


def _keywords(call: ast.Call, mappings: dict[str, list[str]]) -> list[str] | None:
    """The names the call passes by keyword, or None where a ``**mapping`` hides them."""
    names = []
    for keyword in call.keywords:
        if keyword.arg is not None:
            names.append(keyword.arg)
        elif isinstance(keyword.value, ast.Name) and keyword.value.id in mappings:
            names += mappings[keyword.value.id]
        else:
            return None
    return names


def _refusal(args: ast.arguments, call: ast.Call, mappings: dict[str, list[str]]) -> str:
    if any(isinstance(a, ast.Starred) for a in call.args):
        return ""
    keywords = _keywords(call, mappings)
    if keywords is None:
        return "is given a `**mapping` whose keys this run cannot see, and takes other arguments than it did"
    positional = [*args.posonlyargs, *args.args]
    if len(call.args) > len(positional) and args.vararg is None:
        return f"takes {len(positional)} positional argument(s), and is given {len(call.args)}"
    named = {a.arg for a in [*args.args, *args.kwonlyargs]}
    for keyword in keywords:
        if keyword not in named and args.kwarg is None:
            return f"takes no `{keyword}=` argument"
    given = {a.arg for a in positional[:len(call.args)]} | set(keywords)
    required = [a.arg for a in positional[:len(positional) - len(args.defaults)]]
    required += [a.arg for a, default in zip(args.kwonlyargs, args.kw_defaults) if default is None]
    missing = [name for name in required if name not in given]
    return f"needs `{missing[0]}`, which this call does not give" if missing else ""
