"""Bring ``Pipeline(...)`` + ``with pipe:`` graphs into the decorator form the codemod migrates.

In pipeline mode ::

    pipe = Pipeline(batch_size=8, num_threads=2, device_id=None)
    with pipe:
        jpegs, labels = fn.readers.file(file_root=root)
        pipe.set_outputs(fn.decoders.image(jpegs), labels)

builds the same pipeline as ::

    @pipeline_def(batch_size=8, num_threads=2, device_id=None)
    def pipe_outputs():
        jpegs, labels = fn.readers.file(file_root=root)
        return fn.decoders.image(jpegs), labels
    pipe = pipe_outputs()

so the codemod rewrites the first form into the second and migrates that. The decorator takes
the line of ``pipe = Pipeline(...)`` and the ``def`` the line of ``with pipe:``: only the two
added lines after the graph (a blank one and the binding) move what follows, and ``NormalizedModule.original_line`` undoes it.
"""

from __future__ import annotations

from dataclasses import dataclass, field

import libcst as cst

from ..visitors import Transformer, Visitor, walk
from libcst.metadata import MetadataWrapper, PositionProvider

from ..analysis import PIPELINE_CLASS, PIPELINE_DEF, pipeline_def_decorator
from ..imports import ImportTable, dotted_name, import_table
from ..optable import load_op_table
from .base_classes import merged_with_base
from .inline_pipelines import Hoist, hoist_inline_pipelines
from .names import assigned_targets, calls_named, scope_names, unique_name
from .ops import TIGHT_EQUAL
from .spread_arguments import spelled_spread
from .subclass import (
    PIPELINE_POSITIONAL,
    SYNTHETIC_FN,
    NotConvertible,
    Subclass,
    unfit_call_reason,
    convert,
    is_pipeline_subclass,
    keyword_call,
)

# Bound to ``nvidia.dali.pipeline_def`` for the analysis of the normalized module only. It never
# reaches the output: a migrated graph loses the decorator, and a graph that cannot be migrated
# is left in its original ``with`` form.
SYNTHETIC_DECORATOR = "__dali_migrate_pipeline_def__"  # a ``with pipe:`` graph in decorator form
SYNTHETIC_CLASS_DECORATOR = "__dali_migrate_class_pipeline_def__"  # a converted ``Pipeline`` subclass


@dataclass
class NormalizedGraph:
    function: cst.FunctionDef  # the synthesized function, a node of the normalized module
    original_node: cst.CSTNode  # ``Pipeline(...)`` or the subclass, in the original module
    original_statement: cst.CSTNode  # the ``with`` statement or the class: what ``skip`` names
    reason_anchor: cst.CSTNode  # the graph node that TODOs with the blockers go to
    variable: str = ""  # ``pipe``, for ``with`` graphs
    module_level: bool = False
    collapsed: bool = False  # a subclass: its lines do not map one to one
    subclass: Subclass | None = None  # the conversion of a subclass


@dataclass
class NormalizedModule:
    module: cst.Module
    graphs: list[NormalizedGraph] = field(default_factory=list)
    # (line of the normalized module, lines to add to those after it): the added and removed lines
    shifts: list[tuple[int, int]] = field(default_factory=list)
    reasons: dict[int, list] = field(default_factory=dict)  # id(graph node) -> Blockers
    removed_bases: list[str] = field(default_factory=list)  # base classes merged into all their subclasses
    # pipelines made inside iterator calls, bound to a name first (inline_pipelines.py), and the
    # shifts that map the lines of the module they were bound in back to the original's
    hoists: list[Hoist] = field(default_factory=list)
    hoist_shifts: list[tuple[int, int]] = field(default_factory=list)

    def original_line(self, line: int) -> int:
        line += sum(delta for after, delta in self.shifts if line > after)
        return line + sum(delta for after, delta in self.hoist_shifts if line > after)

    def imports(self) -> ImportTable:
        table = import_table(self.module)
        table.names[SYNTHETIC_DECORATOR] = PIPELINE_DEF
        table.names[SYNTHETIC_CLASS_DECORATOR] = PIPELINE_DEF
        table.names[SYNTHETIC_FN] = "nvidia.dali.fn"
        return table


