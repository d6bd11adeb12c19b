"""The chunker on real files with real tree-sitter parsers."""

from __future__ import annotations

import re
from collections.abc import Callable
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from kenning.chunking import chunk_file
from kenning.records import Chunk

_PIECE = re.compile(r"\w{1,6}|[^\w\s]")


def count(text: str) -> int:
    """A stand-in tokenizer: punctuation is one token, words one per six characters."""
    return len(_PIECE.findall(text))


def chunks(
    source: str | bytes,
    language: str | None,
    max_tokens: int = 256,
    counter: Callable[[str], int] = count,
) -> list[Chunk]:
    data = source.encode() if isinstance(source, str) else source
    found = chunk_file("f", data, language, max_tokens=max_tokens, count_tokens=counter)
    check_invariants(data, found, max_tokens, counter)
    return found


def check_invariants(
    data: bytes, found: list[Chunk], max_tokens: int, counter: Callable[[str], int] = count
) -> None:
    """Bytes match text and lines, chunks are in order and apart, within budget, and every
    non-blank line of the file is in some chunk."""
    starts = [0, *(m.end() for m in re.finditer(b"\n", data))]
    covered: set[int] = set()
    last_end = 0
    for chunk in found:
        assert chunk.text == data[chunk.start_byte : chunk.end_byte].decode("utf-8", "replace")
        assert data[chunk.start_byte : chunk.end_byte].strip(), "no blank chunks"
        assert chunk.start_byte >= last_end, "chunks never overlap"
        last_end = chunk.end_byte
        assert counter(chunk.text) <= max_tokens
        first = sum(1 for s in starts if s <= chunk.start_byte)
        last = sum(1 for s in starts if s <= chunk.end_byte - 1)
        assert (chunk.start_line, chunk.end_line) == (first, last)
        covered.update(range(first, last + 1))
    for number, line in enumerate(data.split(b"\n"), start=1):
        if line.strip():
            assert number in covered, f"line {number} is in no chunk: {line!r}"


TS_SOURCE = r"""
import { x } from "y";
export interface Shape { area(): number; }
type Alias = string | number;
enum Color { Red, Green }
@Component({selector: "x"})
export class HttpClient implements Shape {
  private base: string;
  constructor(base: string) { this.base = base; }
  /** Send. */
  public async send<T>(req: Req): Promise<T> { return null as any; }
  area(): number { return 1; }
}
export function f(a: number): number { return a; }
export const g = (a: number): number => a;
namespace NS { export function h() {} }
declare module "m" { export function k(): void; }
abstract class Abs { abstract m(): void; }
"""
TS_CHUNKS = [
    ("interface", "Shape", 2, 2),
    ("type", "Alias", 3, 3),
    ("enum", "Color", 4, 4),
    ("class", "HttpClient", 5, 12),
    ("function", "f", 13, 13),
    ("function", "g", 14, 14),
    ("function", "h", 15, 15),
    ("function", "k", 16, 16),
    ("class", "Abs", 17, 17),
]

