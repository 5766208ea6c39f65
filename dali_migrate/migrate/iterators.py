"""``DALIGenericIterator``/``DALIClassificationIterator`` over a migrated pipeline (DM010).

The iterator becomes the ``DALITorchLoader`` class written into the module (see
``torch_loader.py``), fed by the migrated generator and the reader's metadata::

    loader = DALIGenericIterator(pipe, ["data", "label"], reader_name="Reader",
                                 last_batch_policy=LastBatchPolicy.PARTIAL, auto_reset=True)
    ->
    loader = DALITorchLoader(pipe, ["data", "label"], batch_size=4, reader_meta=pipe_reader_meta,
                             last_batch_policy="partial", auto_reset=True)

The loops that consume ``data[0]["data"]`` stay as they are. Whatever the class cannot
reproduce exactly raises NotMigratable, which keeps the pipeline in pipeline mode with a TODO.
"""

from __future__ import annotations

from dataclasses import dataclass

import libcst as cst

from ..analysis import ModuleFacts, Site, iterated_pipeline, single_element
from ..imports import dotted_name
from ..rules.dm010_framework_iterator import GUIDANCE, iterator_name, plugin_name
from ..visitors import Visitor, walk
from .names import all_names
from .ops import NotALiteral, bracket_moved, keyword_arg, keyword_values, literal_value, realigned
from ..analysis import is_pipeline_target
from .reader_meta import NotMigratable, reader_name_node

PYTORCH = "nvidia.dali.plugin.pytorch."
JAX = "nvidia.dali.plugin.jax."
# iterator -> its parameters in order; ``None`` in place of output_map means a fixed one
PARAMETERS = {
    PYTORCH + "DALIGenericIterator": ["pipelines", "output_map", "size", "reader_name", "auto_reset",
                                      "fill_last_batch", "dynamic_shape", "last_batch_padded",
                                      "last_batch_policy", "prepare_first_batch"],
    PYTORCH + "DALIClassificationIterator": ["pipelines", "size", "reader_name", "auto_reset",
                                             "fill_last_batch", "dynamic_shape", "last_batch_padded",
                                             "last_batch_policy", "prepare_first_batch"],
    # JAX gives one array per output and step: the loader needs no more than a single pipeline does
    JAX + "DALIGenericIterator": ["pipelines", "output_map", "size", "reader_name", "auto_reset",
                                  "last_batch_padded", "last_batch_policy", "prepare_first_batch",
                                  "sharding", "pmap_compatible"],
}
CLASSIFICATION_OUTPUTS = ["data", "label"]
POLICIES = {"FILL": "fill", "PARTIAL": "partial", "DROP": "drop"}


def iterator_sites(facts: ModuleFacts, pipe_vars: list[str]) -> list[Site]:
    """Framework iterators built over one of ``pipe_vars``."""
    return [site for site in facts.iterator_uses
            if facts.key_of(iterated_pipeline(site.node)) in pipe_vars]


def _bind(call: cst.Call, parameters: list[str]) -> dict[str, cst.BaseExpression]:
    if any(arg.star for arg in call.args):
        raise NotMigratable("`*args`/`**kwargs` in the iterator call")
    positional = [arg.value for arg in call.args if arg.keyword is None]
    bound = dict(zip(parameters, positional))
    for arg in call.args:
        if arg.keyword is not None:
            name = "pipelines" if arg.keyword.value == "pipeline" else arg.keyword.value
            if name not in parameters:
                raise NotMigratable(f"unknown iterator argument `{name}=`")
            bound[name] = arg.value
    return bound


def _bound_literal(name: cst.Name, site: cst.CSTNode, module: cst.Module) -> cst.BaseExpression:
    """The literal that ``name`` holds at ``site``: every binding of it in the function around
    ``site`` (or in the module) is ``name = <the same literal>``; else ``name`` itself."""
    finder = _Bindings(name.value, site)
    walk(module, finder)
    scope = finder.scope or {"values": [], "other": True}  # read once the whole scope is seen
    values = scope["values"]
    if values and not scope["other"] and all(_code(v) == _code(values[0]) for v in values):
        return values[0]
    return name


