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