def _statement_call(statement: cst.BaseStatement) -> cst.BaseExpression | None:
    if isinstance(statement, cst.SimpleStatementLine) and len(statement.body) == 1:
        small = statement.body[0]
        if isinstance(small, cst.Expr):
            return small.value
    return None


def _pipeline_assignment(statement: cst.BaseStatement, imports: ImportTable) -> tuple[str, cst.Call] | None:
    """``pipe = Pipeline(...)`` or ``self.pipe = Pipeline(...)`` -> ("pipe", the call with its
    leading positional arguments named)."""
    if not (isinstance(statement, cst.SimpleStatementLine) and len(statement.body) == 1):
        return None
    assign = statement.body[0]
    if not (isinstance(assign, cst.Assign) and len(assign.targets) == 1):
        return None
    target, call = assign.targets[0].target, assign.value
    if not (_is_name_or_self_attribute(target) and isinstance(call, cst.Call)):
        return None
    if imports.resolve(call.func) != PIPELINE_CLASS:
        return None
    positional = [arg for arg in call.args if arg.keyword is None and not arg.star]
    if len(positional) > len(PIPELINE_POSITIONAL):
        return None
    named = [arg.with_changes(keyword=cst.Name(name), equal=TIGHT_EQUAL)
             for name, arg in zip(PIPELINE_POSITIONAL, positional)]
    return dotted_name(target), call.with_changes(args=[*named, *call.args[len(positional):]])


def _is_name_or_self_attribute(target: cst.BaseExpression) -> bool:
    return isinstance(target, cst.Name) or (
        isinstance(target, cst.Attribute) and isinstance(target.value, cst.Name) and target.value.value == "self")


def _set_outputs_args(statement: cst.BaseStatement, pipe: str) -> list[cst.Arg] | None:
    call = _statement_call(statement)
    if not (isinstance(call, cst.Call) and dotted_name(call.func) == f"{pipe}.set_outputs"):
        return None
    if not call.args or any(arg.keyword is not None or arg.star == "**" for arg in call.args):
        return None
    return list(call.args)  # ``*views`` too: a tuple of outputs, as ``return (*views, labels)``


def _loads_before_rebinding(statements, names: set[str]) -> bool:
    """Whether ``statements``, run in order, load one of ``names`` before binding it again.
    Compound statements are looked into block by block; a binding inside one counts only
    within that block, since the block may not run."""
    pending = set(names)
    for statement in statements:
        if not pending:
            return False
        if isinstance(statement, cst.SimpleStatementLine):
            scope = scope_names([statement])
            if scope.loaded & pending:
                return True
            pending -= scope.bound
            continue
        header, blocks = _header_and_blocks(statement)
        if scope_names(header).loaded & pending:
            return True
        if any(_loads_before_rebinding(block, pending) for block in blocks):
            return True
    return False


def _header_and_blocks(statement: cst.BaseCompoundStatement) -> tuple[list, list[list]]:
    """The expressions a compound statement evaluates itself, and its statement blocks."""
    if isinstance(statement, (cst.If, cst.While)):
        header, blocks = [statement.test], [statement.body.body]
    elif isinstance(statement, cst.For):
        header, blocks = [statement.iter], [statement.body.body]
    elif isinstance(statement, cst.With):
        header, blocks = list(statement.items), [statement.body.body]
    elif isinstance(statement, cst.Try):
        header = []
        blocks = [statement.body.body, *(h.body.body for h in statement.handlers)]
        blocks += [statement.finalbody.body.body] if statement.finalbody else []
    else:  # functions, classes, match: looked at whole
        return [statement], []
    orelse = getattr(statement, "orelse", None)
    while orelse is not None:
        if isinstance(orelse, cst.If):
            header.append(orelse.test)
        blocks.append(orelse.body.body)
        orelse = getattr(orelse, "orelse", None)
    return header, [list(b) for b in blocks if isinstance(b, (list, tuple))]


