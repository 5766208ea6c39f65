"""Legacy ``Pipeline`` subclasses with ``iter_setup`` and helper methods: what converts, and the
reason given for what does not (the runnable cases are the iter_setup_feed and
legacy_helper_methods fixtures)."""

from __future__ import annotations

import textwrap

import pytest

from dali_migrate.config import Config
from dali_migrate.engine import migrate_source

HEAD = '''\
import numpy as np
import nvidia.dali.ops as ops
import nvidia.dali.types as types
from nvidia.dali.pipeline import Pipeline


class Fed(Pipeline):
    def __init__(self, batch_size, num_threads, device_id, data):
        super().__init__(batch_size, num_threads, device_id)
        self.input = ops.ExternalSource()
        self.cast = ops.Cast(dtype=types.INT32)
        self.data = data
        self.iterator = iter(data)
        self.position = 0

    def define_graph(self):
        self.values = self.input()
        return self.cast(self.values)
'''


def _outcome(methods: str) -> tuple[str, list[str]]:
    source = HEAD + textwrap.indent(textwrap.dedent(methods), "    ")
    result = migrate_source(source.encode(), "fed.py", Config())
    ((name, reasons),) = result.pipelines
    assert name == "Fed"
    return (result.new_source or b"").decode(), reasons


@pytest.mark.parametrize("iter_setup, reason", [
    ("""
     def iter_setup(self):
         self.feed_input(self.values, next(self.iterator))
     """, "feed a name"),
    ("""
     def iter_setup(self):
         batch = next(self.iterator)
         if len(batch):
             self.feed_input(self.values, batch)
     """, "must be statements of its own body, or of one `try` in it"),
    ("""
     def iter_setup(self):
         try:
             batch = next(self.iterator)
             self.feed_input(self.values, batch)
         except StopIteration:
             self.iterator = iter(self.data)
     """, "does not end in `raise`"),
    ("""
     def iter_setup(self):
         batch = next(self.iterator)
         if not len(batch):
             return
         self.feed_input(self.values, batch)
     """, "it returns early"),
    ("""
     def iter_setup(self):
         iterator = self.iterator
         batch = next(iterator)
         iterator = None
         self.feed_input(self.values, batch)
     """, "has a variable `iterator` and reads a value of that name from `self`"),
    ("""
     def iter_setup(self):
         batch = next(self.iterator)
         self.feed_input(self.values, batch)
         batch = None
     """, "`batch` changes after it is fed"),
])
def test_an_iter_setup_outside_the_shape_keeps_the_class_and_says_why(iter_setup, reason):
    migrated, reasons = _outcome(iter_setup)
    assert "class Fed(Pipeline):" in migrated  # kept, with TODOs
    assert any(reason in r for r in reasons), reasons


def test_a_helper_method_the_graph_never_reaches_is_left_out():
    migrated, reasons = _outcome("""
        def remember(self, values):
            self.last = values
            return values

        def iter_setup(self):
            batch = next(self.iterator)
            self.feed_input(self.values, batch)
        """)
    assert reasons == []
    assert "remember" not in migrated


def test_a_copy_of_a_self_value_under_its_own_name_is_dropped():
    """``iterator = self.iterator`` alone would make ``iterator`` a local of the function,
    unbound where it is read: the function reads the generator's ``iterator`` instead."""
    migrated, reasons = _outcome("""
        def iter_setup(self):
            iterator = self.iterator
            batch = next(iterator)
            self.feed_input(self.values, batch)
        """)
    assert reasons == []
    assert "iterator = iterator" not in migrated
    assert "        batch = next(iterator)\n" in migrated


def test_iter_setup_state_is_a_variable_of_the_generator():
    migrated, reasons = _outcome("""
        def iter_setup(self):
            if self.position >= len(self.data):
                raise StopIteration
            batch = [self.data[self.position]] * 2
            self.position += 1
            self.feed_input(self.values, batch)
        """)
    assert reasons == []
    assert "        nonlocal position\n" in migrated
    assert "        return batch\n" in migrated
    assert "ndd.batch(iter_setup())" in migrated
    assert "self" not in migrated.split("def Fed(", 1)[1]


def test_iter_setup_state_read_by_the_graph_keeps_the_class():
    graph = "        return self.cast(self.values)"
    source = HEAD.replace(graph, graph + " + self.position")
    source += textwrap.indent(textwrap.dedent("""
        def iter_setup(self):
            batch = [self.data[self.position]] * 2
            self.position += 1
            self.feed_input(self.values, batch)
        """), "    ")
    result = migrate_source(source.encode(), "fed.py", Config())
    ((_, reasons),) = result.pipelines
    assert any("`iter_setup` assigns `self.position`, which `define_graph` reads" in r for r in reasons), reasons


