"""Rule fixtures (expected diagnostics per file), look-alikes, suppression, and rule docs."""

from __future__ import annotations

import re

import pytest

from conftest import CHECK_FIXTURES, FIXTURES, diagnostics_text
from dali_migrate.config import Config
from dali_migrate.engine import check_source
from dali_migrate.rules import ALL_RULES, DOC_SECTIONS

RULE_MODULE = re.compile(r"dm(\d{3})_")


@pytest.mark.parametrize("source", CHECK_FIXTURES, ids=[p.stem for p in CHECK_FIXTURES])
def test_check_fixture_diagnostics(source):
    expected = source.with_suffix(".check.txt").read_text()
    result = check_source(source.read_bytes(), source.name, Config())
    assert result.error is None
    assert diagnostics_text(result.diagnostics) == expected


def test_lookalikes_are_never_flagged():
    source = FIXTURES / "check" / "lookalikes.py"
    assert check_source(source.read_bytes(), source.name, Config()).diagnostics == []


@pytest.mark.parametrize("imports, call", [
    ("from nvidia.dali import fn", "fn.resize(x, size=3)"),
    ("import nvidia.dali.fn as dfn", "dfn.resize(x, size=3)"),
    ("import nvidia.dali as dali", "dali.fn.resize(x, size=3)"),
    ("import nvidia.dali", "nvidia.dali.fn.resize(x, size=3)"),
    ("import nvidia.dali.fn", "nvidia.dali.fn.resize(x, size=3)"),
    ("from nvidia.dali.fn import resize", "resize(x, size=3)"),
])
def test_every_import_form_resolves(imports, call):
    source = f"{imports}\n\ny = {call}\n".encode()
    codes = [d.code for d in check_source(source, "x.py", Config()).diagnostics]
    assert codes == ["DM015"]


def test_local_names_shadowing_nothing_are_ignored():
    source = b"import numpy as fn\nfrom mylib import pipeline_def\n\n@pipeline_def\ndef p():\n    return fn.resize(1)\n"
    assert check_source(source, "x.py", Config()).diagnostics == []


def test_pipeline_class_through_submodule_import_is_flagged():
    source = b"from nvidia.dali.pipeline import Pipeline\npipe = Pipeline(batch_size=2)\npipe.build()\n"
    codes = [d.code for d in check_source(source, "x.py", Config()).diagnostics]
    assert codes == ["DM002", "DM003"]


def test_noqa_line_and_file_level():
    source = (FIXTURES / "check" / "noqa.py").read_bytes()
    assert [d.code for d in check_source(source, "noqa.py", Config()).diagnostics] == ["DM004"]
    whole = b"# dali-migrate: noqa: DM004\n" + source
    assert check_source(whole, "noqa.py", Config()).diagnostics == []


def test_select_and_ignore():
    source = (FIXTURES / "migrate" / "train_classifier.input.py").read_bytes()
    selected = check_source(source, "t.py", Config(select=frozenset({"DM00"})))
    assert {d.code for d in selected.diagnostics} <= {f"DM00{i}" for i in range(10)}
    ignored = check_source(source, "t.py", Config(ignore=frozenset({"DM015"})))
    assert "DM015" not in {d.code for d in ignored.diagnostics}
    assert ignored.diagnostics


@pytest.mark.parametrize("rule", ALL_RULES, ids=[r.code for r in ALL_RULES])
def test_every_rule_has_code_docs_module_and_a_fixture(rule):
    assert re.fullmatch(r"DM\d{3}", rule.code)
    assert rule.fix in ("always", "sometimes", "never")
    sections = rule.doc_sections()
    assert list(sections) == list(DOC_SECTIONS), rule.code
    assert all(sections.values())
    module = rule.__module__.rsplit(".", 1)[-1]
    assert RULE_MODULE.match(module).group(1) == rule.code[2:]
    expected = "".join(p.read_text() for p in FIXTURES.rglob("*.check.txt"))
    expected += "".join(p.read_text() for p in FIXTURES.rglob("*.diagnostics.txt"))
    assert f" {rule.code} " in expected, f"no fixture exercises {rule.code}"


def test_rule_codes_are_unique():
    codes = [r.code for r in ALL_RULES]
    assert len(codes) == len(set(codes))


