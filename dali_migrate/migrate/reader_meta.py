"""``pipe.epoch_size(...)`` and ``pipe.reader_meta(...)`` after a migration (DM017), and the
metadata the PyTorch loader needs (DM010).

The metadata comes from the reader the pipeline uses. The migrated generator takes
``yield_reader_meta=True`` from the callers that need it, and its first ``next()`` gives the
reader's ``get_metadata()`` (the reader is made with ``max_batch_size=batch_size``, so that it
can answer before its first epoch; measured on DALI 2.4: the same batches follow)::

    pipe = train(DATA_DIR, batch_size=4, yield_reader_meta=True)
    pipe_reader_meta = next(pipe)

``pipe.epoch_size("Reader")`` is the padded epoch size (``epoch_size_padded``: 12, not 11,
for 11 files in 3 padded shards), ``pipe.reader_meta("Reader")`` the whole dictionary. With
several readers the first ``next()`` gives a dictionary by reader name.

A pipeline defined in another module was migrated there without knowing its callers, and a
checkpointed reader takes its saved state when it is first built: their metadata still comes
from a second reader built with the same arguments right after the pipeline is created.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Protocol

import libcst as cst


from ..analysis import RUN_METHODS, ModuleFacts, Site, container_elements, iterated_pipeline
from ..imports import code_of, dotted_name
from .names import scope_names
from .ops import bracket_moved, keyword_values, reader_constructor, realigned
from ..analysis import is_pipeline_target
from ..pipeline_scopes import spelled
from .plan import all_params
from .pipeline_settings import SETTING_ARGUMENTS, SettingNames, is_scalar_literal, setting_rewrite, setting_sites
from .pipeline_settings import NotMigratable as SettingNotMigratable
from .pure import Substitution, evaluates_the_same_twice

META_METHODS = frozenset({"epoch_size", "reader_meta"})
HANDED = ("called in a function the pipeline is handed to; the migrated pipeline gives its reader's metadata where "
          "it is created: use it there (make the iterator, read the epoch size) and pass the result in")


class NotMigratable(Exception):
    """Why a reader-metadata lookup is left for a person; the message ends up in a TODO."""


@dataclass
class ReaderMetaRewrites:
    # id(factory call) -> the metadata statements after it, by the variable each assigns
    statements_after: dict[int, dict[str, cst.BaseStatement]] = field(default_factory=dict)
    lookups: dict[int, cst.BaseExpression] = field(default_factory=dict)  # id(method call)
    sites: dict[int, cst.CSTNode] = field(default_factory=dict)  # id(method call) -> the call
    loaders: list[Site] = field(default_factory=list)  # framework iterators now DALITorchLoader
    flagged_calls: set[int] = field(default_factory=set)  # id(factory call) -> gets yield_reader_meta=True
    # id(function a pipeline is handed to) -> the metadata statements first in its body
    preludes: dict[int, dict[str, cst.BaseStatement]] = field(default_factory=dict)
    epoch_end_calls: set[int] = field(default_factory=set)  # id(factory call) -> gets mark_epoch_ends=True
    sized: bool = False  # a loader counts the iterator's ``size=`` samples per epoch
    stepped_together: bool = False  # a loader steps a list of pipelines

    def rewrite(self, site: Site, expression: cst.BaseExpression, loader: bool = False) -> None:
        """``site`` becomes ``expression``; a site a pipeline bound in each branch of an ``if``
        reaches is rewritten once per branch, and must come out the same."""
        earlier = self.lookups.get(id(site.node))
        if earlier is not None and not earlier.deep_equals(expression):
            raise NotMigratable(f"the pipelines made in the branches before it would need {_difference(earlier, expression)}: "
                                "make them alike there")
        self.lookups[id(site.node)] = expression
        self.sites[id(site.node)] = site.node
        if loader and site not in self.loaders:
            self.loaders.append(site)

    @classmethod
    def merged(cls, parts: list[ReaderMetaRewrites]) -> ReaderMetaRewrites:
        whole = cls()
        for part in parts:
            for call, statements in part.statements_after.items():
                whole.statements_after.setdefault(call, {}).update(statements)
            for function, statements in part.preludes.items():
                whole.preludes.setdefault(function, {}).update(statements)
            whole.lookups.update(part.lookups)
            whole.sites.update(part.sites)
            whole.loaders += part.loaders
            whole.flagged_calls |= part.flagged_calls
            whole.epoch_end_calls |= part.epoch_end_calls
            whole.sized |= part.sized
            whole.stepped_together |= part.stepped_together
        return whole

    def loader_modes(self) -> frozenset[str]:
        """What the loaders these rewrites make need of the loader module (loader_module.MODES)."""
        needs = {"sources": bool(self.epoch_end_calls), "size": self.sized, "pipelines": self.stepped_together}
        return frozenset(mode for mode, needed in needs.items() if needed)


class Loaders(Protocol):
    """Framework iterators over pipelines: they need the reader's metadata too."""

    def sites(self, var: str) -> list[Site]: ...

    def reader_name(self, site: Site) -> str:
        """The reader whose epochs the iterator counts ("" when it is the pipeline's only one)."""

    def ends_at_sources(self, site: Site) -> bool:
        """The iterator's epochs end where the pipeline's external sources stop."""

    def counts_size(self, site: Site) -> bool:
        """The iterator's epochs are its ``size=`` samples."""

    def replace(self, site: Site, factory_call: cst.Call, meta: str, sized: bool = False,
                elsewhere: bool = False) -> cst.BaseExpression: ...