SAMPLES = {
    "python": (
        r"""
'''Module doc.'''
import os
import sys
X = 1

@decorator
class Foo(Base):
    '''Doc.'''
    def bar(self, x: int) -> int:
        return x

# comment for f
async def f(a,
            b):
    pass
""",
        [
            ("class", "Foo", 6, 10),
            ("function", "f", 12, 15),
        ],
        ["Foo.bar"],
    ),
    "javascript": (
        r"""
import x from "y";
const a = 1;
/** Doc for Foo. */
export class Foo extends Bar {
  static n = 2;
  /** send it */
  async send(req) { return 1; }
  get size() { return 0; }
}
export default function main(a, b) {
  return a;
}
const arrow = (x) => x * 2;
let fe = function named() {};
module.exports = { a };
""",
        [
            ("class", "Foo", 3, 9),
            ("function", "main", 10, 12),
            ("function", "arrow", 13, 13),
            ("function", "fe", 14, 14),
        ],
        ["Foo.send", "Foo.size"],
    ),
    "typescript": (
        TS_SOURCE,
        TS_CHUNKS,
        ["HttpClient.area", "HttpClient.constructor", "HttpClient.send"],
    ),
    "tsx": (
        TS_SOURCE + "export const C = () => <div>hi</div>;\n",
        [*TS_CHUNKS, ("function", "C", 18, 18)],
        ["HttpClient.area", "HttpClient.constructor", "HttpClient.send"],
    ),
    "go": (
        r"""
package main

import (
	"fmt"
)

const X = 1

// Client sends.
type Client struct {
	base string
}

type Shape interface { Area() float64 }

// Send does it.
func (c *Client) Send(r Req) error {
	return nil
}

func main() {
	fmt.Println("x")
}

var y = 2
""",
        [
            ("struct", "Client", 9, 12),
            ("interface", "Shape", 14, 14),
            ("method", "Client.Send", 16, 19),
            ("function", "main", 21, 23),
        ],
        ["Client.Send"],
    ),
    "rust": (
        r"""
use std::io;

/// A client.
#[derive(Debug)]
pub struct Client { base: String }

pub enum E { A, B }

pub trait Send { fn send(&self); }

impl Send for Client {
    /// Sends.
    fn send(&self) {}
}

impl<T> Wrapper<T> { pub fn new() -> Self { todo!() } }

mod inner {
    pub fn f() {}
}

macro_rules! m { () => {} }
const C: u32 = 1;
static S: u32 = 2;
type T = u32;
fn main() {}
""",
        [
            ("struct", "Client", 3, 5),
            ("enum", "E", 7, 7),
            ("trait", "Send", 9, 9),
            ("impl", "Client", 11, 14),
            ("impl", "Wrapper", 16, 16),
            ("module", "inner", 18, 18),
            ("function", "inner.f", 19, 20),
            ("macro", "m", 22, 22),
            ("type", "T", 25, 25),
            ("function", "main", 26, 26),
        ],
        ["Wrapper.new"],
    ),
    "java": (
        r"""
package a.b;
import java.util.List;
/** Doc. */
@Service
public class HttpClient extends Base implements I {
    private int x;
    /** Send. */
    @Override
    public <T> T send(Req r) throws IOException { return null; }
    public HttpClient() {}
    interface Inner { void m(); }
    enum Color { RED }
}
record P(int x) {}
@interface Ann {}
""",
        [
            ("class", "HttpClient", 3, 13),
            ("record", "P", 14, 14),
            ("interface", "Ann", 15, 15),
        ],
        ["HttpClient.HttpClient", "HttpClient.send"],
    ),
    "kotlin": (
        r"""
package a.b
import x.y
/** Doc. */
@Serializable
class HttpClient(val base: String) : Base() {
    val x = 1
    /** Send. */
    suspend fun send(r: Req): Resp { return r }
    companion object { fun make() = 1 }
}
object Single { fun f() {} }
interface Shape { fun area(): Double }
fun top(a: Int): Int = a
data class D(val x: Int)
enum class Color { RED }
typealias A = Int
val v = 3
""",
        [
            ("class", "HttpClient", 3, 10),
            ("object", "Single", 11, 11),
            ("interface", "Shape", 12, 12),
            ("function", "top", 13, 13),
            ("class", "D", 14, 14),
            ("enum", "Color", 15, 15),
            ("type", "A", 16, 16),
        ],
        ["HttpClient.send"],
    ),
    "csharp": (
        r"""
using System;
namespace A.B {
    /// <summary>Doc.</summary>
    [Serializable]
    public class HttpClient : Base {
        private int x;
        /// <summary>Send.</summary>
        public async Task<T> Send<T>(Req r) { return default; }
        public HttpClient() {}
        public int P { get; set; }
    }
    interface IShape { double Area(); }
    struct S {}
    enum E { A }
    record R(int X);
}
namespace C;
class Q {}
""",
        [
            ("class", "HttpClient", 3, 11),
            ("interface", "IShape", 12, 12),
            ("struct", "S", 13, 13),
            ("enum", "E", 14, 14),
            ("record", "R", 15, 16),
            ("class", "Q", 18, 18),
        ],
        ["HttpClient.HttpClient", "HttpClient.Send"],
    ),
    "php": (
        r"""
<?php
namespace App\Http;
use Foo\Bar;
/** Doc. */
#[Attr]
class HttpClient extends Base implements I {
    private $x = 1;
    const C = 2;
    /** Send. */
    public function send($req) { return 1; }
}
interface Shape { public function area(); }
trait T { function t() {} }
enum Suit { case Hearts; }
function top($a) { return $a; }
echo "hi";
""",
        [
            ("class", "HttpClient", 4, 11),
            ("interface", "Shape", 12, 12),
            ("trait", "T", 13, 13),
            ("enum", "Suit", 14, 14),
            ("function", "top", 15, 15),
        ],
        ["HttpClient.send"],
    ),
    "ruby": (
        r"""
require "json"
# Doc for module.
module Net
  # The client.
  class HttpClient < Base
    attr_reader :x
    # Send it.
    def send(req)
      1
    end
    def self.make; end
  end
end
def top(a)
  a
end
puts 1
""",
        [
            ("module", "Net", 2, 3),
            ("class", "Net.HttpClient", 4, 13),
            ("function", "top", 14, 16),
        ],
        ["Net.HttpClient.make", "Net.HttpClient.send"],
    ),
    "elixir": (
        r"""
import Config
# Doc for module.
defmodule Net do
  @moduledoc "Networking."
  defmodule HttpClient do
    @doc "Send it."
    def send(req), do: req
    def send(req, opts), do: {req, opts}
    defp make, do: 1
  end
end
def top(a), do: a
""",
        [
            ("module", "Net", 2, 11),
            ("function", "top", 12, 12),
        ],
        [],
    ),
    "c": (
        r"""
#include <stdio.h>
#define MAX 3
/* Doc for point. */
struct point { int x; };
typedef struct { int y; } pt;
enum color { RED };
static int count = 0;
/** Adds. */
int add(int a, int b) {
    return a + b;
}
char *name(void) { return 0; }
""",
        [
            ("struct", "point", 3, 4),
            ("struct", "pt", 5, 5),
            ("enum", "color", 6, 6),
            ("function", "add", 8, 11),
            ("function", "name", 12, 12),
        ],
        [],
    ),
    "cpp": (
        r"""
#include <vector>
namespace net {
/// The client.
class HttpClient : public Base {
public:
    HttpClient();
    /// Send.
    int send(const Req& r) { return 1; }
private:
    int x;
};
int HttpClient::recv(int n) { return n; }
template <typename T>
T max(T a, T b) { return a > b ? a : b; }
struct S { void m() {} };
}
""",
        [
            ("class", "HttpClient", 3, 11),
            ("method", "HttpClient.recv", 12, 12),
            ("function", "max", 13, 14),
            ("struct", "S", 15, 16),
        ],
        ["HttpClient.recv", "HttpClient.send"],
    ),
    "swift": (
        r"""
import Foundation
/// The client.
@objc
public class HttpClient: Base {
    var x = 1
    /// Send.
    func send(_ r: Req) -> Int { return 1 }
    init() {}
}
struct P { let x: Int }
protocol Shape { func area() -> Double }
extension HttpClient { func more() {} }
enum E { case a }
func top(a: Int) -> Int { a }
let y = 2
""",
        [
            ("class", "HttpClient", 2, 9),
            ("struct", "P", 10, 10),
            ("interface", "Shape", 11, 11),
            ("extension", "HttpClient", 12, 12),
            ("enum", "E", 13, 13),
            ("function", "top", 14, 14),
        ],
        ["HttpClient.init", "HttpClient.send"],
    ),
    "scala": (
        r"""
package a.b
import x.y
/** The client. */
@deprecated
class HttpClient(base: String) extends Base {
  val x = 1
  /** Send. */
  def send(r: Req): Int = 1
}
object Single { def f(): Unit = () }
trait Shape { def area: Double }
case class P(x: Int)
def top(a: Int): Int = a
""",
        [
            ("class", "HttpClient", 3, 9),
            ("object", "Single", 10, 10),
            ("trait", "Shape", 11, 11),
            ("class", "P", 12, 12),
            ("function", "top", 13, 13),
        ],
        ["HttpClient.send"],
    ),
    "lua": (
        r"""
local json = require("json")
-- The client.
local M = {}
--- Send.
function M.send(req)
  return 1
end
function M:recv(n) return n end
local function helper() end
local f = function(a) return a end
return M
""",
        [
            ("function", "M.send", 4, 7),
            ("function", "M.recv", 8, 8),
            ("function", "helper", 9, 9),
        ],
        [],
    ),
    "bash": (
        r"""
#!/bin/bash
set -e
# Build it.
build() {
  make
}
function clean {
  rm -rf x
}
X=1
echo hi
""",
        [
            ("function", "build", 3, 6),
            ("function", "clean", 7, 9),
        ],
        [],
    ),
}


