"""Pipelines kept in a list or dict (one per shard or GPU, or by split) and pipelines taken in
a loop over several (``for p in (train_pipe, val_pipe)``): the list or dict holds generators,
a subscript or loop picks one, ``next()`` steps it. What cannot be planned on a pipeline that
is one of several (its reader's metadata, an iterator over it) keeps it, saying why."""

from __future__ import annotations

from conftest import IMAGES_PIPELINE, NDD_GENERATOR, printed_by

from dali_migrate.config import Config
from dali_migrate.engine import check_source, migrate_source

PER_SHARD = IMAGES_PIPELINE.replace("def images_pipeline(root):", "def images_pipeline(root, shard_id, num_shards):").replace(
    "fn.readers.file(file_root=root)", "fn.readers.file(file_root=root, shard_id=shard_id, num_shards=num_shards)")

SHARDS_IN_A_LIST = PER_SHARD + '''\
pipes = [images_pipeline(IMAGES, shard_id=i, num_shards=3) for i in range(3)]
for pipe in pipes:
    pipe.build()
for step in range(2):
    for shard, pipe in enumerate(pipes):
        images, labels = pipe.run()
        print(step, shard, len(pipes), labels.as_array().ravel().tolist(), images.at(1).shape)
'''

SPLITS_IN_A_DICT = IMAGES_PIPELINE + '''\
pipes = {"train": images_pipeline(IMAGES), "val": images_pipeline(IMAGES)}
for pipe in pipes.values():
    pipe.build()
for split in pipes:
    images, labels = pipes[split].run()
    print(len(pipes), sorted(pipes.keys()))
    print(split, labels.as_array().ravel().tolist())
for split, pipe in pipes.items():
    print(split, pipe.run()[0].at(0).shape)
val = pipes["val"]
print(np.asarray(val.run()[1].as_tensor()).ravel().tolist())
'''

TUPLE_LOOP = IMAGES_PIPELINE + '''\
train_pipe, val_pipe = images_pipeline(IMAGES), images_pipeline(IMAGES)
train_pipe = images_pipeline(IMAGES)
val_pipe = images_pipeline(IMAGES)
train_pipe.build()
val_pipe.build()
for name, pipe in zip(["train", "val"], (train_pipe, val_pipe)):
    images, labels = pipe.run()
    print(name, labels.as_array().ravel().tolist(), images.at(0).shape)
'''


def _migrated(source: str) -> str:
    result = migrate_source(source.encode(), "eval.py", Config())
    assert result.pipelines == [("images_pipeline", [])], result.pipelines
    return result.new_source.decode()


def test_pipelines_in_a_list_migrate_and_print_the_same(tmp_path):
    code = _migrated(SHARDS_IN_A_LIST)
    assert "pipes = [images_pipeline(IMAGES, shard_id=i, num_shards=3) for i in range(3)]" in code
    assert ".build()" not in code and "for pipe in pipes:" not in code  # the loop only built them
    assert "images, labels = next(pipe)" in code
    printed = printed_by(tmp_path, original=SHARDS_IN_A_LIST, migrated=code)
    assert printed["migrated"] == printed["original"]


def test_pipelines_in_a_dict_migrate_through_subscripts_values_items_and_picks(tmp_path):
    code = _migrated(SPLITS_IN_A_DICT)
    assert "next(pipes[split])" in code and "for split, pipe in pipes.items():" in code
    assert "for pipe in pipes.values()" not in code
    printed = printed_by(tmp_path, original=SPLITS_IN_A_DICT, migrated=code)
    assert printed["migrated"] == printed["original"]


SORTED_SPLITS = IMAGES_PIPELINE + '''\
pipes = {"val": images_pipeline(IMAGES), "train": images_pipeline(IMAGES)}
for pipe in pipes.values():
    pipe.build()
print(sorted(pipes), list(pipes), tuple(pipes), set(pipes) == {"val", "train"})
for split in sorted(pipes):
    images, labels = pipes[split].run()
    print(split, labels.as_array().ravel().tolist())
'''