@pytest.mark.parametrize("use, flagged", [
    ("results = [pipe.run() for pipe in jobs]", False),  # the comprehension's own `pipe`
    ("runner = lambda pipe: pipe.run()", False),  # the lambda's own `pipe`
    ("results = [p.run() for p in [pipe]]", True),  # `p` takes the pipeline from the list
    ("results = [pipe.run() for pipe in [pipe]]", True),  # the first iterable reads the outer `pipe`
    ("runner = lambda pipe=pipe: pipe.run()", True),  # a default is read outside the lambda
    ("runner = lambda job: pipe.run()", True),  # the module's pipeline, read inside a lambda
])
def test_lambdas_and_comprehensions_have_names_of_their_own(use, flagged):
    source = ("from nvidia.dali.pipeline import Pipeline\n\npipe = Pipeline(batch_size=2)\n\n"
              f"def run_all(jobs):\n    {use}\n").encode()
    lines = [d.line for d in check_source(source, "x.py", Config()).diagnostics if d.code == "DM003"]
    assert (6 in lines) == flagged


@pytest.mark.parametrize("body, flagged", [
    ("    pipe = 'decode'\n    title = pipe.upper()\n", False),  # the class body's own `pipe`
    ("    title = pipe.run()\n", True),  # no `pipe` of its own: the module's pipeline
    ("    pipe = 'decode'\n\n    def run(self):\n        return pipe.run()\n", True),  # a method looks past its class
])
def test_a_class_body_has_names_of_its_own(body, flagged):
    source = ("from nvidia.dali.pipeline import Pipeline\n\npipe = Pipeline(batch_size=2)\n\n"
              f"class Settings:\n{body}").encode()
    lines = [d.line for d in check_source(source, "x.py", Config()).diagnostics if d.code == "DM003"]
    assert bool(set(lines) & {6, 7, 9}) == flagged, lines


NDD_OUTPUTS = '''\
import nvidia.dali.experimental.dynamic as ndd


def loader(root, *, batch_size=2):
    reader = ndd.readers.File(file_root=root)
    for jpegs, labels in reader.next_epoch(batch_size=batch_size):
        yield (labels,)


(labels,) = next(loader("/data"))


class Names:
    labels = ["cat", "dog"]
    first = labels[0]

    def show(self):
        return labels.at(1)
'''


def test_a_method_reads_the_module_value_not_its_class_body_name():
    """The class body's `labels` is a list; the method's `labels` is the module's Batch."""
    found = [(d.line, d.code) for d in check_source(NDD_OUTPUTS.encode(), "x.py", Config()).diagnostics]
    assert found == [(18, "DM018")], found


GENERATOR_TO_PLUGIN = '''
import nvidia.dali.experimental.dynamic as ndd
from nvidia.dali.plugin.pytorch import DALIGenericIterator


def train_pipe(*, batch_size=2):
    reader = ndd.readers.File(file_root="images")
    for jpegs, labels in reader.next_epoch(batch_size=batch_size):
        yield ndd.decoders.image(jpegs), labels


one = DALIGenericIterator(train_pipe(), ["data", "label"])
several = DALIGenericIterator([train_pipe()], ["data", "label"])
'''


def test_a_framework_iterator_given_a_generator_is_reported():
    """`DALIGenericIterator` takes Pipeline objects: alone or in a list, a generator fails."""
    found = [(d.line, d.code) for d in check_source(GENERATOR_TO_PLUGIN.encode(), "x.py", Config()).diagnostics]
    assert (12, "DM021") in found and (13, "DM021") in found, found


SLICED_OUTPUTS = '''\
import nvidia.dali.experimental.dynamic as ndd


def two(root, *, batch_size=2):
    reader = ndd.readers.File(file_root=root)
    while True:
        for jpegs, labels in reader.next_epoch(batch_size=batch_size):
            yield jpegs, labels


outs = next(two("images"))
rest = outs[1:]
print(rest.tensors[0], rest.batch_size, rest[0].tensors[0])
'''


def test_batch_api_on_a_slice_of_the_outputs_is_reported():
    """`outs[1:]` is a tuple of Batches: `.tensors` on it is an AttributeError."""
    found = [(d.line, d.column, d.code) for d in check_source(SLICED_OUTPUTS.encode(), "x.py", Config()).diagnostics]
    assert (13, 7, "DM018") in found and (13, 24, "DM018") in found, found
    assert len([f for f in found if f[2] == "DM018"]) == 2, found  # `rest[0].tensors` is right
