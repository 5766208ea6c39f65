"""A datapipe that resets its pipeline and makes a new `DALIGenericIterator` for each epoch
(PhysicsNeMo's `__iter__`), over external sources that end the epochs: the reset goes, the
migrated generator yields None where the sources end an epoch and goes on with the next, as the
reset made DALI do. The loader is made in another method than the pipeline, so it may only read
what the object holds (`self.batch_size`); a local of the method that made the pipeline keeps it
(it was a NameError, reported migrated)."""

from __future__ import annotations

import pytest

from conftest import WINDOWS_SOURCE, printed_by
from dali_migrate.config import Config
from dali_migrate.engine import migrate_source

pytest.importorskip("torch")

DATAPIPE = '''import numpy as np
import nvidia.dali as dali
import nvidia.dali.plugin.pytorch as dali_pth


''' + WINDOWS_SOURCE + '''

class Datapipe:
    def __init__(self, n, batch_size=2):
        self.batch_size = batch_size
        self.pipe = dali.Pipeline(batch_size=self.batch_size, num_threads=1, device_id=None)
        with self.pipe:
            source = Windows(n, self.batch_size)
            self.length = len(source) // self.batch_size
            data = dali.fn.external_source(source, batch=False)
            self.pipe.set_outputs(data * 2.0)

    def __len__(self):
        return self.length

    def __iter__(self):
        self.pipe.reset()
        return dali_pth.DALIGenericIterator([self.pipe], ["x"])


if __name__ == "__main__":
    dp = Datapipe(7)
    print("len", len(dp))
    for epoch in range(3):
        for b in dp:
            print(epoch, b[0]["x"].tolist())
'''


def test_a_reset_before_each_epochs_iterator_goes_and_the_epochs_are_the_same(tmp_path):
    result = migrate_source(DATAPIPE.encode(), "datapipe.py", Config())
    assert [reasons for _, reasons in result.pipelines] == [[]]
    code = result.new_source.decode()
    assert "self.pipe.reset()" not in code and "pipe_outputs(mark_epoch_ends=True)" in code
    printed = printed_by(tmp_path, original=DATAPIPE, migrated=code)
    assert printed["original"] == printed["migrated"]
    assert printed["original"].splitlines()[-1] == "2 [[48.0, 48.0], [50.0, 50.0]]"


def test_a_loader_in_another_method_reading_a_local_batch_size_keeps_the_pipeline():
    source = DATAPIPE.replace("dali.Pipeline(batch_size=self.batch_size,", "dali.Pipeline(batch_size=batch_size,")
    result = migrate_source(source.encode(), "datapipe.py", Config())
    [(_, reasons)] = result.pipelines
    assert "`batch_size=batch_size` is computed in the method that creates it" in reasons[0]


def test_a_reset_of_a_pipeline_also_run_by_hand_keeps_it():
    source = DATAPIPE.replace("    def __len__(self):", "    def peek(self):\n        return self.pipe.run()\n\n"
                                                        "    def __len__(self):")
    result = migrate_source(source.encode(), "datapipe.py", Config())
    [(_, reasons)] = result.pipelines
    assert any("reset()` starts the sources' next epoch" in r for r in reasons)


RUN_CLIMATE = '''import os
import sys

import numpy as np

sys.path.insert(0, sys.argv[1])
from datapipes.climate import ClimateDatapipe

if __name__ == "__main__":
    root = sys.argv[2]
    dp = ClimateDatapipe(root, batch_size=2, num_steps=2, device="cpu", num_workers=1)
    print("len", len(dp))
    for epoch in range(2):
        for data in dp:
            print(epoch, tuple(data[0]["outvar"].shape), round(float(data[0]["invar"].sum()), 4),
                  data[0]["timestamps"].ravel().tolist())
'''


def test_the_physicsnemo_corpus_datapipe_gives_the_same_epochs(tmp_path):
    """The corpus project written like PhysicsNeMo's climate datapipe (a method that makes the
    pipeline, `self.length` set in the graph, `reset()` and a new iterator per epoch, parallel
    sources) migrates as a whole and gives the same windows, epoch after epoch."""
    import shutil
    import subprocess
    import sys

    import numpy as np

    from conftest import FIXTURES
    from dali_migrate.runner import run_migrate

    original, migrated, data = tmp_path / "original", tmp_path / "migrated", tmp_path / "data"
    shutil.copytree(FIXTURES / "projects" / "physicsnemo_npy", original)
    shutil.copytree(original, migrated)
    [result] = [r for r in run_migrate([migrated], Config(), write=True) if r.pipelines]
    assert [reasons for _, reasons in result.pipelines] == [[]]
    data.mkdir()
    arrays = np.random.default_rng(0)
    for index in range(2):
        np.save(data / f"f{index}.npy", arrays.random((6, 3, 4, 4), dtype=np.float32))
    (tmp_path / "run.py").write_text(RUN_CLIMATE)
    printed = []
    for project in (original, migrated):
        done = subprocess.run([sys.executable, "run.py", str(project), str(data)], cwd=tmp_path,
                              capture_output=True, text=True, timeout=300)
        assert done.returncode == 0, done.stderr[-2000:]
        printed.append(done.stdout)
    assert printed[0] == printed[1] and printed[0].startswith("len 3\n")
