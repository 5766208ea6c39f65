"""Kept pipelines: every helper that keeps one is named in one run, and the findings in the
code of a pipeline that stays in pipeline mode say so: a kept legacy
class's other methods and in-module base classes, and the module functions only such code
calls. Their advice (`use ndd.reshape`) alone would have a person break the kept pipeline."""

from __future__ import annotations

from dali_migrate.config import Config
from dali_migrate.engine import migrate_source

KEPT_CLASSES = '''import nvidia.dali.fn as fn
import nvidia.dali.ops as ops
from nvidia.dali.pipeline import Pipeline


def reader(files):
    return ops.readers.Numpy(files=files)


def noisy(images):
    return images + fn.random.normal(images)


class Base(Pipeline):
    def __init__(self, batch_size, num_threads, device_id, **kwargs):
        super().__init__(batch_size=batch_size, num_threads=num_threads, device_id=device_id)
        self.input = reader(kwargs["files"])

    def load(self):
        return fn.reshape(self.input(name="Reader"), layout="HWC")


class Train(Base):
    def __init__(self, batch_size, num_threads, device_id, **kwargs):
        super().__init__(batch_size, num_threads, device_id, **kwargs)

    def augment(self, images):
        return noisy(fn.flip(images, horizontal=1))

    def define_graph(self):
        return self.augment(self.load())
'''


def _todos(source: str) -> dict[str, str]:
    """The first line of each statement with TODOs above it -> the TODO text above it."""
    result = migrate_source(source.encode(), "kept.py", Config())
    lines = result.new_source.decode().splitlines()
    found: dict[str, str] = {}
    todo: list[str] = []
    for line in lines:
        stripped = line.strip()
        if stripped.startswith("# TODO(dali-migrate)") or (todo and stripped.startswith("#   ")):
            todo.append(stripped.lstrip("# "))
        elif todo:
            found[stripped] = " ".join(todo)
            todo = []
    return found


def test_the_code_of_a_kept_class_and_the_functions_only_it_calls_say_they_stay():
    todos = _todos(KEPT_CLASSES)
    for statement, helper_of in [
        ("return ops.readers.Numpy(files=files)", "`Train`"),  # called from the base's __init__
        ("return images + fn.random.normal(images)", "`Train`"),  # called from a method
        ('return fn.reshape(self.input(name="Reader"), layout="HWC")', "`Train`"),  # a base class method
        ("return noisy(fn.flip(images, horizontal=1))", "`Train`"),  # another method
    ]:
        assert f"(it stays: {helper_of} is kept in pipeline mode)" in todos[statement], todos[statement]


def test_a_function_other_code_calls_too_keeps_its_plain_advice():
    todos = _todos(KEPT_CLASSES + '\n\nprint(noisy)\n')
    assert "it stays" not in todos["return images + fn.random.normal(images)"]
    assert "(it stays: `Train` is kept" in todos["return ops.readers.Numpy(files=files)"]


TWO_HELPERS = '''from nvidia.dali import fn, pipeline_def


def decode(jpegs):
    jpegs, labels = fn.readers.file(file_root="images")  # a reader belongs to a graph
    return fn.decoders.image(jpegs)


def shrink(images):
    return fn.resize(images, size=[8, 8])


@pipeline_def(batch_size=2, num_threads=1, device_id=None)
def fed():
    return shrink(fn.external_source(name="jpegs"))


@pipeline_def(batch_size=2, num_threads=1, device_id=None)
def both(root):
    jpegs, labels = fn.readers.file(file_root=root)
    return shrink(decode(jpegs)), labels
'''


def test_every_helper_that_keeps_a_pipeline_is_named_in_one_run():
    result = migrate_source(TWO_HELPERS.encode(), "helpers.py", Config())
    reasons = dict(result.pipelines)["both"]
    assert any(reason.startswith("`decode()` builds part of the graph") for reason in reasons), reasons
    assert any(reason.startswith("`shrink()` builds part of the graph") for reason in reasons), reasons
