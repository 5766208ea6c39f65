"""``self.pipe`` of one class is not ``self.pipe`` of an unrelated class of the same module: a
pipeline one class keeps does not keep the other's. Classes derived from one another share it."""

from __future__ import annotations

from dali_migrate.config import Config
from dali_migrate.engine import migrate_source
from dali_migrate.values import class_families

PIPELINES = '''\
from nvidia.dali import fn, pipeline_def, types


@pipeline_def
def train_pipe(root):
    jpegs, labels = fn.readers.file(file_root=root)
    return fn.decoders.image(jpegs), labels


@pipeline_def
def export_pipe():
    encoded = fn.external_source(name="encoded", dtype=types.UINT8)
    return fn.decoders.image(encoded)


'''

UNRELATED = PIPELINES + '''\
class TrainData:
    def __init__(self):
        self.pipe = train_pipe("/data", batch_size=4, num_threads=1, device_id=None)

    def batch(self):
        return self.pipe.run()


class Exporter:
    def __init__(self):
        self.pipe = export_pipe(batch_size=1, num_threads=1, device_id=None)

    def save(self, path):
        self.pipe.serialize(filename=path)
'''

DERIVED = PIPELINES + '''\
class TrainData:
    def __init__(self):
        self.pipe = train_pipe("/data", batch_size=4, num_threads=1, device_id=None)


class Exporter(TrainData):
    def save(self, path):
        self.pipe.serialize(filename=path)
'''


def test_a_class_keeping_its_pipeline_does_not_keep_another_classes():
    result = migrate_source(UNRELATED.encode(), "data.py", Config())
    outcome = dict(result.pipelines)
    assert outcome["train_pipe"] == []
    assert outcome["export_pipe"] and "serialize" in outcome["export_pipe"][0]
    code = result.new_source.decode()
    assert "return next(self.pipe)" in code and "self.pipe.serialize(filename=path)" in code


def test_a_derived_class_reads_its_bases_pipeline():
    result = migrate_source(DERIVED.encode(), "data.py", Config())
    outcome = dict(result.pipelines)
    assert outcome["train_pipe"] and "serialize" in outcome["train_pipe"][0]


def test_class_families():
    families = class_families({"A": [], "B": ["A"], "C": ["B"], "D": ["object"], "E": ["nn.Module"]})
    assert families == {"A": "A", "B": "A", "C": "A", "D": "D", "E": "E"}
