"""Turn a planned ``@pipeline_def`` function into a dynamic-mode generator (DM001, DM005, DM006).

The migrated function keeps its name and parameters, gains keyword-only parameters for the
pipeline arguments it used, and yields one tuple of Batches per iteration: what one
``pipe.run()`` returned. Its reader is created once and iterated epoch after epoch, which gives
the same batches as ``run()`` across epoch boundaries.
"""

from __future__ import annotations

from dataclasses import dataclass, field

import libcst as cst

from ..analysis import TFRECORD_READERS, DaliCall
from ..imports import dotted_name
from ..scopes import function_locals
from ..values import EPOCH_ENDS_FLAG, READER_META_FLAG
from ..visitors import Transformer, Visitor, walk
from . import checkpointing
from . import external_source as sources
from .ops import TIGHT_EQUAL, append_keyword, bracket_moved, keyword_values, reader_constructor, realigned
from .names import renamed, scope_names, split_docstring, target_names
from .plan import PipelinePlan, reader_needs_pipeline_seed
from .reader_meta import reader_name_node


@dataclass(frozen=True)
class GeneratorNames:
    ndd: str
    reader: str
    rng: str
    op_rngs: dict[int, str]  # id(call) -> name of the RNG made from that op's seed=
    iteration: str = "iteration"
    source_holders: dict[int, str] = field(default_factory=dict)  # id(call) -> iterator/instance
    more_readers: list[str] = field(default_factory=list)  # names of the second, third... reader
    context: str = "context"  # the pipeline's own ndd.EvalContext
    outputs: str = "outputs"  # what one iteration yields, computed inside the context
    epoch: str = "epoch_idx"  # counts the epochs the sources end (PipelinePlan.marks_epoch_ends)
    # id(call of a seeded helper) -> (its RNG, the seed the call gives) (helpers.Helper.seed_param)
    helper_rngs: dict[int, tuple[str, cst.BaseExpression]] = field(default_factory=dict)


def statement(code: str) -> cst.BaseStatement:
    return cst.parse_statement(code)


def _kwonly_param(name: str, default: cst.BaseExpression | None) -> cst.Param:
    equal = TIGHT_EQUAL if default else cst.MaybeSentinel.DEFAULT
    return cst.Param(name=cst.Name(name), default=default, equal=equal)


def migrated_parameters(plan: PipelinePlan, params: cst.Parameters) -> cst.Parameters:
    new = []
    for name in plan.params:
        default = plan.pipeline_args.get(name)
        if default is None and name != "batch_size":
            default = cst.Name("None")
        new.append(_kwonly_param(name, default))
    # Parameters without a default must come first among keyword-only ones for readability.
    new.sort(key=lambda p: p.default is not None)
    if plan.checkpointing:
        new.append(_kwonly_param("checkpoint", cst.Name("None")))
    if plan.yields_reader_meta:
        new.append(_kwonly_param(READER_META_FLAG, cst.Name("False")))
    if plan.marks_epoch_ends:
        new.append(_kwonly_param(EPOCH_ENDS_FLAG, cst.Name("False")))
    kwonly = [*params.kwonly_params, *new]
    star = params.star_arg
    if isinstance(star, cst.MaybeSentinel) or star is None:
        star = cst.ParamStar()
    return params.with_changes(kwonly_params=kwonly, star_arg=star)


def _yield_from_return(line: cst.SimpleStatementLine, sequence: bool) -> cst.SimpleStatementLine:
    """``sequence``: the value is a tuple or list of outputs built at run time."""
    value = line.body[0].value
    if isinstance(value, cst.List):
        value = cst.Tuple(elements=value.elements)
    elif sequence:
        is_tuple_call = isinstance(value, cst.Call) and dotted_name(value.func) == "tuple"
        value = value if is_tuple_call else cst.Call(cst.Name("tuple"), [cst.Arg(value)])
    elif not isinstance(value, cst.Tuple):
        # run() always returned a tuple of outputs, also for a single output
        value = _one_output(value)
    return line.with_changes(body=[cst.Expr(cst.Yield(value=_evaluated(value)))])


