"""Report positions read from Python's own parser match LibCST's position provider."""

from __future__ import annotations

from pathlib import Path

import libcst as cst
import pytest

from dali_migrate import positions
from dali_migrate.analysis import collect_facts

ROOT = Path(__file__).resolve().parent.parent
SOURCES = sorted([*ROOT.glob("fixtures/**/*.py"), ROOT / "tests" / "data" / "wrap_cases.py"])

AWKWARD = '''\
# -*- coding: utf-8 -*-
from nvidia.dali import fn, pipeline_def, types

NAMES = {"é": types.INTERP_LINEAR}; other = fn.random.uniform(range=[0, 1])


@ pipeline_def(batch_size=2,  # the batch
               num_threads=1)
@pkg.wrap
def pipe(a="ü"):
    x = (fn.readers.file(file_root="é", name="Reader"))
    y = fn.resize(x, size=[3, 3])[0](f"{fn.cast(x)}", k = 1, **extra)
    return "é" + x, g(x).h(y)(z)


class Holder(Base, metaclass=Meta):
    async def run(self): return await fn.decoders.image(x, device="mixed")


async def use(a, b):
    async with ctx() as c, other():
        with (open(a) as f,
              open(b) as g):
            return (a < b) == (c is not f) in [g]
'''


def _mapped_nodes(module: cst.Module, facts) -> list[cst.CSTNode]:
    found = []

    class Collect(cst.CSTVisitor):
        def on_visit(self, node):
            if id(node) in facts.ordinals:
                found.append(node)
            return True

    module.visit(Collect())
    return found


def _compare(source: bytes, monkeypatch) -> int:
    """Every node the analysis ranks gets LibCST's own position; returns how many statements
    needed LibCST's provider."""
    module = cst.parse_module(source)
    facts = collect_facts(module)
    nodes = _mapped_nodes(module, facts)
    truth = {id(n): span for n, span in positions._whole_module(module).items()}
    fallbacks = []
    real = positions.Positions._add_statement
    monkeypatch.setattr(positions.Positions, "_add_statement",
                        lambda self, *args: fallbacks.append(args) or real(self, *args))
    found = positions.Positions(module, nodes, source, facts)
    assert [found[n] for n in nodes] == [truth[id(n)] for n in nodes]
    return len(fallbacks)


@pytest.mark.parametrize("path", SOURCES, ids=lambda p: str(p.relative_to(ROOT)))
def test_positions_from_ast_are_libcsts_and_need_no_provider(path, monkeypatch):
    assert _compare(path.read_bytes(), monkeypatch) == 0


def test_awkward_code_is_placed_exactly(monkeypatch):
    assert _compare(AWKWARD.encode("utf-8"), monkeypatch) == 0


def test_a_statement_that_cannot_be_matched_goes_through_libcst(monkeypatch):
    source = b"from nvidia.dali import fn\nx = fn.cast(fn.cast(a))\n"
    module = cst.parse_module(source)
    facts = collect_facts(module)
    nodes = _mapped_nodes(module, facts)
    facts.ordinals.update({id(n): 1 - facts.ordinals[id(n)] for n in nodes if isinstance(n, cst.Call)})
    used = []
    real = positions.Positions._add_statement
    monkeypatch.setattr(positions.Positions, "_add_statement",
                        lambda self, *args: used.append(args) or real(self, *args))
    found = positions.Positions(module, nodes, source, facts)
    truth = {id(n): span for n, span in positions._whole_module(module).items()}
    assert used and all(found[n] == truth[id(n)] for n in nodes)