def _code(node: cst.CSTNode) -> str:
    return " ".join(cst.Module([]).code_for_node(node).split())


class _Bindings(Visitor):
    """The values assigned to ``name`` in the innermost function holding ``site``."""

    def __init__(self, name: str, site: cst.CSTNode) -> None:
        self.name, self.site = name, site
        self.stack: list[dict] = [{"values": [], "other": False}]
        self.scope: dict | None = None  # the bindings of the scope ``site`` stands in

    def visit_FunctionDef(self, node: cst.FunctionDef) -> None:
        bound_as_param = self.name in {p.name.value for p in [*node.params.params, *node.params.kwonly_params,
                                                                *node.params.posonly_params]}
        self.stack.append({"values": [], "other": bound_as_param})

    def leave_FunctionDef(self, original_node: cst.FunctionDef) -> None:
        self.stack.pop()

    def visit_Call(self, node: cst.Call) -> None:
        if node is self.site:
            self.scope = self.stack[-1]

    def visit_Assign(self, node: cst.Assign) -> None:
        targets = [t.target for t in node.targets]
        if any(isinstance(t, cst.Name) and t.value == self.name for t in targets):
            self.stack[-1]["values"].append(node.value)
        elif self.name in {n.value for t in targets if not isinstance(t, cst.Name) for n in _names(t)}:
            self.stack[-1]["other"] = True

    def visit_AugAssign(self, node: cst.AugAssign) -> None:
        if isinstance(node.target, cst.Name) and node.target.value == self.name:
            self.stack[-1]["other"] = True

    def visit_For(self, node: cst.For) -> None:
        if self.name in {n.value for n in _names(node.target)}:
            self.stack[-1]["other"] = True


def _names(node: cst.CSTNode) -> list[cst.Name]:
    found: list[cst.Name] = []

    class Names(Visitor):
        def visit_Name(self, name: cst.Name) -> None:
            found.append(name)

    walk(node, Names())
    return found


def _strings(node: cst.BaseExpression | None, what: str) -> list[str]:
    if isinstance(node, (cst.List, cst.Tuple)) and all(isinstance(e.value, cst.SimpleString) for e in node.elements):
        return [e.value.evaluated_value for e in node.elements]
    raise NotMigratable(f"give `{what}` as a list of string literals")


def _literal(node: cst.BaseExpression | None) -> object:
    if isinstance(node, cst.UnaryOperation) and isinstance(node.operator, cst.Minus) and isinstance(node.expression, cst.Integer):
        return -int(node.expression.value)  # size=-1
    try:
        return literal_value(node)
    except NotALiteral as code:
        raise NotMigratable(f"`{code}` is not a literal") from None


def _auto_reset(node: cst.BaseExpression | None) -> bool:
    value = _literal(node)
    if value in (None, False, "no"):
        return False
    if value in (True, "yes"):
        return True
    raise NotMigratable(f"`auto_reset={value!r}`")


def _policy(bound: dict[str, cst.BaseExpression], facts: ModuleFacts) -> cst.BaseExpression | None:
    """The loader's ``last_batch_policy=`` (None: FILL, its default). A literal policy becomes its
    string; any other expression is passed as it is: the loader takes DALI's ``LastBatchPolicy``
    values too."""
    fill = _literal(bound.get("fill_last_batch"))
    if fill is not None:  # the deprecated spelling wins over last_batch_policy, as in DALI
        return None if fill else cst.SimpleString('"partial"')
    node = bound.get("last_batch_policy")
    if node is None:
        return None
    if isinstance(node, cst.IfExp):
        body, orelse = _policy_literal(node.body, facts), _policy_literal(node.orelse, facts)
        if body is not None and orelse is not None:
            return node.with_changes(body=cst.SimpleString(f'"{body}"'), orelse=cst.SimpleString(f'"{orelse}"'))
    literal = _policy_literal(node, facts)
    if literal == "fill":
        return None
    return cst.SimpleString(f'"{literal}"') if literal is not None else node


