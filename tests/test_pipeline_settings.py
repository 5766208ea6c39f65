"""``pipe.max_batch_size``, ``pipe.batch_size``, ``pipe.num_threads`` and ``pipe.device_id`` read
outside the graph become what the call that made the pipeline gave (fixture
``pipeline_settings`` runs them); a setting that call does not give keeps the pipeline."""

from __future__ import annotations

import pytest

from dali_migrate.config import Config
from dali_migrate.engine import migrate_source

HEADER = '''from nvidia.dali import fn, pipeline_def


@pipeline_def{decorator}
def labels(root):
    _, label = fn.readers.file(file_root=root)
    return label


'''
MIGRATED = {
    "a literal is copied": ("", "pipe = labels('a', batch_size=4, num_threads=2)\nprint(pipe.max_batch_size)\n",
                            "print(4)"),
    "an expression is kept after the call": (
        "", "def main(args):\n    pipe = labels('a', batch_size=args.batch * 2)\n    return pipe.batch_size\n",
        "    pipe_batch_size = args.batch * 2\n    return pipe_batch_size"),
    "a literal of the decorator": ("(batch_size=8, num_threads=3)", "pipe = labels('a')\nprint(pipe.num_threads)\n",
                                   "print(3)"),
    "device_id": ("", "pipe = labels('a', batch_size=2, device_id=None)\nprint(pipe.device_id)\n",
                  "print(None)"),
}
KEPT = {
    "not given": ("", "pipe = labels('a', batch_size=2)\nprint(pipe.num_threads)\n",
                  "`pipe.num_threads` reads `num_threads=`, which `labels(...)` does not give"),
    "computed by the decorator": ("(batch_size=SIZE)", "pipe = labels('a')\nprint(pipe.max_batch_size)\n",
                                  "`pipe.max_batch_size` reads `batch_size=`, which the decorator computes"),
    "a call that may give another value": (
        "", "import random\npipe = labels('a', batch_size=random.randint(1, 4))\nprint(pipe.max_batch_size)\n",
        "may not give the same value twice"),
}


@pytest.mark.parametrize("case", sorted(MIGRATED))
def test_a_setting_becomes_the_value_the_pipeline_was_made_with(case):
    decorator, code, expected = MIGRATED[case]
    result = migrate_source((HEADER.format(decorator=decorator) + code).encode(), "run.py", Config())
    assert result.error is None
    assert result.pipelines == [("labels", [])]
    migrated = result.new_source.decode()
    assert expected in migrated, migrated
    assert "pipe.max_batch_size" not in migrated and "pipe.num_threads" not in migrated


@pytest.mark.parametrize("case", sorted(KEPT))
def test_a_setting_the_call_does_not_give_keeps_the_pipeline(case):
    decorator, code, reason = KEPT[case]
    source = "SIZE = 2\n" + HEADER.format(decorator=decorator) + code
    result = migrate_source(source.encode(), "run.py", Config())
    assert result.error is None
    [(name, reasons)] = result.pipelines
    assert name == "labels" and any(reason in r for r in reasons), reasons
    assert "@pipeline_def" in result.new_source.decode()


def test_a_name_of_the_module_is_not_overwritten_by_the_setting_variable():
    code = ("def main(n):\n    pipe_batch_size = 99\n    pipe = labels('a', batch_size=n + 1)\n"
            "    return pipe.max_batch_size, pipe_batch_size\n")
    result = migrate_source((HEADER.format(decorator="") + code).encode(), "run.py", Config())
    assert result.pipelines == [("labels", [])]
    migrated = result.new_source.decode()
    assert "    pipe_batch_size_1 = n + 1\n    return pipe_batch_size_1, pipe_batch_size" in migrated, migrated


def test_a_rebound_pipeline_variable_reads_the_setting_of_its_latest_pipeline():
    code = ("def main(n):\n    pipe = labels('a', batch_size=n)\n    first = pipe.max_batch_size\n"
            "    pipe = labels('a', batch_size=n * 2)\n    return first, pipe.max_batch_size\n")
    result = migrate_source((HEADER.format(decorator="") + code).encode(), "run.py", Config())
    assert result.pipelines == [("labels", [])], result.pipelines
    migrated = result.new_source.decode()
    assert ("    pipe_batch_size = n\n    first = pipe_batch_size\n" in migrated
            and "    pipe_batch_size = n * 2\n    return first, pipe_batch_size" in migrated), migrated