def meta_sites(facts: ModuleFacts, pipe_vars: list[str]) -> list[Site]:
    return [s for s in facts.pipeline_method_sites(META_METHODS) if s.origin in pipe_vars]


def reader_name_node(reader_call: cst.Call) -> cst.SimpleString | None:
    """The reader's ``name=`` string literal."""
    for arg in reader_call.args:
        if arg.keyword is not None and arg.keyword.value == "name" and isinstance(arg.value, cst.SimpleString):
            return arg.value
    return None


def _named_readers(plan) -> dict[str, object]:
    """The pipeline's readers by their ``name=``; a one-reader pipeline's reader also by ""."""
    named = {reader_name_node(r.node).evaluated_value: r for r in plan.readers if reader_name_node(r.node) is not None}
    if plan.reader is not None:
        named[""] = plan.reader
    return named


def _meta_name(var: str, reader_name: str, several: bool) -> str:
    """A local variable: ``self.pipe``'s metadata is ``pipe_reader_meta``."""
    var = var.removeprefix("self.")
    if not several:
        return f"{var}_reader_meta"
    slug = "".join(c if c.isalnum() else "_" for c in reader_name.lower())
    return f"{var}_{slug}_meta"


def _looked_up(site: Site, plan) -> list[str]:
    """The names of the readers ``site`` reads the metadata of (all, for ``epoch_size()``)."""
    call: cst.Call = site.node
    named = _named_readers(plan)
    if not call.args:
        if not [n for n in named if n]:
            raise NotMigratable("give the reader a `name=`: without an argument the result is keyed by "
                                "reader names")
        return sorted(n for n in named if n)
    if len(call.args) != 1 or not isinstance(call.args[0].value, cst.SimpleString):
        raise NotMigratable("pass the reader's name as a string literal")
    wanted = call.args[0].value.evaluated_value
    if wanted not in named:
        raise NotMigratable(f"no reader named {wanted!r} in the pipeline")
    return [wanted]


def _lookup(site: Site, metas: dict[str, str], plan) -> cst.BaseExpression:
    """``metas``: reader name -> the variable holding its metadata."""
    def value(meta: str) -> str:
        return f'{meta}["epoch_size_padded"]' if site.detail == "epoch_size" else meta
    if not site.node.args:
        keys = {name: reader_name_node(reader.node).value for name, reader in _named_readers(plan).items() if name}
        return cst.parse_expression("{" + ", ".join(f"{keys[name]}: {value(meta)}" for name, meta in metas.items()) + "}")
    return cst.parse_expression(value(next(iter(metas.values()))))


LITERALS = (cst.SimpleString, cst.Integer, cst.Float)


def _bound_arguments(function: cst.FunctionDef, call: cst.Call, imported: bool = False) -> dict[str, cst.BaseExpression]:
    """Each parameter of ``function`` with the expression ``call`` gives it (or its default;
    for a function of another module, only a literal default means the same here)."""
    params = function.params
    positional = [*params.posonly_params, *params.params]
    bound = {p.name.value: p.default for p in [*positional, *params.kwonly_params]
             if p.default is not None and (not imported or isinstance(p.default, LITERALS))}
    positional_args = [a for a in call.args if a.keyword is None]
    if any(a.star for a in call.args) or len(positional_args) > len(positional):
        raise NotMigratable("the pipeline's arguments cannot be matched to its parameters")
    bound.update((param.name.value, arg.value) for param, arg in zip(positional, positional_args))
    bound.update((a.keyword.value, a.value) for a in call.args if a.keyword is not None)
    return bound


class _Substitute(Substitution):
    """Replaces the pipeline's parameters in the reader's arguments by the values passed."""

    def __init__(self, bound: dict[str, cst.BaseExpression], params: set[str], graph_locals: set[str],
                 imported: bool = False) -> None:
        super().__init__()
        self.bound, self.params, self.graph_locals = bound, params, graph_locals
        self.imported = imported  # the reader is defined in another module: its names are not here

    def leave_Name(self, original_node: cst.Name, updated_node: cst.Name) -> cst.BaseExpression:
        name = original_node.value
        if not self.is_variable(original_node):
            return updated_node
        if name in self.params:
            value = self.bound.get(name)
            if value is None:
                raise NotMigratable(f"`{name}` is not given at the pipeline's call, and its default cannot "
                                    "be copied there: pass it")
            if not evaluates_the_same_twice(value):
                raise NotMigratable(f"`{name}` at the pipeline's call may not give the same value twice "
                                    "(it calls a function): assign it to a name first and pass the name")
            return self.copy_of(value)
        if name in self.graph_locals:
            raise NotMigratable(f"the reader's arguments use `{name}`, computed inside the pipeline")
        if self.imported and name not in ("True", "False", "None"):
            raise NotMigratable(f"the reader's arguments use `{name}` of the module that defines the pipeline")
        return updated_node


