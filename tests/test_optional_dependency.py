"""DALI imported under `try:` / `except ImportError:` stays optional after migration."""

from __future__ import annotations

import subprocess
import sys

from conftest import FIXTURES

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
