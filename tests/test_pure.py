"""Which call-site expressions dali-migrate may copy (a computed seed, a reader's arguments)."""

from __future__ import annotations

import libcst as cst
import pytest

from dali_migrate.config import Config
from dali_migrate.engine import migrate_file
from dali_migrate.migrate.pure import evaluates_the_same_twice, grouped


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


LOADER = '''
from nvidia.dali import fn, pipeline_def
from nvidia.dali.plugin.pytorch import DALIGenericIterator


@pipeline_def
def train(root, shard, shards):
    jpegs, labels = fn.readers.file(file_root=root, shard_id=shard * 1, num_shards=shards, name="Reader")
    return labels


def loader(args, world):
    pipe = train(root=ROOT, shard=args.rank % world, shards=world, batch_size=4, num_threads=1, device_id=None)
    pipe.build()
    return DALIGenericIterator(pipe, ["label"], reader_name="Reader")
'''


def test_a_reader_argument_computed_at_the_call_is_copied_in_parentheses():
    result = migrate_file(LOADER.replace("ROOT", 'f"{args.data}/train"').encode(), "loader.py", Config())
    assert result.pipelines == [("train", [])]
    code = " ".join(result.new_source.decode().split())  # as one line, however it is wrapped
    assert 'file_root=f"{args.data}/train", shard_id=(args.rank % world) * 1' in code


def test_a_reader_argument_that_calls_a_function_keeps_the_pipeline_and_says_why():
    result = migrate_file(LOADER.replace("ROOT", "next_root()").encode(), "loader.py", Config())
    (name, reasons), = result.pipelines
    assert reasons and "`root` at the pipeline's call may not give the same value twice" in reasons[0]