def _policy_literal(node: cst.BaseExpression, facts: ModuleFacts) -> str | None:
    qualname = facts.imports.resolve(node) or ""
    member = qualname.rsplit(".", 1)[-1]
    if qualname.startswith("nvidia.dali.plugin.") and ".LastBatchPolicy." in qualname and member in POLICIES:
        return POLICIES[member]
    return None


def _batch_size(plan, factory_call: cst.Call, facts: ModuleFacts) -> cst.BaseExpression:
    given = keyword_values(factory_call)
    value = given.get("batch_size", plan.pipeline_args.get("batch_size"))
    if plan.imported and "batch_size" not in given and not isinstance(value, cst.Integer):
        raise NotMigratable("pass `batch_size=` where the pipeline is created: its default is a name of "
                            "the module that defines it")
    # the loader is created where the pipeline is, so a name or attribute means the same there;
    # so does the object's own ``self.batch_size`` that a ``with self.pipe:`` graph was given,
    # and a decorator's ``args.batch_size`` where the graph is defined in the function that calls it
    on_self = (dotted_name(value) or "").startswith("self.")
    nested = all(f is not plan.function for f in facts.module_functions.get(plan.graph.name, []))
    plain = (cst.Integer, cst.Name, cst.Attribute) if "batch_size" in given or on_self or nested else (cst.Integer, cst.Name)
    if not isinstance(value, plain) or isinstance(value, cst.Attribute) and dotted_name(value) is None:
        raise NotMigratable("give the pipeline's `batch_size=` as a name or an integer")
    return value


def loader_call(plan, site: Site, factory_call: cst.Call, meta: str | None, class_name: str,
                facts: ModuleFacts, module: cst.Module | None = None, sized: bool = False,
                batch_size: cst.BaseExpression | None = None) -> cst.Call:
    """The ``class_name(...)`` call that replaces the iterator call at ``site``; without ``meta``
    (the variable holding the reader's metadata), the pipeline's sources end its epochs, or,
    ``sized``, the iterator's ``size=``. ``batch_size``: where it is not the factory call's."""
    parameters = PARAMETERS.get(site.name)
    if parameters is None:
        guidance = GUIDANCE.get(plugin_name(site.name), "loop over the migrated generator")
        raise NotMigratable(f"no automatic migration: {guidance}")
    bound = _bind(site.node, parameters)
    _check_one_device(bound)
    if isinstance(bound.get("output_map"), cst.Name) and module is not None:  # ``output_map=names``
        bound = {**bound, "output_map": _bound_literal(bound["output_map"], site.node, module)}
    outputs = _checked_outputs(plan, bound, parameters, by_reader=meta is not None and not sized)
    policy = _policy(bound, facts)
    if is_jax(site) and policy is not None and "partial" in cst.Module([]).code_for_node(policy).lower():
        raise NotMigratable("JAX's iterator refuses the PARTIAL policy (an AssertionError when it is made)")
    renamed = {}
    if meta is not None:
        renamed["reader_name"] = keyword_arg("reader_meta", cst.parse_expression(meta))
    if policy is not None:
        renamed["last_batch_policy"] = keyword_arg("last_batch_policy", policy)
    if _auto_reset(bound.get("auto_reset")):
        renamed["auto_reset"] = keyword_arg("auto_reset", cst.Name("True"))
    if sized:  # DALI counted ``size`` samples per epoch; so does the loader
        renamed["size"] = keyword_arg("size", bound["size"])
        if _literal(bound.get("last_batch_padded")) not in (None, False):
            renamed["last_batch_padded"] = keyword_arg("last_batch_padded", bound["last_batch_padded"])
    added = [keyword_arg("batch_size", batch_size or _batch_size(plan, factory_call, facts))]
    if "output_map" not in parameters and site.detail:  # a subclass passes what it is given on
        added.insert(0, keyword_arg("output_map", _output_map_node(bound, outputs)))
    elif "output_map" not in parameters:
        added.insert(0, cst.Arg(_output_map_node(bound, outputs)))
    loader = site.node.with_changes(func=cst.Name(class_name), args=_new_args(site.node, parameters, renamed, added))
    return realigned(loader, bracket_moved([site.node.func], [loader.func]))


