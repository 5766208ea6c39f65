"""Rewrites where a migrated pipeline is used: ``build()``, ``run()``, outputs (DM003, DM007)."""

from __future__ import annotations

from dataclasses import dataclass, field

import libcst as cst

from ..analysis import HASATTR_SPELLINGS, ModuleFacts
from ..imports import IMPORT_TYPES, dotted_name
from ..values import EPOCH_ENDS_FLAG, READER_META_FLAG
from .checkpointing import CheckpointRewrites
from .ops import append_keyword, without_keywords
from .names import split_docstring
from .places import MadeNodes
from .plan import CALL_SITE_ARGS, EXECUTION_ONLY_ARGS, MAPPED_PIPELINE_ARGS, PipelinePlan, all_params
from .reader_meta import ReaderMetaRewrites

RUN_LIKE = frozenset({"run", "outputs", "share_outputs"})
REMOVED_METHODS = frozenset({"build", "reset", "schedule_run", "release_outputs"})


def _attr(value: cst.BaseExpression, name: str) -> cst.Attribute:
    return cst.Attribute(value=value, attr=cst.Name(name))


def _with_updated_arguments(replacement: cst.BaseExpression, original: cst.Call,
                            updated: cst.Call) -> cst.BaseExpression:
    """The replacement planned from ``original``'s arguments, given their rewritten forms
    (``size=pipe.epoch_size("Reader")`` in an iterator call that is replaced as a whole)."""
    if not isinstance(replacement, cst.Call) or len(original.args) != len(updated.args):
        return replacement
    # the planned arguments may have been realigned: they are matched by their code
    new = {_flat(before.value): after.value for before, after in zip(original.args, updated.args)
           if not before.value.deep_equals(after.value)}
    if not new:
        return replacement
    return replacement.with_changes(args=[a.with_changes(value=new.get(_flat(a.value), a.value))
                                          for a in replacement.args])


def _flat(node: cst.CSTNode) -> str:
    return "".join(cst.Module([]).code_for_node(node).split())


def _unwrapped(call: cst.Call, callees: set[str], made: MadeNodes) -> cst.Call:
    """``call`` given, as its one argument, what a wrapper call in ``made`` wraps, where it calls
    one of ``callees``: ``f(g(x))`` -> ``f(x)``."""
    if (len(call.args) == 1 and call.args[0].keyword is None and not call.args[0].star
            and call.args[0].value in made and dotted_name(call.func) in callees):
        return call.with_changes(args=[call.args[0].with_changes(value=call.args[0].value.args[0].value)])
    return call


def _call(func: cst.BaseExpression, *args: cst.BaseExpression) -> cst.Call:
    return cst.Call(func=func, args=[cst.Arg(a) for a in args])


def _dotted(text: str) -> cst.BaseExpression:
    return cst.parse_expression(text)


# TensorList methods whose replacements call NumPy (``np.asarray``) or ndd (``ndd.as_tensor``)
NUMPY_METHODS = frozenset({"at", "as_array"})
NDD_METHODS = frozenset({"as_tensor", "as_array"})


