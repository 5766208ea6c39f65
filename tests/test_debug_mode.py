"""Debug-mode pipelines (``@pipeline_def(debug=True)``): debug mode ran the same graph eagerly,
so ``debug=`` goes with the migration, unless the graph reads its DataNodes with ``.get()``."""

from __future__ import annotations

import pytest

from dali_migrate.config import Config
from dali_migrate.engine import migrate_source

SOURCE = '''from nvidia.dali import fn
from nvidia.dali.pipeline.experimental import pipeline_def


@pipeline_def(batch_size=2, num_threads=1, device_id=None{decorator})
def labels(root):
    _, label = fn.readers.file(file_root=root)
{read}    return label


pipe = labels("a"{call})
pipe.build()
print(pipe.run()[0].at(0))
'''


@pytest.mark.parametrize("decorator, call", [(", debug=True", ""), ("", ", debug=True"), (", debug=False", "")])
def test_a_debug_mode_pipeline_migrates_without_debug(decorator, call):
    result = migrate_source(SOURCE.format(decorator=decorator, call=call, read="").encode(), "explore.py", Config())
    assert result.pipelines == [("labels", [])]
    migrated = result.new_source.decode()
    assert "debug" not in migrated and "pipeline_def" not in migrated


@pytest.mark.parametrize("decorator, call", [(", debug=True", ""), ("", ", debug=True")])
def test_a_graph_reading_its_datanodes_with_get_is_kept_at_that_call(decorator, call):
    read = "    print(label.get())\n"
    result = migrate_source(SOURCE.format(decorator=decorator, call=call, read=read).encode(), "explore.py", Config())
    [(name, reasons)] = result.pipelines
    assert name == "labels"
    assert reasons == ["`label.get()` reads a debug-mode DataNode; once migrated it is an ndd Batch already: use it "
                       "as one (`.tensors[i]`, `np.asarray(...)`) instead of `.get()`, then re-run"]
