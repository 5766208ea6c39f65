"""Names a module reads that nothing binds: where the migration wrote one (``self`` in a plain
function, a ``batch_size`` local to another method), the migrated code would raise NameError.

Read from CPython's own symbol tables (``symtable``), which know every scope's locals, free and
global names as the compiler does; the lines come from the ``ast``. A module with a star import
binds names no table shows, and is not judged.
"""

from __future__ import annotations

import ast
import builtins
import symtable

BUILTINS = frozenset(dir(builtins)) | {"__file__", "__name__", "__doc__", "__spec__", "__loader__", "__package__",
                                       "__builtins__", "__path__", "__annotations__", "__dict__", "__class__"}


def undefined_names(source: str, tree: ast.Module) -> dict[str, int]:
    """Each global name the module reads and nothing binds, with the first line it is read on."""
    if any(isinstance(node, ast.ImportFrom) and any(alias.name == "*" for alias in node.names) for node in tree.body):
        return {}
    try:
        table = symtable.symtable(source, "<migrated>", "exec")
    except SyntaxError:
        return {}
    bound = {symbol.get_name() for symbol in table.get_symbols()
             if symbol.is_assigned() or symbol.is_imported() or symbol.is_namespace()}
    bound |= _declared_global(table)
    unbound = {name for name in _global_reads(table) if name not in bound and name not in BUILTINS}
    if not unbound:
        return {}
    lines: dict[str, int] = {}
    for node in ast.walk(tree):
        if isinstance(node, ast.Name) and isinstance(node.ctx, ast.Load) and node.id in unbound:
            lines[node.id] = min(lines.get(node.id, node.lineno), node.lineno)
    return lines


def _global_reads(table: symtable.SymbolTable) -> set[str]:
    """Names read as globals in ``table`` or any scope inside it."""
    found = {symbol.get_name() for symbol in table.get_symbols()
             if symbol.is_referenced() and (symbol.is_global() or table.get_type() == "module")
             and not symbol.is_assigned() and not symbol.is_imported()}
    for child in table.get_children():
        found |= _global_reads(child)
    return found


def _declared_global(table: symtable.SymbolTable) -> set[str]:
    """Names some function declares ``global`` and assigns: the module has them once it runs."""
    found = {symbol.get_name() for symbol in table.get_symbols()
             if symbol.is_declared_global() and symbol.is_assigned()} if table.get_type() != "module" else set()
    for child in table.get_children():
        found |= _declared_global(child)
    return found
