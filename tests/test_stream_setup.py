"""A stream a notebook makes once gets its set-up (reader, RNG) where it is called, and keeps
its loop; only where no other code can tell. Each case runs before and after, with a stand-in
reader, and prints the same."""

from __future__ import annotations

import contextlib
import io
import textwrap

import libcst as cst
import pytest

from dali_migrate.migrate.stream_setup import hoist_stream_setups

READER = '''\
class Reader:
    def __init__(self, start=0, max_batch_size=1):
        self.start = start

    def get_metadata(self):
        return {"epoch_size_padded": 3 * self.start}

    def next_epoch(self, batch_size):
        for step in range(3):
            yield (self.start + step * batch_size, -step)
'''

STREAM = '''
def f(start, scale=10, *, batch_size=2, num_threads=2, yield_reader_meta=False):
    reader = Reader(start, max_batch_size=batch_size)
    if yield_reader_meta:  # the caller's first next(): the reader's metadata
        yield reader.get_metadata()
    while True:
        for first, second in reader.next_epoch(batch_size=batch_size):
            total = first * scale + second
            yield total, second
'''


def _printed(code: str) -> str:
    out = io.StringIO()
    with contextlib.redirect_stdout(out):
        exec(compile(code, "<case>", "exec"), {})
    return out.getvalue()


def _hoisted(code: str) -> tuple[str, list[str]]:
    module, names = hoist_stream_setups(cst.parse_module(READER + textwrap.dedent(code)), ["f"])
    return module.code, names


def test_the_set_up_is_made_where_the_stream_is_and_the_metadata_read_from_the_reader():
    code = STREAM + '''
START = 3
pipe = f(START, yield_reader_meta=True)
meta = next(pipe)
for step in range(meta["epoch_size_padded"] // 2 + 2):  # across the end of an epoch
    print(next(pipe))
'''
    after, names = _hoisted(code)
    assert names == ["f"]
    assert "def f():\n" in after and "yield_reader_meta" not in after
    assert "reader = Reader(START, max_batch_size=2)\npipe = f()\nmeta = reader.get_metadata()\n" in after
    assert "total = first * 10 + second" in after
    assert _printed(READER + code) == _printed(after)


def test_a_set_up_name_other_code_uses_is_given_the_generator_s_name():
    code = STREAM + '''
reader = "mine"
pipe = f(1)
print(next(pipe), next(pipe), reader)
'''
    after, names = _hoisted(code)
    assert names == ["f"]
    assert "f_reader = Reader(1, max_batch_size=2)" in after and "f_reader.next_epoch" in after
    assert _printed(READER + code) == _printed(after)


@pytest.mark.parametrize("rest", [
    # called twice: two readers
    "a = f(1)\nb = f(2)\nprint(next(a), next(b))\n",
    # the loop reads a parameter whose argument is rebound later
    "scale = 2\npipe = f(1, scale)\nscale = 5\nprint(next(pipe))\n",
    # an argument computed by a call: made once, at the call
    "pipe = f(1, int('7'))\nprint(next(pipe))\n",
    # the metadata is asked for but not taken right after the call
    "pipe = f(1, yield_reader_meta=True)\nprint('between')\nprint(next(pipe))\n",
    # the call is not at the top level
    "def make():\n    return f(1)\nprint(next(make()))\n",
])
def test_kept_where_other_code_could_tell(rest):
    code = STREAM + rest
    after, names = _hoisted(code)
    assert names == []
    assert after == READER + code
    _printed(after)  # the case itself runs