class _Normalizer(Transformer):
    def __init__(self, imports: ImportTable, taken: set[str], skip: set[int],
                 subclasses: dict[int, Subclass], removed: set[int] = frozenset(),
                 attribute_uses: "_AttributeUses | None" = None) -> None:
        super().__init__()
        self.attribute_uses = attribute_uses or _AttributeUses()
        self.classes: list[cst.ClassDef] = []  # the classes being visited, innermost last
        self.removed = removed  # ids of base classes merged into their derived classes
        self.removed_before: list[tuple[cst.ClassDef, cst.BaseStatement]] = []  # (base, what follows it)
        self.imports = imports
        self.taken = taken
        self.skip = skip  # ids of ``with`` statements to leave alone
        self.subclasses = subclasses  # id(class) -> its conversion
        self.by_name = {sub.name: sub for sub in subclasses.values()}
        self.graphs: list[NormalizedGraph] = []
        self.added: list[cst.SimpleStatementLine] = []
        self.spaced: list[tuple[cst.Decorator, int]] = []  # graphs given blank lines above, how many
        self.reasons: dict[int, list] = {}  # id(``with`` statement) -> why it stays as written

    def visit_ClassDef(self, node: cst.ClassDef) -> None:
        self.classes.append(node)

    def leave_ClassDef(self, original_node: cst.ClassDef, updated_node: cst.ClassDef):
        self.classes.pop()
        subclass = self.subclasses.get(id(original_node))
        if subclass is None:
            return updated_node
        self.graphs.append(NormalizedGraph(subclass.function, original_node, original_node,
                                           subclass.define_graph, collapsed=True, subclass=subclass))
        return subclass.function

    def leave_Call(self, original_node: cst.Call, updated_node: cst.Call) -> cst.Call:
        subclass = self.by_name.get(dotted_name(original_node.func))
        return keyword_call(updated_node, subclass) if subclass is not None else updated_node

    def leave_Module(self, original_node: cst.Module, updated_node: cst.Module) -> cst.Module:
        body = self._normalize_body(original_node.body, updated_node.body, module_level=True)
        return updated_node.with_changes(body=self._without_removed(original_node.body, body))

    def _without_removed(self, original: tuple, body: list[cst.BaseStatement]) -> list[cst.BaseStatement]:
        """The body without the merged base classes (found by their original nodes: a class
        statement stays one statement in ``body``, at the index of its original)."""
        gone = {index for index, statement in enumerate(original) if id(statement) in self.removed}
        if not gone:
            return body
        if len(body) != len(original):  # not aligned after all: the base classes stay
            self.removed = frozenset()
            return body
        kept = [s for index, s in enumerate(body) if index not in gone]
        for index in sorted(gone):
            following = next((body[i] for i in range(index + 1, len(body)) if i not in gone), None)
            if following is not None:
                self.removed_before.append((original[index], following))
        return kept

    def leave_IndentedBlock(self, original_node, updated_node):
        body = self._normalize_body(original_node.body, updated_node.body, module_level=False)
        return updated_node.with_changes(body=body)

    def _normalize_body(self, original: tuple, updated: tuple, module_level: bool) -> list[cst.BaseStatement]:
        """Conditions are checked on the original statements (their ids are what ``skip`` and
        the positions know); the rewrite uses the updated ones. Two statements become two, so
        both lists stay aligned."""
        result: list[cst.BaseStatement] = []
        index = 0
        while index < len(original):
            with_index = self._graph_at(list(original), index)
            if with_index is not None:
                result.extend(self._rewrite(original, updated, index, with_index, module_level))
                index = with_index + 1
            else:
                result.append(updated[index])
                index += 1
        return result

    def _graph_at(self, body: list[cst.BaseStatement], index: int) -> int | None:
        """The index of the ``with pipe:`` statement of the graph whose pipeline ``body[index]``
        makes, or None. Statements between them that neither use the pipeline nor change what
        its constructor reads stay where they are."""
        assignment = _pipeline_assignment(body[index], self.imports)
        if assignment is None:
            return None
        pipe, call = assignment
        with_index = next((i for i in range(index + 1, len(body)) if isinstance(body[i], cst.With)
                           and self._is_plain_with(body[i], pipe)), None)
        if with_index is None or id(body[with_index]) in self.skip:
            return None
        why_not = self._why_not_fits(body, index, with_index, pipe, call)
        if why_not is not None:  # said on the graph, in place of "not migrated automatically"
            from .plan import Blocker

            self.reasons[id(body[with_index])] = [Blocker("DM002", body[with_index], f"`with {pipe}:` {why_not}")]
            return None
        return with_index

    def _why_not_fits(self, body: list[cst.BaseStatement], index: int, with_index: int, pipe: str,
                      call: cst.Call) -> str | None:
        """Why the graph cannot become a function defined where the ``with`` stands, or None."""
        spread = next((arg for arg in call.args if arg.star), None)
        if spread is not None:
            return (f"is built by a `Pipeline` call that passes `{spelled_spread(spread)}`: the migration reads the "
                    "pipeline's arguments by name; pass them as keywords, then re-run")
        between = body[index + 1 : with_index]
        names = scope_names(between)
        if pipe.split(".")[0] in names.loaded | names.bound or pipe in _dotted_uses(between):
            return f"`{pipe}` is used between `{pipe} = ...` and `with {pipe}:`"
        rebound = names.bound & scope_names([call]).loaded
        if rebound:
            return (f"`{sorted(rebound)[0]}` is bound again between `{pipe} = ...` and `with {pipe}:`, "
                    "and the constructor reads it")
        graph_body = list(body[with_index].body.body)
        inner = scope_names(graph_body[:-1])
        if _set_outputs_args(graph_body[-1], pipe) is None:
            return f"must end with `{pipe}.set_outputs(...)` with positional outputs"
        if f"{pipe}.set_outputs" in _dotted_uses(graph_body[:-1]):
            return f"calls `{pipe}.set_outputs` before its last statement"
        if inner.escapes:
            return "has a `return`, `yield`, `global` or `nonlocal` statement"
        if pipe in inner.bound:
            return f"binds `{pipe}` again"
        # names the graph binds and the code after it loads would be hidden inside a function
        read_after = sorted(n for n in inner.bound if _loads_before_rebinding(body[with_index + 1 :], {n}))
        if read_after:
            return f"binds `{read_after[0]}`, which the code after it reads; the migrated graph is a function"
        return None

    @staticmethod
    def _is_plain_with(statement: cst.With, pipe: str) -> bool:
        return (
            statement.asynchronous is None
            and len(statement.items) == 1
            and statement.items[0].asname is None
            and dotted_name(statement.items[0].item) == pipe
            and isinstance(statement.body, cst.IndentedBlock)
        )

    def _rewrite(self, original: tuple, updated: tuple, index: int, with_index: int,
                 module_level: bool) -> list[cst.BaseStatement]:
        pipe, _ = _pipeline_assignment(original[index], self.imports)
        original_call = original[index].body[0].value
        assignment_line, statement = updated[index], updated[with_index]
        _, named_call = _pipeline_assignment(assignment_line, self.imports)
        outputs = _set_outputs_args(statement.body.body[-1], pipe)
        name = unique_name(f"{pipe.split('.')[-1]}_outputs", self.taken)
        # black's blank lines after a ``def``: two at the top of a module, one inside a block
        blank = [cst.EmptyLine(indent=False)] * (2 if module_level else 1)
        lines = list(assignment_line.leading_lines)
        spaced = (index > 0 or with_index > index + 1) and not (lines and lines[0].comment is None)
        if spaced:
            lines = [*blank, *lines]  # and before it, where a statement comes first
        decorator = cst.Decorator(
            decorator=named_call.with_changes(func=cst.Name(SYNTHETIC_DECORATOR)),
            leading_lines=lines,
            trailing_whitespace=assignment_line.trailing_whitespace,
        )
        if spaced:
            self.spaced.append((decorator, len(blank)))
        last = statement.body.body[-1]
        values = [cst.StarredElement(arg.value) if arg.star else cst.Element(arg.value) for arg in outputs]
        single = len(values) == 1 and isinstance(values[0], cst.Element)
        value = values[0].value if single else cst.Tuple(values, lpar=[], rpar=[])
        returned = last.with_changes(body=[cst.Return(value=value)])
        body = statement.body.with_changes(body=[*statement.body.body[:-1], returned])
        locals_for = self._graph_only_attributes(original[with_index])
        if locals_for:
            body = body.visit(_AttributesAsNames(locals_for))
        function = cst.FunctionDef(
            name=cst.Name(name),
            params=cst.Parameters(),
            body=body,
            decorators=[decorator],
            lines_after_decorators=statement.leading_lines,
        )
        binding = cst.parse_statement(f"{pipe} = {name}()\n").with_changes(leading_lines=blank)
        self.graphs.append(NormalizedGraph(function, original_call, original[with_index], original[with_index],
                                           pipe, module_level))
        self.added.append(binding)
        return [*updated[index + 1 : with_index], function, binding]

    def _graph_only_attributes(self, graph: cst.With) -> dict[str, str]:
        """``self.x`` the graph binds and nothing else in the module spells (``self.jpegs,
        self.labels = fn.readers.file(...)``, old examples' style): a local of the graph
        function, named ``x`` (or a free variant)."""
        bound = {dotted_name(t) for t in _assigned_attributes(graph.body)}
        if not bound or not self.classes or not self.attribute_uses.stands_alone(self.classes[-1]):
            return {}
        inside = _self_attribute_counts([graph])
        in_class = self.attribute_uses.in_class(self.classes[-1])
        graph_names = scope_names([graph.body])  # a local of the function shadows only these
        taken = graph_names.loaded | graph_names.bound
        return {attr: unique_name(attr.split(".", 1)[1], taken) for attr in sorted(bound)
                if attr in inside and in_class.get(attr) == inside[attr]
                and not self.attribute_uses.read_on_other_objects(attr.split(".", 1)[1])}