def test_sorted_or_listed_keys_of_a_dict_of_pipelines_read_no_pipeline(tmp_path):
    code = _migrated(SORTED_SPLITS)
    assert "next(pipes[split])" in code and "TODO" not in code
    printed = printed_by(tmp_path, original=SORTED_SPLITS, migrated=code)
    assert printed["migrated"] == printed["original"]


def test_a_loop_over_a_tuple_of_pipelines_steps_each(tmp_path):
    source = TUPLE_LOOP.replace("train_pipe, val_pipe = images_pipeline(IMAGES), images_pipeline(IMAGES)\n", "")
    code = _migrated(source)
    assert "images, labels = next(pipe)" in code
    printed = printed_by(tmp_path, original=source, migrated=code)
    assert printed["migrated"] == printed["original"]


def test_metadata_of_one_of_several_pipelines_keeps_them_and_says_why():
    source = SHARDS_IN_A_LIST.replace("for step in range(2):", 'print(pipes[0].epoch_size("Reader"))\nfor step in range(2):')
    result = migrate_source(source.encode(), "eval.py", Config())
    (name, reasons), = result.pipelines
    assert name == "images_pipeline"
    assert any("`pipes` holds one of several pipelines" in reason for reason in reasons)
    assert b"pipe.build()" in result.new_source


def test_a_list_of_pipelines_that_leaves_the_function_keeps_them():
    source = PER_SHARD + '''\
def make(n):
    pipes = [images_pipeline(IMAGES, shard_id=i, num_shards=n) for i in range(n)]
    return pipes
'''
    result = migrate_source(source.encode(), "eval.py", Config())
    (name, reasons), = result.pipelines
    assert reasons and "`pipes`, a list or dict of pipelines, is used as a value in `return pipes`" in reasons[0]


def test_a_container_that_also_holds_a_kept_pipeline_keeps_both():
    source = IMAGES_PIPELINE + '''\
@pipeline_def(batch_size=2, num_threads=1, device_id=None)
def fed():
    return fn.external_source(source=lambda: [np.zeros(2)])


pipes = [images_pipeline(IMAGES), fed()]
for pipe in pipes:
    pipe.build()
print(pipes[0].run()[1].as_array())
'''
    result = migrate_source(source.encode(), "eval.py", Config())
    reasons = dict(result.pipelines)
    assert reasons["fed"] and any("`pipes` also holds `fed`" in reason for reason in reasons["images_pipeline"])


def test_check_follows_generators_in_lists_and_dicts():
    """Hand-written dynamic-mode code: a Batch stepped out of a list or dict of migrated
    pipelines has no ``.at()``."""
    for made, picked in (("[graph() for _ in range(2)]", "pipes[1]"), ('{"train": graph()}', 'pipes["train"]')):
        source = NDD_GENERATOR + f"pipes = {made}\nimages, labels = next({picked})\nprint(images.at(0))\n"
        found = check_source(source.encode(), "train.py", Config()).diagnostics
        assert [d.code for d in found if d.line == source.count("\n")] == ["DM018"], (made, found)
    looped = NDD_GENERATOR + 'pipes = {"a": graph()}\nfor split, pipe in pipes.items():\n    print(next(pipe)[0].at(0))\n'
    found = check_source(looped.encode(), "train.py", Config()).diagnostics
    assert "DM018" in [d.code for d in found]


def test_a_module_list_read_by_a_function_defined_above_it(tmp_path):
    """A function reads a global when it runs: ``PIPES`` is a list of pipelines there too, and
    so is what its comprehension takes from it."""
    source = PER_SHARD + '''\
def step():
    return [p.run()[1].as_array().ravel().tolist() for p in PIPES]


PIPES = [images_pipeline(IMAGES, shard_id=i, num_shards=2) for i in range(2)]
for p in PIPES:
    p.build()
print(step(), step())
'''
    code = _migrated(source)
    assert "[np.asarray(ndd.as_tensor(next(p)[1])).ravel().tolist() for p in PIPES]" in code
    printed = printed_by(tmp_path, original=source, migrated=code)
    assert printed["migrated"] == printed["original"]