def is_jax(site: Site) -> bool:
    return site.name.startswith(JAX)


def _check_one_device(bound: dict[str, cst.BaseExpression]) -> None:
    """JAX's ``sharding=`` / ``pmap_compatible=True`` spread batches over devices; the loader
    gives each array where the pipeline made it."""
    for name in ("sharding", "pmap_compatible"):
        node = bound.get(name)
        if node is not None and not (isinstance(node, cst.Name) and node.value in ("None", "False")):
            raise NotMigratable(f"`{name}=` spreads the batches over JAX devices; the migrated loader gives "
                                "each batch on the device that made it")


def _checked_outputs(plan, bound: dict[str, cst.BaseExpression], parameters: list[str],
                     by_reader: bool = True) -> list[str]:
    """The output names, once what the loader cannot reproduce has raised NotMigratable."""
    if plan.checkpointing:
        raise NotMigratable("checkpointing through the iterator (`loader.checkpoints()`) needs a manual "
                            "migration: register the reader with an `ndd.checkpoint.Checkpoint`")
    outputs = _strings(bound.get("output_map"), "output_map") if "output_map" in parameters else CLASSIFICATION_OUTPUTS
    if plan.output_count != len(outputs):
        raise NotMigratable(f"the iterator names {len(outputs)} outputs; the pipeline must return as many")
    if not by_reader:
        return outputs
    reader_name = _literal(bound.get("reader_name"))
    if reader_name is None:
        raise NotMigratable("without `reader_name=` an epoch ends after `size=` samples or when the source "
                            "stops; pass the reader's `reader_name=`, or loop over the migrated generator "
                            "and call `.torch()` on each Batch")
    names = [reader_name_node(reader.node) for reader in plan.readers]
    if reader_name not in [name.evaluated_value for name in names if name is not None]:
        raise NotMigratable(f"the pipeline has no reader named {reader_name!r}")
    if _literal(bound.get("size")) not in (None, -1) or _literal(bound.get("last_batch_padded")) not in (None, False):
        raise NotMigratable("`size=`/`last_batch_padded=` beside `reader_name=`")
    return outputs


def _new_args(call: cst.Call, parameters: list[str], renamed: dict[str, cst.Arg], added: list[cst.Arg]) -> list[cst.Arg]:
    """The call's own arguments, renamed or dropped in place, so that its layout and comments
    stay; ``added`` go right after the pipeline and its output map."""
    kept_positional = 1 if "output_map" not in parameters else 2
    new: list[cst.Arg] = []
    policy_done = False
    for index, arg in enumerate(call.args):
        name = arg.keyword.value if arg.keyword else parameters[index]
        if arg.keyword is None and index < kept_positional or name in ("pipelines", "pipeline", "output_map"):
            new.append(_loader_source(arg) if name in ("pipelines", "pipeline") else arg)
            if len(new) == kept_positional:
                new += [_after_keywords(a, new).with_changes(comma=arg.comma) for a in added]
            continue
        if name == "fill_last_batch":
            name = "last_batch_policy"
        if name in renamed and not (name == "last_batch_policy" and policy_done):
            policy_done |= name == "last_batch_policy"
            new.append(renamed[name].with_changes(comma=arg.comma))
    if len(new) < kept_positional + len(added):  # the output map came by keyword, after the rest
        new += [a.with_changes(comma=call.args[-1].comma) for a in added]
    if new:
        new[-1] = new[-1].with_changes(comma=call.args[-1].comma)
    return new


