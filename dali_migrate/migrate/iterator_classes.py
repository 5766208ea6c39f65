"""A project's own subclass of ``DALIGenericIterator`` over migrated pipelines (DM010).

Training code wraps DALI's iterator to adapt what a step gives::

    class LightningWrapper(DALIGenericIterator):
        def __init__(self, pipe, **kwargs):
            super().__init__(pipe, **kwargs)

        def __next__(self):
            return super().__next__()[0]

``DALITorchLoader`` gives what the iterator gave, step for step, so such a class can derive from
it instead, and its calls are rewritten as the iterator's are. That holds only where the class
reaches nothing of DALI's iterator but what the loader has too: its ``__init__`` hands its own
parameters and ``**kwargs`` to ``super().__init__`` unchanged, ``super()`` is asked only for
what both classes have, ``self.`` reads only its own attributes and the ones both have, and it
names nothing that may be one of DALI's internals. Anything else raises NotMigratable, which
keeps the pipelines it wraps in pipeline mode.
"""

from __future__ import annotations

import libcst as cst

from ..imports import dotted_name
from ..visitors import Visitor, walk
from .names import is_docstring
from .reader_meta import NotMigratable

PYTORCH_ITERATORS = frozenset({"nvidia.dali.plugin.pytorch.DALIGenericIterator",
                               "nvidia.dali.plugin.pytorch.DALIClassificationIterator"})
# what DALI's iterator and DALITorchLoader both have, meaning the same
SHARED_ATTRIBUTES = frozenset({"batch_size", "_size", "size", "output_map", "reset"})
SHARED_METHODS = frozenset({"__init__", "__next__", "__iter__", "__len__", "reset"})
# public names of DALI's iterator the class must not define: they would replace its own
ITERATOR_PUBLIC = frozenset({"reset", "size", "batch_size", "output_map", "checkpoints", "next"})


def check_iterator_class(node: cst.ClassDef, base: str, module: cst.Module) -> None:
    """NotMigratable unless ``node`` (deriving from ``base``) can derive from DALITorchLoader."""
    name = node.name.value
    if base not in PYTORCH_ITERATORS:
        raise NotMigratable(f"`{name}` subclasses `{base.rsplit('.', 1)[-1]}`; only subclasses of PyTorch's "
                            "`DALIGenericIterator` and `DALIClassificationIterator` are migrated")
    if node.decorators or node.keywords:
        raise NotMigratable(f"`{name}` has class decorators or keywords")
    methods = _methods(node)
    if "__init__" in methods:
        _check_forwarding_init(name, methods["__init__"])
    _check_own_names(name, node, methods)
    _check_reaches(name, node, set(methods) | _assigned_attributes(node))
    _check_only_called(name, module)


def _methods(node: cst.ClassDef) -> dict[str, cst.FunctionDef]:
    methods = {}
    for statement in node.body.body:
        if isinstance(statement, cst.FunctionDef):
            methods[statement.name.value] = statement
        elif not is_docstring(statement) and not _is_pass(statement):
            code = cst.Module([]).code_for_node(statement).strip().splitlines()[0]
            raise NotMigratable(f"`{node.name.value}` has more than methods in its body (`{code}`)")
    return methods


def _is_pass(statement: cst.BaseStatement) -> bool:
    """``pass`` or ``...``: a class that only renames DALI's iterator."""
    return isinstance(statement, cst.SimpleStatementLine) and all(
        isinstance(s, cst.Pass) or isinstance(s, cst.Expr) and isinstance(s.value, cst.Ellipsis) for s in statement.body)


def _check_forwarding_init(name: str, init: cst.FunctionDef) -> None:
    """``def __init__(self, pipe, **kwargs): super().__init__(pipe, **kwargs)`` (or ``*args,
    **kwargs``, as DALI's Lightning example writes it): each parameter passed on as it came, so
    that the call binds as DALI's iterator binds it."""
    params = init.params
    positional = [p.name.value for p in params.params]
    star = params.star_arg.name.value if isinstance(params.star_arg, cst.Param) else None
    if (positional[:1] != ["self"] or params.posonly_params or params.kwonly_params or params.star_kwarg is None
            or any(p.default is not None for p in params.params)):
        raise NotMigratable(f"`{name}.__init__` must take `self`, its positional parameters without defaults "
                            "(or `*args`) and `**kwargs`, and pass them on to `super().__init__`")
    body = [s for s in init.body.body if not is_docstring(s)]
    call = _super_call(body[0]) if body else None
    forwarded = [dotted_name(a.value) for a in call.args if not a.star and a.keyword is None] if call else []
    single = [dotted_name(a.value) for a in call.args if a.star == "*"] if call else []
    double = [a for a in call.args if a.star == "**"] if call else []
    if (call is None or call.func.attr.value != "__init__" or forwarded != positional[1:]
            or single != ([star] if star else [])
            or len(double) != 1 or dotted_name(double[0].value) != params.star_kwarg.name.value
            or len(call.args) != len(forwarded) + len(single) + 1):
        raise NotMigratable(f"`{name}.__init__` must begin with `super().__init__(...)` passing on its own "
                            "parameters and `**kwargs` unchanged")


