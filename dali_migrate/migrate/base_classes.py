"""A legacy pipeline class derived from a base class of the same module, as one class.

Projects share the setup of their pipelines through a base class::

    class GenericPipe(Pipeline):
        def __init__(self, batch_size, num_threads, device_id, data_dir):
            super().__init__(batch_size, num_threads, device_id, seed=12)
            self.input = ops.readers.File(file_root=data_dir)

    class TrainPipe(GenericPipe):
        def __init__(self, batch_size, num_threads, device_id, data_dir, crop):
            super().__init__(batch_size, num_threads, device_id, data_dir)
            self.res = ops.Resize(resize_x=crop, resize_y=crop)

        def define_graph(self):
            jpegs, labels = self.input()
            return self.res(jpegs), labels

``TrainPipe`` builds what one class would whose ``__init__`` runs the base's body where the
subclass calls it, and which has the base's methods it does not override. That class is
converted as any other (subclass.py). What is merged: a call ``super().__init__(...)`` (or
``Base.__init__(self, ...)``) first in the subclass's ``__init__``, passing each base parameter
as the name it has there (its default where it is not passed); no other ``super()``; no name
that both bodies bind or that the base binds and the subclass reads.
"""

from __future__ import annotations

import libcst as cst

from ..imports import dotted_name
from ..visitors import Visitor, walk
from .names import is_docstring, scope_names, split_docstring
from .subclass import NotConvertible


def _methods(node: cst.ClassDef) -> tuple[list[cst.BaseStatement], dict[str, cst.FunctionDef]]:
    """(the docstring, if any; the methods by name)."""
    docstring, methods = [], {}
    for index, statement in enumerate(node.body.body):
        if index == 0 and is_docstring(statement):
            docstring = [statement]
        elif isinstance(statement, cst.FunctionDef) and not statement.decorators:
            methods[statement.name.value] = statement
        else:
            code = cst.Module([]).code_for_node(statement).strip().splitlines()[0]
            raise NotConvertible(f"`{node.name.value}` holds `{code}`: only methods without decorators are merged")
    return docstring, methods


def _body(function: cst.FunctionDef) -> list[cst.BaseStatement]:
    return split_docstring(list(function.body.body))[1]


def _base_init_call(statement: cst.BaseStatement, sub: str, base: str) -> cst.Call | None:
    """The call of ``statement`` if it is ``super().__init__(...)``, ``super(Sub, self).__init__(...)``
    or ``Base.__init__(self, ...)``."""
    if not (isinstance(statement, cst.SimpleStatementLine) and len(statement.body) == 1
            and isinstance(statement.body[0], cst.Expr) and isinstance(statement.body[0].value, cst.Call)):
        return None
    call = statement.body[0].value
    if not (isinstance(call.func, cst.Attribute) and call.func.attr.value == "__init__"):
        return None
    owner = call.func.value
    if isinstance(owner, cst.Call) and dotted_name(owner.func) == "super":
        given = [dotted_name(a.value) for a in owner.args]
        return call if given in ([], [sub, "self"]) else None
    if dotted_name(owner) == base and call.args and dotted_name(call.args[0].value) == "self":
        return call.with_changes(args=call.args[1:])
    return None


def _bindings(call: cst.Call, init: cst.FunctionDef, base: str) -> list[cst.BaseStatement]:
    """``name = default`` for each parameter of the base's ``__init__`` the call does not pass;
    NotConvertible where it passes anything but a parameter's own name."""
    params = [p for p in [*init.params.posonly_params, *init.params.params][1:]]
    if isinstance(init.params.star_arg, cst.Param) or init.params.star_kwarg or init.params.kwonly_params:
        raise NotConvertible(f"`{base}.__init__` takes *args, **kwargs or keyword-only arguments")
    positional = [a for a in call.args if a.keyword is None]
    if len(positional) > len(params) or any(a.star for a in call.args):
        raise NotConvertible(f"the call of `{base}.__init__` passes *args, **kwargs or too many arguments")
    named = [(param.name.value, arg) for param, arg in zip(params, positional)]
    named += [(a.keyword.value, a) for a in call.args if a.keyword is not None]
    passed = {name for name, _ in named}
    for name, arg in named:
        if dotted_name(arg.value) != name:
            code = cst.Module([]).code_for_node(arg.value)
            raise NotConvertible(f"the call of `{base}.__init__` passes `{code}` for `{name}`: pass `{name}` itself")
    bindings = []
    for param in params:
        if param.name.value in passed:
            continue
        if param.default is None:
            raise NotConvertible(f"the call of `{base}.__init__` does not pass `{param.name.value}`")
        bindings.append(cst.SimpleStatementLine([cst.Assign([cst.AssignTarget(param.name)], param.default)]))
    return bindings


def _calls_super(function: cst.FunctionDef) -> bool:
    found = []

    class Super(Visitor):
        def visit_Call(self, node: cst.Call) -> None:
            if dotted_name(node.func) == "super":
                found.append(node)

    walk(function, Super())
    return bool(found)


def merged_with_base(sub: cst.ClassDef, base: cst.ClassDef) -> cst.ClassDef:
    """``sub`` as one class with ``base``: its bases, the merged ``__init__``, the base's other
    methods where ``sub`` does not define them."""
    sub_name, base_name = sub.name.value, base.name.value
    docstring, sub_methods = _methods(sub)
    _, base_methods = _methods(base)
    if "__init__" not in base_methods:
        raise NotConvertible(f"`{base_name}` has no `__init__`")
    init = _merged_init(sub_methods.get("__init__"), base_methods["__init__"], sub_name, base_name)
    for name, method in sub_methods.items():
        if name != "__init__" and _calls_super(method):
            raise NotConvertible(f"`{sub_name}.{name}` calls `super()`")
    methods = {**{n: m for n, m in base_methods.items() if n != "__init__"},
               **{n: m for n, m in sub_methods.items() if n != "__init__"}}
    body = [*docstring, init, *methods.values()]
    return sub.with_changes(bases=base.bases, body=sub.body.with_changes(body=body))


def _merged_init(sub_init: cst.FunctionDef | None, base_init: cst.FunctionDef, sub: str, base: str) -> cst.FunctionDef:
    if sub_init is None:
        return base_init
    sub_body = _body(sub_init)
    call = _base_init_call(sub_body[0], sub, base) if sub_body else None
    if call is None:
        raise NotConvertible(f"`{sub}.__init__` must start with `super().__init__(...)`")
    if _calls_super(sub_init.with_changes(body=sub_init.body.with_changes(body=sub_body[1:]))):
        raise NotConvertible(f"`{sub}.__init__` calls `super()` again")
    base_body = _body(base_init)
    inlined = [*_bindings(call, base_init, base), *base_body[1:]]
    shared = scope_names(inlined).bound & (scope_names(sub_body[1:]).bound | scope_names(sub_body[1:]).loaded)
    if shared:
        raise NotConvertible(f"`{sorted(shared)[0]}` is set in `{base}.__init__` and used in `{sub}.__init__`")
    body = [*base_body[:1], *inlined, *sub_body[1:]]
    return sub_init.with_changes(body=sub_init.body.with_changes(body=body))