def _evaluated(outputs: cst.BaseExpression) -> cst.BaseExpression:
    """The outputs finished before they are handed out, as ``pipe.run()`` gave them. ndd runs
    operators in a background thread; DALI 2.4 aborts the interpreter at exit (``terminate
    called without an active exception``) while one is still running, as it is for outputs a
    program never reads (a loop that breaks after its last step)."""
    if isinstance(outputs, cst.Tuple) and all(isinstance(e, cst.Element) for e in outputs.elements):
        return outputs.with_changes(elements=[e.with_changes(value=_evaluate_call(e.value)) for e in outputs.elements])
    if isinstance(outputs, cst.Call) and dotted_name(outputs.func) == "tuple" and len(outputs.args) == 1:
        outputs = outputs.args[0].value
    if not (isinstance(outputs, ITERABLE_AS_WRITTEN) or outputs.lpar):  # ``*crops, labels``
        outputs = outputs.with_changes(lpar=[cst.LeftParen()], rpar=[cst.RightParen()])
    each = cst.GeneratorExp(_evaluate_call(cst.Name("output")),
                            cst.CompFor(target=cst.Name("output"), iter=outputs))
    return cst.Call(cst.Name("tuple"), [cst.Arg(each.with_changes(lpar=[], rpar=[]))])


# what a comprehension's ``in`` takes without parentheses (a bare tuple or generator does not)
ITERABLE_AS_WRITTEN = (cst.Name, cst.Attribute, cst.Call, cst.Subscript, cst.List, cst.ListComp, cst.BinaryOperation)


def unevaluated(outputs: cst.BaseExpression) -> cst.BaseExpression:
    """``outputs`` as the graph returned them, without ``_evaluated``'s calls."""
    if isinstance(outputs, cst.Tuple):
        return outputs.with_changes(elements=[e.with_changes(value=unevaluated(e.value)) for e in outputs.elements])
    if _is_evaluate_call(outputs):
        return outputs.func.value
    each = outputs.args[0].value if isinstance(outputs, cst.Call) and dotted_name(outputs.func) == "tuple" else None
    if isinstance(each, cst.GeneratorExp) and _is_evaluate_call(each.elt):
        iterated = each.for_in.iter
        return iterated if isinstance(iterated, cst.Tuple) else cst.Call(cst.Name("tuple"), [cst.Arg(iterated)])
    return outputs


def _is_evaluate_call(node: cst.BaseExpression) -> bool:
    return (isinstance(node, cst.Call) and not node.args and isinstance(node.func, cst.Attribute)
            and node.func.attr.value == "evaluate")


def _evaluate_call(output: cst.BaseExpression) -> cst.Call:
    atom = isinstance(output, (cst.Name, cst.Attribute, cst.Call, cst.Subscript)) or output.lpar
    receiver = output if atom else output.with_changes(lpar=[cst.LeftParen()], rpar=[cst.RightParen()])
    return cst.Call(cst.Attribute(receiver, cst.Name("evaluate")))


def _one_output(value: cst.BaseExpression) -> cst.Tuple:
    """``(value,)``; a value written over several lines goes on lines of its own, one level
    deeper, as black lays out a one-element tuple: ``(``, the value, ``,``, ``)``."""
    if "\n" not in cst.Module([]).code_for_node(value):
        return cst.Tuple(elements=[cst.Element(value)])
    deeper = value.visit(_OneLevelDeeper())
    return cst.Tuple(elements=[cst.Element(deeper, comma=cst.Comma(whitespace_after=_line_break("")))],
                     lpar=[cst.LeftParen(whitespace_after=_line_break(INDENT_UNIT))])


INDENT_UNIT = "    "


def _line_break(indent: str) -> cst.ParenthesizedWhitespace:
    """A line break inside brackets, the next line indented ``indent`` past the statement."""
    return cst.ParenthesizedWhitespace(indent=True, last_line=cst.SimpleWhitespace(indent))


class _OneLevelDeeper(Transformer):
    def leave_ParenthesizedWhitespace(self, original_node, updated_node):
        if not updated_node.indent:
            return updated_node
        return updated_node.with_changes(last_line=cst.SimpleWhitespace(INDENT_UNIT + updated_node.last_line.value))


def yields_feature_dict(reader: DaliCall) -> bool:
    """``fn.readers.tfrecord(features={...})`` gives a dict of DataNodes, and its ndd reader's
    ``next_epoch`` a dict of Batches by feature name."""
    return reader.qualname in TFRECORD_READERS