@pytest.mark.parametrize("language", sorted(SAMPLES))
def test_one_chunk_per_declaration(language: str) -> None:
    source, expected, _ = SAMPLES[language]
    found = chunks(source[1:], language)
    assert [(c.kind, c.symbol, c.start_line, c.end_line) for c in found if c.kind != "block"] == [
        tuple(row) for row in expected
    ]
    assert all(c.language == language for c in found)


@pytest.mark.parametrize("language", sorted(SAMPLES))
def test_methods_are_qualified_when_a_class_is_split(language: str) -> None:
    source, _, methods = SAMPLES[language]
    found = chunks(source[1:], language, max_tokens=24)
    assert {c.symbol for c in found if c.kind == "method" and "." in (c.symbol or "")} == set(
        methods
    )


def by_symbol(found: list[Chunk], symbol: str) -> list[Chunk]:
    return [c for c in found if c.symbol == symbol]


def test_doc_comments_decorators_and_annotations_stay_attached() -> None:
    py = chunks(SAMPLES["python"][0][1:], "python")
    assert by_symbol(py, "Foo")[0].text.startswith("@decorator\nclass Foo(Base):")
    assert by_symbol(py, "f")[0].text.startswith("# comment for f\nasync def f(a,")
    java = chunks(SAMPLES["java"][0][1:], "java")
    assert by_symbol(java, "HttpClient")[0].text.startswith("/** Doc. */\n@Service\npublic class")
    rust = chunks(SAMPLES["rust"][0][1:], "rust")
    assert by_symbol(rust, "Client")[0].text.startswith("/// A client.\n#[derive(Debug)]\npub")
    ts = chunks(SAMPLES["typescript"][0][1:], "typescript")
    assert by_symbol(ts, "HttpClient")[0].text.startswith("@Component(")
    go = chunks(SAMPLES["go"][0][1:], "go")
    assert by_symbol(go, "Client.Send")[0].text.startswith("// Send does it.\nfunc (c *Client)")