class _AttributeUses:
    """Where the module spells attributes: ``self.x`` per class, ``obj.x`` on anything else, and
    which classes inherit from or derive from another class of the module. Read from the module
    the first time a graph binds ``self.x`` (most graphs do not)."""

    def __init__(self, module: cst.Module | None = None) -> None:
        self.module = module
        self._others: dict[str, int] | None = None  # attribute name -> uses not on ``self``
        self._related: set[str] | None = None  # classes with a module class as base, and those bases
        self._per_class: dict[int, dict[str, int]] = {}

    def stands_alone(self, node: cst.ClassDef) -> bool:
        if self._related is None:
            body = self.module.body if self.module is not None else ()
            classes = {s.name.value: s for s in body if isinstance(s, cst.ClassDef)}
            self._related = set()
            for cls in classes.values():
                bases = {dotted_name(b.value) for b in cls.bases} & set(classes)
                if bases:
                    self._related |= bases | {cls.name.value}
        return node.name.value not in self._related

    def in_class(self, node: cst.ClassDef) -> dict[str, int]:
        if id(node) not in self._per_class:
            self._per_class[id(node)] = _self_attribute_counts([node])
        return self._per_class[id(node)]

    def read_on_other_objects(self, name: str) -> bool:
        if self._others is None:
            self._others = {}
            uses = self._others

            class Others(Visitor):
                def visit_Attribute(self, node: cst.Attribute) -> None:
                    if not (isinstance(node.value, cst.Name) and node.value.value == "self"):
                        uses[node.attr.value] = uses.get(node.attr.value, 0) + 1

            if self.module is not None:
                walk(self.module, Others())
        return self._others.get(name, 0) > 0


