"""Graphs that return a call of a function of the module (``return common_pipeline(jpegs,
labels)``): the generator yields each output that function returns, as ``shared_graph_tail``
shows; where its returns cannot be told to be one output or several, the pipeline stays."""

from __future__ import annotations

from conftest import FIXTURES, unwrapped_todos
from dali_migrate.config import Config
from dali_migrate.engine import migrate_source

SOURCE = (FIXTURES / "migrate" / "shared_graph_tail.input.py").read_text()
RETURN = "    return images, labels\n\n\ndef decoded"


def _migrated(source: str):
    result = migrate_source(source.encode(), "tails.py", Config())
    return dict(result.pipelines), unwrapped_todos(result.new_source.decode())


def test_each_output_of_the_shared_tail_is_yielded():
    kept, migrated = _migrated(SOURCE)
    assert kept == {"file_reader_pipeline": [], "gray_pipeline": []}
    assert "yield tuple(output.evaluate() for output in common_pipeline(jpegs, labels))" in migrated
    assert "yield (decoded(jpegs).evaluate(),)" in migrated


def test_a_tail_returning_a_name_bound_to_its_outputs_keeps_the_pipeline():
    source = SOURCE.replace(RETURN, "    outputs = (images, labels)\n    return outputs\n\n\ndef decoded")
    kept, migrated = _migrated(source)
    assert kept["file_reader_pipeline"], "one output or several cannot be told apart"
    assert "the graph returns `common_pipeline(jpegs, labels)`: one output or several cannot be told apart" in migrated
    assert kept["gray_pipeline"] == []


def test_a_tail_returning_one_output_or_several_keeps_the_pipeline():
    source = SOURCE.replace(RETURN, "    if labels is None:\n        return images\n" + RETURN)
    kept, _ = _migrated(source)
    assert kept["file_reader_pipeline"]


def test_the_iterator_counts_the_outputs_of_the_shared_tail():
    source = SOURCE.replace("from nvidia.dali import fn, pipeline_def, types",
                            "from nvidia.dali import fn, pipeline_def, types\n"
                            "from nvidia.dali.plugin.pytorch import DALIGenericIterator")
    pipe = "\npipe = file_reader_pipeline()\n"
    two = source + pipe + 'loader = DALIGenericIterator(pipe, ["x", "y"], reader_name="Reader")\n'
    kept, migrated = _migrated(two)
    assert kept["file_reader_pipeline"] == [] and "DALITorchLoader(" in migrated
    three = source + pipe + 'loader = DALIGenericIterator(pipe, ["x", "y", "z"], reader_name="Reader")\n'
    kept, migrated = _migrated(three)
    assert "the iterator names 3 outputs; the pipeline must return as many" in migrated


def test_the_audit_catches_evaluate_on_the_tuple_a_tail_returns():
    """What the migration wrote before it looked into the tail: the audit must not let it pass."""
    from dali_migrate.audit import audit

    _, migrated = _migrated(SOURCE)
    broken = migrated.replace("yield tuple(output.evaluate() for output in common_pipeline(jpegs, labels))",
                              "yield (common_pipeline(jpegs, labels).evaluate(),)")
    assert broken != migrated
    problems = audit(broken.encode())
    assert [(p.code, p.origins) for p in problems] == [("DM018", frozenset({"file_reader_pipeline"}))]
    assert "`.evaluate()` on a tuple of a pipeline's outputs" in problems[0].message
    assert audit(migrated.encode()) == []
