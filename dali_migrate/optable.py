"""The operator table generated from DALI by scripts/generate_op_table.py (never edited by hand)."""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from functools import lru_cache
from importlib import resources

FN_PREFIX = "nvidia.dali.fn."
OPS_PREFIX = "nvidia.dali.ops."


@dataclass(frozen=True)
class Op:
    schema: str
    fn: str | None
    ops_class: str
    ndd: str | None
    kind: str
    random: bool
    stateful: bool
    backends: tuple[str, ...]
    min_inputs: int
    max_inputs: int
    deprecated: bool
    replacement: str | None
    args: frozenset[str]
    # integer and boolean defaults (exact as code): what an argument is when it is not given
    defaults: dict = field(default_factory=dict, compare=False, hash=False)

    @property
    def is_reader(self) -> bool:
        return self.kind == "reader"


class OpTable:
    def __init__(self, raw: dict) -> None:
        self.dali_version: str = raw["dali_version"]
        self.ndd_unsupported_args = frozenset(raw["ndd_unsupported_args"])
        self.ndd_dtypes: dict[str, str] = raw.get("ndd_dtypes", {})  # ``FLOAT`` -> ``float32``
        self.ndd_math = frozenset(raw.get("ndd_math", ()))  # ``nvidia.dali.math.clamp`` -> ``ndd.math.clamp``
        # what an ndd Batch / Tensor has (``tensors``, ``select``, ``shape``, ...), for the audit
        self.ndd_batch_attributes = frozenset(raw.get("ndd_batch_attributes", ()))
        self.ndd_tensor_attributes = frozenset(raw.get("ndd_tensor_attributes", ()))
        self.ops = [_op_from_json(entry) for entry in raw["ops"].values()]
        self._by_fn = {op.fn: op for op in self.ops if op.fn}
        self._by_class = {op.ops_class: op for op in self.ops}

    def by_fn(self, path: str) -> Op | None:
        """``readers.file`` -> the reader's entry."""
        return self._by_fn.get(path)

    def by_class(self, path: str) -> Op | None:
        """``readers.File`` or a legacy name such as ``FileReader`` -> its entry."""
        return self._by_class.get(path)

    def lookup(self, qualname: str) -> Op | None:
        """An entry for ``nvidia.dali.fn.X`` or ``nvidia.dali.ops.X``."""
        if qualname.startswith(FN_PREFIX):
            return self.by_fn(qualname[len(FN_PREFIX) :])
        if qualname.startswith(OPS_PREFIX):
            return self.by_class(qualname[len(OPS_PREFIX) :])
        return None

    def ndd_target(self, op: Op) -> str | None:
        """The ndd name that replaces ``op``, following a deprecation to its replacement."""
        if op.ndd is not None:
            return op.ndd
        if op.replacement is not None:
            successor = self.by_fn(op.replacement)
            if successor is not None and successor.ndd is not None:
                return successor.ndd
        return None

    def successor(self, op: Op) -> Op:
        """The entry whose ndd form replaces ``op`` (``op`` itself unless it is deprecated)."""
        if op.ndd is None and op.replacement is not None:
            return self.by_fn(op.replacement) or op
        return op


def _op_from_json(entry: dict) -> Op:
    return Op(
        schema=entry["schema"],
        fn=entry["fn"],
        ops_class=entry["ops_class"],
        ndd=entry["ndd"],
        kind=entry["kind"],
        random=entry["random"],
        stateful=entry["stateful"],
        backends=tuple(entry["backends"]),
        min_inputs=entry["min_inputs"],
        max_inputs=entry["max_inputs"],
        deprecated=entry["deprecated"],
        replacement=entry["replacement"],
        args=frozenset(entry["args"]),
        defaults=entry.get("defaults", {}),
    )


@lru_cache(maxsize=1)
def load_op_table() -> OpTable:
    text = resources.files("dali_migrate").joinpath("data/op_table.json").read_text("utf-8")
    return OpTable(json.loads(text))
