"""A generator made and advanced once is inlined where its batch is taken, only where no other
code can tell. Each case runs before and after, with a stand-in reader, and prints the same."""

from __future__ import annotations

import contextlib
import io
import textwrap

import libcst as cst
import pytest

from dali_migrate.migrate.one_shot import inline_one_shots

READER = '''\
class Reader:
    def __init__(self, start=0):
        self.start = start

    def next_epoch(self, batch_size):
        for step in range(3):
            yield (self.start + step * batch_size, -step)
'''


def _printed(code: str) -> str:
    out = io.StringIO()
    with contextlib.redirect_stdout(out):
        exec(compile(code, "<case>", "exec"), {})
    return out.getvalue()


def _inlined(code: str, *generators: str) -> tuple[str, list[str]]:
    module, names = inline_one_shots(cst.parse_module(READER + textwrap.dedent(code)), list(generators) or ["f"])
    return module.code, names


def _assert_same_output(before: str, after: str) -> None:
    assert _printed(READER + textwrap.dedent(before)) == _printed(after)


def test_a_generator_advanced_once_becomes_its_statements():
    code = '''
    size = 4
    def f(start, scale=10, *, batch_size=size, num_threads=2):
        reader = Reader(start)
        while True:
            for first, second in reader.next_epoch(batch_size=batch_size):
                total = first * scale + second
                yield total, second

    pipe = f(3)
    total, second = next(pipe)
    print(total, second)
    '''
    after, names = _inlined(code)
    assert names == ["f"]
    assert "def f" not in after and "pipe" not in after and "num_threads" not in after
    assert "reader = Reader(3)\nfirst, second = next(reader.next_epoch(batch_size=size))\ntotal = first * 10 + second\n" in after
    _assert_same_output(code, after)


def test_an_argument_that_is_computed_is_assigned_once_first():
    code = '''
    def offset():
        print("offset computed")
        return 5

    def f(start, *, batch_size=2):
        reader = Reader(start)
        while True:
            for first, second in reader.next_epoch(batch_size=batch_size):
                yield first + start, second

    pipe = f(offset())
    out = next(pipe)
    print(out)
    '''
    after, names = _inlined(code)
    assert names == ["f"]
    assert "start = offset()\nreader = Reader(start)\n" in after
    assert "out = first + start, second" in after
    _assert_same_output(code, after)


def test_later_sites_first_so_that_both_may_bind_the_same_names():
    code = '''
    def f(*, batch_size=2):
        reader = Reader(1)
        while True:
            for first, second in reader.next_epoch(batch_size=batch_size):
                yield (first,)

    def g(*, batch_size=3):
        reader = Reader(100)
        while True:
            for first, second in reader.next_epoch(batch_size=batch_size):
                yield (first,)

    pipe = f()
    (data,) = next(pipe)
    print(data)
    pipe = g()
    (data,) = next(pipe)
    print(data)
    '''
    after, names = _inlined(code, "f", "g")
    assert sorted(names) == ["f", "g"]
    assert after.count("reader = Reader(") == 2
    _assert_same_output(code, after)


GENERATOR = '''
def f(*, batch_size=2):
    reader = Reader(1)
    while True:
        for first, second in reader.next_epoch(batch_size=batch_size):
            total = first + second
            yield (total,)
'''


@pytest.mark.parametrize("rest", [
    # advanced twice: a stream, not one batch
    "pipe = f()\n(a,) = next(pipe)\n(b,) = next(pipe)\nprint(a, b)\n",
    # a function reads a name the generator binds, as a global
    "def show():\n    print(first)\nfirst = 0\npipe = f()\n(a,) = next(pipe)\nshow()\n",
    # top-level code after the site reads it before binding it again
    "second = 'mine'\npipe = f()\n(a,) = next(pipe)\nprint(second)\n",
    # the generator is used for something else too
    "makers = [f]\npipe = f()\n(a,) = next(pipe)\nprint(a)\n",
    # the pipeline variable is read again
    "pipe = f()\n(a,) = next(pipe)\nprint(a, pipe is not None)\n",
    # something runs between making the generator and taking its batch
    "pipe = f()\nprint('between')\n(a,) = next(pipe)\nprint(a)\n",
])
def test_kept_where_other_code_could_tell(rest):
    code = GENERATOR + rest
    after, names = _inlined(code)
    assert names == []
    assert after == READER + code
    _printed(after)  # the case itself runs


def test_a_yielded_local_takes_the_name_the_caller_gives_that_output():
    """``total`` would clash with the caller's own ``total``: bound as ``a``, as the caller
    names the output, it clashes with nothing, and no ``a = total`` line is left over."""
    code = GENERATOR + "total = 'mine'\npipe = f()\n(a,) = next(pipe)\nprint(a, total)\n"
    after, names = _inlined(code)
    assert names == ["f"]
    assert "a = first + second\nprint(a, total)" in after
    _assert_same_output(code, after)