def _one_of_several(var: str, plan, facts: ModuleFacts, handed_to_a_loader: bool) -> str:
    """Why the metadata or iterator of a pipeline picked from a list, dict or loop is not
    planned: it is looked up after the statement that makes the pipeline."""
    if handed_to_a_loader and var in facts.pipeline_containers:
        return (f"the iterator is given `{spelled(var)}`, a list or dict of pipelines, which the loader steps "
                "only where nothing else reads their metadata or settings: read them where each is made")
    return (f"`{spelled(var)}` holds one of several pipelines (kept in a list or dict, or taken in a "
            "loop), and its reader's metadata is read where a pipeline is made: make the pipeline it reads "
            f"with an assignment of its own (`pipe = {plan.graph.name}(...)`)")


def _stepped_together(plan, var: str, loader_sites: list[Site], facts: ModuleFacts, places,
                      rewrites: ReaderMetaRewrites, loaders) -> None:
    """``DALIGenericIterator(pipes, ..., reader_name="Reader")`` over ``pipes = [graph(shard_id=i,
    ...) for i in range(n)]`` (one pipeline per GPU): the loader steps the generators together,
    given the metadata each yields first, all read right after the list is made."""
    bindings = facts.container_values.get(var, [])
    refused = _not_stepped_together(plan, var, facts, bindings)
    if refused:
        raise NotMigratable(f"the iterator is given `{spelled(var)}`, {refused}")
    calls = container_elements(bindings[0])
    others = [call for call in calls if dotted_name(call.func) != plan.graph.name]
    if others:
        raise NotMigratable(f"the iterator is given `{spelled(var)}`, a list of pipelines of several graphs "
                            f"(`{_short(others[0])}` too): the migrated loader steps pipelines of one graph")
    meta = _meta_name(spelled(var), "", False)
    for site in loader_sites:
        _check_stepped_together(site, calls[0], var, places, loaders)
        key = _reader_key(plan, loaders.reader_name(site)) if len(plan.readers) > 1 else None
        given = meta if key is None else f"[each[{key}] for each in {meta}]"
        for call in calls:
            rewrites.rewrite(site, loaders.replace(site, call, given), loader=True)
    plan.yields_reader_meta = True
    rewrites.flagged_calls |= {id(call) for call in calls}
    rewrites.stepped_together = True
    statements = rewrites.statements_after.setdefault(id(bindings[0]), {})
    statements.setdefault(meta, cst.parse_statement(f"{meta} = [next(pipe) for pipe in {spelled(var)}]\n"))


def _not_stepped_together(plan, var: str, facts: ModuleFacts, bindings: list[cst.BaseExpression]) -> str | None:
    """Why the loader cannot step the pipelines ``var`` holds (the end of a sentence), or None."""
    if facts.pipeline_containers.get(var) is not list:
        return "a dict of pipelines: the migrated loader steps a list of them; give it one"
    if len(bindings) != 1:
        return (f"a list of pipelines bound {len(bindings)} times: the migrated loader steps a list that one "
                "statement makes; make it once")
    if plan.imported:
        return (f"a list of pipelines of `{plan.graph.name}`, defined in another file, whose generators would "
                "yield their readers' metadata to this one: make the list and the iterator in that file (a "
                "function there that returns the iterator)")
    if plan.checkpointing:
        return ("a list of checkpointed pipelines: checkpointing through the iterator needs a manual migration: "
                "register each reader with an `ndd.checkpoint.Checkpoint`")
    return None


def _reader_key(plan, reader: str) -> str:
    """How the metadata a several-reader generator yields first names ``reader`` (its ``name=``)."""
    return reader_name_node(_named_readers(plan)[reader].node).value


def _check_stepped_together(site: Site, made: cst.Call, var: str, places, loaders) -> None:
    from .iterators import IteratorNotMigratable, is_jax

    if is_jax(site):
        raise IteratorNotMigratable(site, f"JAX's iterator spreads `{spelled(var)}`, a list of pipelines, over its "
                                          "devices; the migrated loader gives each batch where it was made")
    if loaders.ends_at_sources(site) or loaders.counts_size(site):
        raise IteratorNotMigratable(site, f"the iterator is given `{spelled(var)}`, a list of pipelines, without "
                                          "`reader_name=`: the migrated loader steps several pipelines by their "
                                          "reader's epochs only")
    if places.scope(site.node) is not places.scope(made) or places.order(site.node) < places.order(made):
        raise IteratorNotMigratable(site, f"make the iterator after `{spelled(var)}`, in the function that makes it")


def _graph_locals(function: cst.FunctionDef) -> set[str]:
    return scope_names(list(function.body.body)).bound


