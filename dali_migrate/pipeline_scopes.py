"""Which pipeline variable a name stands for where it is read.

A pipeline variable is keyed by where it is bound: ``pipe`` bound at module level (or an
attribute such as ``self.pipe``) is ``pipe``; ``pipe`` bound inside ``train()`` is
``pipe@train#N``, another variable than ``evaluate()``'s own ``pipe``. A function's own names
(its parameters, what its body binds) hide a pipeline variable of the same name outside it,
as Python does; so do a lambda's parameters and a comprehension's ``for`` targets. Messages
show ``spelled(key)``; rules and plans compare keys.

A class body is a scope too (``pipe`` bound in ``class Settings:`` is ``pipe@Settings#N``), but
as in Python only for the statements of that body: the methods it defines look past it.
"""

from __future__ import annotations

from collections.abc import Callable

import libcst as cst

from .imports import dotted_name
from .values import attribute_key, spelled
from .visitors import Visitor, walk
from .scopes import all_params, class_locals, function_locals, scope_names, target_names


def module_class_bases(module: cst.Module) -> dict[str, list[str]]:
    """Every class the module defines (nested ones too), with its bases as spelled."""
    found: dict[str, list[str]] = {}

    class Classes(Visitor):
        def visit_ClassDef(self, node: cst.ClassDef) -> None:
            found.setdefault(node.name.value, []).extend(
                name for base in node.bases if (name := dotted_name(base.value)) is not None)

    walk(module, Classes())  # one frame per level: code as deep as Python allows
    return found


class _Frame:
    def __init__(self, label: str, number: int, find_locals: Callable[[], set[str]],
                 is_class: bool = False) -> None:
        self.label = label
        self.number = number
        self.is_class = is_class
        self.keys: dict[str, str] = {}  # names this scope binds to pipelines
        self._find_locals = find_locals
        self._locals: set[str] | None = None

    def local_names(self) -> set[str]:
        if self._locals is None:  # walked only where a pipeline name is read or bound
            self._locals = self._find_locals()
        return self._locals


def lambda_locals(node: cst.Lambda) -> set[str]:
    """A lambda's parameters, less any name its defaults read (those are read outside it)."""
    names = {param.name.value for param in all_params(node.params)}
    for star in (node.params.star_arg, node.params.star_kwarg):
        if isinstance(star, cst.Param):
            names.add(star.name.value)
    defaults = [param.default for param in all_params(node.params) if param.default is not None]
    return names - scope_names(defaults).loaded


def comprehension_locals(node: cst.BaseComp) -> set[str]:
    """The ``for`` targets of a comprehension, less any name its first iterable reads: that one is
    evaluated outside (``[p for pipe in [pipe]]`` reads the outer ``pipe``), so such a name is
    left to the enclosing scope, which errs towards keeping a pipeline."""
    names: set[str] = set()
    clause: cst.CompFor | None = node.for_in
    while clause is not None:
        names |= {name.value for name in target_names(clause.target)}
        clause = clause.inner_for_in
    return names - scope_names([node.for_in.iter]).loaded


class PipelineScopes:
    def __init__(self, parameter_keys: dict[int, str],
                 find_families: Callable[[], dict[str, str]] = dict) -> None:
        self.frames: list[_Frame] = []
        # class name -> its family (values.class_families), read when a class first binds or
        # reads a ``self.`` pipeline: most modules never do
        self._find_families = find_families
        self._families: dict[str, str] | None = None
        self.module_keys: set[str] = set()  # bound at module level, or attributes (``self.pipe``)
        self.spelled: set[str] = set()  # every name some key is spelled with
        self.parameter_keys = parameter_keys  # id(parameter Name) -> key (pipeline_parameters.py)
        self.spelled.update(spelled(key) for key in parameter_keys.values())
        self._count = 0

    def declare_module_names(self, names: set[str]) -> None:
        """Module-level pipeline variables, known before any function that reads them."""
        self.module_keys |= names
        self.spelled |= names

    def enter(self, function: cst.FunctionDef) -> None:
        frame = self._push(function.name.value, lambda: function_locals(function))
        for param in all_params(function.params) if self.parameter_keys else ():
            key = self.parameter_keys.get(id(param.name))
            if key is not None:
                frame.keys[param.name.value] = key

    def enter_lambda(self, node: cst.Lambda) -> None:
        self._push("lambda", lambda: lambda_locals(node))

    def enter_comprehension(self, node: cst.BaseComp) -> None:
        self._push("comprehension", lambda: comprehension_locals(node))

    def enter_class(self, node: cst.ClassDef) -> None:
        self._push(node.name.value, lambda: class_locals(node), is_class=True)

    def _push(self, label: str, find_locals: Callable[[], set[str]], is_class: bool = False) -> _Frame:
        self._count += 1
        frame = _Frame(label, self._count, find_locals, is_class)
        self.frames.append(frame)
        return frame

    def leave(self) -> None:
        self.frames.pop()

    def bind(self, name: str) -> str:
        """The key of ``name`` bound to a pipeline here."""
        self.spelled.add(spelled(name))
        if "." in name:
            key = self._attribute_key(name)
            self.module_keys.add(key)
            return key
        frame = self._owner(name)
        if frame is None:
            self.module_keys.add(name)
            return name
        key = frame.keys[name] = f"{name}@{frame.label}#{frame.number}"
        return key

    def key(self, node: cst.BaseExpression | None) -> str | None:
        """The pipeline variable ``node`` reads here, or None."""
        name = dotted_name(node) if node is not None else None
        if name is None or spelled(name) not in self.spelled:
            return None
        if "." in name:
            key = self._attribute_key(name)
            return key if key in self.module_keys else None
        for frame in self._visible_frames():
            if name in frame.keys:
                return frame.keys[name]
            if name in frame.local_names():
                return None
        return name if name in self.module_keys else None

    def _attribute_key(self, name: str) -> str:
        """``self.pipe`` of one class is not ``self.pipe`` of an unrelated one: inside a class,
        an attribute of ``self`` is keyed by the class's family (``self.pipe@TrainLoader``)."""
        owner = next((frame for frame in reversed(self.frames) if frame.is_class), None)
        if owner is None or not name.startswith("self."):
            return name
        if self._families is None:
            self._families = self._find_families()
        return attribute_key(name, owner.label, self._families)

    def is_local(self, name: str) -> bool:
        """Whether a function being read binds ``name`` itself (hiding a module function of that name)."""
        return any(name in frame.keys or name in frame.local_names() for frame in self._visible_frames())

    def _visible_frames(self) -> list[_Frame]:
        """The scopes a name read here is looked up in, innermost first: a class body only for
        its own statements."""
        return [frame for position, frame in enumerate(reversed(self.frames))
                if position == 0 or not frame.is_class]

    def _owner(self, name: str) -> _Frame | None:
        """The function whose local ``name`` is, or None for the module (and for attributes)."""
        if "." in name or not self.frames:
            return None
        frame = self.frames[-1]
        return frame if name in frame.local_names() else self._enclosing_owner(name)

    def _enclosing_owner(self, name: str) -> _Frame | None:
        """``nonlocal pipe`` / ``global pipe``: the nearest enclosing function that owns it."""
        for frame in self._visible_frames()[1:]:
            if name in frame.local_names():
                return frame
        return None
