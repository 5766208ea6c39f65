"""``a, b = x, y``: each name is bound to its own value. Outputs taken apart so migrate; pipelines
made so are kept with a TODO that says to give each an assignment of its own."""

from __future__ import annotations

from dali_migrate.config import Config
from dali_migrate.engine import migrate_source

HEADER = '''from nvidia.dali import fn, pipeline_def


@pipeline_def(batch_size=2, num_threads=1, device_id=None)
def labels(shard_id=0):
    _, label = fn.readers.file(file_root="images", shard_id=shard_id, num_shards=2)
    return label, label


'''


def _migrated(source: str):
    result = migrate_source((HEADER + source).encode(), "paired.py", Config())
    assert result.error is None
    return result


def test_outputs_taken_apart_in_one_assignment_migrate():
    result = _migrated("pipe = labels()\npipe.build()\nout = pipe.run()\n"
                       "first, second = out[0], out[1]\nprint(first.as_array(), second.at(0))\n")
    assert result.pipelines == [("labels", [])]
    assert "print(np.asarray(ndd.as_tensor(first)), np.asarray(second.tensors[0]))" in result.new_source.decode()


def test_pipelines_made_in_one_assignment_are_kept_with_what_to_do():
    result = _migrated("train, val = labels(0), labels(shard_id=1)\ntrain.build()\nprint(train.run()[0].at(0))\n")
    [(name, reasons)] = result.pipelines
    assert name == "labels"
    assert any("bound in one assignment with other values" in reason and "`a = labels(...)`" in reason
               for reason in reasons)
    assert result.new_source.decode().count("train, val = labels(0), labels(shard_id=1)") == 1