def _super_call(statement: cst.BaseStatement) -> cst.Call | None:
    if isinstance(statement, cst.SimpleStatementLine) and isinstance(statement.body[0], cst.Expr):
        call = statement.body[0].value
        if (isinstance(call, cst.Call) and isinstance(call.func, cst.Attribute)
                and isinstance(call.func.value, cst.Call) and dotted_name(call.func.value.func) == "super"
                and not call.func.value.args):
            return call
    return None


def _check_own_names(name: str, node: cst.ClassDef, methods: dict[str, cst.FunctionDef]) -> None:
    for own in sorted(set(methods) | _assigned_attributes(node)):
        private = own.startswith("_") and own not in SHARED_METHODS
        if private or own in ITERATOR_PUBLIC:
            raise NotMigratable(f"`{name}` defines `{own}`, which may be one of `DALIGenericIterator`'s own "
                                "names; give it another name")


def _assigned_attributes(node: cst.ClassDef) -> set[str]:
    found: set[str] = set()

    class Stores(Visitor):
        def visit_AssignTarget(self, target: cst.AssignTarget) -> None:
            if isinstance(target.target, cst.Attribute) and dotted_name(target.target.value) == "self":
                found.add(target.target.attr.value)

    walk(node, Stores())
    return found


def _check_reaches(name: str, node: cst.ClassDef, own: set[str]) -> None:
    """``self.x`` only for its own names and those both classes have; ``super().m()`` only
    for the methods both have."""
    reaches = _Reaches()
    walk(node, reaches)
    for attribute in sorted(reaches.on_self - own - SHARED_ATTRIBUTES - SHARED_METHODS):
        raise NotMigratable(f"`{name}` uses `self.{attribute}` of `DALIGenericIterator`, which the migrated "
                            "loader does not have")
    for method in sorted(reaches.on_super - SHARED_METHODS):
        raise NotMigratable(f"`{name}` calls `super().{method}`, which the migrated loader does not have")
    if reaches.bare_super:
        raise NotMigratable(f"`{name}` uses `super()` other than to call a method of it")


class _Reaches(Visitor):
    def __init__(self) -> None:
        self.on_self: set[str] = set()
        self.on_super: set[str] = set()
        self.bare_super = False
        self._seen_super: set[int] = set()

    def visit_Attribute(self, node: cst.Attribute) -> None:
        if dotted_name(node.value) == "self":
            self.on_self.add(node.attr.value)
        elif isinstance(node.value, cst.Call) and dotted_name(node.value.func) == "super" and not node.value.args:
            self.on_super.add(node.attr.value)
            self._seen_super.add(id(node.value))

    def visit_Call(self, node: cst.Call) -> None:
        if dotted_name(node.func) == "super" and id(node) not in self._seen_super:
            self.bare_super = True  # ``super(Wrapper, self)`` or super() handed on


def _check_only_called(name: str, module: cst.Module) -> None:
    uses = _Uses(name)
    walk(module, uses)
    if uses.other:
        raise NotMigratable(f"`{name}` is used other than by calling it (its base class changes)")


class _Uses(Visitor):
    """Mentions of the class's name other than its definition and calls of it."""

    def __init__(self, name: str) -> None:
        self.name = name
        self.other = 0
        self._accounted: set[int] = set()

    def visit_ClassDef(self, node: cst.ClassDef) -> None:
        self._accounted.add(id(node.name))

    def visit_Call(self, node: cst.Call) -> None:
        self._accounted.add(id(node.func))

    def visit_Attribute(self, node: cst.Attribute) -> None:
        self._accounted.add(id(node.attr))

    def visit_Name(self, node: cst.Name) -> None:
        if node.value == self.name and id(node) not in self._accounted:
            self.other += 1


def with_loader_base(module: cst.Module, classes: set[str], loader_class: str) -> cst.Module:
    """``class Wrapper(DALIGenericIterator)`` -> ``class Wrapper(DALITorchLoader)`` for ``classes``."""

    class Rebase(cst.CSTTransformer):
        def leave_ClassDef(self, original_node: cst.ClassDef, updated_node: cst.ClassDef) -> cst.ClassDef:
            if updated_node.name.value not in classes or len(updated_node.bases) != 1:
                return updated_node
            base = updated_node.bases[0]
            return updated_node.with_changes(bases=[base.with_changes(value=cst.Name(loader_class))])

    return module.visit(Rebase())