def _loop_target(target: cst.BaseExpression) -> cst.BaseExpression:
    """``next_epoch`` yields a tuple of Batches, also for a reader with one output."""
    if isinstance(target, cst.Tuple):
        return target.with_changes(lpar=[], rpar=[])
    if isinstance(target, cst.List):
        return target
    return cst.Tuple(elements=[cst.Element(target, comma=cst.Comma())])


def _zipped_loop(targets: list[cst.BaseExpression], reader_names: list[str],
                 body: list[cst.BaseStatement]) -> cst.BaseStatement:
    """Several readers: each wraps into its next epoch on its own, as in pipeline mode, so each
    is an endless stream of batches, and one batch of each makes an iteration."""
    parenthesized = [t.with_changes(lpar=[cst.LeftParen()], rpar=[cst.RightParen()])
                     if isinstance(t, cst.Tuple) else t for t in targets]
    streams = ", ".join(f"{name}_batches" for name in reader_names[: len(targets)])
    return cst.For(target=cst.Tuple([cst.Element(t) for t in parenthesized], lpar=[], rpar=[]),
                   iter=cst.parse_expression(f"zip({streams})"), body=cst.IndentedBlock(body=body))


def _loop(target: cst.BaseExpression | None, names: GeneratorNames, batch_size: str,
          body: list[cst.BaseStatement], capture: bool = False) -> cst.BaseStatement:
    inner: list[cst.BaseStatement] = body
    if target is not None:
        captured = ", capture=True" if capture else ""
        epoch = cst.parse_expression(f"{names.reader}.next_epoch(batch_size={batch_size}{captured})")
        inner = [cst.For(target=target, iter=epoch, body=cst.IndentedBlock(body=body))]
    return cst.While(test=cst.Name("True"), body=cst.IndentedBlock(body=inner))