def plan_reader_meta(plan, facts: ModuleFacts, factory_statements: dict[str, list[cst.Call]],
                     ndd_alias: str, places, loaders: Loaders | None = None,
                     setting_names: SettingNames | None = None) -> ReaderMetaRewrites:
    """Rewrites for every metadata lookup on ``plan``'s pipelines, and for the framework
    iterators over them (``loaders``); NotMigratable names the first one a person must do."""
    rewrites = ReaderMetaRewrites()
    several = len(plan.readers) > 1
    setting_names = setting_names or SettingNames(set())
    callers_reading: dict[tuple[int, int], cst.Call] = {}  # of functions that return the pipeline
    for var in plan.pipe_vars:
        sites = meta_sites(facts, [var])
        settings = setting_sites(facts, [var])
        loader_sites = loaders.sites(var) if loaders else []
        if var in facts.pipeline_containers and loader_sites and not (sites or settings):
            _stepped_together(plan, var, loader_sites, facts, places, rewrites, loaders)
            continue
        if (var in facts.picked_from or var in facts.pipeline_containers) and (sites or settings or loader_sites):
            raise NotMigratable(_one_of_several(var, plan, facts, handed_to_a_loader=bool(loader_sites)))
        if var in facts.parameter_pipelines and (sites or settings or loader_sites):
            _taken_by_the_callee(plan, facts.parameter_pipelines[var], sites, settings, loader_sites, loaders,
                                 places, facts, factory_statements, rewrites)
            continue
        callers = {id(site): factories_in_scope(factory_statements.get(var, []), site, places, var, plan, facts)
                   for site in [*sites, *settings, *loader_sites]}
        bindings = {key: [_made_by(call, facts, factory_statements, plan) for call in calls]
                    for key, calls in callers.items()}
        # a use in another method than the one that made the pipeline reads the metadata from the object;
        # a function that returns the pipeline hands its metadata to the caller
        returned = _returned_by_helpers(var, sites, settings, loader_sites, callers, bindings, places, facts)
        callers_reading.update(returned)
        elsewhere = [(site, call) for site in [*sites, *settings, *loader_sites] for call in bindings[id(site)]
                     if places.scope(call) is not places.scope(site.node) and (id(site.node), id(call)) not in returned]
        for site, call in elsewhere:
            if places.owner_class(call) is None or places.owner_class(call) is not places.owner_class(site.node):
                raise NotMigratable(f"`{spelled(var)}` is made in another function than the one that uses it, and "
                                    "only the methods of one class share what it gives (through `self`): make "
                                    "the iterator, or read the epoch size, where the pipeline is made")
        on_self = bool(elsewhere)
        for site, factory_call in [(s, c) for s in settings for c in bindings[id(s)]]:
            expression, statement = setting_rewrite(plan, site, factory_call, on_self, setting_names)
            rewrites.rewrite(site, expression)
            if statement is not None:
                rewrites.statements_after.setdefault(id(factory_call), {}).setdefault(dotted_name(expression), statement)
        # there, `var` may hold another pipeline too: each plan rewrites the site alike (checked after)
        for site, factory_call in [(s, c) for s in [*sites, *loader_sites] for c in bindings[id(s)]]:
            if (id(site.node), id(factory_call)) in returned:
                _from_the_returning_helper(plan, spelled(var), site, site in loader_sites, factory_call,
                                           returned[id(site.node), id(factory_call)], rewrites, loaders)
                continue
            if site in loader_sites and loaders.ends_at_sources(site):
                _epochs_from_sources(plan, site, factory_call, rewrites, loaders, facts, var, on_self)
                continue
            if site in loader_sites and loaders.counts_size(site):  # ``size=``: no metadata needed
                rewrites.rewrite(site, loaders.replace(site, factory_call, None, sized=True, elsewhere=on_self),
                                 loader=True)
                rewrites.sized = True
                continue
            if site in loader_sites:
                readers = [loaders.reader_name(site)]
            else:
                readers = _looked_up(site, plan)
            # a checkpointed reader takes its state when it is built: the metadata must not build it first
            if not plan.imported and not plan.checkpointing:
                _from_own_reader(plan, spelled(var), site, site in loader_sites, readers, factory_call, rewrites,
                                 loaders, on_self)
                continue
            if on_self:
                raise NotMigratable(f"create `{spelled(var)}` with one `{spelled(var)} = {plan.graph.name}(...)` in "
                                    "the method that uses it")
            metas = {name: _meta_name(spelled(var), name, several) for name in readers}
            if site in loader_sites:
                rewrites.rewrite(site, loaders.replace(site, factory_call, metas[readers[0]]), loader=True)
            else:
                rewrites.rewrite(site, _lookup(site, metas, plan))
            after = rewrites.statements_after.setdefault(id(factory_call), {})
            for name, meta in metas.items():
                if meta not in after:  # one lookup per reader, however often it is asked
                    after[meta] = _meta_statement(plan, _named_readers(plan)[name], factory_call, meta, facts, ndd_alias)
    reading = {id(caller) for caller in callers_reading.values()}
    for helper in sorted({dotted_name(caller.func) or "" for caller in callers_reading.values()}):
        _check_returned_fresh(helper, reading, facts)
    return rewrites


