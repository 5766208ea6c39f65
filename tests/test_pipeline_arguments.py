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
