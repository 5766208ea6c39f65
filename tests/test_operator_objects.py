"""Legacy operator objects (`ops.X(...)`) made outside a graph and called in it: migrated, the
call would still build a pipeline-graph node inside a generator of ndd Batches (it did, reported
"migrated"). Such a pipeline is kept, with a TODO naming each call."""

from __future__ import annotations

import pytest

from dali_migrate.config import Config
from dali_migrate.engine import migrate_source

BEFORE_WITH = '''import nvidia.dali.ops as ops
from nvidia.dali.pipeline import Pipeline


def create(root):
    pipe = Pipeline(batch_size=2, num_threads=1, device_id=None)
    reader = ops.readers.File(file_root=root)
    decode = ops.decoders.Image(device="cpu")
    with pipe:
        jpegs, labels = reader()
        pipe.set_outputs(decode(jpegs), labels)
    return pipe


pipe = create("images")
pipe.build()
print(pipe.run())
'''
MODULE_LEVEL = '''import nvidia.dali.ops as ops
from nvidia.dali import fn, pipeline_def

decode = ops.decoders.Image(device="cpu")


@pipeline_def(batch_size=2, num_threads=1, device_id=None)
def images(root):
    jpegs, labels = fn.readers.file(file_root=root)
    return decode(jpegs), labels


pipe = images("images")
pipe.build()
print(pipe.run())
'''
ON_AN_OBJECT = '''import nvidia.dali.ops as ops
from nvidia.dali import fn
from nvidia.dali.pipeline import Pipeline


class Loader:
    def __init__(self, root):
        self.decode = ops.decoders.Image(device="cpu")
        self.pipe = Pipeline(batch_size=2, num_threads=1, device_id=None)
        with self.pipe:
            jpegs, labels = fn.readers.file(file_root=root)
            self.pipe.set_outputs(self.decode(jpegs), labels)
        self.pipe.build()

    def next(self):
        return self.pipe.run()
'''
CASES = {"before the with": (BEFORE_WITH, ["reader", "decode"]), "at module level": (MODULE_LEVEL, ["decode"]),
         "on an object": (ON_AN_OBJECT, ["self.decode"])}


@pytest.mark.parametrize("case", sorted(CASES))
def test_a_graph_calling_an_operator_object_made_outside_it_is_kept(case):
    source, names = CASES[case]
    result = migrate_source(source.encode(), "legacy.py", Config())
    assert result.error is None
    [(_, reasons)] = result.pipelines
    for name in names:
        assert any(r.startswith(f"`{name}(...)` calls a legacy operator object made outside the graph")
                   for r in reasons), reasons
    assert result.new_source is None or b"= ops." in result.new_source
