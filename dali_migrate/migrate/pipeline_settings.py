"""``pipe.max_batch_size`` (and ``batch_size``, ``num_threads``, ``device_id``) read outside the
graph after a migration (DM003).

These properties give back what the pipeline was made with. A migrated pipeline is a
generator, which has none of them, so each read becomes the value of the call that made it::

    pipe = image_pipe(root, batch_size=3, num_threads=1, device_id=None)
    steps = size // pipe.max_batch_size        ->  steps = size // 3

A value that is not a literal is kept in a variable set right after that call, where it is
evaluated a second time; only expressions that give the same value again and do nothing else
are copied (``pure.evaluates_the_same_twice``)::

    pipe = image_pipe(root, batch_size=args.batch_size)
    pipe_batch_size = args.batch_size
    steps = size // pipe_batch_size

A setting the call does not give comes from the ``@pipeline_def`` decorator where that gives a
literal; anything else (a DALI default, a subclass that computes it) keeps the pipeline.
"""

from __future__ import annotations

import libcst as cst

from ..analysis import ModuleFacts, Site
from ..imports import dotted_name
from ..pipeline_scopes import spelled
from .names import unique_name
from .pure import LITERALS, evaluates_the_same_twice

# the property -> the pipeline argument it gives back
SETTING_ARGUMENTS = {"max_batch_size": "batch_size", "batch_size": "batch_size", "num_threads": "num_threads",
                     "device_id": "device_id"}


class NotMigratable(Exception):
    """Why a setting read is left for a person; the message ends up in a TODO at ``site``."""

    def __init__(self, site: Site, message: str) -> None:
        super().__init__(message)
        self.site = site


def setting_sites(facts: ModuleFacts, pipe_vars: list[str]) -> list[Site]:
    return [site for site in facts.pipeline_attribute_reads if site.origin in pipe_vars]


def setting_value(plan, site: Site, factory_call: cst.Call) -> cst.BaseExpression:
    """What ``factory_call`` gave the setting ``site`` reads."""
    argument = SETTING_ARGUMENTS[site.detail]
    given = _given(factory_call, argument)
    if given is None:
        given = plan.pipeline_args.get(argument)
        if given is not None and not is_scalar_literal(given) and not _written_for_a_with_graph(plan):
            raise NotMigratable(site, f"`{site.name}.{site.detail}` reads `{argument}=`, which the decorator computes: "
                                f"pass `{argument}=` where `{spelled(site.origin)}` is made")
    if given is None:
        raise NotMigratable(site, f"`{site.name}.{site.detail}` reads `{argument}=`, which "
                            f"`{dotted_name(factory_call.func)}(...)` does not give: pass it there")
    if not evaluates_the_same_twice(given):
        raise NotMigratable(site, f"`{site.name}.{site.detail}` reads `{argument}=`, given as an expression that may not "
                            f"give the same value twice: bind it to a variable before `{spelled(site.origin)}` is made")
    return given


def _given(call: cst.Call, argument: str) -> cst.BaseExpression | None:
    """Pipeline arguments are keywords at the calls a plan reads: ``@pipeline_def`` takes them so,
    and normalize.py gives ``Pipeline(8, 2, 0)`` and subclasses' arguments to a decorator."""
    return next((arg.value for arg in call.args if arg.keyword is not None and arg.keyword.value == argument), None)


def _written_for_a_with_graph(plan) -> bool:
    """The decorator normalize.py wrote for ``Pipeline(...)`` + ``with pipe:``: its arguments are
    those of ``Pipeline(...)``, evaluated where the pipeline is made, like the call's."""
    from .normalize import SYNTHETIC_DECORATOR

    decorator = plan.graph.decorator
    return decorator is not None and isinstance(decorator.decorator, cst.Call) and \
        dotted_name(decorator.decorator.func) == SYNTHETIC_DECORATOR


def is_scalar_literal(node: cst.BaseExpression | None) -> bool:
    return isinstance(node, LITERALS) or isinstance(node, cst.Name) and node.value in ("None", "True", "False")


def variable_base(site: Site) -> str:
    """``pipe_batch_size`` for ``pipe.max_batch_size``; ``self.pipe``'s is ``pipe_batch_size`` too."""
    return f"{spelled(site.origin).removeprefix('self.')}_{SETTING_ARGUMENTS[site.detail]}"


class SettingNames:
    """One new variable per pipeline variable and setting (set after each call that binds the
    pipeline variable, so it follows the variable's rebindings), named apart from every name of
    the module (``taken``): a user's own ``pipe_batch_size`` is not overwritten."""

    def __init__(self, taken: set[str]) -> None:
        self.taken = taken
        self.chosen: dict[tuple[str, str], str] = {}

    def name(self, site: Site, on_self: bool) -> str:
        key = (site.origin, SETTING_ARGUMENTS[site.detail])
        if key not in self.chosen:  # an attribute (``self.pipe_batch_size``) takes no local name
            self.chosen[key] = unique_name(variable_base(site), set(self.taken) if on_self else self.taken)
        return self.chosen[key]


def setting_rewrite(plan, site: Site, factory_call: cst.Call, on_self: bool,
                    names: SettingNames) -> tuple[cst.BaseExpression, cst.BaseStatement | None]:
    """The expression ``site`` becomes, and the statement to put after ``factory_call`` (None
    for a literal, which is copied)."""
    value = setting_value(plan, site, factory_call)
    if is_scalar_literal(value):
        return value, None
    name = ("self." if on_self else "") + names.name(site, on_self)
    statement = cst.SimpleStatementLine([cst.Assign([cst.AssignTarget(cst.parse_expression(name))], value)])
    return cst.parse_expression(name), statement
