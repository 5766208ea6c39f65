"""Notebooks: only code cells change, IPython lines survive, the JSON layout is kept."""

from __future__ import annotations

import json

import pytest
from click.testing import CliRunner

from dali_migrate.cli import main
from dali_migrate.config import Config
from dali_migrate.engine import check_file, migrate_file

PIPELINE_CELL = (
    "@pipeline_def(batch_size=2, num_threads=1, device_id=None)\n"
    "def pipe_def(root):\n"
    "    jpegs, labels = fn.readers.file(file_root=root)\n"
    "    return fn.decoders.image(jpegs, device=\"mixed\"), labels"
)
RUN_CELL = "pipe = pipe_def(\"images\")\npipe.build()\n!echo built\nimages, labels = pipe.run()\nlabels?"
OUTPUTS = [{"name": "stdout", "output_type": "stream", "text": ["[0]\n"]}]


def _notebook(source_as_list: bool = True) -> dict:
    def cell(kind, text, **extra):
        source = text.splitlines(keepends=True) if source_as_list else text
        return {"cell_type": kind, "metadata": {"tags": ["x"]}, "source": source, **extra}

    return {
        "cells": [
            cell("markdown", "# Title\nfrom nvidia.dali import fn  # prose, not code"),
            cell("code", "%load_ext autoreload\nfrom nvidia.dali import pipeline_def, fn", execution_count=1, outputs=[]),
            cell("code", PIPELINE_CELL, execution_count=2, outputs=[]),
            cell("code", RUN_CELL, execution_count=3, outputs=OUTPUTS),
            cell("code", "%%bash\necho pipe.run()", execution_count=4, outputs=[]),
        ],
        "metadata": {"kernelspec": {"name": "python3"}, "zeta": 1, "alpha": "é"},
        "nbformat": 4,
        "nbformat_minor": 5,
    }


def _dump(notebook: dict, indent=1, ensure_ascii=False, newline=True) -> bytes:
    return (json.dumps(notebook, indent=indent, ensure_ascii=ensure_ascii) + ("\n" if newline else "")).encode()


def _migrate(data: bytes):
    result = migrate_file(data, "explore.ipynb", Config())
    assert result.error is None
    return result


def test_a_pipeline_defined_in_one_cell_and_run_in_another_is_migrated():
    result = _migrate(_dump(_notebook()))
    cells = json.loads(result.new_source)["cells"]
    assert "".join(cells[1]["source"]).endswith("import nvidia.dali.experimental.dynamic as ndd")
    assert "yield ndd.decoders.image(jpegs, device=\"gpu\").evaluate(), labels.evaluate()" in "".join(cells[2]["source"])
    assert "".join(cells[3]["source"]) == (  # the reader is made where the notebook makes the stream
        "reader = ndd.readers.File(file_root=\"images\")\npipe = pipe_def()\n!echo built\n"
        "images, labels = next(pipe)\nlabels?")


def test_ipython_lines_markdown_outputs_and_metadata_are_kept():
    original = _notebook()
    new = json.loads(_migrate(_dump(original)).new_source)
    assert "".join(new["cells"][1]["source"]).startswith("%load_ext autoreload\n")
    assert new["cells"][0] == original["cells"][0]  # markdown is not code, even if it looks like it
    assert new["cells"][4] == original["cells"][4]  # a cell magic: not Python
    assert new["cells"][3]["outputs"] == OUTPUTS
    assert [c["metadata"] for c in new["cells"]] == [c["metadata"] for c in original["cells"]]
    assert list(new["metadata"]) == ["kernelspec", "zeta", "alpha"]  # key order kept


@pytest.mark.parametrize("indent, ensure_ascii, newline, as_list", [
    (1, False, True, True), (2, True, False, True), (4, False, True, False),
])
def test_json_layout_is_written_back_as_it_was_read(indent, ensure_ascii, newline, as_list):
    data = _dump(_notebook(as_list), indent, ensure_ascii, newline)
    new = _migrate(data).new_source
    reparsed = json.loads(new)
    assert new == _dump(reparsed, indent, ensure_ascii, newline)
    assert isinstance(reparsed["cells"][2]["source"], list) is as_list


def test_only_changed_source_lines_differ_in_the_json():
    data = _dump(_notebook())
    new = _migrate(data).new_source
    removed = set(data.decode().splitlines()) - set(new.decode().splitlines())
    assert removed and all(line.startswith("    \"") for line in removed)  # source strings only


def test_second_migration_changes_nothing_and_diff_names_cells():
    result = _migrate(_dump(_notebook()))
    assert "a/explore.ipynb:cell 3" in result.diff and "a/explore.ipynb:cell 4" in result.diff
    assert not _migrate(result.new_source).changed


def test_positions_are_reported_by_cell_line_and_column(tmp_path):
    path = tmp_path / "explore.ipynb"
    path.write_bytes(_dump(_notebook()))
    output = CliRunner().invoke(main, ["check", str(path)]).output
    assert "explore.ipynb:cell 3:1:1: DM001" in output
    assert "explore.ipynb:cell 4:4:18: DM003" in output  # after the !echo line
    report = json.loads(CliRunner().invoke(main, ["check", "--format", "json", str(path)]).output)
    assert {(d["cell"], d["line"]) for d in report["diagnostics"] if d["code"] == "DM004"} == {(3, 4)}


