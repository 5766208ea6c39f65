"""The committed op table is what the generator produces from the installed DALI."""

from __future__ import annotations

import subprocess
import sys

import pytest

from conftest import ROOT
from dali_migrate.optable import load_op_table


def test_committed_table_matches_installed_dali():
    pytest.importorskip("nvidia.dali")
    result = subprocess.run([sys.executable, str(ROOT / "scripts" / "generate_op_table.py"), "--check"],
                            capture_output=True, text=True)
    assert result.returncode == 0, result.stderr


def test_table_knows_readers_random_ops_and_deprecations():
    table = load_op_table()
    reader = table.by_fn("readers.file")
    assert reader.is_reader and reader.ndd == "readers.File"
    assert table.by_fn("random.coin_flip").random
    assert not table.by_fn("resize").random
    legacy = table.by_class("ImageDecoder")
    assert legacy.ndd is None and table.ndd_target(legacy) == "decoders.image"
    assert table.by_fn("external_source").ndd is None


def test_static_commands_do_not_import_dali():
    code = ("import sys; from click.testing import CliRunner; from dali_migrate.cli import main; "
            f"CliRunner().invoke(main, ['check', r'{ROOT / 'fixtures' / 'migrate'}']); "
            "print('nvidia.dali' in sys.modules)")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True).stdout.strip()
    assert out == "False"


def test_ndd_dtype_names_are_the_same_types():
    pytest.importorskip("nvidia.dali")
    import nvidia.dali.experimental.dynamic as ndd
    from nvidia.dali import types

    table = load_op_table()
    assert table.ndd_dtypes["FLOAT"] == "float32" and table.ndd_dtypes["UINT8"] == "uint8"
    for constant, name in table.ndd_dtypes.items():
        assert ndd.dtype(getattr(types, constant)) == getattr(ndd, name), constant


def test_dtype_arguments_of_operators_become_ndd_types_and_nothing_else_does():
    from dali_migrate.config import Config
    from dali_migrate.engine import migrate_file

    source = b'''from nvidia.dali import fn, pipeline_def, types
from nvidia.dali.types import INT32


@pipeline_def(batch_size=2, num_threads=1, device_id=None)
def pipe(root):
    jpegs, labels = fn.readers.file(file_root=root)
    images = fn.decoders.image(jpegs, output_type=types.RGB)
    return fn.cast(images, dtype=types.FLOAT), fn.cast(labels, dtype=INT32)


WANTED = types.FLOAT
'''
    migrated = migrate_file(source, "pipe.py", Config()).new_source.decode()
    assert "ndd.cast(images, dtype=ndd.float32).evaluate(),\n" in migrated
    assert "ndd.cast(labels, dtype=ndd.int32).evaluate(),\n" in migrated
    assert "output_type=types.RGB" in migrated  # an image type, not a data type
    assert "WANTED = types.FLOAT" in migrated  # not an operator's argument
