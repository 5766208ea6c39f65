"""Runs one side of a comparison in its own process and pickles every output sample.

Usage (internal): python -m dali_migrate.verify.worker SPEC_JSON RESULT_PICKLE
"""

from __future__ import annotations

import importlib.abc
import importlib.util
import inspect
import itertools
import json
import os
import pickle
import sys
import time
import traceback

# An ndd random-op call draws one 7-word Philox state from its RNG; sample j of that call then
# uses the stream 7 * j words further on (measured on DALI 2.4, see ndd's random._draw_state).
RANDOM_STATE_DRAWS = 7


SUBJECT = "dali_migrate_subject"
SUBJECT_PATH = "DALI_MIGRATE_SUBJECT_PATH"  # the subject's file, for the processes it starts


class _SubjectFinder(importlib.abc.MetaPathFinder):
    """Makes the subject importable by name in processes that DALI's parallel external source
    starts with ``py_start_method="spawn"``: they unpickle the source as
    ``dali_migrate_subject.Class``, and load this module first, as their ``__main__``."""

    def find_spec(self, name, path=None, target=None):
        if name == SUBJECT and os.environ.get(SUBJECT_PATH):
            return importlib.util.spec_from_file_location(name, os.environ[SUBJECT_PATH])
        return None


sys.meta_path.append(_SubjectFinder())


def load_module(path: str):
    folder = os.path.dirname(os.path.abspath(path))
    sys.path.insert(0, folder)
    os.environ[SUBJECT_PATH] = os.path.abspath(path)
    spec = importlib.util.spec_from_file_location(SUBJECT, path)
    module = importlib.util.module_from_spec(spec)
    sys.modules[SUBJECT] = module
    spec.loader.exec_module(module)
    return module


def evaluate_call(module, spec: dict, function) -> tuple[list, dict]:
    """The call site's arguments, evaluated in the module, with ``--arg`` overrides. An
    overridden argument is not evaluated: it may name a variable local to the caller. An
    override goes only to a function that takes it (a file's pipelines take different ones)."""
    namespace = vars(module)
    parameters = inspect.signature(function).parameters
    # a helper that returns a pipeline takes only its own parameters
    helper = spec["kind"] == "helper"
    overrides = {name: value for name, value in spec["overrides"].items() if _takes(parameters, name, helper)}
    positional = [
        p.name for p in parameters.values()
        if p.kind in (p.POSITIONAL_ONLY, p.POSITIONAL_OR_KEYWORD)
    ]
    args = []
    for index, code in enumerate(spec["call_args"]):
        name = positional[index] if index < len(positional) else None
        args.append(overrides[name] if name in overrides else _argument(name or f"#{index}", code, namespace))
    kwargs = {name: overrides[name] if name in overrides else _argument(name, code, namespace)
              for name, code in spec["call_kwargs"].items()}
    for name, value in overrides.items():
        if name not in positional[: len(args)]:
            kwargs[name] = value
    return args, kwargs


class CallSiteArgumentError(Exception):
    """An argument of the user's call site that cannot be computed at the module's level."""


def _argument(name: str, code: str, namespace: dict):
    """The user's own call site's argument, computed in the module."""
    try:
        return eval(code, namespace)  # noqa: S307
    except NameError as error:
        given = f"--arg {name}=VALUE" if not name.startswith("#") else "--arg NAME=VALUE (its parameter's name)"
        raise CallSiteArgumentError(
            f"the call site passes `{code}` for `{name}`, and `{error.name}` is not a name of the module "
            f"(a local of the function that calls it?); give the value with {given}") from None


def _takes(parameters, name: str, helper: bool = False) -> bool:
    """A parameter of its own, ``**kwargs``, or an argument every ``@pipeline_def`` function
    takes (not a ``helper``'s)."""
    from nvidia.dali import Pipeline

    return (name in parameters or any(p.kind == p.VAR_KEYWORD for p in parameters.values())
            or not helper and name in inspect.signature(Pipeline.__init__).parameters)


class RandomStateFeeder:
    """Feeds each pipeline random op the draws its ndd twin takes from the ndd RNG.

    Ops without their own ``seed=`` share the pipeline-seed stream in call order; an op with
    ``seed=S`` has a stream of its own, as the migrated code gives it ``ndd.random.RNG(seed=S)``.
    """

    def __init__(self, seed: int, batch_size: int) -> None:
        self.seed = seed
        self.batch_size = batch_size
        self.shared_ops = 0
        self.aligned: list[str] = []

    def restart(self) -> None:
        """Count ops from zero for the next pipeline built (the module may have built its own
        at import, which the harness does not run)."""
        self.shared_ops = 0

    def wrap(self, original, op_name: str):
        feeder = self

        def wrapped(*args, **kwargs):
            if "_random_state" not in kwargs:
                kwargs["_random_state"] = feeder.state_source(kwargs.get("seed"))
                feeder.aligned.append(op_name)
            return original(*args, **kwargs)

        return wrapped

    def state_source(self, own_seed):
        import numpy as np
        import nvidia.dali.experimental.dynamic as ndd
        import nvidia.dali.fn as fn
        import nvidia.dali.types as types

        batch_size, per_sample = self.batch_size, RANDOM_STATE_DRAWS
        if own_seed is not None:
            seed, slot, ops_holder = own_seed, 0, None
        else:
            seed, slot, ops_holder = self.seed, self.shared_ops, self
            self.shared_ops += 1

        def source(info):
            iteration = info if isinstance(info, int) else info.iteration
            ops_per_iteration = ops_holder.shared_ops if ops_holder is not None else 1
            rng = ndd.random.RNG(seed=seed)
            rng.advance((iteration * ops_per_iteration + slot) * per_sample)
            draws = np.array([rng() for _ in range(batch_size * per_sample)], dtype=np.uint32)
            return list(draws.reshape(batch_size, per_sample))

        return fn.external_source(source=source, batch=True, dtype=types.UINT32)


