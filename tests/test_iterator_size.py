"""`DALIGenericIterator(pipe, ..., size=N)`: migrated where a reader feeds the pipeline (fixture
`legacy_iterator_size`; the loader counts `size` as DALI did, tests/test_torch_loader.py), kept
where external sources end its epochs: DALI restarts a source after its StopIteration, while
the migrated generator would end for good."""

from __future__ import annotations

from dali_migrate.config import Config
from dali_migrate.engine import migrate_source

SOURCE_FED = '''import numpy as np
from nvidia.dali import fn, pipeline_def, types
from nvidia.dali.plugin.pytorch import DALIGenericIterator


class Samples:
    def __len__(self):
        return 6

    def __call__(self, info):
        if info.idx_in_epoch >= 6:
            raise StopIteration
        return np.array([info.idx_in_epoch], dtype=np.int32)


@pipeline_def(batch_size=3, num_threads=1, device_id=None)
def fed(source):
    return fn.external_source(source=source, batch=False, dtype=types.INT32)


def loader():
    source = Samples()
    pipe = fed(source)
    return DALIGenericIterator(pipe, ["x"], size=len(source))
'''


def test_size_over_a_pipeline_fed_by_sources_keeps_it():
    result = migrate_source(SOURCE_FED.encode(), "fed.py", Config())
    assert result.error is None
    [(name, reasons)] = result.pipelines
    assert "`size=` over a pipeline fed by external sources" in reasons[0]
    assert result.new_source is None or b"DALIGenericIterator(pipe" in result.new_source


def test_size_over_a_reader_migrates():
    source = SOURCE_FED.replace("return fn.external_source(source=source, batch=False, dtype=types.INT32)",
                                "_, labels = fn.readers.file(file_root=source)\n    return labels")
    source = source.replace("source = Samples()", "source = 'images'")
    source = source.replace("size=len(source)", "size=6")
    result = migrate_source(source.encode(), "read.py", Config())
    assert result.pipelines == [("fed", [])]
    assert b"DALITorchLoader(pipe, [\"x\"], batch_size=3, size=6)" in result.new_source