def test_signatures_are_declaration_headers() -> None:
    py = chunks(SAMPLES["python"][0][1:], "python")
    assert by_symbol(py, "f")[0].signature == "async def f(a, b):"
    assert by_symbol(py, "Foo")[0].signature == "class Foo(Base):"
    java = chunks(SAMPLES["java"][0][1:], "java")
    assert (
        by_symbol(java, "HttpClient")[0].signature
        == "public class HttpClient extends Base implements I"
    )
    go = chunks(SAMPLES["go"][0][1:], "go")
    assert by_symbol(go, "Client.Send")[0].signature == "func (c *Client) Send(r Req) error"


def test_imports_and_constants_merge_into_one_block() -> None:
    source = (
        "import os\nimport sys\n\nfrom a import b\nLIMIT = 3\nNAME = 'x'\n\n\ndef f():\n    pass\n"
    )
    found = chunks(source, "python")
    assert [(c.kind, c.start_line, c.end_line) for c in found] == [
        ("block", 1, 6),
        ("function", 9, 10),
    ]


def big_class(methods: int, statements: int) -> str:
    lines = ["class HttpClient(Base):", '    """Talks HTTP."""', "    retries = 3", ""]
    for m in range(methods):
        lines.append(f"    def send_{m}(self, request, timeout=None):")
        lines += [f"        value_{i} = request.header_{i} + {i}" for i in range(statements)]
        lines += ["        return value_0", ""]
    return "\n".join(lines) + "\n"


def test_large_class_splits_into_header_and_methods() -> None:
    found = chunks(big_class(methods=4, statements=6), "python", max_tokens=120)
    assert [(c.kind, c.symbol) for c in found] == [
        ("class", "HttpClient"),
        *[("method", f"HttpClient.send_{m}") for m in range(4)],
    ]
    header = found[0]
    assert header.text.startswith("class HttpClient(Base):") and "retries = 3" in header.text
    assert found[1].signature == "def send_0(self, request, timeout=None):"


def test_long_function_splits_at_statements_and_keeps_its_symbol() -> None:
    source = big_class(methods=1, statements=60)
    data = source.encode()
    found = chunks(source, "python", max_tokens=100)
    parts = by_symbol(found, "HttpClient.send_0")
    assert len(parts) >= 4
    assert all(p.kind == "method" for p in parts)
    assert all(p.signature == "def send_0(self, request, timeout=None):" for p in parts)
    assert parts[0].text.lstrip().startswith("def send_0")  # the header leads the first part
    for part in parts:  # each part starts at a statement's line, never mid-statement
        assert data[part.start_byte - 1 : part.start_byte] == b"\n"
        assert part.text.lstrip().startswith(("value_", "return", "def "))


def test_giant_line_is_split_by_characters_on_utf8_boundaries() -> None:
    line = "var é = [" + ", ".join(f'"ünïcödé_{i} 🚀"' for i in range(3000)) + "];"
    found = chunks(line, "javascript", max_tokens=50)
    assert len(found) > 100
    assert all("\ufffd" not in c.text for c in found)
    assert "".join(c.text for c in found).replace(" ", "") == line.replace(" ", "")


