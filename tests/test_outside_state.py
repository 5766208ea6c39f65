"""A `with pipe:` graph whose first lines set state on the object (`self.length = len(source)
// batch_size`, as PhysicsNeMo's datapipes write it): pipeline mode ran them once, where the
`with` was; the generator would run them only at its first batch. Those lines now run where the
`with` was, before the generator's `def`. Anywhere else in the graph they keep it."""

from __future__ import annotations

import pytest

from conftest import WINDOWS_SOURCE, printed_by

from dali_migrate.config import Config
from dali_migrate.engine import migrate_source

pytest.importorskip("nvidia.dali")

DATAPIPE = '''import numpy as np
import nvidia.dali as dali


''' + WINDOWS_SOURCE + '''

class Datapipe:
    def __init__(self, n, batch_size=2):
        self.batch_size = batch_size
        self.pipe = dali.Pipeline(batch_size=batch_size, num_threads=1, device_id=None)
        with self.pipe:
{graph}
        self.pipe.build()

    def __len__(self):
        return self.length

    def batches(self):
        for _ in range(self.length):
            (out,) = self.pipe.run()
            yield out.as_array().tolist()


dp = Datapipe(7)
print("len", len(dp))
for b in dp.batches():
    print(b)
'''
FIRST = ("            source = Windows(n, self.batch_size)\n"
         "            self.length = len(source) // self.batch_size\n"
         "            data = dali.fn.external_source(source, batch=False)\n"
         "            self.pipe.set_outputs(data * 2.0)")


def test_the_first_lines_run_where_the_with_was_and_the_program_prints_the_same(tmp_path):
    source = DATAPIPE.format(graph=FIRST)
    result = migrate_source(source.encode(), "datapipe.py", Config())
    assert [reasons for _, reasons in result.pipelines] == [[]]
    code = result.new_source.decode()
    assert code.index("self.length = len(source)") < code.index("def pipe_outputs(") < code.index("self.pipe = ")
    printed = printed_by(tmp_path, original=source, migrated=code)
    assert printed["migrated"] == printed["original"] == (
        "len 3\n[[0.0, 0.0], [2.0, 2.0]]\n[[4.0, 4.0], [6.0, 6.0]]\n[[8.0, 8.0], [10.0, 10.0]]\n")


def test_state_set_after_the_graph_began_keeps_it():
    graph = FIRST.replace("            self.length = len(source) // self.batch_size\n", "").replace(
        "            self.pipe.set_outputs", "            self.length = len(source) // self.batch_size\n"
                                        "            self.pipe.set_outputs")
    result = migrate_source(DATAPIPE.format(graph=graph).encode(), "datapipe.py", Config())
    [(_, reasons)] = result.pipelines
    assert "changes state outside the graph" in reasons[0]


def test_a_pipeline_read_from_another_object_keeps_it():
    source = DATAPIPE.format(graph=FIRST).replace("for b in dp.batches():", "print(dp.pipe.run())\nfor b in []:")
    result = migrate_source(source.encode(), "datapipe.py", Config())
    [(_, reasons)] = result.pipelines
    assert "`dp.pipe` is used as a value in `dp.pipe.run()`" in reasons[0]


def test_the_audit_sees_a_generator_read_through_an_object():
    """The second net: `check` (and so the audit of every migrated file) reports `.run()` on a
    migrated generator that a class holds as `self.pipe`, read as `data.pipe`."""
    from dali_migrate.engine import check_source

    source = (b"import nvidia.dali.experimental.dynamic as ndd\n\n\nclass Data:\n    def __init__(self, root):\n"
              b"        def pipe_outputs(*, batch_size=2):\n            reader = ndd.readers.File(file_root=root)\n"
              b"            for jpegs, labels in reader.next_epoch(batch_size=batch_size):\n"
              b"                yield (labels,)\n\n        self.pipe = pipe_outputs()\n\n\n"
              b"data = Data('x')\nprint(data.pipe.run())\n")
    found = check_source(source, "data.py", Config())
    assert [(d.code, d.line) for d in found.diagnostics] == [("DM021", 15)]
