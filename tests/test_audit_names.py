"""The audit's net for NameErrors the migration would write: a name the migrated module reads
and nothing binds (`self` in a plain function, a local of another method), that the original
did not read unbound, fails the audit and keeps the pipelines of the functions around it."""

from __future__ import annotations

from dali_migrate.audit import audit


def test_a_name_nothing_binds_fails_the_audit():
    original = b"def build(root):\n    return root\n"
    migrated = b"def build(root):\n    self.meta = next(root)\n    return root\n"
    [problem] = audit(migrated, "utf-8", original)
    assert (problem.line, problem.origins) == (2, frozenset({"build"}))
    assert "`self` is not defined there" in problem.message


def test_a_name_the_original_read_unbound_too_is_not_the_migrations():
    original = b"def run():\n    return CONFIG['steps']\n"
    assert audit(original, "utf-8", original) == []


def test_globals_builtins_and_star_imports_are_not_reported():
    migrated = (b"import numpy as np\n\n\ndef f():\n    global seen\n    seen = len(np.zeros(2))\n\n\n"
                b"def g():\n    return seen + __name__.count('m')\n")
    assert audit(migrated, "utf-8", b"") == []
    starred = b"from os.path import *\n\n\ndef h():\n    return join('a', 'b')\n"
    assert audit(starred, "utf-8", b"") == []


ORIGINAL_GRAPH = b"def graph(root):\n    return root\n\n\nfor batch in graph('a', device_id=None):\n    print(batch)\n"


def test_a_call_the_new_signature_refuses_fails_the_audit():
    migrated = (b"def graph(root, *, batch_size):\n    yield root\n\n\n"
                b"for batch in graph('a', device_id=None):\n    print(batch)\n")
    [problem] = audit(migrated, "utf-8", ORIGINAL_GRAPH)
    assert problem.line == 5 and "`graph(...)` takes no `device_id=` argument (a TypeError)" in problem.message
    assert problem.origins == frozenset({"graph"})


def test_a_call_the_new_signature_takes_passes_the_audit():
    migrated = (b"def graph(root, *, batch_size=2, device_id=None):\n    yield root\n\n\n"
                b"for batch in graph('a', device_id=None):\n    print(batch)\n")
    assert audit(migrated, "utf-8", ORIGINAL_GRAPH) == []


def test_calls_of_functions_the_migration_left_alone_are_not_judged():
    assert audit(ORIGINAL_GRAPH, "utf-8", ORIGINAL_GRAPH) == []