@pytest.mark.parametrize("data, message", [
    (b'{"cells": ["import nvidia.dali"', "not a notebook"),
    (json.dumps({"cells": [], "metadata": {}}, indent=1, sort_keys=True).replace("\n", "\r\n").encode() + b"nvidia.dali",
     "not a notebook"),
    (json.dumps(_notebook(), indent=1, separators=(", ", " : ")).encode(), "JSON layout"),
])
def test_unreadable_notebooks_are_reported_and_left_alone(tmp_path, data, message):
    path = tmp_path / "broken.ipynb"
    path.write_bytes(data)
    result = CliRunner().invoke(main, ["migrate", str(path)])
    assert result.exit_code == 2 and message in result.output
    assert path.read_bytes() == data


def test_syntax_error_names_the_cell():
    notebook = _notebook()
    notebook["cells"][3]["source"] = ["pipe = pipe_def(\n"]
    result = check_file(_dump(notebook), "explore.ipynb", Config())
    assert result.error is not None and "cell 4, line" in result.error


def test_cells_the_migration_does_not_change_keep_their_stored_source():
    notebook = _notebook()
    notebook["cells"].append({"cell_type": "code", "metadata": {}, "execution_count": 5, "outputs": [],
                              "source": ["x = 1\r\n", "y = 2  # windows line endings\r\n", "print(x + y)"]})
    new = json.loads(_migrate(_dump(notebook)).new_source)
    assert new["cells"][-1] == notebook["cells"][-1]
    assert new["cells"][2] != notebook["cells"][2]  # the pipeline cell did change


def test_a_framework_iterator_gets_its_loader_class_in_the_import_cell():
    cells = ["import torch\nfrom nvidia.dali import fn, pipeline_def\nfrom nvidia.dali.plugin.pytorch import DALIGenericIterator",
             "@pipeline_def(batch_size=2, num_threads=1, device_id=None)\ndef pipe_def(root):\n"
             "    jpegs, labels = fn.readers.file(file_root=root, name=\"Reader\")\n    return labels",
             "pipe = pipe_def(\"images\")\nloader = DALIGenericIterator(pipe, [\"label\"], reader_name=\"Reader\")"]
    notebook = {"cells": [{"cell_type": "code", "metadata": {}, "source": text.splitlines(keepends=True),
                           "execution_count": None, "outputs": []} for text in cells],
                "metadata": {}, "nbformat": 4, "nbformat_minor": 5}
    migrated = json.loads(_migrate(_dump(notebook)).new_source)
    sources = ["".join(cell["source"]) for cell in migrated["cells"]]
    assert sources[0].startswith("import nvidia.dali.experimental.dynamic as ndd\nimport torch\n")  # isort order
    assert "class DALITorchLoader:" in sources[0]
    assert "DALITorchLoader" not in sources[1] and sources[1].startswith("def pipe_def(")
    assert "loader = DALITorchLoader(pipe, [\"label\"]" in sources[2]


def _with_last_cell(text: str) -> bytes:
    notebook = _notebook()
    notebook["cells"][4]["source"] = text.splitlines(keepends=True)
    return _dump(notebook)


def test_code_under_time_and_capture_is_migrated_as_python():
    """``%%time`` runs its cell as Python: a ``pipe.run()`` there is the pipeline's too."""
    for magic in ("%%time", "%%capture captured"):
        result = _migrate(_with_last_cell(f"{magic}\nmore, _ = pipe.run()\nprint(more.at(0))"))
        assert "".join(json.loads(result.new_source)["cells"][4]["source"]) == (
            f"{magic}\nmore, _ = next(pipe)\nprint(np.asarray(more.tensors[0]))")


def test_a_cell_magic_the_tool_cannot_read_that_uses_the_pipeline_refuses_the_notebook():
    data = _with_last_cell("%%timeit -n1 -r1\npipe.run()")
    result = migrate_file(data, "explore.ipynb", Config())
    assert "cell 5 runs under `%%timeit`" in result.error and "`pipe`" in result.error
    assert result.new_source is None and not result.changed
    # another language's cell that merely spells the name is no obstacle (the %%bash cell above)
    assert _migrate(_notebook_bytes()).changed


def _notebook_bytes() -> bytes:
    return _dump(_notebook())


def test_a_line_magic_that_runs_the_pipeline_refuses_the_notebook():
    notebook = _notebook()
    notebook["cells"][3]["source"] = (RUN_CELL + "\n%timeit pipe.run()").splitlines(keepends=True)
    result = migrate_file(_dump(notebook), "explore.ipynb", Config())
    assert "`%timeit pipe.run()` runs a line magic" in result.error and result.new_source is None
    notebook["cells"][3]["source"] = (RUN_CELL + "\n%time total = 1 + 1").splitlines(keepends=True)
    assert _migrate(_dump(notebook)).changed  # a line magic that uses none of the pipeline's names
