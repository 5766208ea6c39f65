"""The dtype of a pipeline output: the ``.dtype`` property migrates to ``.dtype.type_id`` (the same
``DALIDataType``); the deprecated call ``out[i].dtype()`` gives the buffer format (``"=B"``), which
no ndd value gives, so it keeps the pipeline with a TODO at the call."""

from __future__ import annotations

import pytest

from dali_migrate.config import Config
from dali_migrate.engine import migrate_source

SOURCE = '''from nvidia.dali import fn, pipeline_def


@pipeline_def(batch_size=2, num_threads=1, device_id=None)
def labels():
    _, label = fn.readers.file(file_root="images")
    return label


pipe = labels()
pipe.build()
(out,) = pipe.run()
print({use})
'''


def _migrated(use: str):
    result = migrate_source(SOURCE.format(use=use).encode(), "labels.py", Config())
    assert result.error is None
    return result


@pytest.mark.parametrize("use", ["out[0].dtype()", "out.as_tensor().dtype()"])
def test_the_deprecated_dtype_call_keeps_the_pipeline_and_says_why(use):
    result = _migrated(use)
    [(name, reasons)] = result.pipelines
    assert name == "labels"
    assert any("`.dtype()` on a pipeline output gives the buffer format" in reason for reason in reasons)
    assert f"print({use})" in result.new_source.decode()


@pytest.mark.parametrize("use, migrated", [
    ("out[0].dtype", "out.tensors[0].dtype.type_id"),
    ("out.as_tensor().dtype", "ndd.as_tensor(out).dtype.type_id"),
])
def test_the_dtype_property_migrates_to_the_same_dali_type(use, migrated):
    result = _migrated(use)
    assert result.pipelines == [("labels", [])]
    assert f"print({migrated})" in result.new_source.decode()