def migrate_function(plan: PipelinePlan, updated: cst.FunctionDef, names: GeneratorNames,
                     optable, replacements: dict[int, list[cst.BaseStatement]] | None = None) -> cst.FunctionDef:
    """``replacements``: statements of ``updated``'s body (by id) to replace by several, once
    the statement indices of the plan have been used."""
    docstring, body = split_docstring(list(updated.body.body))
    setup: list[cst.BaseStatement] = []
    context = _context_arguments(plan)
    if context:
        setup.append(statement(f"{names.context} = {names.ndd}.EvalContext({context})"))
    if _draws_from_its_rng(plan, names):
        setup.append(statement(f"{names.rng} = {names.ndd}.random.RNG(seed=seed)"))
    graph_locals = scope_names(body).bound
    seeded_later: list[tuple[set[str], cst.BaseStatement]] = []  # RNGs whose seed the graph computes
    for rng_name, seed in _seeded_rngs(plan, names):
        seed = renamed(seed, plan.renamed)  # the graph's own ``seed`` is ``seed_`` in the generator
        made = _with_seed(statement(f"{rng_name} = {names.ndd}.random.RNG(seed=0)"), seed)
        computed = scope_names([seed]).loaded & graph_locals
        if computed:  # ``s = 42`` ... ``seed=s``: the RNG is made once ``s`` is
            seeded_later.append((computed, made))
        else:
            setup.append(made)
    offset = len(docstring)
    epoch = names.epoch if plan.marks_epoch_ends else None
    made_once: list[tuple[int, cst.BaseStatement]] = []  # body position -> what makes a source
    replacements = dict(replacements or {})
    body = _comments_of_dropped_carried(body, replacements)
    for source in plan.sources:  # before the reader leaves the body: indices are the original's
        if source.kind == sources.PARAMETER:  # parameter_sources.py plans it from the callers, or blocks
            raise AssertionError(f"the source `{source.parameter}` of `{plan.graph.name}` was never planned")
        holder = names.source_holders.get(id(source.call.node))
        position = source.statement_index - offset
        made_once += [(position, made) for made in sources.setup_statements(source, holder)]
        line, returned = _source_assignment(body[position], names.outputs)
        body[position] = sources.migrated_statement(source, line, names.ndd, holder, "batch_size",
                                                    names.iteration, epoch)
        if returned is not None:  # ``return fn.external_source(...)``: the data, then its return
            replacements[id(body[position])] = [body[position], returned]
    if sources.uses_iteration(plan.sources) and not epoch:
        setup.append(statement(f"{names.iteration} = 0"))
    targets = []
    reader_names = [names.reader, *names.more_readers]
    readers_at: dict[int, cst.BaseStatement] = {}  # body position -> the reader's constructor
    for reader, index, name in zip(plan.readers, plan.reader_statement_indices, reader_names):
        line = body[index - offset]
        assign = line.body[0]
        target = assign.targets[0].target
        targets.append(target if yields_feature_dict(reader) else _loop_target(target))
        constructor = reader_constructor(reader, names.ndd, optable, assign.value)
        if reader_needs_pipeline_seed(reader.node) and "seed" in plan.params:
            # pipeline mode seeds a shuffling reader from the pipeline's seed: keep the order
            # reproducible and tied to that seed (not equal: DALI derives the seed in C++)
            constructor = constructor.with_changes(args=append_keyword(list(constructor.args), "seed", cst.Name("seed")))
        if plan.yields_reader_meta:  # it answers get_metadata() before its first epoch
            constructor = constructor.with_changes(
                args=append_keyword(list(constructor.args), "max_batch_size", cst.Name("batch_size")))
        # `images, labels = fn.readers.file(` is now `reader = ndd.readers.File(`
        moved = bracket_moved([assign.targets[0].target, assign.value.func], [cst.Name(name), constructor.func])
        constructor = realigned(constructor, moved)
        readers_at[index - offset] = line.with_changes(body=[cst.Assign(
            targets=[cst.AssignTarget(cst.Name(name))], value=constructor)])
    rest = [(position, s) for position, s in enumerate(body) if position not in readers_at]
    # a statement replaced by nothing (plan.dropped_statements) may go before the loop: it is dropped there
    stays = {k for k, (position, s) in enumerate(rest)
             if replacements.get(id(s)) or position in {src.statement_index - offset for src in plan.sources}}
    once = _runs_once([s for _, s in rest], stays, names.ndd,
                      {n.value for t in targets for n in target_names(t)}, plan.helpers)
    _check_sources_made_once(plan, [s for k, (_, s) in enumerate(rest) if k not in once], offset,
                             {rest[k][0] for k in once})
    # a source is made where the graph made it: after the statements that compute its arguments
    before_loop = sorted([*readers_at.items(), *(rest[k] for k in once), *made_once], key=lambda item: item[0])
    before_loop = _with_seeded_rngs(before_loop, seeded_later)
    setup += [s for _, s in before_loop if replacements.get(id(s), [s])]
    body = [new for k, (_, s) in enumerate(rest) if k not in once for new in replacements.get(id(s), [s])]
    # the loop's first line follows the loop's header (its comments stay)
    body[0] = body[0].with_changes(leading_lines=[line for line in body[0].leading_lines if line.comment is not None])
    if plan.checkpointing:
        rngs = [names.rng] if _draws_from_its_rng(plan, names) else []
        setup += checkpointing.generator_registrations(reader_names[: len(targets)], [*rngs, *names.op_rngs.values()])
    body[-1] = _yield_from_return(body[-1], plan.returns_sequence)
    if context:
        body = _computed_in_context(body, names)
    if sources.uses_iteration(plan.sources):
        body.append(statement(f"{names.iteration} += 1"))
    if len(targets) > 1:
        setup += [statement(f"{name}_batches = itertools.chain.from_iterable("
                            f"{name}.next_epoch(batch_size=batch_size) for _ in itertools.count())")
                  for name in reader_names[: len(targets)]]
        loop = _zipped_loop(targets, reader_names, body)
    else:
        loop = _loop(targets[0] if targets else None, names, "batch_size", body, plan.capture)
    if epoch:
        if sources.uses_iteration(plan.sources):  # ``BatchInfo``/``SampleInfo`` give the epoch
            setup.append(statement(f"{epoch} = 0"))
        restarts = [sources.restart_statement(s, names.source_holders[id(s.call.node)])
                    for s in plan.sources if s.restarts_each_epoch]
        loop = _epochs(loop, names, sources.uses_iteration(plan.sources), restarts)
    if plan.yields_reader_meta:
        setup.append(_metadata_first(plan, reader_names))
    statements = _spaced_after_definitions([*setup, loop])
    return _without_pipeline_decorator(plan, updated).with_changes(
        params=migrated_parameters(plan, updated.params),
        body=updated.body.with_changes(body=[*docstring, *statements]),
    )


