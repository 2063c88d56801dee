"""docs/ARCHITECTURE.md opens with the target graph of Package.swift: these tests fail when it is stale.

They run `scripts/target-graph.py`, which reads `swift package dump-package` (no compile, about a second).
"""

from __future__ import annotations

import importlib.util
import shutil
import subprocess
import sys
from pathlib import Path
from types import ModuleType

import pytest

ROOT = Path(__file__).resolve().parents[2]
SCRIPT = ROOT / "scripts" / "target-graph.py"
DOC = ROOT / "docs" / "ARCHITECTURE.md"

needs_swift = pytest.mark.skipif(
    shutil.which("swift") is None,
    reason="swift is not on PATH: `swift package dump-package` is needed to read Package.swift's target graph",
)


def load_script() -> ModuleType:
    spec = importlib.util.spec_from_file_location("target_graph", SCRIPT)
    assert spec and spec.loader
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def target(name: str, kind: str, *deps: str) -> dict:
    """One target as dump-package writes it."""
    return {"name": name, "type": kind, "dependencies": [{"byName": [d, None]} for d in deps]}


@pytest.fixture(scope="module")
def dump(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """Package.swift as JSON, read once for the module."""
    # Its own scratch path: the package's .build is locked while `make check` builds beside this test.
    scratch = tmp_path_factory.mktemp("scratch")
    out = subprocess.run(
        ["swift", "package", "--scratch-path", str(scratch), "dump-package"], cwd=ROOT, check=True,
        capture_output=True, text=True, timeout=120,
    ).stdout
    path = tmp_path_factory.mktemp("graph") / "dump.json"
    path.write_text(out, encoding="utf-8")
    return path


def check(doc: Path, dump: Path) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, str(SCRIPT), "--check", str(doc), "--dump-json", str(dump)],
        capture_output=True, text=True, timeout=60,
    )


@needs_swift
def test_architecture_doc_shows_the_current_target_graph(dump: Path) -> None:
    result = check(DOC, dump)
    assert result.returncode == 0, result.stderr


@needs_swift
def test_check_fails_when_a_dependency_is_missing_from_the_documented_graph(dump: Path, tmp_path: Path) -> None:
    text = DOC.read_text(encoding="utf-8")
    row = "| 2 | `Logging` | library | `Locking` |"
    assert row in text
    stale = tmp_path / "ARCHITECTURE.md"
    stale.write_text(text.replace(row, "| 1 | `Logging` | library | — |"), encoding="utf-8")
    result = check(stale, dump)
    assert result.returncode == 1
    assert "stale" in result.stderr and "`Logging`" in result.stderr


@needs_swift
def test_check_fails_when_the_markers_are_missing(dump: Path, tmp_path: Path) -> None:
    doc = tmp_path / "ARCHITECTURE.md"
    doc.write_text("# Architecture\n\nno generated section\n", encoding="utf-8")
    result = check(doc, dump)
    assert result.returncode != 0
    assert "markers" in result.stderr


def test_a_target_sits_one_layer_above_its_highest_dependency_and_libraries_come_before_tests() -> None:
    graph = load_script().render({"targets": [
        target("AppTests", "test", "App"),
        target("App", "regular", "Log", "CLib"),
        target("Log", "regular", "Lock"),
        target("Lock", "regular"),
        target("CLib", "system"),
    ]})
    rows = [line for line in graph.splitlines() if line.startswith("| ") and "`" in line]
    assert rows == [
        "| 0 | `Lock` | library | — |",
        "| 0 | `CLib` | C module | — |",
        "| 1 | `Log` | library | `Lock` |",
        "| 2 | `App` | library | `CLib`, `Log` |",
        "| 3 | `AppTests` | test | `App` |",
    ]


def test_compare_lists_targets_and_edges_added_and_removed() -> None:
    script = load_script()
    before = {"targets": [target("Lock", "regular"), target("Log", "regular"), target("Old", "regular", "Log")]}
    after = {"targets": [target("Lock", "regular"), target("Log", "regular", "Lock"), target("New", "regular")]}
    assert script.compare(before, after) == ["+ target New", "- target Old", "+ Log -> Lock", "- Old -> Log"]