class _AttributesAsNames(Transformer):
    def __init__(self, names: dict[str, str]) -> None:
        super().__init__()
        self.names = names

    def leave_Attribute(self, original_node: cst.Attribute, updated_node: cst.Attribute) -> cst.BaseExpression:
        name = self.names.get(dotted_name(original_node) or "")
        return updated_node if name is None else cst.Name(name, lpar=updated_node.lpar, rpar=updated_node.rpar)


def _self_attribute_counts(nodes) -> dict[str, int]:
    """How often each ``self.x`` is spelled in ``nodes`` (reads and writes)."""
    counts: dict[str, int] = {}

    class Counter(Visitor):
        def visit_Attribute(self, node: cst.Attribute) -> None:
            if isinstance(node.value, cst.Name) and node.value.value == "self":
                key = f"self.{node.attr.value}"
                counts[key] = counts.get(key, 0) + 1

    for node in nodes:
        walk(node, Counter())
    return counts


def _assigned_attributes(block: cst.BaseSuite) -> list[cst.Attribute]:
    """``self.x`` targets of the block's assignments (unpacking too), not of nested functions."""
    found: list[cst.Attribute] = []

    class Targets(Visitor):
        def visit_FunctionDef(self, node: cst.FunctionDef) -> bool:
            return False

        def visit_AssignTarget(self, node: cst.AssignTarget) -> None:
            found.extend(t for t in assigned_targets(node.target)
                         if isinstance(t, cst.Attribute) and isinstance(t.value, cst.Name) and t.value.value == "self")

    walk(block, Targets())
    return found


