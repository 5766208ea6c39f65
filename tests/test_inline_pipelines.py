"""Pipelines made inside a PyTorch iterator's arguments (`inline_iterator` fixture runs the
common shapes, bit-exact); here the statements that cannot take the pipeline out, and names."""

from __future__ import annotations

from conftest import unwrapped_todos
from dali_migrate.config import Config
from dali_migrate.engine import migrate_source

HEADER = '''from nvidia.dali import fn, pipeline_def
from nvidia.dali.plugin.pytorch import DALIGenericIterator


@pipeline_def(batch_size=2, num_threads=1, device_id=None)
def labels_pipeline(root):
    jpegs, labels = fn.readers.file(file_root=root, name="Reader")
    return labels

'''


def _migrated(body: str) -> tuple[str, list]:
    result = migrate_source((HEADER + body).encode(), "loader.py", Config())
    assert result.error is None
    text = result.new_source.decode() if result.new_source else HEADER + body
    return unwrapped_todos(text), result.pipelines


def test_a_plain_assignment_gets_the_pipeline_on_a_line_of_its_own():
    text, pipelines = _migrated('loader = DALIGenericIterator([labels_pipeline("data")], ["label"], reader_name="Reader")\n')
    assert pipelines == [("labels_pipeline", [])]
    assert 'pipe = labels_pipeline("data", yield_reader_meta=True)\npipe_reader_meta = next(pipe)\n' in text
    assert "loader = DALITorchLoader(" in text and "DALIGenericIterator([" not in text and "TODO" not in text
    again = migrate_source(text.encode(), "loader.py", Config())
    assert again.new_source is None  # a second run changes nothing


def test_a_name_the_module_uses_is_not_taken():
    text, _ = _migrated('pipe = "mine"\nloader = DALIGenericIterator(labels_pipeline("data"), ["label"], reader_name="Reader")\n'
                        "print(pipe)\n")
    assert 'pipe_1 = labels_pipeline("data", yield_reader_meta=True)' in text
    assert 'pipe = "mine"' in text and "print(pipe)" in text


def test_an_iterator_made_only_on_a_condition_keeps_the_pipeline():
    body = 'loader = DALIGenericIterator([labels_pipeline("data")], ["label"], reader_name="Reader") if 1 else None\n'
    text, pipelines = _migrated(body)
    assert [name for name, reasons in pipelines if reasons] == ["labels_pipeline"]
    assert ("DM003 `labels_pipeline(...)` is made inside the arguments of `DALIGenericIterator`: it gets a line "
            "of its own") in text
    assert body in text  # as written


def test_a_pipeline_made_in_a_function_and_one_at_module_level_are_each_named_pipe():
    text, _ = _migrated('def make(root):\n    return DALIGenericIterator([labels_pipeline(root)], ["label"], '
                        'reader_name="Reader")\n\n\nloader = DALIGenericIterator([labels_pipeline("data")], '
                        '["label"], reader_name="Reader")\n')
    assert "    pipe = labels_pipeline(root, yield_reader_meta=True)\n" in text
    assert 'pipe = labels_pipeline("data", yield_reader_meta=True)\n' in text
