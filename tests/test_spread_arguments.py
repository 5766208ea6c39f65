"""Pipeline calls that spread a mapping (``train_pipe(root, **cfg)``): migrated where the mapping
is a dict display holding only the graph's parameters; kept, with the keys or the mapping named,
where it holds or may hold pipeline arguments, which the migrated function takes otherwise."""

from __future__ import annotations

import ast

import pytest

from dali_migrate.call_signatures import refused_calls
from dali_migrate.config import Config
from dali_migrate.engine import migrate_source

HEADER = '''from nvidia.dali import Pipeline, fn, pipeline_def


@pipeline_def(batch_size=2, num_threads=1, device_id=None)
def labels(root, shuffle=False):
    _, label = fn.readers.file(file_root=root, random_shuffle=shuffle, seed=1)
    return label


'''
RUN = "pipe.build()\nprint(pipe.run()[0].at(0))\n"


def _migrated(source: str):
    result = migrate_source((HEADER + source).encode(), "train.py", Config())
    assert result.error is None
    return result


def test_a_mapping_of_the_graphs_own_parameters_migrates_and_is_passed_on():
    result = _migrated("CFG = {'root': 'a', 'shuffle': True}\npipe = labels(**CFG)\n" + RUN)
    assert result.pipelines == [("labels", [])]
    assert "pipe = labels(**CFG)" in result.new_source.decode()


@pytest.mark.parametrize("source, named", [
    ("CFG = {'batch_size': 4, 'num_threads': 2}\npipe = labels('a', **CFG)\n", "(`batch_size`, `num_threads`)"),
    ("CFG = {'shuffle': True, 'device_id': None}\npipe = labels('a', **CFG)\n", "(`device_id`)"),
])
def test_a_mapping_holding_pipeline_arguments_keeps_the_pipeline_and_names_them(source, named):
    [(name, reasons)] = _migrated(source + RUN).pipelines
    assert name == "labels"
    assert any("`**CFG`, which holds pipeline arguments " + named in reason for reason in reasons)


@pytest.mark.parametrize("source", [
    "CFG = {'root': 'a'}\nCFG['num_threads'] = 2\npipe = labels(**CFG)\n",   # changed after
    "CFG = dict(root='a')\npipe = labels(**CFG)\n",                          # not a display
    "def make(**kwargs):\n    return labels('a', **kwargs)\n\n\npipe = make(batch_size=2)\n",  # forwarded
])
def test_a_mapping_the_run_cannot_read_keeps_the_pipeline(source):
    [(name, reasons)] = _migrated(source + RUN).pipelines
    assert name == "labels"
    assert any("which may hold pipeline arguments" in reason for reason in reasons)


def test_a_pipeline_object_made_from_a_mapping_names_it():
    source = ("ARGS = {'batch_size': 2, 'num_threads': 1, 'device_id': None}\npipe = Pipeline(**ARGS)\n"
              "with pipe:\n    _, label = fn.readers.file(file_root='a')\n    pipe.set_outputs(label)\n" + RUN)
    reasons = dict(_migrated(source).pipelines)["pipe"]
    assert any("passes `**ARGS`: the migration reads the pipeline's arguments by name" in r for r in reasons)


def test_the_audit_refuses_a_mapping_it_cannot_read_for_a_changed_function():
    before = ast.parse("def labels(root):\n    pass\n")
    after = "def labels(root, *, batch_size):\n    pass\n\n\n"
    known = ast.parse(after + "CFG = {'batch_size': 2}\nlabels('a', **CFG)\n")
    extra = ast.parse(after + "CFG = {'batch_size': 2, 'num_threads': 1}\nlabels('a', **CFG)\n")
    hidden = ast.parse(after + "def make(**kwargs):\n    return labels('a', **kwargs)\n")
    assert refused_calls(known, before) == []
    assert refused_calls(extra, before) == [("labels", 6, "takes no `num_threads=` argument")]
    [(_, _, why)] = refused_calls(hidden, before)
    assert "`**mapping` whose keys this run cannot see" in why