def _dotted_uses(nodes) -> set[str]:
    found: set[str] = set()

    class Collector(Visitor):
        def visit_Attribute(self, node: cst.Attribute) -> None:
            name = dotted_name(node)
            if name:
                found.add(name)

    for node in nodes:
        walk(node, Collector())
    return found


def _convert_subclasses(module: cst.Module, imports: ImportTable, skip: set[int]):
    """Top-level pipeline subclasses in decorator form, why the others are not; the classes
    deriving from Pipeline itself by name, and the classes derived from each of those."""
    from .plan import Blocker

    converted: dict[int, Subclass] = {}
    reasons: dict[int, list] = {}
    bases: dict[str, cst.ClassDef] = {}  # classes deriving from Pipeline itself
    derived: dict[str, list[cst.ClassDef]] = {}
    derived_names: set[str] = set()
    blocks = _module_level_blocks(module)
    classes = _module_level_classes(blocks)
    for statement in classes:
        names = [dotted_name(b.value) for b in statement.bases]
        local_base = next((name for name in names if name in bases or name in derived_names), None)
        if local_base is None and not is_pipeline_subclass(statement, imports):
            continue
        anchor = _define_graph(statement) or statement
        if _defined_more_than_once(blocks, statement.name.value):
            reasons[id(anchor)] = [Blocker("DM002", anchor, (
                f"`{statement.name.value}` not migrated: the module defines `{statement.name.value}` more than "
                "once (a fallback where DALI is missing?), and a call could make either: keep one and re-run"))]
            continue
        try:
            if local_base is not None:
                derived.setdefault(local_base, []).append(statement)
                derived_names.add(statement.name.value)
                subclass = convert(_merged(statement, local_base, bases), imports, load_op_table(), SYNTHETIC_CLASS_DECORATOR)
            else:
                bases[statement.name.value] = statement
                subclass = convert(statement, imports, load_op_table(), SYNTHETIC_CLASS_DECORATOR)
        except NotConvertible as reason:
            reasons[id(anchor)] = [Blocker("DM002", anchor, f"`{statement.name.value}` not migrated: {reason}")]
            continue
        if id(statement) not in skip:
            converted[id(statement)] = subclass
    reasons.update(_nested_subclass_reasons(module, imports, classes))
    return converted, reasons, bases, derived


def _module_level_blocks(module: cst.Module) -> list[list[cst.BaseStatement]]:
    """The module's top-level statements, and those of each ``if``/``else`` block there (a guard
    some loaders put around everything that needs DALI: ``if dali_enable:``)."""
    blocks = [list(module.body)]
    for statement in (s for s in module.body if isinstance(s, cst.If)):
        blocks += [list(branch.body.body) for branch in (statement, statement.orelse)
                   if isinstance(branch, (cst.If, cst.Else)) and isinstance(branch.body, cst.IndentedBlock)]
    return blocks