def seed_readers(seed: int, reader_fn_paths: list[str]) -> None:
    """Give every reader without a ``seed=`` the pipeline's seed, explicitly, as the migrated
    code does: equal explicit reader seeds give the same order in both modes."""
    import nvidia.dali.fn as fn

    def wrap(original):
        def wrapped(*args, **kwargs):
            kwargs.setdefault("seed", seed)
            return original(*args, **kwargs)

        return wrapped

    for path in reader_fn_paths:
        _replace(fn, path, wrap)


def patch_legacy_ops(feeder: RandomStateFeeder, seed: int, classes: list[list]) -> None:
    """The same alignment for the legacy object API: a reader class without ``seed=`` gets the
    pipeline's seed; a random operator object draws ``_random_state`` on each call, from its own
    ``seed=`` stream or the shared one, as the migrated ``fn`` call does."""
    import nvidia.dali.ops as ops

    for path, random, reader in classes:
        _replace(ops, path, lambda original, random=random, reader=reader: (
            _aligned_class(original, feeder, seed, random, reader) if isinstance(original, type) else original))


def _aligned_class(original: type, feeder: RandomStateFeeder, seed: int, random: bool, reader: bool) -> type:
    class Aligned(original):
        def __init__(self, *args, **kwargs):
            self._dali_migrate_seed = kwargs.get("seed")
            if reader:
                kwargs.setdefault("seed", seed)
            super().__init__(*args, **kwargs)

        def __call__(self, *args, **kwargs):
            if random and "_random_state" not in kwargs:
                kwargs["_random_state"] = feeder.state_source(self._dali_migrate_seed)
            return super().__call__(*args, **kwargs)

    Aligned.__name__ = Aligned.__qualname__ = original.__name__
    return Aligned


def patch_random_ops(feeder: RandomStateFeeder, random_fn_paths: list[str]) -> None:
    import nvidia.dali.fn as fn

    for path in random_fn_paths:
        _replace(fn, path, lambda original, path=path: feeder.wrap(original, path))


def _replace(root, path: str, make) -> None:
    """``root.a.b = make(root.a.b)`` for ``path`` "a.b"; nothing where the path does not exist."""
    *parents, name = path.split(".")
    owner = root
    for part in parents:
        owner = getattr(owner, part, None)
    if owner is not None and hasattr(owner, name):
        setattr(owner, name, make(getattr(owner, name)))


def _samples_of_tensorlist(output) -> dict:
    import numpy as np

    if hasattr(output, "as_cpu"):
        output = output.as_cpu()
    layout = output.layout() or ""
    return {"layout": layout, "samples": [np.array(output.at(i)) for i in range(len(output))]}


def _samples_of_batch(output) -> dict:
    import numpy as np
    import nvidia.dali.experimental.dynamic as ndd

    if not isinstance(output, ndd.Batch):
        output = ndd.as_batch(output)
    output = output.cpu()
    layout = output.layout or ""
    return {"layout": str(layout), "samples": [np.asarray(t) for t in output]}


def _original_pipeline(module, spec: dict):
    if spec["kind"] == "variable":
        return getattr(module, spec["pipeline"])
    function = getattr(module, spec["pipeline"])
    args, kwargs = evaluate_call(module, spec, function)
    if spec["kind"] == "pipeline":
        kwargs.update(batch_size=spec["batch_size"], device_id=spec["device_id"], seed=spec["seed"])
    if spec["kind"] == "subclass":  # arguments the migration computes at the call (``seed=``)
        parameters = inspect.signature(function).parameters
        kwargs = {k: v for k, v in kwargs.items() if k in parameters or _has_var_keyword(parameters)}
    return function(*args, **kwargs)


def run_original(module, spec: dict, feeder: RandomStateFeeder | None) -> tuple[list, float]:
    if feeder is not None and spec["kind"] != "variable":
        feeder.restart()
    pipe = _original_pipeline(module, spec)
    pipe.build()
    return _collect(pipe.run, _samples_of_tensorlist, spec["iterations"])