def _draws_from_its_rng(plan: PipelinePlan, names: GeneratorNames) -> bool:
    """A random operator draws from the generator's own RNG: one without a ``seed=`` of its
    own, in the graph or in a helper it calls (but a seeded helper: its calls have theirs)."""
    # a helper's operator with a seed of its own is a seeded helper's (helpers.why_not)
    seeded_helper_ops = {id(c.node) for c in plan.random_calls if c.graph is None and "seed" in keyword_values(c.node)}
    return any(id(c.node) not in names.op_rngs and id(c.node) not in seeded_helper_ops for c in plan.random_calls)


def _seeded_rngs(plan: PipelinePlan, names: GeneratorNames) -> list[tuple[str, cst.BaseExpression]]:
    """(RNG name, seed) for each operator with a ``seed=`` of its own and each call of a
    seeded helper."""
    own = [(names.op_rngs[id(call.node)], keyword_values(call.node)["seed"])
           for call in plan.random_calls if id(call.node) in names.op_rngs]
    return [*own, *names.helper_rngs.values()]


def _with_seeded_rngs(before_loop: list[tuple[float, cst.BaseStatement]],
                      seeded: list[tuple[set[str], cst.BaseStatement]]) -> list[tuple[float, cst.BaseStatement]]:
    """Each RNG whose seed reads names the graph computes goes right after the last statement
    before the loop that binds one of them (plan._check_op_seeds made sure there is one)."""
    placed = list(before_loop)
    for names, made in seeded:
        binding = [position for position, s in before_loop if scope_names([s]).bound & names]
        if not binding:
            raise AssertionError("an operator's seed is computed in the loop")
        placed.append((max(binding) + 0.5, made))
    return sorted(placed, key=lambda item: item[0])


def _spaced_after_definitions(statements: list[cst.BaseStatement]) -> list[cst.BaseStatement]:
    """A blank line before and after each nested ``def`` (but the first statement), as black writes it."""
    spaced = statements[:1]
    for before, statement in zip(statements, statements[1:]):
        apart = isinstance(before, cst.FunctionDef) or isinstance(statement, cst.FunctionDef)
        if apart and not statement.leading_lines:
            statement = statement.with_changes(leading_lines=[cst.EmptyLine(indent=False)])
        spaced.append(statement)
    return spaced


def _source_assignment(line: cst.SimpleStatementLine, name: str):
    """``return fn.external_source(...)`` is ``name = fn.external_source(...)`` then
    ``return name``; an assignment stays as it is (with no second statement)."""
    returned = line.body[0]
    if not isinstance(returned, cst.Return):
        return line, None
    assign = cst.Assign([cst.AssignTarget(cst.Name(name))], returned.value)
    return line.with_changes(body=[assign]), cst.SimpleStatementLine([cst.Return(cst.Name(name))])


def _check_sources_made_once(plan: PipelinePlan, in_loop: list[cst.BaseStatement], offset: int,
                             once_positions: set[int]) -> None:
    """The plan made sure (plan._check_source_setup) that what makes each source is not computed
    per batch; a generator that would do otherwise is a bug here, not code to write."""
    bound_in_loop = scope_names(in_loop).bound
    for source in plan.sources:
        made_from = source.made_from()
        if made_from is None:
            continue
        moved = source.binding_index is None or source.binding_index - offset in once_positions
        if not moved or scope_names([made_from]).loaded & bound_in_loop:
            raise AssertionError(f"the source of `{plan.graph.name}` would be made in the loop, per batch")


def _epochs(stream: cst.BaseStatement, names: GeneratorNames, counts_iterations: bool,
            restarts: list[cst.BaseStatement]) -> cst.While:
    """Where the sources stop, the stream ends; asked for ``mark_epoch_ends``, the generator yields
    None instead and goes on with their next epoch, as ``pipe.reset()`` did: ``restarts`` the
    ``cycle="raise"`` sources, which the reset made DALI iterate anew, every one of them."""
    restart = [statement(f"{names.iteration} = 0")] if counts_iterations else []
    counted = f"{names.epoch} += 1\n" if counts_iterations else ""
    after = cst.parse_module(
        f"if not {EPOCH_ENDS_FLAG}:\n"
        f"    return\n"
        f"yield None  # the sources ended an epoch\n{counted}").body
    return cst.While(test=cst.Name("True"), body=cst.IndentedBlock(body=[*restart, stream, *after, *restarts]))


