"""A function that makes the pipeline and returns it (``pipe = get_train_pipe(...)``), with
the caller reading the epoch size or making the PyTorch iterator: the pipeline gives the
reader's metadata first, so every caller must read it, and the function must not use the
pipeline before it returns it. Where either fails, the pipeline is kept with the reason
(fixture returned_pipelines has the shapes that migrate)."""

from __future__ import annotations

import pytest

from dali_migrate.config import Config
from dali_migrate.engine import migrate_source

HEAD = '''from nvidia.dali import fn, pipeline_def
from nvidia.dali.plugin.pytorch import DALIClassificationIterator


@pipeline_def(num_threads=1, device_id=None)
def train_pipe(root):
    jpegs, labels = fn.readers.file(file_root=root, name="Reader")
    return fn.decoders.image(jpegs), labels


def make(root, batch_size):
    pipe = train_pipe(root, batch_size=batch_size)
    pipe.build()
{extra}    return pipe


def loader(root):
    pipe = make(root, 4)
    return DALIClassificationIterator(pipe, reader_name="Reader")
'''


def _migrated(source: str):
    return migrate_source(source.encode(), "loaders.py", Config())


def test_a_returned_pipeline_gives_its_metadata_to_the_caller():
    result = _migrated(HEAD.format(extra=""))
    code = result.new_source.decode()
    assert result.pipelines == [("train_pipe", [])]
    assert "pipe = train_pipe(root, batch_size=batch_size, yield_reader_meta=True)" in code
    assert "    pipe = make(root, 4)\n    pipe_reader_meta = next(pipe)\n" in code
    # the helper passes its own parameter: the loader reads the batch size from the metadata
    assert 'batch_size=pipe_reader_meta["batch_size"]' in code


@pytest.mark.parametrize("extra, caller, reason", [
    ("", "\n\ndef peek(root):\n    other = make(root, 2)\n    return other.run()\n",
     "`make()` returns the pipeline, whose metadata comes first from it now, and `make(root, 2)` does not "
     "read that metadata"),
    ("    pipe.run()\n", "", "`make()` returns the pipeline after using it (`pipe.run()`)"),
])
def test_a_returned_pipeline_is_kept_where_a_caller_would_get_the_metadata_as_a_batch(extra, caller, reason):
    result = _migrated(HEAD.format(extra=extra) + caller)
    [(name, reasons)] = result.pipelines
    assert name == "train_pipe"
    assert any(reason in r for r in reasons), reasons
    assert "yield_reader_meta" not in (result.new_source or b"").decode()


def test_every_call_of_the_function_takes_the_metadata_where_each_reads_it():
    """``first = make(0)`` and ``second = make(1)``, both read: each call gets its ``next()``."""
    source = HEAD.format(extra="") + '''

def sizes(root):
    first = make(root, 2)
    second = make(root, 3)
    return first.epoch_size("Reader"), second.epoch_size("Reader")
'''
    result = _migrated(source)
    code = result.new_source.decode()
    assert result.pipelines == [("train_pipe", [])]
    assert "first = make(root, 2)\n    first_reader_meta = next(first)\n" in code
    assert "second = make(root, 3)\n    second_reader_meta = next(second)\n" in code


def test_verify_runs_a_kept_function_as_it_runs_a_migrated_one(tmp_path):
    """The harness skips the metadata a migrated function's pipeline gives first; a function
    whose pipeline is kept returns a Pipeline, which it runs as it is."""
    pytest.importorskip("nvidia.dali")
    from conftest import FIXTURES
    from dali_migrate.verify import VerifyOptions, verify_files

    images = str((FIXTURES / "data" / "images").resolve())
    runs = HEAD.format(extra="")
    kept = runs + "\n\ndef peek(root):\n    other = make(root, 2)\n    return other.run()\n"
    for name, source in (("runs", runs), ("kept", kept)):
        original = tmp_path / f"{name}.py"
        original.write_text(source)
        migrated = tmp_path / f"{name}_migrated.py"
        migrated.write_bytes(_migrated(source).new_source)
        report = verify_files(original, migrated, VerifyOptions(args={"root": images}, iterations=2))
        assert {p.name for p in report.pipelines} == {"train_pipe", "make"}, name
        for pipeline in report.pipelines:
            assert pipeline.migrated.ok, (name, pipeline.migrated.error)
            assert pipeline.comparison.mismatches == [], name
