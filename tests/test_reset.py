"""`pipe.reset()`: DALI restarts only a pipeline whose external sources ended an epoch, so on a
pipeline that reads only from readers it does nothing and goes with `build()`; with sources it
keeps the pipeline."""

from __future__ import annotations

from dali_migrate.config import Config
from dali_migrate.engine import migrate_source

READER = '''from nvidia.dali import fn, pipeline_def


@pipeline_def(batch_size=2, num_threads=1, device_id=None)
def labels(root):
    _, label = fn.readers.file(file_root=root)
    return label


pipe = labels("images")
pipe.build()
for epoch in range(2):
    print(pipe.run()[0].at(0))
    if epoch == 0:
        pipe.reset()
'''
SOURCE = '''from nvidia.dali import fn, pipeline_def


def batches():
    yield [[1], [2]]


@pipeline_def(batch_size=2, num_threads=1, device_id=None)
def fed():
    return fn.external_source(source=batches, batch=True)


pipe = fed()
pipe.build()
print(pipe.run()[0].at(0))
pipe.reset()
'''


def test_reset_of_a_reader_pipeline_goes_with_build():
    result = migrate_source(READER.encode(), "epochs.py", Config())
    assert result.error is None and result.pipelines == [("labels", [])]
    migrated = result.new_source.decode()
    assert "reset" not in migrated and "    if epoch == 0:\n        pass\n" in migrated


def test_reset_after_sources_ended_keeps_the_pipeline():
    result = migrate_source(SOURCE.encode(), "fed.py", Config())
    assert result.error is None
    [(name, reasons)] = result.pipelines
    assert name == "fed" and any("`pipe.reset()` starts the sources' next epoch" in r for r in reasons), reasons
    assert result.new_source is None or b"pipe.reset()" in result.new_source
