"""The audit knows what an ndd Batch and Tensor have (read from the installed wheel into the op
table): TensorList API the migration does not rewrite (`out.data_ptr()`) keeps the pipeline,
where it was migrated into an AttributeError and reported migrated."""

from __future__ import annotations

from dali_migrate.config import Config
from dali_migrate.engine import migrate_source
from dali_migrate.optable import load_op_table

SOURCE = '''from nvidia.dali import fn, pipeline_def


@pipeline_def(batch_size=3, num_threads=1, device_id=None)
def labels(root):
    _, label = fn.readers.file(file_root=root)
    return label


pipe = labels("images")
pipe.build()
(out,) = pipe.run()
print(out.data_ptr() != 0, len(out))
'''


def test_an_attribute_an_ndd_batch_lacks_keeps_the_pipeline():
    result = migrate_source(SOURCE.encode(), "pointer.py", Config())
    assert result.error is None
    [(name, reasons)] = result.pipelines
    assert name == "labels" and "`.data_ptr` is not an attribute of an ndd Batch" in reasons[0], reasons
    assert result.new_source is None or b"pipe.run()" in result.new_source


def test_the_op_table_lists_what_ndd_batches_and_tensors_have():
    table = load_op_table()
    assert {"tensors", "select", "slice", "batch_size", "shape", "layout", "dtype"} <= table.ndd_batch_attributes
    assert {"shape", "dtype", "layout", "cpu", "torch"} <= table.ndd_tensor_attributes
    assert "at" not in table.ndd_batch_attributes and "as_array" not in table.ndd_tensor_attributes