@dataclass
class CallSiteRewrites:
    ndd_alias: str
    numpy_alias: str
    needs_numpy: bool = False
    run_calls: set[int] = field(default_factory=set)
    build_calls: set[int] = field(default_factory=set)
    # ``for p in (train_pipe, val_pipe): p.build()``: id(loop) -> ids of the pipelines it still
    # builds (those that stay); a loop left with none goes
    build_loops: dict[int, set[int]] = field(default_factory=dict)
    pipeline_loops: set[int] = field(default_factory=set)  # ids of loops over migrated pipelines
    factory_dropped_args: dict[int, set[str]] = field(default_factory=dict)
    output_uses: dict[int, str] = field(default_factory=dict)
    fixed_ids: set[int] = field(default_factory=set)
    reader_meta: ReaderMetaRewrites = field(default_factory=ReaderMetaRewrites)
    checkpoints: CheckpointRewrites = field(default_factory=CheckpointRewrites)
    # what was written in parentheses to stand anywhere (``is_dense_tensor()``'s comparison,
    # ``layout()``'s ``or``), where it stands alone it needs none
    grouped_made: MadeNodes = field(default_factory=MadeNodes)
    sample_shapes: set[int] = field(default_factory=set)  # ``out.at(i)`` read only for ``.shape``
    arrays_made: MadeNodes = field(default_factory=MadeNodes)  # the ``np.asarray(...)`` calls written here
    shape_lists_made: MadeNodes = field(default_factory=MadeNodes)  # the ``list(x.shape)`` calls written here
    run_receivers: dict[int, cst.BaseExpression] = field(default_factory=dict)  # id(run call) -> what next() reads
    resets: dict[int, cst.BaseStatement] = field(default_factory=dict)  # id(reset call) -> its new statement
    dense_made: MadeNodes = field(default_factory=MadeNodes)  # the ``ndd.as_tensor(...)`` calls written here

    def statements_for(self, line: cst.SimpleStatementLine, updated: cst.SimpleStatementLine) -> list | None:
        """What replaces ``line``: ``pipe.checkpoint()`` becomes collect + serialize; a checkpoint
        is made before ``pipe = f(...)``, the reader metadata looked up after it."""
        if len(line.body) != 1 or not isinstance(line.body[0], (cst.Assign, cst.Expr)):
            return None
        value = id(line.body[0].value)
        if value in self.checkpoints.replaced:
            return self.checkpoints.replaced[value]
        if value in self.resets:
            return [self.resets[value].with_changes(leading_lines=updated.leading_lines)]
        before = self.checkpoints.before.get(value, [])
        after = list(self.reader_meta.statements_after.get(value, {}).values())
        if not before and not after:
            return None
        if before:  # the comments above the line now go above the new first statement
            before = [before[0].with_changes(leading_lines=updated.leading_lines), *before[1:]]
            updated = updated.with_changes(leading_lines=[])
        return [*before, updated, *after]

    def with_prelude(self, original: cst.FunctionDef, updated: cst.FunctionDef) -> cst.FunctionDef:
        """A function handed a pipeline takes its metadata first (after its docstring)."""
        prelude = list(self.reader_meta.preludes.get(id(original), {}).values())
        if not prelude or not isinstance(updated.body, cst.IndentedBlock):
            return updated
        docstring, body = split_docstring(list(updated.body.body))
        return updated.with_changes(body=updated.body.with_changes(body=[*docstring, *prelude, *body]))

    def is_removed_statement(self, line: cst.SimpleStatementLine) -> bool:
        return (
            len(line.body) == 1
            and isinstance(line.body[0], cst.Expr)
            and id(line.body[0].value) in self.build_calls
        )

    def rewrite_call(self, original: cst.Call, updated: cst.Call) -> cst.BaseExpression:
        key = id(original)
        if key in self.reader_meta.lookups:
            return _with_updated_arguments(self.reader_meta.lookups[key], original, updated)
        if key in self.run_calls:
            return _call(cst.Name("next"), self.run_receivers.get(key, updated.func.value))
        flags = [(READER_META_FLAG, self.reader_meta.flagged_calls), (EPOCH_ENDS_FLAG, self.reader_meta.epoch_end_calls)]
        if key in self.factory_dropped_args or any(key in calls for _, calls in flags):
            args = without_keywords(updated.args, self.factory_dropped_args.get(key, set()))
            if key in self.checkpoints.factory_args:
                args = append_keyword(args, "checkpoint", self.checkpoints.factory_args[key])
            for flag, calls in flags:
                if key in calls:
                    args = append_keyword(args, flag, cst.Name("True"))
            return updated.with_changes(args=args)
        method = self.output_uses.get(key)
        if method is None:
            return self._without_a_needless_list(self._without_a_second_array(updated))
        if method == "len":
            return _attr(updated.args[0].value, "batch_size")
        if method == "hasattr":  # ``hasattr(images, "as_cpu")`` -> ``hasattr(images, "cpu")``
            spelled = HASATTR_SPELLINGS[updated.args[1].value.evaluated_value]
            return updated.with_changes(args=[updated.args[0], updated.args[1].with_changes(
                value=cst.SimpleString(f'"{spelled}"'))])
        if method in ("isinstance_gpu", "isinstance_cpu"):  # ``batch.device.device_type == "gpu"``
            where = _attr(_attr(updated.args[0].value, "device"), "device_type")
            return cst.Comparison(where, [cst.ComparisonTarget(cst.Equal(), cst.SimpleString(f'"{method[-3:]}"'))])
        if method == "feed_ndarray":  # ``feed_ndarray(out, tensor)``: copies into the tensor, returns it
            copied, into = updated.args[0].value, updated.args[1].value
            return _call(_attr(into, "copy_"), _call(_attr(copied, "torch")))
        receiver = updated.func.value
        if method == "at":
            sample = cst.Subscript(value=_attr(receiver, "tensors"),
                                   slice=[cst.SubscriptElement(cst.Index(updated.args[0].value))])
            if key in self.sample_shapes:  # ``out.at(i).shape``: an ndd Tensor's shape is the same tuple
                return sample
            return self._array(sample)
        if method == "as_cpu":
            return updated.with_changes(func=_attr(receiver, "cpu"))
        if method == "as_tensor":
            dense = _call(_dotted(f"{self.ndd_alias}.as_tensor"), receiver)
            self.dense_made.add(dense)
            return dense
        if method == "as_array":  # ``out.as_tensor().as_array()``: the tensor is dense already
            dense = receiver if receiver in self.dense_made else _call(_dotted(f"{self.ndd_alias}.as_tensor"), receiver)
            return self._array(dense)
        if method == "tensor_shape":
            shape = _call(cst.Name("list"), _attr(receiver, "shape"))
            self.shape_lists_made.add(shape)
            return shape
        if method == "is_dense_tensor":
            return self._dense_check(receiver)
        if method == "layout":  # TensorList.layout() is "" where ndd's .layout is None
            layout = cst.BooleanOperation(_attr(receiver, "layout"), cst.Or(), cst.SimpleString('""'),
                                          lpar=[cst.LeftParen()], rpar=[cst.RightParen()])
            self.grouped_made.add(layout)
            return layout
        return _attr(receiver, method)  # shape() -> the .shape property

    def _array(self, value: cst.BaseExpression) -> cst.Call:
        array = _call(_dotted(f"{self.numpy_alias}.asarray"), value)
        self.arrays_made.add(array)
        return array

    def _without_a_second_array(self, call: cst.Call) -> cst.Call:
        """``np.asarray(images.at(0))`` is ``np.asarray(images.tensors[0])``, not
        ``np.asarray(np.asarray(...))``: an array made here, given alone to ``np.asarray`` or
        ``np.array``, is given as what it was made of."""
        return _unwrapped(call, {f"{self.numpy_alias}.asarray", f"{self.numpy_alias}.array"}, self.arrays_made)

    def _without_a_needless_list(self, call: cst.Call) -> cst.Call:
        """``len(images[0].shape())`` is ``len(images.tensors[0].shape)``: the ``list(...)`` written
        for a shape is left out where ``len``, ``tuple`` or ``list`` takes it alone."""
        return _unwrapped(call, {"len", "tuple", "list"}, self.shape_lists_made)

    def _dense_check(self, receiver: cst.BaseExpression) -> cst.Comparison:
        """``is_dense_tensor()``: pipeline outputs are stored contiguously (DALI 2.4, measured on
        outputs of readers, decoders, operators and external sources, copied or not), so dense
        means that every sample has one shape."""
        shapes = _call(cst.Name("set"), _attr(receiver, "shape"))
        check = cst.Comparison(_call(cst.Name("len"), shapes),
                               [cst.ComparisonTarget(cst.LessThanEqual(), cst.Integer("1"))],
                               lpar=[cst.LeftParen()], rpar=[cst.RightParen()])
        self.grouped_made.add(check)
        return check

    def ungrouped(self, value: cst.BaseExpression) -> cst.BaseExpression:
        """``value`` without the parentheses this module gave it: for a place where it stands
        alone (a call's argument, an ``if``/``while`` test, the value of an assignment)."""
        return value.with_changes(lpar=[], rpar=[]) if value in self.grouped_made else value

    def without_needless_parentheses(self, argument: cst.Arg) -> cst.Arg:
        value = self.ungrouped(argument.value)
        return argument if value is argument.value else argument.with_changes(value=value)

    def rewrite_attribute(self, original: cst.Attribute, updated: cst.Attribute) -> cst.BaseExpression:
        """``out.dtype`` -> ``out.dtype.type_id``: the ``DALIDataType`` the TensorList gave."""
        if self.output_uses.get(id(original)) != "dtype":
            return updated
        return _attr(updated, "type_id")

    def rewrite_subscript(self, original: cst.Subscript, updated: cst.Subscript) -> cst.BaseExpression:
        if self.output_uses.get(id(original)) != "[]":
            return updated
        return updated.with_changes(value=_attr(updated.value, "tensors"))


