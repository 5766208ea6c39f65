"""The rule registry: every rule, one module each, ordered by code."""

from __future__ import annotations

from .base import DOC_SECTIONS, Finding, Rule, ValueRule
from .dm001_pipeline_def import PipelineDefDecorator
from .dm002_pipeline_object import PipelineObject
from .dm003_build_run import BuildRunPlumbing
from .dm004_mixed_device import MixedDevice
from .dm005_reader import FunctionalReader
from .dm006_random_op import RandomOpBatchSize
from .dm007_tensorlist_api import TensorListApi
from .dm008_datanode_subscript import DataNodeSubscript
from .dm009_legacy_ops import LegacyOpsApi
from .dm010_framework_iterator import FrameworkIterator
from .dm011_conditionals import Conditionals
from .dm012_python_source import PythonSource
from .dm013_checkpointing import Checkpointing
from .dm014_serialize import Serialize
from .dm015_fn_op import FunctionalOp
from .dm016_op_arguments import PipelineOnlyOpArguments
from .dm017_reader_meta import ReaderMeta
from .dm018_tensorlist_api_on_ndd import TensorListApiOnNdd
from .dm019_mixed_in_ndd import MixedDeviceInNdd
from .dm020_pipeline_api_on_ndd import PipelineApiOnNdd
from .dm021_pipeline_method_on_generator import PipelineMethodOnGenerator
from .dm022_context_across_yield import ContextAcrossYield
from .dm023_reader_batch_size import ReaderBatchSize
from .dm024_seed_on_ndd_op import SeedOnNddOp

ALL_RULES: tuple[type[Rule], ...] = (
    PipelineDefDecorator,
    PipelineObject,
    BuildRunPlumbing,
    MixedDevice,
    FunctionalReader,
    RandomOpBatchSize,
    TensorListApi,
    DataNodeSubscript,
    LegacyOpsApi,
    FrameworkIterator,
    Conditionals,
    PythonSource,
    Checkpointing,
    Serialize,
    FunctionalOp,
    PipelineOnlyOpArguments,
    ReaderMeta,
    TensorListApiOnNdd,
    MixedDeviceInNdd,
    PipelineApiOnNdd,
    PipelineMethodOnGenerator,
    ContextAcrossYield,
    ReaderBatchSize,
    SeedOnNddOp,
)
VALUE_RULES: tuple[type[ValueRule], ...] = tuple(r for r in ALL_RULES if issubclass(r, ValueRule))
RULES_BY_CODE = {rule.code: rule for rule in ALL_RULES}

__all__ = ["ALL_RULES", "DOC_SECTIONS", "RULES_BY_CODE", "VALUE_RULES", "Finding", "Rule", "ValueRule"]