def _taken_by_the_callee(plan, parameter, sites: list[Site], settings: list[Site], loader_sites: list[Site],
                        loaders, places, facts: ModuleFacts, factory_statements: dict[str, list[cst.Call]],
                        rewrites: ReaderMetaRewrites) -> None:
    """``def wrap(pipeline): ... DALIClassificationIterator(pipeline, reader_name="Reader")``,
    called as ``wrap(train_pipe(root, batch_size=4))``: each pipeline handed in is new, so the
    function takes the metadata itself, with ``pipeline_reader_meta = next(pipeline)`` first in
    its body, before anything else reads the generator."""
    name = parameter.name.value
    _check_handed_fresh(plan, parameter, [*sites, *settings, *loader_sites], places)
    handed = [_made_by(call, facts, factory_statements, plan) for call in [*parameter.calls, *parameter.variable_calls]]
    calls = [call for call in handed if dotted_name(call.func) == plan.graph.name]
    meta = _meta_name(name, "", False)
    batch_size = _handed_setting(plan, "batch_size", handed, meta) if loader_sites else None
    for site in settings:
        value = _handed_setting(plan, SETTING_ARGUMENTS[site.detail], handed, meta, site)
        rewrites.rewrite(site, value or _handed_values(plan, SETTING_ARGUMENTS[site.detail], handed)[0])
    if not (sites or loader_sites or plan.meta_has_batch_size):
        return  # settings the calls give as literals: copied, no metadata needed
    for site in sites:
        rewrites.rewrite(site, _lookup(site, _first_next_metas(plan, meta, _looked_up(site, plan)), plan))
    for site in loader_sites:
        if loaders.ends_at_sources(site):
            raise NotMigratable("called in a function the pipeline is handed to, with an iterator whose epochs "
                                "end where the pipeline's sources stop: make the iterator where the pipeline "
                                "is made")
        _loader_given_first_next(plan, site, calls, meta, batch_size, rewrites, loaders)
    plan.yields_reader_meta = True
    rewrites.flagged_calls |= {id(call) for call in calls}
    prelude = rewrites.preludes.setdefault(id(parameter.function), {})
    prelude.setdefault(meta, cst.parse_statement(f"{meta} = next({name})\n"))


def _returned_by_helpers(var: str, sites: list[Site], settings: list[Site], loader_sites: list[Site],
                         callers: dict[int, list[cst.Call]], bindings: dict[int, list[cst.Call]], places,
                         facts: ModuleFacts) -> dict[tuple[int, int], cst.Call]:
    """``pipe = create_pipeline(args)`` where ``create_pipeline`` makes the pipeline and
    returns it: (id(site), id(the call in the helper)) -> the caller's call, after which
    ``pipe_reader_meta = next(pipe)`` goes (``_check_returned_fresh`` checks the helper)."""
    returned: dict[tuple[int, int], cst.Call] = {}
    for site in [*sites, *settings, *loader_sites]:
        for caller, made in zip(callers[id(site)], bindings[id(site)]):
            if caller is made or places.scope(made) is None or places.scope(caller) is not places.scope(site.node):
                continue
            if places.owner_class(made) is not None and places.owner_class(made) is places.owner_class(site.node):
                continue  # methods of one class: the metadata goes on ``self``
            if site in settings:
                raise NotMigratable(f"`{site.name}.{site.detail}` is read where `{spelled(var)}` is returned to, "
                                    f"from `{dotted_name(caller.func)}()`: read it in that function")
            returned[id(site.node), id(made)] = caller
    return returned


def _check_returned_fresh(helper: str, reading: set[int], facts: ModuleFacts) -> None:
    """The helper's pipeline yields its metadata first to every caller: each call of the helper
    must be one that reads it (``reading``: their ids), and the helper itself only makes, and
    maybe builds, the pipeline it returns."""
    others = [c for c in facts.pipeline_factory_calls if dotted_name(c.func) == helper and id(c) not in reading]
    if others:
        raise NotMigratable(f"`{helper}()` returns the pipeline, whose metadata comes first from it now, and "
                            f"`{_short(others[0])}` does not read that metadata: read it there too, or read it "
                            f"in `{helper}()`")
    helper_var = facts.pipeline_helpers.get(helper)
    used_inside = [s.node for s in facts.pipeline_method_calls if s.origin == helper_var and s.detail != "build"]
    used_inside += [s.node for s in facts.iterator_uses if facts.key_of(iterated_pipeline(s.node)) == helper_var]
    if used_inside:
        raise NotMigratable(f"`{helper}()` returns the pipeline after using it (`{_short(used_inside[0])}`): "
                            "read the metadata there")


def _from_the_returning_helper(plan, var: str, site: Site, is_loader: bool, factory_call: cst.Call,
                               caller: cst.Call, rewrites: ReaderMetaRewrites, loaders) -> None:
    """``pipe = create_pipeline(...)``, then ``pipe_reader_meta = next(pipe)`` after it; the
    helper's ``graph(...)`` call is given ``yield_reader_meta=True``. A loader's batch size is the
    helper's literal, or the one the metadata carries."""
    meta = _meta_name(var, "", False)
    if is_loader and loaders.ends_at_sources(site):
        raise NotMigratable(f"`{var}` is returned by `{dotted_name(caller.func)}()`, and the iterator's epochs end "
                            "where the pipeline's sources stop: make the iterator in that function")
    if is_loader:
        batch_size = _handed_setting(plan, "batch_size", [factory_call], meta)
        _loader_given_first_next(plan, site, [factory_call], meta, batch_size, rewrites, loaders)
    else:
        rewrites.rewrite(site, _lookup(site, _first_next_metas(plan, meta, _looked_up(site, plan)), plan))
    _meta_first(plan, rewrites, factory_call, caller, meta, var)