def _loader_source(arg: cst.Arg) -> cst.Arg:
    """The iterator's pipeline argument as the loader's first one: ``[pipe]`` is ``pipe``, and
    ``pipelines=`` is named as the loader names it."""
    source = arg.with_changes(value=single_element(arg.value))
    return source if arg.keyword is None else source.with_changes(keyword=cst.Name("batches"))


def _after_keywords(added: cst.Arg, before: list[cst.Arg]) -> cst.Arg:
    """``added`` (the output map when the iterator had none) by keyword once an argument before
    it is, since a positional one cannot follow a keyword."""
    if added.keyword is None and any(arg.keyword is not None for arg in before):
        return keyword_arg("output_map", added.value)
    return added


def _output_map_node(bound: dict, outputs: list[str]) -> cst.BaseExpression:
    return bound.get("output_map") or cst.List([cst.Element(cst.SimpleString(f'"{name}"')) for name in outputs])


class IteratorNotMigratable(NotMigratable):
    def __init__(self, site: Site, reason: str) -> None:
        super().__init__(f"{iterator_name(site)}: {reason}")
        self.site = site


@dataclass
class TorchLoaders:
    """The iterators over one plan's pipelines, for ``reader_meta.plan_reader_meta``."""

    plan: object
    facts: ModuleFacts
    class_name: str  # the PyTorch loader's name in the module
    jax_class_name: str
    module: cst.Module | None = None  # for the project's own subclasses of the iterator
    kept_classes: dict[str, str] | None = None  # such subclasses other files use -> why they stay

    def sites(self, var: str) -> list[Site]:
        return iterator_sites(self.facts, [var])

    def reader_name(self, site: Site) -> str:
        if site.name not in PARAMETERS:
            return ""  # replace() says why it is not migrated
        try:
            name = _literal(_bind(site.node, PARAMETERS[site.name]).get("reader_name"))
        except NotMigratable:
            return ""
        return name if isinstance(name, str) and len(self.plan.readers) > 1 else ""

    def ends_at_sources(self, site: Site) -> bool:
        """The iterator's epochs end where the pipeline's sources raise StopIteration: it names
        no reader and no size, and the pipeline reads only from its external sources."""
        if site.name not in PARAMETERS or self.plan.readers or not self.plan.sources:
            return False
        try:
            bound = _bind(site.node, PARAMETERS[site.name])
            fixed = [_literal(bound.get(name)) for name in ("reader_name", "size", "last_batch_padded")]
        except NotMigratable:
            return False  # replace() says why
        return fixed[0] is None and fixed[1] in (None, -1) and fixed[2] in (None, False)

    def counts_size(self, site: Site) -> bool:
        """PyTorch's iterator given ``size=`` (not -1) and no ``reader_name=``: its epochs are
        that many samples, which the loader counts the same way."""
        if site.name not in PARAMETERS or is_jax(site):
            return False
        try:
            bound = _bind(site.node, PARAMETERS[site.name])
        except NotMigratable:
            return False  # replace() says why
        size = bound.get("size")
        if size is None or bound.get("reader_name") is not None:
            return False
        if not all(_endless(source, self.module) for source in self.plan.sources):
            # a source that ends epochs would end the generator for good
            raise NotMigratable("`size=` over a pipeline fed by an external source that may raise StopIteration: "
                                "DALI restarts such a source, the migrated generator stops; pass `reader_name=` "
                                "of a reader, or loop over the migrated generator by hand")
        try:
            return _literal(size) not in (-1, 0)
        except NotMigratable:
            return True  # ``size=int(pipe.epoch_size("Reader") / world_size)``: counted all the same

    def replace(self, site: Site, factory_call: cst.Call, meta: str | None, sized: bool = False,
                elsewhere: bool = False, batch_size: cst.BaseExpression | None = None) -> cst.BaseExpression:
        """``elsewhere``: the pipeline is made in another method than the iterator;
        ``batch_size``: what the loader is given, where it is not the factory call's."""
        try:
            if elsewhere or meta is not None and meta.startswith("self."):
                _check_readable_from_another_method(_batch_size(self.plan, factory_call, self.facts))
            class_name = self.jax_class_name if is_jax(site) else self.class_name
            if site.detail:  # a call of the project's own subclass: it derives from the loader instead
                self._check_class(site)
                class_name = site.detail
            return loader_call(self.plan, site, factory_call, meta, class_name, self.facts, self.module, sized,
                               batch_size)
        except NotMigratable as reason:
            raise IteratorNotMigratable(site, str(reason)) from None


    def _check_class(self, site: Site) -> None:
        from .iterator_classes import check_iterator_class

        reason = (self.kept_classes or {}).get(site.detail)
        if reason is not None:
            raise NotMigratable(reason)
        check_iterator_class(self.facts.module_classes[site.detail][0], site.name, self.module)


