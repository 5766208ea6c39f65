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
    assert "`size=` over a pipeline fed by an external source that may raise StopIteration" in reasons[0]
    assert result.new_source is None or b"DALIGenericIterator(pipe" in result.new_source


def test_size_over_a_reader_migrates():
    source = SOURCE_FED.replace("return fn.external_source(source=source, batch=False, dtype=types.INT32)",
                                "_, labels = fn.readers.file(file_root=source)\n    return labels")
    source = source.replace("source = Samples()", "source = 'images'")
    source = source.replace("size=len(source)", "size=6")
    result = migrate_source(source.encode(), "read.py", Config())
    assert result.pipelines == [("fed", [])]
    assert b"DALITorchLoader(pipe, [\"x\"], batch_size=3, size=6)" in result.new_source


ENDLESS = '''"""CIFAR-style arrays through an endless iterator; the epoch is set by the iterator's size=."""
import numpy as np
import torch
from nvidia.dali import pipeline_def, fn
from nvidia.dali.plugin.pytorch import DALIGenericIterator

rng = np.random.default_rng(0)
data_npy = rng.integers(0, 255, (10, 4, 4, 3), dtype=np.uint8)
label_npy = np.arange(10, dtype=np.int64)


class ExternalInputIterator(object):
    def __init__(self, data_npy, label_npy, batch_size):
        self.data = data_npy
        self.label = label_npy
        self.batch_size = batch_size

    def __iter__(self):
        self.i = 0
        self.n = len(self.label)
        return self

    def __next__(self):
        batch = []
        labels = []
        for _ in range(self.batch_size):
            img, label = self.data[self.i], self.label[self.i]
            batch.append(img)
            labels.append(label)
            self.i = (self.i + 1) % self.n  # endless: the epoch is set by the iterator's size
        return (np.array(batch), np.array(labels))


batch_size = 4
eii = ExternalInputIterator(data_npy, label_npy, batch_size)


@pipeline_def(batch_size=batch_size, num_threads=2, device_id=None)
def pipe1():
    data, label = fn.external_source(device="cpu", source=eii, num_outputs=2)
    data = fn.crop_mirror_normalize(data, mean=[0.485, 0.456, 0.406], std=[0.229, 0.224, 0.225])
    return data, label


train_data = DALIGenericIterator([pipe1()], ["data", "label"], size=len(label_npy))
for epoch in range(3):
    for i, batch in enumerate(train_data):
        print(epoch, i, tuple(batch[0]["data"].shape), batch[0]["label"].ravel().tolist(), round(float(batch[0]["data"].sum()), 2))
    train_data.reset()
'''


def test_size_over_an_endless_source_migrates_and_counts_the_same(tmp_path):
    """DALI's older examples pair an iterator that never ends ("the end is set by size") with
    `size=`: nothing in it raises StopIteration, so the loader's count is the epoch."""
    from conftest import printed_by

    result = migrate_source(ENDLESS.encode(), "endless.py", Config())
    assert result.pipelines == [("pipe1", [])]
    code = result.new_source.decode()
    assert "size=len(label_npy)" in code
    printed = printed_by(tmp_path, original=ENDLESS, migrated=code)
    assert printed["original"] == printed["migrated"] and printed["original"].count("\n") == 8
