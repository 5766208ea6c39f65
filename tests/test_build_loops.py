"""``for p in (train_pipe, val_pipe): p.build()``: a loop that only builds pipelines builds
those that stay in pipeline mode, and goes when none does."""

from __future__ import annotations

from dali_migrate.config import Config
from dali_migrate.engine import check_source, migrate_source

HEAD = '''\
import numpy as np
from nvidia.dali import Pipeline, fn, pipeline_def


@pipeline_def
def make_pipe(root, training):
    jpegs, labels = fn.readers.file(file_root=root, random_shuffle=training, seed=5)
    return fn.decoders.image(jpegs), labels


train_pipe = make_pipe("/data", True, batch_size=4, num_threads=1, device_id=None)
'''

BOTH_MIGRATE = HEAD + '''\
val_pipe = make_pipe("/data", False, batch_size=2, num_threads=1, device_id=None)
# build both before timing anything
for p in (train_pipe, val_pipe):
    p.build()
print(len(train_pipe.run()), len(val_pipe.run()))
'''

ONE_STAYS = HEAD + '''\
val_pipe = Pipeline(batch_size=2, num_threads=1, device_id=None)
with val_pipe:
    encoded = fn.external_source(name="encoded")
    val_pipe.set_outputs(fn.decoders.image(encoded))
for p in [train_pipe, val_pipe]:
    p.build()
val_pipe.feed_input("encoded", [np.zeros(4, dtype=np.uint8)])
'''


def test_a_loop_building_only_migrated_pipelines_goes_and_its_comment_stays():
    result = migrate_source(BOTH_MIGRATE.encode(), "train.py", Config())
    code = result.new_source.decode()
    assert result.pipelines == [("make_pipe", [])]
    assert ".build()" not in code and "for p in" not in code
    assert "# build both before timing anything\nprint(len(next(train_pipe)), len(next(val_pipe)))" in code


def test_a_pipeline_that_stays_is_still_built_by_the_loop():
    result = migrate_source(ONE_STAYS.encode(), "train.py", Config())
    code = result.new_source.decode()
    kept = dict(result.pipelines)
    assert kept["make_pipe"] == [] and kept["val_pipe"]
    assert "for p in [val_pipe]:\n    p.build()\n" in code


def test_check_reports_each_pipeline_the_loop_builds():
    found = check_source(BOTH_MIGRATE.encode(), "train.py", Config()).diagnostics
    builds = [d for d in found if d.code == "DM003" and "in a loop over pipelines" in d.message]
    assert [(d.line, d.message.split(": ", 1)[1]) for d in builds] == [
        (14, "`train_pipe.build()` in a loop over pipelines"),
        (14, "`val_pipe.build()` in a loop over pipelines"),
    ]


def test_a_loop_doing_more_than_building_is_not_taken_for_one():
    source = BOTH_MIGRATE.replace("    p.build()\n", "    p.build()\n    print(p)\n")
    result = migrate_source(source.encode(), "train.py", Config())
    assert result.pipelines[0][1] and "is used as a value" in result.pipelines[0][1][0]