def _comments_of_dropped_carried(body: list[cst.BaseStatement], replacements: dict) -> list[cst.BaseStatement]:
    """A statement replaced by nothing (``device_id = Pipeline.current().device_id``) leaves the
    comment lines above it to the statement after it."""
    body = list(body)
    for position, statement in enumerate(body[:-1]):
        comments = [line for line in statement.leading_lines if line.comment is not None]
        if replacements.get(id(statement)) != [] or not comments:
            continue
        following = body[position + 1]
        carried = following.with_changes(leading_lines=[*comments, *following.leading_lines])
        if id(following) in replacements:
            replacements[id(carried)] = replacements.pop(id(following))
        body[position + 1] = carried
    return body


def _metadata_first(plan: PipelinePlan, reader_names: list[str]) -> cst.BaseStatement:
    """``if yield_reader_meta: yield reader.get_metadata()``: what the callers that read the
    reader's metadata take with their first ``next()`` (by reader name where there are several)."""
    if len(plan.readers) == 1 and plan.meta_has_batch_size:
        value = f"dict({reader_names[0]}.get_metadata(), batch_size=batch_size)"
    elif len(plan.readers) == 1:
        value = f"{reader_names[0]}.get_metadata()"
    else:
        named = [(reader_name_node(r.node), name) for r, name in zip(plan.readers, reader_names)]
        value = "{" + ", ".join(f"{key.value}: {name}.get_metadata()" for key, name in named if key is not None) + "}"
    return statement(f"if {READER_META_FLAG}:  # the caller's first next(): the reader's metadata\n"
                     f"    yield {value}\n")


def _context_arguments(plan: PipelinePlan) -> str:
    """A pipeline ran on its own device: the generator computes in an EvalContext of that device.
    ``num_threads`` is not passed on. ``ndd.set_num_threads`` is process-wide (every other
    pipeline would get the last count, and lowering it after a decode has run hangs DALI 2.4 on
    CPU), and a context with a thread pool of its own makes DALI 2.4 abort at interpreter exit
    about half the time. The thread count changes no data."""
    return "device_id=device_id" if "device_id" in plan.params else ""


def _computed_in_context(body: list[cst.BaseStatement], names: GeneratorNames) -> list[cst.BaseStatement]:
    """The iteration's work inside ``with context:``, the ``yield`` after it. EvalContext is a
    thread-local stack: held across a ``yield``, it would stay current for the caller and be
    left out of order when two generators interleave (train and validation)."""
    *work, last = body
    value = last.body[0].value.value
    if not _names_only(value):
        work.append(cst.SimpleStatementLine([cst.Assign([cst.AssignTarget(cst.Name(names.outputs))], value)]))
        last = last.with_changes(body=[cst.Expr(cst.Yield(cst.Name(names.outputs)))])
    if not work:
        return body
    return [cst.With(items=[cst.WithItem(cst.Name(names.context))], body=cst.IndentedBlock(body=work)), last]


def _names_only(value: cst.BaseExpression) -> bool:
    """Outputs that are plain names need no work in the context to be yielded."""
    if isinstance(value, (cst.Tuple, cst.List)):
        return all(isinstance(e, cst.Element) and _name_only(e.value) for e in value.elements)
    return _name_only(value)


def _name_only(value: cst.BaseExpression) -> bool:
    """``images`` or ``images.evaluate()``: waiting for a result needs no context."""
    return isinstance(unevaluated(value), cst.Name)


def _with_seed(line: cst.SimpleStatementLine, seed: cst.BaseExpression) -> cst.SimpleStatementLine:
    assign = line.body[0]
    call = assign.value
    new_call = call.with_changes(args=[call.args[0].with_changes(value=seed)])
    return line.with_changes(body=[assign.with_changes(value=new_call)])


