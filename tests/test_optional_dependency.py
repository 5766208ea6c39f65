"""DALI imported under `try:` / `except ImportError:` stays optional after migration."""

from __future__ import annotations

import subprocess
import sys

import pytest

from conftest import FIXTURES
from dali_migrate.config import Config
from dali_migrate.engine import migrate_source

# an import hook that makes `nvidia` look uninstalled, then imports the module by path
WITHOUT_DALI = """
import importlib.abc, importlib.util, sys

class NoDali(importlib.abc.MetaPathFinder):
    def find_spec(self, name, path, target=None):
        if name == "nvidia" or name.startswith("nvidia."):
            raise ModuleNotFoundError(name)

sys.meta_path.insert(0, NoDali())
spec = importlib.util.spec_from_file_location("loader", sys.argv[1])
module = importlib.util.module_from_spec(spec)
spec.loader.exec_module(module)
print(module.DATA_BACKEND_CHOICES)
"""


def _import_without_dali(path) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-c", WITHOUT_DALI, str(path)], capture_output=True, text=True,
                          timeout=60)


def test_the_migrated_module_imports_where_dali_is_not_installed():
    result = _import_without_dali(FIXTURES / "migrate" / "optional_dali.expected.py")
    assert result.returncode == 0, result.stderr
    assert result.stdout.splitlines() == ["Please install DALI to run this example.", "['pytorch']"]


def test_the_ndd_import_is_placed_under_the_guard():
    migrated = (FIXTURES / "migrate" / "optional_dali.expected.py").read_text()
    guard = migrated[migrated.index("\ntry:\n"):migrated.index("\nexcept ImportError:")]
    assert "import nvidia.dali.experimental.dynamic as ndd" in guard
    assert migrated.count("import nvidia.dali.experimental.dynamic") == 1


GUARDED = '''"""Optional DALI."""
{above}
try:
    from nvidia.dali import fn, pipeline_def
except ImportError:
    fn = None


@pipeline_def(batch_size=2, num_threads=1, device_id=None)
def images_pipeline(root):
    jpegs, labels = fn.readers.file(file_root=root)
    return fn.decoders.image(jpegs), labels


def first_label(root):
    pipe = images_pipeline(root)
    pipe.build()
    images, labels = pipe.run()
    return labels.at(0)
'''


@pytest.mark.parametrize("above, expected", [
    ("import os\nimport sys\n", '"""Optional DALI."""\nimport os\nimport sys\n\nimport numpy as np\n\ntry:\n'),
    ("import os\n\nimport torch\n", '"""Optional DALI."""\nimport os\n\nimport numpy as np\nimport torch\n\ntry:\n'),
    ("", '"""Optional DALI."""\nimport numpy as np\n\ntry:\n'),
    ("import os\nfrom . import utils\n",
     '"""Optional DALI."""\nimport os\n\nimport numpy as np\nfrom . import utils\n\ntry:\n'),
])
def test_numpy_the_migration_needs_is_imported_outside_the_guard(above, expected):
    result = migrate_source(GUARDED.format(above=above).encode(), "loader.py", Config())
    assert result.pipelines == [("images_pipeline", [])]
    migrated = result.new_source.decode()
    assert migrated.startswith(expected), migrated[:200]
    assert migrated.count("import numpy as np") == 1