def _loader_given_first_next(plan, site: Site, calls: list[cst.Call], meta: str,
                             batch_size: cst.BaseExpression | None, rewrites: ReaderMetaRewrites, loaders) -> None:
    """The iterator at ``site`` becomes the loader over the pipelines ``calls`` make, given what
    their first ``next()`` gave (``meta``), or nothing where it counts its ``size=`` samples.
    Each call is checked; the loader is alike for all (one batch size: ``batch_size``, or the
    call's own where None)."""
    sized = loaders.counts_size(site)
    reader = loaders.reader_name(site)
    given = None if sized else _first_next_metas(plan, meta, [reader])[reader]
    for call in calls:
        rewrites.rewrite(site, loaders.replace(site, call, given, sized=sized, batch_size=batch_size), loader=True)
    rewrites.sized |= sized


def _meta_first(plan, rewrites: ReaderMetaRewrites, factory_call: cst.Call, after: cst.Call, meta: str,
                var: str) -> None:
    """``factory_call`` gets ``yield_reader_meta=True``, and ``meta = next(var)`` follows the
    statement of ``after`` (the factory call itself, or the call of a function returning it)."""
    plan.yields_reader_meta = True
    rewrites.flagged_calls.add(id(factory_call))
    statements = rewrites.statements_after.setdefault(id(after), {})
    statements.setdefault(meta, cst.parse_statement(f"{meta} = next({var})\n"))


def _check_handed_fresh(plan, parameter, sites: list[Site], places) -> None:
    """Every pipeline handed in is made in the call (``wrap(train_pipe(...))``), or held by a
    variable used for nothing else, so nothing read the generator before; the function reads the
    metadata in its own body, where the parameter still holds what was handed in."""
    function, name = parameter.function, parameter.name.value
    if not parameter.handed_fresh:
        raise NotMigratable(f"`{name}` is handed a pipeline through a variable that the caller uses otherwise "
                            f"too: make the pipeline in the call (`{function.name.value}({plan.graph.name}(...))`), "
                            "or make the iterator, read the epoch size, where the pipeline is made")
    if plan.imported or plan.checkpointing:
        raise NotMigratable(HANDED)
    if any(places.scope(site.node) is not function for site in sites):
        raise NotMigratable(f"`{name}`'s metadata is read in a function `{function.name.value}()` defines: read it "
                            f"in `{function.name.value}()` itself")
    if name in scope_names(list(function.body.body)).bound:
        raise NotMigratable(f"`{function.name.value}()` binds `{name}` again: use another name for it")


def _handed_setting(plan, argument: str, calls: list[cst.Call], meta: str,
                    site: Site | None = None) -> cst.BaseExpression | None:
    """What stands for ``argument=`` in the function the pipelines are handed to, where the
    callers' names are not in scope: None where every call gives the same literal (it is
    copied), else, for the batch size, what the generator's metadata then carries
    (``pipeline_reader_meta["batch_size"]``). ``site``: the setting read that needs it."""
    values = {cst.Module([]).code_for_node(v) if is_scalar_literal(v) else None for v in _handed_values(plan, argument, calls)}
    if None not in values and len(values) == 1:
        return None
    if argument != "batch_size" or len(plan.readers) != 1:
        why = (f"the pipelines handed to it give `{argument}=` otherwise than as one literal"
               if argument != "batch_size" else "`batch_size=` is not one number there, and the pipeline has "
               "several readers")
        where = f"`{site.name}.{site.detail}` is read" if site else "the iterator is made"
        message = f"{where} in a function the pipeline is handed to, and {why}: do it where the pipeline is made"
        raise SettingNotMigratable(site, message) if site else NotMigratable(message)
    plan.meta_has_batch_size = True
    return cst.parse_expression(f'{meta}["batch_size"]')


def _handed_values(plan, argument: str, calls: list[cst.Call]) -> list[cst.BaseExpression | None]:
    """``argument=`` of each call; of the decorator where the call does not give it."""
    found = []
    for call in calls:
        default = plan.pipeline_args.get(argument) if dotted_name(call.func) == plan.graph.name else None
        found.append(keyword_values(call).get(argument, default))
    return found


def _epochs_from_sources(plan, site: Site, factory_call: cst.Call, rewrites: ReaderMetaRewrites, loaders,
                         facts: ModuleFacts, var: str, elsewhere: bool = False) -> None:
    """``var = graph(..., mark_epoch_ends=True)``: the generator yields None where its sources
    end an epoch, and the loader ends the epoch there."""
    if plan.imported:
        raise NotMigratable("the iterator's epochs end where the pipeline's sources stop, and the pipeline "
                            "is migrated in its own module without knowing that")
    if any(s.origin == var for s in facts.pipeline_method_sites(RUN_METHODS)):
        raise NotMigratable(f"`{spelled(var)}` is also run by hand: the iterator's epochs end where its sources stop")
    rewrites.rewrite(site, loaders.replace(site, factory_call, None, elsewhere=elsewhere), loader=True)
    plan.marks_epoch_ends = True
    rewrites.epoch_end_calls.add(id(factory_call))