def test_outputs_that_keep_their_names_are_not_assigned_again():
    code = GENERATOR.replace("yield (total,)", "yield total * 2, second") + (
        "pipe = f()\nscaled, second = next(pipe)\nprint(scaled, second)\n")
    after, names = _inlined(code)
    assert names == ["f"]
    assert "scaled = total * 2\nprint(scaled, second)" in after
    _assert_same_output(code, after)


def test_a_function_defined_twice_is_kept():
    """The call runs whichever ``def`` came last before it."""
    code = GENERATOR + GENERATOR.replace("Reader(1)", "Reader(50)") + "pipe = f()\n(a,) = next(pipe)\nprint(a)\n"
    assert _inlined(code)[1] == []


def test_a_default_computed_from_a_name_bound_twice_is_kept():
    code = '''
    size = 2
    def f(*, batch_size=size):
        reader = Reader(1)
        while True:
            for first, second in reader.next_epoch(batch_size=batch_size):
                yield (first,)

    size = 5
    pipe = f()
    (a,) = next(pipe)
    print(a)
    '''
    assert _inlined(code)[1] == []


def test_a_name_read_again_only_after_it_is_bound_again_is_no_obstacle():
    code = GENERATOR + "pipe = f()\n(a,) = next(pipe)\nsecond = 'mine'\nprint(a, second)\n"
    after, names = _inlined(code)
    assert names == ["f"]
    _assert_same_output(code, after)


def test_a_generator_not_in_the_migrations_shape_is_left_alone():
    code = GENERATOR.replace("    reader = Reader(1)\n", '    """Docs."""\n    reader = Reader(1)\n')
    code += "pipe = f()\n(a,) = next(pipe)\nprint(a)\n"
    assert _inlined(code)[1] == []
    looped = GENERATOR.replace("            total = first + second\n",
                               "            for k in range(2):\n                second += k\n            total = first + second\n")
    assert _inlined(looped + "pipe = f()\n(a,) = next(pipe)\nprint(a)\n")[1] == []


def test_comments_above_the_lines_stay():
    code = GENERATOR + "# make it\npipe = f()\n# take one batch\n(total,) = next(pipe)\nprint(total)\n"
    after, names = _inlined(code)
    assert names == ["f"]
    assert "# make it\nreader = Reader(1)\n# take one batch\nfirst, second = next(" in after
    _assert_same_output(code, after)


def test_only_notebooks_get_the_inlined_form(tmp_path):
    pytest.importorskip("nvidia.dali")
    from conftest import FIXTURES
    from dali_migrate.config import Config
    from dali_migrate.engine import migrate_file
    from dali_migrate.notebook import notebook_script

    notebook = FIXTURES / "migrate" / "gallery_notebook.input.ipynb"
    script = notebook_script(notebook.read_bytes()).encode()
    as_script = migrate_file(script, "gallery.py", Config())
    as_notebook = migrate_file(notebook.read_bytes(), "gallery.ipynb", Config())
    without = migrate_file(notebook.read_bytes(), "gallery.ipynb", Config(one_shot=False))
    assert b"def gallery_pipeline" in as_script.new_source and b"next(pipe)" in as_script.new_source
    assert b"def gallery_pipeline" not in as_notebook.new_source
    assert b"next(reader.next_epoch(batch_size=batch_size))" in as_notebook.new_source
    assert b"def gallery_pipeline" in without.new_source
    assert as_notebook.pipelines == without.pipelines == [("gallery_pipeline", [])]
    assert as_notebook.inlined == ["gallery_pipeline"] and without.inlined == as_script.inlined == []


def test_a_pipeline_with_a_device_of_its_own_computes_in_its_context():
    code = '''
    class lib:
        class EvalContext:
            def __init__(self, device_id):
                self.device_id = device_id

            def __enter__(self):
                print("enter", self.device_id)

            def __exit__(self, *exc):
                print("exit")

    def f(*, batch_size=2, device_id=0):
        context = lib.EvalContext(device_id=device_id)
        reader = Reader(1)
        while True:
            for first, second in reader.next_epoch(batch_size=batch_size):
                with context:
                    total = first + second
                yield total, second

    pipe = f(device_id=1)
    total, second = next(pipe)
    print(total, second)
    '''
    after, names = _inlined(code)
    assert names == ["f"]
    assert "with lib.EvalContext(device_id=1):\n    total = first + second\n" in after
    assert "context" not in after.replace("EvalContext", "")
    _assert_same_output(code, after)
