"""Which pipeline variable a name stands for where it is read.

A pipeline variable is keyed by where it is bound: ``pipe`` bound at module level (or an
attribute such as ``self.pipe``) is ``pipe``; ``pipe`` bound inside ``train()`` is
``pipe@train#N``, another variable than ``evaluate()``'s own ``pipe``. A function's own names
(its parameters, what its body binds) hide a pipeline variable of the same name outside it,
as Python does. Messages show ``spelled(key)``; rules and plans compare keys.
"""

from __future__ import annotations

import libcst as cst

from .imports import dotted_name
from .scopes import function_locals


def spelled(key: str) -> str:
    """The variable's name as the code spells it."""
    return key.split("@", 1)[0]


class _Frame:
    def __init__(self, function: cst.FunctionDef, number: int) -> None:
        self.function = function
        self.number = number
        self.keys: dict[str, str] = {}  # names this function binds to pipelines
        self._locals: set[str] | None = None

    def local_names(self) -> set[str]:
        if self._locals is None:  # walked only where a pipeline name is read or bound
            self._locals = function_locals(self.function)
        return self._locals


class PipelineScopes:
    def __init__(self, parameter_keys: dict[int, str]) -> None:
        self.frames: list[_Frame] = []
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
        self._count += 1
        frame = _Frame(function, self._count)
        if self.parameter_keys:
            params = function.params
            for param in [*params.posonly_params, *params.params, *params.kwonly_params]:
                key = self.parameter_keys.get(id(param.name))
                if key is not None:
                    frame.keys[param.name.value] = key
        self.frames.append(frame)

    def leave(self) -> None:
        self.frames.pop()

    def bind(self, name: str) -> str:
        """The key of ``name`` bound to a pipeline here."""
        self.spelled.add(spelled(name))
        frame = self._owner(name)
        if frame is None:
            self.module_keys.add(name)
            return name
        key = frame.keys[name] = f"{name}@{frame.function.name.value}#{frame.number}"
        return key

    def key(self, node: cst.BaseExpression | None) -> str | None:
        """The pipeline variable ``node`` reads here, or None."""
        name = dotted_name(node) if node is not None else None
        if name is None or spelled(name) not in self.spelled:
            return None
        if "." in name:
            return name if name in self.module_keys else None
        for frame in reversed(self.frames):
            if name in frame.keys:
                return frame.keys[name]
            if name in frame.local_names():
                return None
        return name if name in self.module_keys else None

    def is_local(self, name: str) -> bool:
        """Whether a function being read binds ``name`` itself (hiding a module function of that name)."""
        return any(name in frame.keys or name in frame.local_names() for frame in self.frames)

    def _owner(self, name: str) -> _Frame | None:
        """The function whose local ``name`` is, or None for the module (and for attributes)."""
        if "." in name or not self.frames:
            return None
        frame = self.frames[-1]
        return frame if name in frame.local_names() else self._enclosing_owner(name)

    def _enclosing_owner(self, name: str) -> _Frame | None:
        """``nonlocal pipe`` / ``global pipe``: the nearest enclosing function that owns it."""
        for frame in reversed(self.frames[:-1]):
            if name in frame.local_names():
                return frame
        return None