def _endless(source, module: cst.Module | None) -> bool:
    """The source never ends an epoch: it cycles, or it is an object of a module class (or a
    plain function) in which nothing raises or lets through StopIteration (no ``next(...)``), as
    in the iterators DALI's older examples pair with ``size=`` ("the end is set by size")."""
    if source.cycle:
        return True
    made = source.made_from() or source.source
    name = dotted_name(made.func) if isinstance(made, cst.Call) else dotted_name(made)
    definition = _module_definition(module, name) if module is not None and name else None
    if isinstance(definition, cst.Assign) and isinstance(definition.value, cst.Call):  # ``eii = Iterator(...)``
        definition = _module_definition(module, dotted_name(definition.value.func) or "")
    if not isinstance(definition, (cst.ClassDef, cst.FunctionDef)):
        return False
    return not (_mentions(definition, "StopIteration") or _mentions(definition, "next")
                or isinstance(definition, cst.FunctionDef) and _yields(definition))


def _module_definition(module: cst.Module, name: str):
    for statement in module.body:
        if isinstance(statement, (cst.ClassDef, cst.FunctionDef)) and statement.name.value == name:
            return statement
        if (isinstance(statement, cst.SimpleStatementLine) and isinstance(statement.body[0], cst.Assign)
                and any(dotted_name(t.target) == name for t in statement.body[0].targets)):
            return statement.body[0]
    return None


def _mentions(node: cst.CSTNode, name: str) -> bool:
    return any(n.value == name for n in _names(node))


def _yields(function: cst.FunctionDef) -> bool:
    found = []

    class Yields(Visitor):
        def visit_Yield(self, node: cst.Yield) -> None:
            found.append(node)

    walk(function.body, Yields())
    return bool(found)


def _check_readable_from_another_method(batch_size: cst.BaseExpression) -> None:
    """The loader is made in another method than the pipeline: its ``batch_size=`` may read only
    the object (``self.batch_size``), not the other method's locals."""
    if not isinstance(batch_size, cst.Integer) and not (dotted_name(batch_size) or "").startswith("self."):
        code = cst.Module([]).code_for_node(batch_size)
        raise NotMigratable(f"the pipeline's `batch_size={code}` is computed in the method that creates it; "
                            "store it on the object (`self.batch_size`) and pass that")


def unbound_pipelines(facts: ModuleFacts, pipeline_names: set[str]) -> list[Site]:
    """Iterators over a pipeline that is not first bound to a name (``Iterator(make(), ...)``)."""
    found = []
    for site in facts.iterator_uses:
        argument = iterated_pipeline(site.node)
        if argument is not None and not is_pipeline_target(argument) and all_names(argument) & pipeline_names:
            found.append(site)
    return found