def _without_pipeline_decorator(plan: PipelinePlan, updated: cst.FunctionDef) -> cst.FunctionDef:
    index = list(plan.function.decorators).index(plan.graph.decorator)
    decorators = list(updated.decorators)
    removed = decorators.pop(index)
    kept_comments = [*removed.leading_lines, *_trailing_comment(removed)]
    if decorators and index < len(decorators):
        following = decorators[index]
        decorators[index] = following.with_changes(leading_lines=[*kept_comments, *following.leading_lines])
        return updated.with_changes(decorators=decorators)
    if decorators:
        return updated.with_changes(decorators=decorators, lines_after_decorators=[
            *updated.lines_after_decorators, *kept_comments])
    return updated.with_changes(decorators=[], lines_after_decorators=[], leading_lines=[
        *updated.leading_lines, *kept_comments, *updated.lines_after_decorators])


def _trailing_comment(decorator: cst.Decorator) -> list[cst.EmptyLine]:
    comment = decorator.trailing_whitespace.comment
    return [cst.EmptyLine(indent=True, comment=comment)] if comment is not None else []


def _runs_once(body: list[cst.BaseStatement], fixed: set[int], ndd: str, loop_bound: set[str],
               helpers: set[str] = frozenset()) -> set[int]:
    """Indices of ``body`` statements that ran once in pipeline mode (when the graph was defined)
    and must run once in the generator, before its loop: they call no operator and read no data,
    and moving them changes no value a statement left in the loop reads. ``fixed``: indices that
    stay in the loop; ``loop_bound``: names the loop itself binds (the readers' outputs);
    ``helpers``: module functions that run operators (a call to one is graph work)."""
    names = [_statement_names(s) for s in body]
    builders = _graph_building_functions(body, ndd, set(helpers))
    once = {i for i, s in enumerate(body) if i not in fixed and _plain_python(s, ndd, builders)}
    changed = True
    while changed:  # each pass only moves statements back into the loop
        changed = False
        bound_in_loop = loop_bound.union(*(n.bound for i, n in enumerate(names) if i not in once))
        # ``crops = []`` filled by ``crops.append(...)`` in the loop: a new list per batch
        mutated_in_loop = _mutated_names([s for i, s in enumerate(body) if i not in once], ndd)
        bound_before, loaded_before = set(loop_bound), set()
        for i, n in enumerate(names):
            if i in once and (n.loaded & bound_before or n.bound & loaded_before or n.bound & bound_in_loop
                              or n.bound & mutated_in_loop and not _binds_immutable(body[i])):
                once.discard(i)
                changed = True
            if i not in once:
                bound_before |= n.bound
                loaded_before |= n.loaded
    return once


# builtins that read their arguments and change none of them
_READ_ONLY_BUILTINS = frozenset({"len", "range", "list", "tuple", "dict", "set", "frozenset", "sorted", "reversed",
                                 "enumerate", "zip", "min", "max", "sum", "any", "all", "print", "str", "repr",
                                 "int", "float", "bool", "isinstance", "type", "id", "hash", "abs", "round"})


def _mutated_names(statements: list[cst.BaseStatement], ndd: str) -> set[str]:
    """Names whose values ``statements`` may change in place: method calls on them, items or
    attributes assigned or deleted, and values passed to functions that are not operators."""
    finder = _Mutations(ndd)
    for statement in statements:
        walk(statement, finder)
    return finder.names


def _root_name(node: cst.BaseExpression) -> str | None:
    while isinstance(node, (cst.Attribute, cst.Subscript)):
        node = node.value
    return node.value if isinstance(node, cst.Name) else None


class _Mutations(Visitor):
    def __init__(self, ndd: str) -> None:
        self.ndd = ndd
        self.names: set[str] = set()

    def visit_Call(self, node: cst.Call) -> None:
        if isinstance(node.func, cst.Attribute):
            self.names.add(_root_name(node.func.value))
        called = dotted_name(node.func) or ""
        if called.split(".")[0] == self.ndd or called in _READ_ONLY_BUILTINS:
            return
        self.names |= {_root_name(arg.value) for arg in node.args}

    def _changed_parts(self, target: cst.BaseExpression) -> None:
        if isinstance(target, (cst.Attribute, cst.Subscript)):
            self.names.add(_root_name(target))
        elif isinstance(target, (cst.Tuple, cst.List)):
            for element in target.elements:
                self._changed_parts(element.value)

    def visit_AssignTarget(self, node: cst.AssignTarget) -> None:
        self._changed_parts(node.target)

    def visit_AugAssign(self, node: cst.AugAssign) -> None:
        self._changed_parts(node.target)

    def visit_Del(self, node: cst.Del) -> None:
        self._changed_parts(node.target)


