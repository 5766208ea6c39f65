"""Generate dali_migrate/data/op_table.json from the installed DALI wheel.

Every pipeline-mode operator (``fn.*`` function and legacy ``ops.*`` class) is listed with its
dynamic-mode (ndd) equivalent, or ``null`` where ndd has none. The static checker and the codemod
read only the committed JSON; they never import DALI.

Usage: python scripts/generate_op_table.py [--check]
  --check  exit 1 if the committed table differs from what the installed DALI produces.
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

TABLE_PATH = Path(__file__).resolve().parent.parent / "dali_migrate" / "data" / "op_table.json"

# Arguments that ndd does not accept on any operator (see ndd's _op_builder._unsupported_args).
NDD_UNSUPPORTED_ARGS = ("bytes_per_sample_hint", "preserve")


def snake_case(name: str) -> str:
    """Mirror DALI's own CamelCase -> snake_case conversion used for fn names."""
    import nvidia.dali.fn

    return nvidia.dali.fn._to_snake_case(name)


def resolve_attr(root, dotted: str):
    obj = root
    for part in dotted.split("."):
        obj = getattr(obj, part, None)
        if obj is None:
            return None
    return obj


def ndd_equivalent(ndd, module_path: list[str], op_name: str, is_reader: bool) -> str | None:
    if is_reader:
        dotted = ".".join(module_path + [op_name])
    else:
        dotted = ".".join(module_path + [snake_case(op_name)])
    return dotted if resolve_attr(ndd, dotted) is not None else None


def describe_schema(schema_name: str, fn, ndd) -> dict | None:
    from nvidia.dali import backend as b

    original, target = b.GetSchemaAndTarget(schema_name)
    if target is None:
        return None
    module_path = list(original.ModulePath())
    op_name = original.OperatorName()
    fn_path = ".".join(module_path + [snake_case(op_name)])
    if resolve_attr(fn, fn_path) is None:
        fn_path = None
    is_reader = "readers" in target.ModulePath()
    target_path = list(target.ModulePath())
    target_name = target.OperatorName()
    replacement = None
    if original.IsDeprecated() and original.DeprecatedInFavorOf():
        favoured = b.GetSchema(original.DeprecatedInFavorOf())
        replacement = ".".join(list(favoured.ModulePath()) + [snake_case(favoured.OperatorName())])
    return {
        "schema": schema_name,
        "fn": fn_path,
        "ops_class": ".".join(module_path + [op_name]),
        "ndd": ndd_equivalent(ndd, target_path, target_name, is_reader),
        "kind": "reader" if is_reader else "op",
        "random": bool(target.HasRandomStateArg()),
        "stateful": bool(target.IsStateful()),
        "backends": sorted(target.GetSupportedBackends()),
        "min_inputs": int(target.MinNumInput()),
        "max_inputs": int(target.MaxNumInput()),
        "deprecated": bool(original.IsDeprecated()),
        "replacement": replacement,
        "args": sorted(target.GetArgumentNames()),
        "defaults": _exact_defaults(target),
    }


def _exact_defaults(schema) -> dict:
    """Defaults that are integers or booleans, as Python values: they can be written in code
    exactly (float defaults come as rounded strings, enums as numbers)."""
    from nvidia.dali import types

    integers = {types.INT8, types.INT16, types.INT32, types.INT64, types.UINT8, types.UINT16, types.UINT32,
                types.UINT64}
    defaults = {}
    for name in sorted(schema.GetArgumentNames()):
        if not schema.HasArgumentDefaultValue(name):
            continue
        kind, text = schema.GetArgumentType(name), schema.GetArgumentDefaultValueString(name)
        if kind in integers and text.lstrip("-").isdigit():
            defaults[name] = int(text)
        elif kind == types.BOOL and text in ("True", "False"):
            defaults[name] = text == "True"
    return defaults


def ndd_dtypes() -> dict[str, str]:
    """``types.FLOAT`` -> ``float32``: each numeric or boolean DALI data type constant with the
    name ndd gives the same type."""
    import nvidia.dali.experimental.dynamic as ndd
    from nvidia.dali import types

    by_type = {}
    for name in sorted(dir(ndd)):
        value = getattr(ndd, name)
        if isinstance(value, ndd.DType) and name.islower():
            by_type.setdefault(str(value), name)
    mapping = {}
    for name in sorted(dir(types.DALIDataType)):
        member = getattr(types.DALIDataType, name)
        if name.startswith("_") or not isinstance(member, types.DALIDataType) or not hasattr(types, name):
            continue
        try:
            ndd_name = by_type.get(str(ndd.dtype(member)))
        except Exception:  # STRING, NO_TYPE, ...: no ndd type
            continue
        if ndd_name is not None:
            mapping[name] = ndd_name
    return mapping


def ndd_math() -> list[str]:
    """The functions of ``nvidia.dali.math`` that ``ndd.math`` has under the same name."""
    import nvidia.dali.experimental.dynamic as ndd
    import nvidia.dali.math as dali_math

    return sorted(name for name in dir(dali_math) if not name.startswith("_") and callable(getattr(dali_math, name))
                  and callable(getattr(ndd.math, name, None)))


def ndd_public_attributes(class_name: str) -> list[str]:
    """The public attributes (methods and properties) of ``ndd.<class_name>``: what the audit
    lets migrated code use on an ndd Batch or Tensor."""
    import nvidia.dali.experimental.dynamic as ndd

    return sorted(name for name in dir(getattr(ndd, class_name)) if not name.startswith("_"))


def all_schema_names() -> list[str]:
    from nvidia.dali.ops import _registry

    return sorted(_registry._all_registered_ops())


def build_table() -> dict:
    import nvidia.dali
    import nvidia.dali.experimental.dynamic as ndd
    import nvidia.dali.fn as fn

    ops = {}
    for name in all_schema_names():
        entry = describe_schema(name, fn, ndd)
        if entry is not None:
            ops[entry["ops_class"]] = entry
    return {
        "dali_version": nvidia.dali.__version__,
        "generated_by": "scripts/generate_op_table.py",
        "ndd_unsupported_args": list(NDD_UNSUPPORTED_ARGS),
        "ndd_dtypes": ndd_dtypes(),
        "ndd_math": ndd_math(),
        "ndd_batch_attributes": ndd_public_attributes("Batch"),
        "ndd_tensor_attributes": ndd_public_attributes("Tensor"),
        "ops": dict(sorted(ops.items())),
    }


def render(table: dict) -> str:
    return json.dumps(table, indent=1, sort_keys=False) + "\n"


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--check", action="store_true")
    args = parser.parse_args(argv)
    text = render(build_table())
    if args.check:
        current = TABLE_PATH.read_text(encoding="utf-8") if TABLE_PATH.exists() else ""
        if current != text:
            print(f"{TABLE_PATH} is out of date; run scripts/generate_op_table.py", file=sys.stderr)
            return 1
        return 0
    TABLE_PATH.write_text(text, encoding="utf-8")
    print(f"wrote {TABLE_PATH} ({len(json.loads(text)['ops'])} ops)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
