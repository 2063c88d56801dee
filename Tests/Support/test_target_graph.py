"""docs/ARCHITECTURE.md opens with the target graph of Package.swift: these tests fail when it is stale.

They run `scripts/target-graph.py`, which reads `swift package dump-package` (no compile, about a second).
"""

from __future__ import annotations

import shutil
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
SCRIPT = ROOT / "scripts" / "target-graph.py"
DOC = ROOT / "docs" / "ARCHITECTURE.md"

pytestmark = pytest.mark.skipif(
    shutil.which("swift") is None,
    reason="swift is not on PATH: `swift package dump-package` is needed to read Package.swift's target graph",
)


@pytest.fixture(scope="module")
def dump(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """Package.swift as JSON, read once for the module."""
    out = subprocess.run(
        ["swift", "package", "dump-package"], cwd=ROOT, check=True, capture_output=True, text=True, timeout=120
    ).stdout
    path = tmp_path_factory.mktemp("graph") / "dump.json"
    path.write_text(out, encoding="utf-8")
    return path


def check(doc: Path, dump: Path) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, str(SCRIPT), "--check", str(doc), "--dump-json", str(dump)],
        capture_output=True, text=True, timeout=60,
    )


def test_architecture_doc_shows_the_current_target_graph(dump: Path) -> None:
    result = check(DOC, dump)
    assert result.returncode == 0, result.stderr


def test_check_fails_when_a_dependency_is_missing_from_the_documented_graph(dump: Path, tmp_path: Path) -> None:
    text = DOC.read_text(encoding="utf-8")
    row = "| 1 | `Logging` | library | `Locking` |"
    assert row in text
    stale = tmp_path / "ARCHITECTURE.md"
    stale.write_text(text.replace(row, "| 0 | `Logging` | library | — |"), encoding="utf-8")
    result = check(stale, dump)
    assert result.returncode == 1
    assert "stale" in result.stderr and "`Logging`" in result.stderr


def test_check_fails_when_the_markers_are_missing(dump: Path, tmp_path: Path) -> None:
    doc = tmp_path / "ARCHITECTURE.md"
    doc.write_text("# Architecture\n\nno generated section\n", encoding="utf-8")
    result = check(doc, dump)
    assert result.returncode != 0
    assert "markers" in result.stderr