def _plan_build_loops(facts: ModuleFacts, pipe_vars: set[str], rewrites: CallSiteRewrites) -> None:
    """A loop that builds migrated pipelines builds only those that stay, or goes."""
    migrated = {id(site.node) for site in facts.build_loop_sites if site.origin in pipe_vars}
    if not migrated:
        return
    rewrites.fixed_ids |= migrated
    for key, loop in facts.build_loops.items():
        elements = {id(e.value) for e in loop.iter.elements}
        if elements & migrated:
            rewrites.build_loops[key] = elements - migrated


def numpy_alias(facts_module: cst.Module) -> str | None:
    for statement in facts_module.body:
        if isinstance(statement, cst.SimpleStatementLine):
            for small in statement.body:
                if isinstance(small, IMPORT_TYPES):
                    for alias in small.names:
                        if isinstance(alias.name, cst.Name) and alias.name.value == "numpy":
                            return alias.asname.name.value if alias.asname else "numpy"
    return None


def plan_call_sites(facts: ModuleFacts, plans: list[PipelinePlan], ndd_alias: str, module: cst.Module,
                    reader_meta: ReaderMetaRewrites, checkpoints: CheckpointRewrites,
                    manual_epochs=None) -> CallSiteRewrites:
    """``manual_epochs`` (manual_epochs.ManualEpochs): what ``run()`` reads and what ``reset()``
    becomes where the sources end epochs run by hand."""
    existing_numpy = numpy_alias(module)
    rewrites = CallSiteRewrites(ndd_alias, existing_numpy or "np", reader_meta=reader_meta, checkpoints=checkpoints)
    if manual_epochs is not None:
        rewrites.run_receivers, rewrites.resets = manual_epochs.run_receivers, manual_epochs.resets
    rewrites.fixed_ids |= set(reader_meta.lookups) | set(checkpoints.replaced)
    # what a ``@data_iterator`` function makes is the loader now: its ``reset()`` is the loader's
    pipe_vars = {var for plan in plans if plan.jax_iterator is None for var in plan.pipe_vars}
    for plan in plans:
        for call in plan.factory_calls:
            dropped = dropped_factory_args(plan, call)
            rewrites.factory_dropped_args[id(call)] = dropped
            rewrites.fixed_ids.add(id(call))
            rewrites.fixed_ids |= {id(arg) for arg in call.args}
    loaders_made = {var for plan in plans if plan.jax_iterator is not None for var in plan.pipe_vars}
    for site in facts.pipeline_method_calls:
        if site.origin in loaders_made:  # ``iterator.reset()``: the loader's own method
            rewrites.fixed_ids.add(id(site.node))
        if site.origin not in pipe_vars:
            continue
        if id(site.node) in rewrites.resets:
            pass  # it starts the next epoch of the sources (``statements_for``)
        elif site.detail in REMOVED_METHODS:  # a reset that did something was blocked (plan.py)
            rewrites.build_calls.add(id(site.node))
        elif site.detail in RUN_LIKE:
            rewrites.run_calls.add(id(site.node))
        rewrites.fixed_ids.add(id(site.node))
    _plan_build_loops(facts, pipe_vars, rewrites)
    rewrites.pipeline_loops = {loop for loop, key in facts.pipeline_loops.items() if key in pipe_vars}
    rewrites.sample_shapes = facts.sample_shapes
    for site in facts.tensorlist_uses:
        if site.origin in pipe_vars:
            rewrites.output_uses[id(site.node)] = site.detail
            rewrites.fixed_ids.add(id(site.node))
            if site.detail in NUMPY_METHODS and existing_numpy is None and id(site.node) not in facts.sample_shapes:
                rewrites.needs_numpy = True
    return rewrites


def dropped_factory_args(plan: PipelinePlan, call: cst.Call) -> set[str]:
    params = {p.name.value for p in all_params(plan.function.params)}
    dropped = set()
    for arg in call.args:
        name = arg.keyword.value if arg.keyword else None
        if name is None or name in params:
            continue
        if name in EXECUTION_ONLY_ARGS or name in CALL_SITE_ARGS or (name in MAPPED_PIPELINE_ARGS and name not in plan.params):
            dropped.add(name)
    return dropped
