"""Pipelines passed by variable to a function of the module that runs them: migrated with the
function where every binding the variable can hold makes a pipeline; kept, with a TODO naming the
call, where one binding does not."""

from __future__ import annotations

import pytest

from dali_migrate.config import Config
from dali_migrate.engine import migrate_source

HEADER = '''from nvidia.dali import fn, pipeline_def


@pipeline_def(batch_size=2, num_threads=1, device_id=None)
def labels(root):
    _, label = fn.readers.file(file_root=root)
    return label


def show(pipe, iterations):
    pipe.build()
    for _ in range(iterations):
        print(pipe.run()[0].at(0))


'''
MIGRATED = {
    "bound once": "pipe = labels('a')\nshow(pipe, 1)\n",
    "by keyword": "pipe = labels('a')\nshow(iterations=1, pipe=pipe)\n",
    "rebound to pipelines": "pipe = labels('a')\nshow(pipe, 1)\npipe = labels('b')\nshow(pipe, 1)\n",
    "in a function": "def main():\n    pipe = labels('a')\n    show(pipe, 1)\n",
    "a global read in a function": "def main():\n    show(shared, 1)\n\n\nshared = labels('a')\n",
    "from a helper": "def build(root):\n    pipe = labels(root)\n    return pipe\n\n\nshow(build('a'), 1)\n",
}
KEPT = {
    "rebound to something else": ("pipe = labels('a')\nshow(pipe, 1)\npipe = None\n", "show(pipe, 1)"),
    "a conditional value": ("root = 'a'\npipe = labels(root) if root else None\nshow(pipe, 1)\n",
                            "pipe = labels(root) if root else None"),
    "a global a function rebinds": ("def reset():\n    global pipe\n    pipe = None\n\n\npipe = labels('a')\n"
                                    "show(pipe, 1)\n", "show(pipe, 1)"),
    "a parameter of the caller": ("def main(pipe):\n    show(pipe, 1)\n\n\nmain(labels('a'))\n", "show(pipe, 1)"),
}


@pytest.mark.parametrize("case", sorted(MIGRATED))
def test_a_pipeline_passed_by_variable_migrates_with_the_function(case):
    result = migrate_source((HEADER + MIGRATED[case]).encode(), "run.py", Config())
    assert result.error is None
    assert result.pipelines == [("labels", [])]
    migrated = result.new_source.decode()
    assert "next(pipe)[0].tensors[0]" in migrated and ".build()" not in migrated


@pytest.mark.parametrize("case", sorted(KEPT))
def test_a_variable_that_may_hold_something_else_keeps_the_pipeline_and_names_the_call(case):
    source, call = KEPT[case]
    result = migrate_source((HEADER + source).encode(), "run.py", Config())
    assert result.error is None
    [(name, reasons)] = result.pipelines
    assert name == "labels" and any(f"in `{call}`" in reason for reason in reasons), reasons
    assert "pipe.run()" in result.new_source.decode()


FACTORIES = '''from nvidia.dali import fn, pipeline_def


@pipeline_def(batch_size=2, num_threads=1, device_id=None)
def labels(root):
    _, label = fn.readers.file(file_root=root)
    return label


@pipeline_def(batch_size=2, num_threads=1, device_id=None)
def sized(root, size=4):
    jpegs, _ = fn.readers.file(file_root=root)
    return fn.resize(fn.decoders.image(jpegs), size=[size, size])


def run(pipeline, root):
    pipe = pipeline(root, batch_size=2)
    pipe.build()
    print(pipe.run()[0].at(0))


'''


def test_a_parameter_given_pipeline_functions_makes_their_pipelines():
    source = FACTORIES + "run(labels, 'a')\nrun(sized, 'a')\n"
    result = migrate_source(source.encode(), "speed.py", Config())
    assert result.error is None
    assert result.pipelines == [("labels", []), ("sized", [])]
    migrated = result.new_source.decode()
    assert "pipe = pipeline(root, batch_size=2)\n    print(np.asarray(next(pipe)[0].tensors[0]))" in migrated


def test_a_pipeline_function_also_used_otherwise_is_kept_and_the_call_named():
    source = FACTORIES + "run(labels, 'a')\nprint(labels.__name__)\n"
    result = migrate_source(source.encode(), "speed.py", Config())
    reasons = dict(result.pipelines)["labels"]
    assert any("`labels` is used as a value" in r for r in reasons), reasons


def test_pipeline_functions_one_call_cannot_serve_are_kept_together():
    # `run(sized, ...)` passes `size=`, which only `sized` takes: one call cannot serve both
    source = FACTORIES.replace("pipeline(root, batch_size=2)", "pipeline(root, size=8)") + "run(labels, 'a')\nrun(sized, 'a')\n"
    result = migrate_source(source.encode(), "speed.py", Config())
    outcomes = dict(result.pipelines)
    assert outcomes["labels"] == ["unknown pipeline argument `size=`"]  # `labels` does not take it
    assert outcomes["sized"] == ["`pipeline` also holds `labels`, which is not migrated"]
    kept = result.new_source.decode()
    assert "pipe = pipeline(root, size=8)\n" in kept and "    pipe.build()\n" in kept


def test_pipeline_functions_whose_migrations_take_the_call_differently_are_kept():
    # `labels` keeps a `device_id=` parameter (another call gives it a device), `sized` drops
    # it: the one call in `run` cannot be written for both
    source = FACTORIES.replace("pipeline(root, batch_size=2)", "pipeline(root, batch_size=2, device_id=None)")
    source += "run(labels, 'a')\nrun(sized, 'a')\nother = labels('b', device_id=0)\n"
    result = migrate_source(source.encode(), "speed.py", Config())
    outcomes = dict(result.pipelines)
    for name in ("labels", "sized"):
        assert any("`pipeline(...)` makes pipelines of `labels`, `sized`, whose migrated functions take its "
                   "arguments differently" in r for r in outcomes[name]), outcomes
