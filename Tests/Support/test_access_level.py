"""scripts/access-level.py: `public` only where scripts/public-api.txt lists it, `package` everywhere else.

The script is the gate `make check` runs (make access-check) and the rewrite a merger reruns, so these tests pin
what it reads as a declaration (not a `public` in a string, a comment or an identifier), how it names one, that
`--write` leaves a listed declaration alone and is idempotent, and that `--check` names what it would change.
"""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
SCRIPT = ROOT / "scripts" / "access-level.py"

SOURCE = '''\
import Foundation

/// Says "public" in a comment: public struct Nothing {}
public struct Parser: Sendable, CustomStringConvertible {
    public struct Limits: Sendable {
        public var maxBytes: Int
        public init(maxBytes: Int = 1 << 20) { self.maxBytes = maxBytes }
    }
    public private(set) var consumed = 0
    public init(limits: Limits) {}
    public init(bytes: [UInt8], limits: Limits) {}
    public var description: String { "public var inString" }
    public static func < (a: Parser, b: Parser) -> Bool { true }
    let text = """
        public func insideMultiLineString() {}
        \\(1 + 2) { not a brace
        """
    let raw = #"public "quoted" \\(x) {"#
    @inlinable public func open(_ public: Int) -> Int { 1 }
}

extension Parser {
    @discardableResult
    public mutating func feed(
        _ bytes: [UInt8], into map: Dictionary<String, Int> = [:], limit: Int = min(1, 2)
    ) -> Int { bytes.count }
}

public enum Kind: String { case a }
'''

LIST = '''\
# The API code outside the package calls.
Demo: Parser
Demo: Parser.init(limits:)   # one overload of two
Demo: Parser.Limits.*
'''


def run(root: Path, *args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, str(SCRIPT), "--root", str(root), *args], capture_output=True, text=True, timeout=60,
    )


def package(tmp_path: Path, source: str = SOURCE, allow: str = LIST) -> Path:
    (tmp_path / "Sources" / "Demo").mkdir(parents=True)
    (tmp_path / "scripts").mkdir()
    (tmp_path / "Sources" / "Demo" / "Parser.swift").write_text(source)
    (tmp_path / "scripts" / "public-api.txt").write_text(allow)
    return tmp_path


def test_list_names_each_declaration_by_its_path_and_labels_and_skips_strings_and_comments(tmp_path: Path) -> None:
    out = run(package(tmp_path), "--list").stdout.splitlines()
    names = [line.split(": ", 1)[1] for line in out]
    assert names == [
        "Demo: Parser",
        "Demo: Parser.Limits",
        "Demo: Parser.Limits.maxBytes",
        "Demo: Parser.Limits.init(maxBytes:)",
        "Demo: Parser.consumed",
        "Demo: Parser.init(limits:)",
        "Demo: Parser.init(bytes:limits:)",
        "Demo: Parser.description",
        "Demo: Parser.<(_:_:)",
        "Demo: Parser.open(_:)",
        "Demo: Parser.feed(_:into:limit:)",
        "Demo: Kind",
    ]
    assert out[0].startswith("Sources/Demo/Parser.swift:4: ")


def test_check_fails_naming_each_unlisted_public_and_write_demotes_only_those(tmp_path: Path) -> None:
    root = package(tmp_path)
    check = run(root, "--check")
    assert check.returncode == 1
    assert "Sources/Demo/Parser.swift:11: public Demo: Parser.init(bytes:limits:) is not in" in check.stdout
    assert "Demo: Parser.init(limits:) is not" not in check.stdout
    assert "use `package`" in check.stdout

    assert run(root, "--write").returncode == 0
    text = (root / "Sources" / "Demo" / "Parser.swift").read_text()
    assert "public struct Parser: Sendable" in text
    assert "    public struct Limits" in text and "public init(maxBytes:" in text
    assert "    public init(limits: Limits) {}" in text
    assert "    package init(bytes: [UInt8], limits: Limits) {}" in text
    assert "package private(set) var consumed" in text
    assert "@inlinable package func open(_ public: Int)" in text
    assert "    @discardableResult\n    package mutating func feed(" in text
    assert "package enum Kind" in text
    # Comments and string literals are text, not declarations.
    assert "/// Says \"public\" in a comment: public struct Nothing {}" in text
    assert "public func insideMultiLineString() {}" in text
    assert '#"public "quoted" \\(x) {"#' in text
    assert '"public var inString"' in text

    assert run(root, "--check").returncode == 0
    again = run(root, "--write")
    assert "0 public declarations made package in 0 files" in again.stdout
    assert (root / "Sources" / "Demo" / "Parser.swift").read_text() == text


def test_check_fails_on_a_list_entry_that_names_no_public_declaration(tmp_path: Path) -> None:
    root = package(tmp_path, source="public struct Parser {}\n", allow="Demo: Parser\nDemo: Gone.init(x:)\n")
    check = run(root, "--check")
    assert check.returncode == 1
    assert "scripts/public-api.txt:2: `Demo: Gone.init(x:)` names no public declaration" in check.stdout


def test_open_is_reported_but_left_to_a_person(tmp_path: Path) -> None:
    root = package(tmp_path, source="open class Base {\n    open func run() {}\n    func open() {}\n}\n", allow="")
    write = run(root, "--write")
    assert "Sources/Demo/Parser.swift:1: open Demo: Base is not in" in write.stdout
    assert "Sources/Demo/Parser.swift:2: open Demo: Base.run() is not in" in write.stdout
    assert "Base.open" not in write.stdout
    assert (root / "Sources" / "Demo" / "Parser.swift").read_text().startswith("open class Base {\n    open func")
    assert run(root, "--check").returncode == 1