def _from_own_reader(plan, var: str, site: Site, is_loader: bool, readers: list[str], factory_call: cst.Call,
                     rewrites: ReaderMetaRewrites, loaders, on_self: bool = False) -> None:
    """``var = graph(..., yield_reader_meta=True)`` and ``var_reader_meta = next(var)`` after it
    (``self.pipe_reader_meta``, ``on_self``, where other methods read it)."""
    meta = ("self." if on_self else "") + _meta_name(var, "", False)
    metas = _first_next_metas(plan, meta, readers)
    if is_loader:
        rewrites.rewrite(site, loaders.replace(site, factory_call, metas[readers[0]]), loader=True)
    else:
        rewrites.rewrite(site, _lookup(site, metas, plan))
    _meta_first(plan, rewrites, factory_call, factory_call, meta, var)


def _first_next_metas(plan, meta: str, readers: list[str]) -> dict[str, str]:
    """Where each of ``readers``' metadata is, in what the first ``next()`` gave (``meta``):
    the one reader's metadata, or theirs by name."""
    named = _named_readers(plan)
    return {name: f"{meta}[{reader_name_node(named[name].node).value}]" if len(plan.readers) > 1 and name else meta
            for name in readers}


def factory_in_scope(calls: list[cst.Call], site: Site, places, var: str, plan,
                     facts: ModuleFacts | None = None) -> cst.Call | None:
    """The ``var = graph(...)`` in force where ``site`` uses ``var``: the only one in its
    function, or the last before it where all stand directly in the function's body. None where
    that binding is of another pipeline. ``calls`` bind ``var`` to any pipeline."""
    if "#p" in var:  # a parameter (pipeline_parameters.py): the pipeline was made by the caller
        raise NotMigratable(HANDED)
    here = [call for call in calls if places.scope(call) is places.scope(site.node)]
    before = [call for call in here if places.order(call) < places.order(site.node)]
    if len(here) == 1:
        binding = here[0]
    elif not here and _held_by_the_same_object(calls, site, places, var):
        binding = calls[0]
    elif before and all(places.top_level(call) for call in here):
        binding = max(before, key=places.order)
    else:
        raise NotMigratable(f"create `{spelled(var)}` with one `{spelled(var)} = {plan.graph.name}(...)` in the function "
                            "that uses it")
    if dotted_name(binding.func) == plan.graph.name:
        return binding
    helper = facts.pipeline_helpers.get(dotted_name(binding.func) or "") if facts is not None else None
    return binding if helper is not None and facts.graphs_of(helper) == {plan.graph.name} else None


def _made_by(call: cst.Call, facts: ModuleFacts, factory_statements: dict[str, list[cst.Call]], plan) -> cst.Call:
    """The call that makes the pipeline: ``call`` itself, or where ``call`` is a function or
    method that returns one (``self.pipe = self._create_pipeline()``), the one call in it that
    makes ``plan``'s (the flags and metadata go there)."""
    returned = facts.pipeline_helpers.get(dotted_name(call.func) or "")
    if returned is None:
        return call
    if plan.imported and returned == plan.graph.name:  # made in another module (crossmodule.py)
        raise NotMigratable(f"`{dotted_name(call.func)}()` makes the pipeline in another file, and the migration "
                            "hands a reader's metadata from a function to its callers within one file only: read it, "
                            "or make the iterator, in that function, or make the pipeline here")
    inner = [c for c in factory_statements.get(returned, []) if dotted_name(c.func) == plan.graph.name]
    if len(inner) != 1:
        raise NotMigratable(f"`{dotted_name(call.func)}()` makes the pipeline in more than one place: create "
                            "it where the iterator or lookup uses it")
    return inner[0]


def factories_in_scope(calls: list[cst.Call], site: Site, places, var: str, plan,
                       facts: ModuleFacts | None = None) -> list[cst.Call]:
    """``plan``'s bindings of ``var`` that may be in force at ``site``: the one of
    ``factory_in_scope``, or, where the function binds ``var`` once in each branch of an
    ``if``/``elif``/``else`` before the site (``if mode == "train": pipe = TrainPipe(...)
    else: pipe = EvalPipe(...)``), those of the branches that make ``plan``'s pipeline."""
    try:
        binding = factory_in_scope(calls, site, places, var, plan, facts)
    except NotMigratable:
        branches = _bound_in_branches(calls, site, places)
        if branches is None:
            raise
        return [call for call in branches if dotted_name(call.func) == plan.graph.name]
    return [binding] if binding is not None else []


def _bound_in_branches(calls: list[cst.Call], site: Site, places) -> list[cst.Call] | None:
    """The function's bindings, where each is the first statement line of a branch of one
    ``if`` chain that stands in the function's body before ``site``, each branch binds once or
    leaves (``raise``/``return``), and nothing else binds the name; otherwise None."""
    function = places.scope(site.node)
    here = [call for call in calls if places.scope(call) is function]
    if function is None or not here or any(places.order(call) > places.order(site.node) for call in here):
        return None
    statement = next((s for s in function.body.body if isinstance(s, cst.If) and id(here[0]) in _ids(s)), None)
    if statement is None or id(site.node) in _ids(statement):
        return None
    found: list[cst.Call] = []
    for branch in _branches(statement):
        if branch is None:
            return None  # no ``else``: the name may keep what it held before
        bound = [call for call in here if call is _binding_call(branch.body[0] if branch.body else None)]
        if len(bound) != 1 and not _leaves(branch):
            return None
        found += bound
    return found if len(found) == len(here) else None


