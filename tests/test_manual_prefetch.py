"""`schedule_run()` + `outputs()` / `share_outputs()` + `release_outputs()`: `run()` taken apart.
The iterations come out in the order they were scheduled, so the pipeline migrates with the
driving calls removed; mixed with `run()` (which prefetches on its own) it stays."""

from __future__ import annotations

from dali_migrate.config import Config
from dali_migrate.engine import migrate_source

GRAPH = '''from nvidia.dali import fn, pipeline_def


@pipeline_def(batch_size=2, num_threads=1, device_id=None)
def labels(root):
    _, label = fn.readers.file(file_root=root)
    return label


pipe = labels("images")
pipe.build()
'''


def _migrated(consumer: str):
    return migrate_source((GRAPH + consumer).encode(), "prefetch.py", Config())


def test_a_schedule_run_next_to_run_keeps_the_pipeline():
    result = _migrated("pipe.schedule_run()\nprint(pipe.run()[0].at(0))\nprint(pipe.outputs()[0].at(0))\n")
    ((_, reasons),) = result.pipelines
    assert any("next to `pipe.run()`, which prefetches on its own" in r for r in reasons), reasons


def test_a_prefetch_loop_goes_with_its_calls_and_its_comment_stays():
    result = _migrated("# fill the queue\nfor _ in range(2):\n    pipe.schedule_run()\n"
                       "for _ in range(3):\n    out = pipe.share_outputs()\n    print(out[0].at(0))\n"
                       "    pipe.release_outputs()\n    pipe.schedule_run()\n")
    assert result.pipelines == [("labels", [])]
    migrated = result.new_source.decode()
    assert "schedule_run" not in migrated and "release_outputs" not in migrated
    assert "# fill the queue\nfor _ in range(3):\n    out = next(pipe)\n" in migrated


def test_a_loop_that_does_more_than_drive_the_pipeline_stays():
    result = _migrated("for i in range(2):\n    pipe.schedule_run()\n    print(i)\nprint(pipe.outputs()[0].at(0))\n")
    migrated = result.new_source.decode()
    assert "for i in range(2):\n    print(i)\n" in migrated