def _module_level_classes(blocks: list[list[cst.BaseStatement]]) -> list[cst.ClassDef]:
    return [s for block in blocks for s in block if isinstance(s, cst.ClassDef)]


def _defined_more_than_once(blocks: list[list[cst.BaseStatement]], name: str) -> bool:
    return sum(isinstance(s, (cst.ClassDef, cst.FunctionDef)) and s.name.value == name
               for block in blocks for s in block) > 1


def _nested_subclass_reasons(module: cst.Module, imports: ImportTable,
                             converted: list[cst.ClassDef]) -> dict[int, list]:
    """Pipeline subclasses inside any other block (``try:``, a function): only classes at the
    module's top level, or in an ``if`` there (``converted``), are converted; each of the others
    says where it is."""
    from .plan import Blocker

    reasons: dict[int, list] = {}
    converted_ids = {id(c) for c in converted}
    for statement in module.body:
        for found in _classes_within(statement):
            if id(found) in converted_ids or not is_pipeline_subclass(found, imports):
                continue
            anchor = _define_graph(found) or found
            reasons[id(anchor)] = [Blocker("DM002", anchor, (
                f"`{found.name.value}` not migrated: it is defined inside `{_header(module, statement)}`, and "
                "only pipeline classes at the module's top level (or in an `if` there) are converted: move it "
                "there and re-run"))]
    return reasons


class _Classes(Visitor):
    """Every class statement in a tree; simple statements, where none can be, are not walked."""

    def __init__(self) -> None:
        self.found: list[cst.ClassDef] = []

    def visit_ClassDef(self, node: cst.ClassDef) -> None:
        self.found.append(node)

    def visit_SimpleStatementLine(self, node: cst.SimpleStatementLine) -> bool:
        return False

    visit_SimpleStatementSuite = visit_SimpleStatementLine


def _classes_within(node: cst.CSTNode) -> list[cst.ClassDef]:
    classes = _Classes()
    walk(node, classes)
    return classes.found


def _header(module: cst.Module, statement: cst.BaseStatement) -> str:
    """``try:``, ``def make()``, ``class Loader``: how the block a class is in begins."""
    if isinstance(statement, (cst.FunctionDef, cst.ClassDef)):
        keyword = "def" if isinstance(statement, cst.FunctionDef) else "class"
        return f"{keyword} {statement.name.value}" + ("()" if keyword == "def" else "")
    return module.code_for_node(statement.with_changes(leading_lines=())).splitlines()[0]


def _merged(statement: cst.ClassDef, local_base: str, bases: dict[str, cst.ClassDef]) -> cst.ClassDef:
    base = bases.get(local_base)
    if base is None:
        raise NotConvertible(f"it subclasses `{local_base}`, which subclasses another class of this module: "
                             "merge them by hand")
    return merged_with_base(statement, base)


def _merged_bases(module: cst.Module, bases: dict[str, cst.ClassDef], derived: dict[str, list[cst.ClassDef]],
                  converted: dict[int, Subclass], kept: frozenset[str]) -> dict[int, cst.ClassDef]:
    """Base classes without a graph of their own whose every derived class converted, that
    nothing else in the module names (a derived class names it as its base) and no other file
    is known to use: they go."""
    removed = {}
    for name, base in bases.items():
        classes = derived.get(name, [])
        if (classes and _define_graph(base) is None and name not in kept
                and all(id(c) in converted for c in classes) and not _named_elsewhere(module, name, classes)):
            removed[id(base)] = base
    return removed


def _named_elsewhere(module: cst.Module, name: str, classes: list[cst.ClassDef]) -> bool:
    others = [s for s in module.body if all(s is not c for c in classes)]
    return name in scope_names([*others, *(c.body for c in classes)]).loaded


def _define_graph(node: cst.ClassDef) -> cst.FunctionDef | None:
    return next((s for s in node.body.body if isinstance(s, cst.FunctionDef) and s.name.value == "define_graph"), None)


