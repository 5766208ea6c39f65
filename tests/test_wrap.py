"""Lines the migration writes are wrapped to the project's line length, as black wraps them."""

from __future__ import annotations

from pathlib import Path

import libcst as cst
from click.testing import CliRunner

from dali_migrate.cli import main
from dali_migrate.config import Config, load_config
from dali_migrate.migrate import wrap


def wrap_long_lines(original: bytes, migrated: bytes, limit: int) -> bytes:
    """As the engine calls it, on the migrated module."""
    return wrap.wrap_long_lines(original, cst.parse_module(migrated), limit)

DATA = Path(__file__).parent / "data"


def test_written_lines_are_wrapped_as_black_wraps_them():
    """wrap_cases.black.py is black 26.10's output (line length 88) for wrap_cases.py (the two
    comparisons at its end: ruff format's, the same layout)."""
    written = (DATA / "wrap_cases.py").read_bytes()
    assert wrap_long_lines(b"", written, 88) == (DATA / "wrap_cases.black.py").read_bytes()


def test_wrapping_twice_changes_nothing():
    once = wrap_long_lines(b"", (DATA / "wrap_cases.py").read_bytes(), 88)
    assert wrap_long_lines(b"", once, 88) == once


def test_the_users_own_long_lines_stay():
    original = b"x = foo(aaaaaaaaaaaaaaaaaaaaaaaaaaaaaa, bbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbb, ccccccccccccccccccccc)\n"
    written = b"y = ndd.resize(images, resize_x=crop, resize_y=crop, interp_type=types.INTERP_TRIANGULAR)\n"
    migrated = original + written
    wrapped = wrap_long_lines(original, migrated, 88)
    assert wrapped.startswith(original)
    body = b"    images, resize_x=crop, resize_y=crop, interp_type=types.INTERP_TRIANGULAR\n"
    assert wrapped[len(original):] == b"y = ndd.resize(\n" + body + b")\n"


def test_a_statement_with_a_comment_in_its_brackets_is_left_as_written():
    migrated = (b"y = ndd.resize(images,  # the decoded images\n"
                b"               resize_x=crop, resize_y=crop, interp_type=types.INTERP_TRIANGULAR, antialias=False)\n")
    assert wrap_long_lines(b"", migrated, 88) == migrated


def test_line_endings_and_the_limit_are_kept():
    migrated = b"y = ndd.resize(images, resize_x=crop, resize_y=crop, interp_type=types.INTERP_TRIANGULAR)\r\n"
    assert wrap_long_lines(b"", migrated, 120) == migrated
    assert wrap_long_lines(b"", migrated, 88).count(b"\r\n") == 3


def test_line_length_comes_from_ruff_then_black(tmp_path):
    (tmp_path / "pyproject.toml").write_text("[tool.black]\nline-length = 100\n")
    assert load_config(tmp_path).line_length == 100
    (tmp_path / "pyproject.toml").write_text("[tool.black]\nline-length = 100\n[tool.ruff]\nline-length = 120\n")
    assert load_config(tmp_path).line_length == 120
    (tmp_path / "pyproject.toml").write_text("[tool.dali-migrate]\n")
    assert load_config(tmp_path).line_length == 88


def test_migrate_wraps_to_the_configured_length(tmp_path):
    source = (Path(__file__).parent.parent / "fixtures" / "migrate" / "train_classifier.input.py").read_text()
    source = source.replace('"..", "data"', '"data"')
    for length in (88, 120):
        folder = tmp_path / str(length)
        folder.mkdir()
        (folder / "pyproject.toml").write_text(f"[tool.ruff]\nline-length = {length}\n")
        (folder / "train.py").write_text(source)
        assert CliRunner().invoke(main, [str(folder / "train.py")]).exit_code == 0
    wrapped = (tmp_path / "88" / "train.py").read_text()
    wide = (tmp_path / "120" / "train.py").read_text()
    assert "ndd.crop_mirror_normalize(\n" in wrapped
    assert "ndd.crop_mirror_normalize(images, mirror=flip" in wide
    assert max(len(line) for line in wide.splitlines()) <= 120


def test_a_layout_that_cannot_be_written_leaves_the_code_as_migrated(monkeypatch):
    migrated = b"y = ndd.resize(images, resize_x=crop, resize_y=crop, interp_type=types.INTERP_TRIANGULAR)\n"

    def broken(*args, **kwargs):
        raise wrap._Mismatch

    monkeypatch.setattr(wrap, "_wrap_expression", broken)
    assert wrap_long_lines(b"", migrated, 88) == migrated


def test_long_todos_are_wrapped_and_recognised_on_the_next_run():
    from dali_migrate.engine import migrate_file

    source = (Path(__file__).parent.parent / "fixtures" / "migrate" / "iterators_left.input.py").read_bytes()
    first = migrate_file(source, "loaders.py", Config())
    lines = first.new_source.decode().splitlines()
    todos = [line for line in lines if "TODO(dali-migrate)" in line]
    assert todos and all(len(line) <= 88 for line in todos)
    assert any(line.lstrip().startswith("#   ") for line in lines)  # the continuation lines
    assert not migrate_file(first.new_source, "loaders.py", Config()).changed


def test_a_keyword_added_to_a_call_whose_bracket_has_a_line_of_its_own_goes_before_it():
    """The pipeline's seed given to a shuffling reader written as black writes a call."""
    from dali_migrate.migrate.ops import append_keyword

    call = cst.parse_expression('File(\n    file_root=root, random_shuffle=True\n)')
    added = call.with_changes(args=append_keyword(list(call.args), "seed", cst.Name("seed")))
    assert cst.Module([]).code_for_node(added) == 'File(\n    file_root=root, random_shuffle=True, seed=seed\n)'
    one_line = cst.parse_expression("File(file_root=root)")
    added = one_line.with_changes(args=append_keyword(list(one_line.args), "seed", cst.Name("seed")))
    assert cst.Module([]).code_for_node(added) == "File(file_root=root, seed=seed)"