_IMMUTABLE_LITERALS = (cst.Integer, cst.Float, cst.Imaginary, cst.SimpleString, cst.ConcatenatedString)


def _binds_immutable(statement: cst.BaseStatement) -> bool:
    """A line of assignments of numbers, strings, ``None``/``True``/``False`` and tuples or
    arithmetic of them: no one can change those values in place. A ``def`` binds a function."""
    if isinstance(statement, cst.FunctionDef):
        return True
    if not isinstance(statement, cst.SimpleStatementLine):
        return False
    return all(isinstance(small, (cst.Assign, cst.AnnAssign)) and small.value is not None
               and _immutable(small.value) for small in statement.body)


def _immutable(value: cst.BaseExpression) -> bool:
    if isinstance(value, _IMMUTABLE_LITERALS):
        return True
    if isinstance(value, cst.Name):
        return value.value in ("None", "True", "False")
    if isinstance(value, cst.Tuple):
        return all(_immutable(element.value) for element in value.elements)
    if isinstance(value, cst.UnaryOperation):
        return _immutable(value.expression)
    if isinstance(value, cst.BinaryOperation):
        return _immutable(value.left) and _immutable(value.right)
    # ``seed = random.randint(1, 0x7fffffff)``: a number, whatever the arguments
    return isinstance(value, cst.Call) and dotted_name(value.func) in _NUMBER_FUNCTIONS


_NUMBER_FUNCTIONS = frozenset({"int", "float", "str", "bool", "len", "round", "abs", "hash", "random.randint",
                               "random.random", "random.randrange", "random.getrandbits", "random.uniform"})


def _statement_names(statement: cst.BaseStatement):
    """What a statement binds and loads when it runs; a ``def`` binds only its name, and the
    names its body reads from outside count as read here (when it is called, to err on the safe side)."""
    names = scope_names([statement])
    if isinstance(statement, cst.FunctionDef):
        names.bound = {statement.name.value}
        names.loaded -= function_locals(statement)
    return names


def _graph_building_functions(body: list[cst.BaseStatement], ndd: str, helpers: set[str]) -> set[str]:
    """``helpers`` and the functions ``body`` defines that run operators, directly or through
    each other: ``mt = random_transform(size)`` draws new values for every batch."""
    defined = {s.name.value: s for s in body if isinstance(s, cst.FunctionDef)}
    builders = set(helpers)
    while True:
        found = {name for name, function in defined.items()
                 if name not in builders and _runs_operators(function.body, ndd, builders)}
        if not found:
            return builders
        builders |= found


def _runs_operators(node: cst.CSTNode, ndd: str, builders: set[str]) -> bool:
    finder = _GraphWork(ndd, builders)
    walk(node, finder)
    return finder.calls_operator


def _plain_python(statement: cst.BaseStatement, ndd: str, builders: set[str] = frozenset()) -> bool:
    """No operator call (nor a call of one of ``builders``), no ``yield``/``return``/``global``:
    Python that only builds the graph. A ``def`` runs nothing of its body where it stands: only
    its decorators and defaults count."""
    finder = _GraphWork(ndd, builders)
    if isinstance(statement, cst.FunctionDef):
        for part in [*statement.decorators, statement.params]:
            walk(part, finder)
    else:
        walk(statement, finder)
    return not finder.found


class _GraphWork(Visitor):
    def __init__(self, ndd: str, builders: set[str]) -> None:
        self.ndd = ndd
        self.builders = builders
        self.found = False
        self.calls_operator = False

    def visit_Call(self, node: cst.Call) -> None:
        name = dotted_name(node.func) or ""
        self.calls_operator |= name == self.ndd or name.startswith(f"{self.ndd}.") or name in self.builders
        self.found |= self.calls_operator

    def visit_Attribute(self, node: cst.Attribute) -> None:
        self.found |= node.attr.value in ("slice", "tensors", "select", "cpu", "gpu", "evaluate")

    def visit_Return(self, node: cst.Return) -> None:
        self.found = True

    def visit_Yield(self, node: cst.Yield) -> None:
        self.found = True

    def visit_Global(self, node: cst.Global) -> None:
        self.found = True

    def visit_Nonlocal(self, node: cst.Nonlocal) -> None:
        self.found = True