def test_markdown_sections_by_heading() -> None:
    source = (
        "Intro paragraph.\n\n# Project\n\n## Install\n\nRun the installer.\n\n"
        "```sh\n# not a heading\nmake install\n```\n\n"
        "Usage\n-----\n\nCall it.\n"
    )
    found = chunks(source, "markdown")
    assert [(c.kind, c.symbol, c.start_line, c.end_line) for c in found] == [
        ("section", None, 1, 1),
        ("section", "Install", 3, 12),  # "# Project" has nothing of its own: it joins
        ("section", "Usage", 14, 17),
    ]
    assert found[1].signature == "## Install"


def test_long_markdown_section_splits_and_keeps_its_heading() -> None:
    body = "\n\n".join(f"Paragraph {i} says something about caching." for i in range(40))
    found = chunks(f"# Caching\n\n{body}\n", "markdown", max_tokens=40)
    assert len(found) > 3
    assert {(c.kind, c.symbol) for c in found} == {("section", "Caching")}


def test_plain_text_in_line_windows() -> None:
    source = "\n".join(f"line {i} of the notes" for i in range(200))
    found = chunks(source, None, max_tokens=60)
    assert {c.kind for c in found} == {"window"}
    assert all(c.symbol is None for c in found)
    assert found[0].start_line == 1 and found[-1].end_line == 200


def test_parse_errors_fall_back_to_line_windows_without_loss() -> None:
    source = "def broken(:\n  )))) ((( \n" * 30 + "def fine():\n    return 1\n"
    found = chunks(source, "python")
    assert {c.kind for c in found} == {"window"}


def test_cpp_headers_named_dot_h_are_read_as_cpp() -> None:
    source = "#pragma once\nnamespace net {\n/// Client.\nclass HttpClient {\npublic:\n"
    source += "    int send(int x) { return x; }\n};\n}\n"
    found = chunks(source, "c")
    assert [(c.kind, c.symbol, c.start_line) for c in found if c.kind != "block"] == [
        ("class", "HttpClient", 3)
    ]
    assert {c.language for c in found} == {"c"}


def test_pathologically_deep_trees_fall_back_to_windows() -> None:
    source = "total = " + " + ".join(["a"] * 20000) + "\n"
    found = chunks(source, "python", max_tokens=60)
    assert {c.kind for c in found} == {"window"}


def test_empty_blank_and_invalid_utf8_files() -> None:
    assert chunks("", "python") == []
    assert chunks("\n   \n\t\n", None) == []
    found = chunks(b"x = '\xff\xfe'\ny = 2\n", "python")
    assert "\ufffd" in found[0].text


@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(
    text=st.text(
        st.characters(blacklist_categories=["Cs"], blacklist_characters="\x00"), max_size=1500
    )
    | st.lists(
        st.sampled_from(
            ["def f(x):", "    return x", "class A:", "    pass", "# note", "", "}", "{", "x" * 90,
             "defmodule A do", "  @doc false", "  def f(x), do: x", "end"]
        ),
        max_size=80,
    ).map("\n".join),
    language=st.sampled_from([None, "python", "javascript", "markdown", "rust", "c", "elixir"]),
    max_tokens=st.integers(min_value=4, max_value=64),
)
def test_budget_and_coverage_hold_for_any_text(
    text: str, language: str | None, max_tokens: int
) -> None:
    chunks(text, language, max_tokens=max_tokens)


def test_real_tokenizer_budget_on_real_code() -> None:
    import kenning.chunking
    from tokenizers import Tokenizer

    tokenizer = Tokenizer.from_file(
        str(Path(kenning.__file__).parent / "data" / "minilm-tokenizer.json")
    )
    tokenizer.no_padding()
    tokenizer.no_truncation()

    def real(text: str) -> int:
        return len(tokenizer.encode(text, add_special_tokens=False).ids)

    package = Path(kenning.chunking.__file__).parent
    for source in sorted(package.glob("*.py")):
        found = chunks(source.read_bytes(), "python", max_tokens=128, counter=real)
        assert any(c.kind in {"function", "method", "class"} for c in found)


def test_jsdoc_and_docstrings_stay_with_their_declaration() -> None:
    js = chunks("import x from 'x';\n\n/**\n * Parses a header line.\n * @param {string} line\n"
                " */\nexport function parseHeader(line) {\n  return line.split(':');\n}\n",
                "javascript")
    assert by_symbol(js, "parseHeader")[0].text.startswith("/**\n * Parses a header line.")
    py = chunks('import os\n\n\n@cached\ndef load(path):\n    """Read the settings file."""\n'
                "    return open(path).read()\n", "python")
    assert by_symbol(py, "load")[0].text.startswith('@cached\ndef load(path):\n    """Read')