def _without_unfit_calls(module: cst.Module, converted: dict[int, Subclass], reasons: dict[int, list]) -> None:
    """A class called with ``*args`` or too many arguments stays a class."""
    from .plan import Blocker

    if not converted:
        return
    for call in calls_named(module, {sub.name for sub in converted.values()}):
        for key, subclass in list(converted.items()):
            reason = unfit_call_reason(call, subclass) if subclass.name == dotted_name(call.func) else None
            if reason is not None:
                del converted[key]
                reasons[id(subclass.define_graph)] = [Blocker("DM002", subclass.define_graph, reason)]


def normalize_with_graphs(module: cst.Module, skip: set[int] = frozenset(),
                          kept: frozenset[str] = frozenset(), has_with: bool = True) -> NormalizedModule | None:
    """The module with every convertible ``with pipe:`` graph and pipeline subclass in decorator
    form (None if there is nothing to say). ``skip`` holds ids of original ``with`` statements
    and classes to leave as they are; ``kept``, names other files use (a base class stays);
    ``has_with`` False: the module has no ``with`` statement (the analysis counted them)."""
    imports = import_table(module)
    if not imports.uses_dali:
        return None
    module, hoists, hoist_shifts = _bound_inline_pipelines(module, imports, skip)
    hoisted = {"hoists": hoists, "hoist_shifts": hoist_shifts}
    converted, reasons, bases, derived = _convert_subclasses(module, imports, set(skip))
    if not converted and not has_with:  # nothing to put in decorator form
        return NormalizedModule(module, reasons=reasons, **hoisted) if reasons or hoists else None
    _without_unfit_calls(module, converted, reasons)
    removed = _merged_bases(module, bases, derived, converted, kept)
    for base in removed.values():  # its reasons (no graph of its own) went with it
        reasons.pop(id(_define_graph(base) or base), None)
    every_name = scope_names([module])
    normalizer = _Normalizer(imports, every_name.loaded | every_name.bound, set(skip), converted, set(removed),
                             _AttributeUses(module))
    new_module = module.visit(normalizer)
    reasons.update(normalizer.reasons)
    if not normalizer.graphs:
        return NormalizedModule(module, reasons=reasons, **hoisted) if reasons or hoists else None
    # the synthesized nodes are kept by identity: the wrapper must not copy the module
    positions = MetadataWrapper(new_module, unsafe_skip_copy=True).resolve(PositionProvider)
    # each binding adds itself and the blank line above it
    # each added ``pipe = name()`` line and the blank lines above it
    shifts = [(positions[node].start.line, -1 - len(node.leading_lines)) for node in normalizer.added]
    # and the blank lines added above a graph's ``def``
    shifts += [(positions[decorator].start.line - 1, -count) for decorator, count in normalizer.spaced]
    if any(g.collapsed for g in normalizer.graphs):
        original = MetadataWrapper(module, unsafe_skip_copy=True).resolve(PositionProvider)
        for graph in (g for g in normalizer.graphs if g.collapsed):
            before, after = original[graph.original_node], positions[graph.function]
            span_change = (before.end.line - before.start.line) - (after.end.line - after.start.line)
            shifts.append((after.end.line, span_change))
    if normalizer.removed_before:
        original = MetadataWrapper(module, unsafe_skip_copy=True).resolve(PositionProvider)
        for base, following in normalizer.removed_before:
            span = original[base]
            first = positions[following].start.line - len(following.leading_lines)
            shifts.append((first - 1, span.end.line - span.start.line + 1 + len(base.leading_lines)))
    return NormalizedModule(new_module, normalizer.graphs, sorted(shifts), reasons,
                            [base.name.value for base in removed.values()], **hoisted)


def _bound_inline_pipelines(module: cst.Module, imports: ImportTable, skip: set[int]):
    """``DALIGenericIterator([make_pipeline(...)], ...)`` with ``pipe = make_pipeline(...)`` first."""
    factories = {s.name.value for s in module.body
                 if isinstance(s, cst.FunctionDef) and pipeline_def_decorator(s, imports) is not None}
    if not factories:
        return module, [], []
    every_name = scope_names([module])
    return hoist_inline_pipelines(module, imports, factories, every_name.loaded | every_name.bound, set(skip))