@pytest.mark.parametrize("helper, reason", [
    ("""
     def remember(self, values):
         self.last = values
         return values
     """, "`remember` assigns `self.last`: a helper method may only read `self`"),
    ("""
     def remember(self, values):
         self.position += 1
         return values
     """, "`remember` assigns `self.position`: a helper method may only read `self`"),
    ("""
     @staticmethod
     def remember(values):
         return values
     """, "only methods without decorators are converted"),
    ("""
     def remember(self, *values):
         return values
     """, "`remember` is not a plain method"),
])
def test_a_helper_method_outside_the_shape_keeps_the_class_and_says_why(helper, reason):
    migrated, reasons = _outcome(textwrap.dedent(helper) + textwrap.dedent("""
        def iter_setup(self):
            batch = self.remember(next(self.iterator))
            self.feed_input(self.values, batch)
        """))
    assert "class Fed(Pipeline):" in migrated  # kept, with TODOs
    assert any(reason in r for r in reasons), reasons


GRAPH_WRITES = '''\
import nvidia.dali.ops as ops
from nvidia.dali.pipeline import Pipeline


class Counting(Pipeline):
    def __init__(self, batch_size, num_threads, device_id, root):
        super().__init__(batch_size, num_threads, device_id)
        self.input = ops.readers.File(file_root=root)
        self.scale = 2

    def define_graph(self):
{statement}
        self.jpegs, self.labels = self.input()
        return self.labels
'''


@pytest.mark.parametrize("statement, reason", [
    ("self.scale += 1", "`define_graph` changes `self.scale` (`self.scale += 1`)"),
    ("self.scale = self.scale * 2", "`define_graph` changes `self.scale` (`self.scale = self.scale * 2`)"),
    ("self.seen: int = 1", "`define_graph` changes `self.seen` (`self.seen: int = 1`)"),
    ("self.total += 1", "`define_graph` changes `self.total` (`self.total += 1`)"),
])
def test_a_graph_that_changes_a_value_set_outside_it_keeps_the_class(statement, reason):
    """define_graph runs once, at build; as the generator's body it would run per batch."""
    source = GRAPH_WRITES.format(statement=f"        {statement}")
    result = migrate_source(source.encode(), "counting.py", Config())
    ((name, reasons),) = result.pipelines
    assert (result.new_source or b"").decode().count("class Counting(Pipeline):") == 1
    assert any(reason in r for r in reasons), reasons


def test_values_the_graph_assigns_itself_become_its_variables():
    source = GRAPH_WRITES.format(statement="        pass")
    result = migrate_source(source.encode(), "counting.py", Config())
    ((name, reasons),) = result.pipelines
    assert reasons == []
    migrated = result.new_source.decode()
    assert "for jpegs, labels in reader.next_epoch(batch_size=batch_size):" in migrated
    assert "self" not in migrated


BASE = '''\
import nvidia.dali.ops as ops
from nvidia.dali.pipeline import Pipeline


class Base(Pipeline):
    def __init__(self, batch_size, num_threads, device_id, root, shuffle=False):
        super().__init__(batch_size, num_threads, device_id)
        self.input = ops.readers.File(file_root=root, random_shuffle=shuffle)

'''


@pytest.mark.parametrize("derived, reason", [
    ("""
     class Derived(Base):
         def __init__(self, batch_size, num_threads, device_id, data_dir):
             super().__init__(batch_size, num_threads, device_id, data_dir)
     """, "passes `data_dir` for `root`: pass `root` itself"),
    ("""
     class Derived(Base):
         def __init__(self, batch_size, num_threads, device_id, root, **kwargs):
             super().__init__(batch_size, num_threads, device_id, root, **kwargs)
     """, "passes *args, **kwargs or too many arguments"),
    ("""
     class Derived(Base):
         def __init__(self, batch_size, num_threads, device_id, root, shuffle):
             super().__init__(batch_size, num_threads, device_id, root)
             self.flip = ops.Flip(horizontal=int(shuffle))
     """, "`shuffle` is set in `Base.__init__` and used in `Derived.__init__`"),
    ("""
     class Middle(Base):
         pass


     class Derived(Middle):
         pass
     """, "which subclasses another class of this module"),
])
def test_a_base_class_that_cannot_be_merged_keeps_both_and_says_why(derived, reason):
    graph = "\n    def define_graph(self):\n        jpegs, labels = self.input()\n        return labels\n"
    source = BASE + textwrap.dedent(derived).rstrip() + "\n" + graph
    result = migrate_source(source.encode(), "derived.py", Config())
    outcomes = dict(result.pipelines)
    assert any(reason in r for r in outcomes.get("Derived", [])), result.pipelines
    assert "class Base(Pipeline):" in (result.new_source or source.encode()).decode()


