"""A framework iterator over a list of pipelines, one per shard or GPU: the shapes around the
``pipelines_per_gpu`` fixture that migrate (executed: same program output) and those that stay,
each with the reason a user can act on."""

from __future__ import annotations

import pytest

from conftest import FIXTURES, package_project, printed_by, run_script
from dali_migrate.config import Config
from dali_migrate.engine import migrate_source

pytest.importorskip("torch")

GRAPH = f'''from nvidia.dali import fn, pipeline_def
from nvidia.dali.plugin.pytorch import DALIGenericIterator

IMAGES = {str(FIXTURES / "data" / "images")!r}


@pipeline_def(batch_size=3, num_threads=1, device_id=None)
def shard_pipe(shard_id, num_shards):
    jpegs, labels = fn.readers.file(file_root=IMAGES, shard_id=shard_id, num_shards=num_shards, name="Reader")
    return fn.resize(fn.decoders.image(jpegs), resize_x=8, resize_y=8), labels


'''
LOOP = '''for epoch in range(2):
    for data in loader:
        print(epoch, [d["y"].ravel().tolist() for d in data])
    loader.reset()
'''


def _migrated(source: str):
    result = migrate_source(source.encode(), "train.py", Config())
    return dict(result.pipelines), result.new_source.decode()


def test_a_list_written_out_migrates_with_the_same_batches(tmp_path):
    source = GRAPH + ('pipes = [shard_pipe(shard_id=0, num_shards=2), shard_pipe(shard_id=1, num_shards=2)]\n'
                      'for p in pipes:\n    p.build()\n'
                      'loader = DALIGenericIterator(pipes, ["x", "y"], reader_name="Reader")\n') + LOOP
    kept, migrated = _migrated(source)
    assert kept == {"shard_pipe": []}
    assert "pipes_reader_meta = [next(pipe) for pipe in pipes]" in migrated
    (tmp_path / "dali_torch_loader.py").write_text(_loader_module())
    printed = printed_by(tmp_path, original=source, migrated=migrated)
    assert printed["migrated"] == printed["original"] and printed["original"].count("\n") >= 4


def _loader_module() -> str:
    from dali_migrate.migrate.torch_loader import module_source

    return module_source()


@pytest.mark.parametrize("made,reason", [
    ('pipes = {"a": shard_pipe(shard_id=0, num_shards=2), "b": shard_pipe(shard_id=1, num_shards=2)}\n',
     "`pipes`, a dict of pipelines: the migrated loader steps a list of them"),
    ("pipes = [shard_pipe(shard_id=0, num_shards=2), shard_pipe(shard_id=1, num_shards=2)]\n"
     "print(pipes[0].epoch_size())\n", "which the loader steps only where nothing else reads their metadata"),
])
def test_a_list_the_loader_cannot_step_keeps_the_pipeline(made, reason):
    kept, migrated = _migrated(GRAPH + made + 'loader = DALIGenericIterator(pipes, ["x", "y"], reader_name="Reader")\n')
    assert kept["shard_pipe"] and reason in " ".join(kept["shard_pipe"])
    assert "DALIGenericIterator(pipes" in migrated


def test_a_list_of_pipelines_of_another_file_keeps_them_and_says_where_to_make_it(tmp_path):
    caller = ("from nvidia.dali.plugin.pytorch import DALIGenericIterator\n\nfrom pkg.pipelines import shard_pipe\n\n"
              "pipes = [shard_pipe(shard_id=i, num_shards=2) for i in range(2)]\n"
              'loader = DALIGenericIterator(pipes, ["x", "y"], reader_name="Reader")\n' + LOOP)
    root = package_project(tmp_path, GRAPH, caller)
    before = run_script(root)
    from click.testing import CliRunner

    from dali_migrate.cli import main

    result = CliRunner().invoke(main, [str(root)])
    assert "defined in another file, whose generators would yield their readers' metadata" in result.output
    assert "make the list and the iterator in that file" in result.output
    assert run_script(root) == before
