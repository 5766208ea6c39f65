"""Which call-site expressions dali-migrate may copy (a computed seed, a reader's arguments)."""

from __future__ import annotations

import libcst as cst
import pytest

from dali_migrate.config import Config
from dali_migrate.engine import migrate_file
from dali_migrate.migrate.pure import evaluates_the_same_twice, folded, grouped


@pytest.mark.parametrize("code", [
    'f"{args.data}/train2017"', "rank % torch.cuda.device_count()", "12 + device_id", "a if flag else b",
    "cfg['root']", "[a, 1]", "-x", "a < b <= 3", "os.path.join(root, 'val')", "not done",
])
def test_copied(code):
    assert evaluates_the_same_twice(cst.parse_expression(code))


@pytest.mark.parametrize("code", [
    "next_root()", "a < f()", "cfg[key()]", "[a, *rest]", "os.path.join(root, pick())", "(lambda: 1)()",
    "(x := 3)", "(yield)",
])
def test_not_copied(code):
    assert not evaluates_the_same_twice(cst.parse_expression(code))


def test_operators_are_grouped_where_they_land():
    assert cst.Module([]).code_for_node(grouped(cst.parse_expression("a + b"))) == "(a + b)"
    assert cst.Module([]).code_for_node(grouped(cst.parse_expression("a"))) == "a"


PIPELINES = '''from nvidia.dali import fn, pipeline_def


@pipeline_def
def train(root, shard, shards):
    jpegs, labels = fn.readers.file(file_root=root, shard_id=shard * 1, num_shards=shards, name="Reader")
    return labels
'''
LOADER = '''
from nvidia.dali.plugin.pytorch import DALIGenericIterator
IMPORT


def loader(args, world):
    pipe = train(root=ROOT, shard=args.rank % world, shards=world, batch_size=4, num_threads=1, device_id=None)
    pipe.build()
    return DALIGenericIterator(pipe, ["label"], reader_name="Reader")
'''


def _imported(tmp_path, root: str):
    """The pipeline in another module: its reader's arguments are copied to the call."""
    import subprocess

    from dali_migrate.runner import run_migrate

    (tmp_path / "pkg").mkdir()
    (tmp_path / "pkg" / "__init__.py").write_text("")
    (tmp_path / "pkg" / "pipes.py").write_text(PIPELINES)
    (tmp_path / "loader.py").write_text(LOADER.replace("IMPORT", "from pkg.pipes import train").replace("ROOT", root))
    subprocess.run(["git", "init", "-q", str(tmp_path)], check=True)
    results = run_migrate([tmp_path], Config(), write=True)
    assert all(r.error is None for r in results)
    return results, (tmp_path / "loader.py").read_text()


def test_a_reader_argument_computed_at_the_call_is_copied_in_parentheses(tmp_path):
    results, code = _imported(tmp_path, 'f"{args.data}/train"')
    assert [p for r in results for p in r.pipelines] == [("train", [])]
    code = " ".join(code.split())  # as one line, however it is wrapped
    assert 'file_root=f"{args.data}/train", shard_id=(args.rank % world) * 1' in code


def test_a_reader_argument_that_calls_a_function_keeps_the_pipeline_and_says_why(tmp_path):
    results, _ = _imported(tmp_path, "next_root()")
    (name, reasons), = [p for r in results for p in r.pipelines]
    assert reasons and "`root` at the pipeline's call may not give the same value twice" in reasons[0]


def test_in_its_own_module_the_pipeline_gives_its_reader_metadata_and_nothing_is_copied():
    source = PIPELINES + LOADER.replace("IMPORT", "").replace("ROOT", "next_root()")
    result = migrate_file(source.encode(), "loader.py", Config())
    assert result.pipelines == [("train", [])]
    code = result.new_source.decode()
    assert code.count("next_root()") == 1 and code.count("ndd.readers.File(") == 1
    assert "pipe_reader_meta = next(pipe)" in code


def test_a_checkpointed_pipeline_reads_its_metadata_from_a_second_reader():
    """Its reader takes the saved state when first built: asking it for metadata must not."""
    source = PIPELINES.replace("@pipeline_def", "@pipeline_def(enable_checkpointing=True)") + '''

def steps(world):
    pipe = train(root="/data", shard=0, shards=world, batch_size=4, num_threads=1, device_id=None)
    pipe.build()
    return pipe.epoch_size("Reader") // 4
'''
    result = migrate_file(source.encode(), "loader.py", Config())
    assert result.pipelines == [("train", [])]
    code = result.new_source.decode()
    assert "yield_reader_meta" not in code
    assert code.count("ndd.readers.File(") == 2


@pytest.mark.parametrize("code, expected", [
    ("12 + None if None else 12", "12"),  # ``seed=12 + device_id if device_id else 12``, device_id=None
    ("12 + (None or 0)", "12"),
    ("12 + (3 or 0)", "15"),
    ("a if 0 else (b + c)", "(b + c)"),
    ('"" or "cpu"', '"cpu"'),
    ("12 + rank if rank else 12", "12 + rank if rank else 12"),  # nothing a literal decides
    ("x or 3", "x or 3"),
    ("(x and 1) + 2", "(x and 1) + 2"),
])
def test_what_literals_decide_is_worked_out(code, expected):
    assert cst.Module([]).code_for_node(folded(cst.parse_expression(code))) == expected