SCALED = '''\
import nvidia.dali.fn as fn
from nvidia.dali.pipeline import Pipeline


class Spectrogram(Pipeline):
    def __init__(self, batch_size, num_threads, device_id, root, window=0.02, rate=16000):
        super().__init__(batch_size, num_threads, device_id)
        self.root = root
        self.window = int(window * rate)
{more}
    def define_graph(self):
        encoded, _ = fn.readers.file(file_root=self.root)
        audio, _ = fn.decoders.audio(encoded, sample_rate=16000)
        return fn.spectrogram(audio, nfft=512, window_length=self.window)
'''


def test_an_attribute_computed_from_its_own_parameter_rebinds_it():
    """Jasper-style ``self.window = int(window * rate)``: the generator rebinds ``window``."""
    source = SCALED.format(more="        self.step = self.window // 2\n")
    result = migrate_source(source.encode(), "speech.py", Config())
    ((name, reasons),) = result.pipelines
    assert reasons == []
    migrated = result.new_source.decode()
    assert "    window = int(window * rate)\n    step = window // 2\n" in migrated
    assert "window_length=window" in migrated


def test_reading_the_parameter_after_its_attribute_was_set_keeps_the_class():
    source = SCALED.format(more="        self.step = window / 2\n")
    result = migrate_source(source.encode(), "speech.py", Config())
    ((name, reasons),) = result.pipelines
    assert any("sets `self.window` from its parameter `window`, then reads the parameter again" in r
               for r in reasons), reasons
    assert result.new_source is None or b"class Spectrogram(Pipeline)" in result.new_source


COMPUTED_BATCH = '''\
from nvidia.dali.pipeline import Pipeline
import nvidia.dali.fn as fn


class PairPipe(Pipeline):
    def __init__(self, batch_size, num_threads, device_id, root):
        super().__init__(batch_size * 2, num_threads, device_id)
        self.root = root

    def define_graph(self):
        jpegs, labels = fn.readers.file(file_root=self.root)
        return fn.decoders.image(jpegs), labels


pipe = PairPipe(2, 1, None, "/data")
'''


def test_a_pipeline_argument_computed_from_a_parameter_of_its_name_is_the_reason_given():
    result = migrate_source(COMPUTED_BATCH.encode(), "pairs.py", Config())
    [(name, reasons)] = result.pipelines
    assert name == "PairPipe"
    assert reasons[0].startswith("`PairPipe` passes `batch_size=batch_size * 2` to `Pipeline.__init__`, and its "
                                 "callers give `batch_size` too: rename")


NESTED = '''\
import nvidia.dali.ops as ops
from nvidia.dali.pipeline import Pipeline

{opening}
    class Hybrid(Pipeline):
        def __init__(self, batch_size=2):
            super().__init__(batch_size, 1, None)
            self.input = ops.readers.File(file_root="images")

        def define_graph(self):
            jpegs, labels = self.input()
            return jpegs, labels
'''


@pytest.mark.parametrize("opening, header", [
    ("with open(__file__) as source:", "with open(__file__) as source:"),
    ("try:", "try:"),
    ("def make():", "def make()"),
])
def test_a_class_inside_a_block_is_kept_with_where_it_is(opening, header):
    """A guarded definition (`if dali_enable:`, as some loaders write around a failed DALI
    import) got only "graph not migrated automatically"."""
    source = NESTED.format(opening=opening)
    if opening == "try:":
        source += "except ImportError:\n    pass\n"
    result = migrate_source(source.encode(), "hybrid.py", Config())
    ((name, reasons),) = result.pipelines
    assert name == "Hybrid"
    assert reasons == [f"`Hybrid` not migrated: it is defined inside `{header}`, and only pipeline classes at the "
                       "module's top level (or in an `if` there) are converted: move it there and re-run"]


def test_a_class_guarded_by_an_if_at_the_top_level_migrates_unless_defined_twice():
    """`if dali_enable: class Hybrid(Pipeline): ...` is converted where it stands (fixture
    `guarded_imports`, same data and program output); with a fallback class of the same name in
    `else:` a call could make either, and the pipeline is kept, saying so."""
    guarded = NESTED.format(opening="dali_enable = True\nif dali_enable:") + "\n\npipe = Hybrid()\npipe.build()\n"
    result = migrate_source(guarded.encode(), "hybrid.py", Config())
    assert result.pipelines == [("Hybrid", [])]
    assert "if dali_enable:\n    def Hybrid(" in result.new_source.decode()
    in_else = guarded.replace("if dali_enable:", "if not dali_enable:\n    pass\nelse:")
    assert migrate_source(in_else.encode(), "hybrid.py", Config()).pipelines == [("Hybrid", [])]
    fallback = guarded.replace("\n\npipe =", "\nelse:\n    class Hybrid:\n        pass\n\n\npipe =")
    ((name, reasons),) = migrate_source(fallback.encode(), "hybrid.py", Config()).pipelines
    assert reasons == ["`Hybrid` not migrated: the module defines `Hybrid` more than once (a fallback where DALI "
                       "is missing?), and a call could make either: keep one and re-run"]