def _collect(next_batch, samples_of, count: int) -> tuple[list, float]:
    """Up to ``count`` batches: where the data ends (a source raised StopIteration) there are
    fewer, and the comparison wants the other side to end there too. Also the seconds spent
    making the batches after the first: the first pays for building, tracing and first calls,
    and turning outputs into NumPy for the comparison is the harness's cost, not the pipeline's."""
    iterations, seconds = [], 0.0
    for index in range(count):
        start = time.perf_counter()
        try:
            outputs = next_batch()
        except StopIteration:
            break
        if index > 0:
            seconds += time.perf_counter() - start
        iterations.append([samples_of(output) for output in outputs])
    return iterations, seconds


def _migrated_generator(module, spec: dict):
    if spec["kind"] == "variable":
        return getattr(module, spec["pipeline"])
    function = getattr(module, spec["pipeline"])
    if getattr(function, "_is_pipeline_def", False):  # kept in pipeline mode: run as the original is
        return _original_pipeline(module, spec)
    args, kwargs = evaluate_call(module, spec, function)
    if spec["kind"] == "helper":
        return _past_reader_meta(function(*args, **kwargs))
    parameters = inspect.signature(function).parameters
    if spec["kind"] == "subclass":  # what the class took and the generator has no use for goes
        return function(*args, **{k: v for k, v in kwargs.items() if k in parameters})
    kwargs["batch_size"] = spec["batch_size"]
    if "seed" in parameters:
        kwargs["seed"] = spec["seed"]
    if "device_id" in parameters:
        kwargs["device_id"] = spec["device_id"]
    kwargs = {k: v for k, v in kwargs.items() if k in parameters or _has_var_keyword(parameters)}
    return function(*args, **kwargs)


def _past_reader_meta(generator):
    """A helper whose callers read the reader's metadata returns a generator that gives it
    first (a dict, never a batch); the batches follow. A kept pipeline is returned as is."""
    if not hasattr(generator, "__next__"):
        return generator
    first = next(generator)
    return generator if isinstance(first, dict) else itertools.chain([first], generator)


def run_migrated(module, spec: dict, feeder: RandomStateFeeder | None = None) -> tuple[list, float]:
    if feeder is not None and spec["kind"] != "variable":
        feeder.restart()
    generator = _migrated_generator(module, spec)
    if hasattr(generator, "build") and hasattr(generator, "run"):  # a pipeline the migration kept
        generator.build()
        return _collect(generator.run, _samples_of_tensorlist, spec["iterations"])
    return _collect(lambda: _evaluated(next(generator)), _samples_of_batch, spec["iterations"])


def _evaluated(outputs):
    """ndd may defer work until a value is read: a batch is made when it is evaluated."""
    for output in outputs:
        if hasattr(output, "evaluate"):
            output.evaluate()
    return outputs


def _has_var_keyword(parameters) -> bool:
    return any(p.kind == p.VAR_KEYWORD for p in parameters.values())


def classify(error: BaseException) -> str:
    text = f"{type(error).__name__}: {error}"
    if any(key in text for key in ("cudaError", "CUDA", "driver", "nvml", "GPU")):
        return "gpu-required"
    if isinstance(error, FileNotFoundError) or any(key in text for key in ("No such file", "Failed to open", "no files")):
        return "missing-data"
    return "error"


def _module_batch_size(module, code: str | None) -> int:
    """The decorator's ``batch_size=`` expression, in the module it was written in (1 where
    it is not an int there)."""
    try:
        value = eval(code, vars(module)) if code else None  # noqa: S307 - the user's own module
    except Exception:
        return 1
    return value if isinstance(value, int) and value > 0 else 1


def main(argv: list[str]) -> int:
    spec_path, result_path = argv
    with open(spec_path, encoding="utf-8") as handle:
        spec = json.load(handle)
    os.chdir(spec["cwd"])
    stage = "import"
    try:
        feeder = None
        if spec["align_rng"]:
            # patched before the import: a module-level pipeline is built while importing. The
            # migrated side patches them too, for the pipelines the migration kept.
            feeder = RandomStateFeeder(spec["seed"], spec["batch_size"] or 1)
            patch_random_ops(feeder, spec["random_ops"])
            seed_readers(spec["seed"], spec["readers"])
            patch_legacy_ops(feeder, spec["seed"], spec["legacy_ops"])
        module = load_module(spec["path"])
        spec["batch_size"] = spec["batch_size"] or _module_batch_size(module, spec.get("batch_size_code"))
        if feeder is not None:
            feeder.batch_size = spec["batch_size"]
        stage = "run"
        run = run_original if spec["side"] == "original" else run_migrated
        iterations, seconds = run(module, spec, feeder)
        result = {"ok": True, "iterations": iterations, "seconds": seconds, "batch_size": spec["batch_size"]}
    except BaseException as error:  # report every failure to the parent, with its kind
        result = {"ok": False, "stage": stage, "kind": classify(error),
                  "error": f"{type(error).__name__}: {error}", "traceback": traceback.format_exc()}
    with open(result_path, "wb") as handle:
        pickle.dump(result, handle)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