def _branches(statement: cst.If) -> list[cst.BaseSuite | None]:
    """The blocks of an ``if``/``elif``/``else`` chain; None for a missing ``else``."""
    blocks: list[cst.BaseSuite | None] = [statement.body]
    rest = statement.orelse
    while isinstance(rest, cst.If):
        blocks.append(rest.body)
        rest = rest.orelse
    blocks.append(rest.body if isinstance(rest, cst.Else) else None)
    return blocks


def _binding_call(statement: cst.BaseStatement | None) -> cst.Call | None:
    if (isinstance(statement, cst.SimpleStatementLine) and len(statement.body) == 1
            and isinstance(statement.body[0], cst.Assign) and isinstance(statement.body[0].value, cst.Call)):
        return statement.body[0].value
    return None


def _leaves(branch: cst.BaseSuite) -> bool:
    last = branch.body[-1] if branch.body else None
    return isinstance(last, cst.SimpleStatementLine) and isinstance(last.body[-1], (cst.Raise, cst.Return))


def unlike_rewrites(parts: list[tuple[object, ReaderMetaRewrites]]) -> list[tuple[object, cst.CSTNode, str]]:
    """(plan, site, reason) where plans (``parts``: each with its rewrites) that a variable may
    hold in different branches would rewrite one site differently."""
    first: dict[int, tuple[object, cst.BaseExpression]] = {}
    found = []
    for plan, rewrites in parts:
        for key, expression in rewrites.lookups.items():
            other, earlier = first.setdefault(key, (plan, expression))
            if not earlier.deep_equals(expression):
                site = rewrites.sites[key]
                reason = (f"`{other.graph.name}` and `{plan.graph.name}`, made in the branches before it, would need "
                          f"{_difference(earlier, expression)}: make them alike there")
                found += [(other, site, reason), (plan, site, reason)]
    return found


def _difference(first: cst.BaseExpression, second: cst.BaseExpression) -> str:
    """What two rewrites of one site differ in: ``batch_size=4`` and ``batch_size=2``."""
    if isinstance(first, cst.Call) and isinstance(second, cst.Call) and len(first.args) == len(second.args):
        for one, other in zip(first.args, second.args):
            if not one.deep_equals(other):
                return f"`{code_of(one.value)}` and `{code_of(other.value)}`" + (
                    f" for `{one.keyword.value}=`" if one.keyword is not None else "")
    return f"`{_short(first)}` and `{_short(second)}`"


def _short(node: cst.CSTNode) -> str:
    code = " ".join(code_of(node).split())
    return code if len(code) <= 60 else code[:57] + "..."


def _ids(node: cst.CSTNode) -> set[int]:
    from .places import node_ids

    return node_ids(node)


def _held_by_the_same_object(calls: list[cst.Call], site: Site, places, var: str) -> bool:
    """``self.pipe = graph(...)`` once, in one method (``setup()``), and the use in another
    method of the same class (``train_dataloader()``)."""
    return (var.startswith("self.") and len(calls) == 1 and places.owner_class(calls[0]) is not None
            and places.owner_class(calls[0]) is places.owner_class(site.node))


def _meta_statement(plan, reader, factory_call: cst.Call, meta: str, facts: ModuleFacts, ndd_alias: str):
    function = plan.function
    params = {p.name.value for p in all_params(function.params)}
    bound = _bound_arguments(function, factory_call, plan.imported)
    substitute = _Substitute(bound, params, _graph_locals(function), plan.imported)
    reader_call = reader.node.with_changes(args=[arg.visit(substitute) for arg in reader.node.args])
    constructor = reader_constructor(reader, ndd_alias, facts.optable, reader_call)
    # the arguments stay aligned with the new bracket
    moved = bracket_moved([_reader_target(plan, reader), reader.node.func], [cst.Name(meta), constructor.func])
    constructor = realigned(constructor, moved)
    value = cst.Call(func=cst.Attribute(value=constructor, attr=cst.Name("get_metadata")))
    return cst.SimpleStatementLine(body=[cst.Assign(targets=[cst.AssignTarget(cst.Name(meta))], value=value)])


def _reader_target(plan, reader) -> cst.BaseExpression:
    """What the graph assigns the reader's outputs to (``jpegs, labels``)."""
    index = plan.reader_statement_indices[plan.readers.index(reader)]
    return plan.function.body.body[index].body[0].targets[0].target


def factory_statements(facts: ModuleFacts) -> dict[str, list[cst.Call]]:
    """``var -> calls`` for each ``var = some_pipeline(...)``."""
    found: dict[str, list[cst.Call]] = {}
    for target, call in zip(facts.pipeline_binding_targets, facts.pipeline_factory_calls):
        if is_pipeline_target(target):
            found.setdefault(facts.key_of(target), []).append(call)
    return found
