"""Stack traces in a query: each format's frames and message, their mapping to the project's
files, and a traceback query on a real index, whose frames' declarations come first."""

from __future__ import annotations

from pathlib import Path

import pytest
from kenning.retrieval.query import analyze
from kenning.retrieval.tracebacks import Locator, parse
from search_fixtures import Indexed, write_repo

pytest_plugins = ["search_fixtures"]  # fixtures: indexed (the repository, indexed once)

PYTHON = '''Traceback (most recent call last):
  File "/home/ci/build/proj/tests/test_retry.py", line 4, in test_retry_policy_backoff_grows
    call_with_retries(send, policy)
  File "/home/ci/build/proj/src/http/retry.py", line 27, in call_with_retries
    if not policy.should_retry(response.status):
  File "/usr/lib/python3.11/site-packages/requests/models.py", line 90, in status
    raise ValueError(bad)
ValueError: could not convert string to float: 'abc'
'''

JAVA = '''Exception in thread "main" java.lang.IllegalStateException: queue is closed
\tat com.acme.queue.Worker.take(Worker.java:42)
\tat com.acme.queue.Pool.run(Pool.java:17)
\tat java.base/java.lang.Thread.run(Thread.java:833)
Caused by: java.io.IOException: broken pipe
\tat com.acme.net.Channel.write(Channel.kt:88)
\t... 3 more
'''

GO = '''panic: runtime error: index out of range [5] with length 3

goroutine 1 [running]:
main.(*Server).handle(0xc000010000, {0x0, 0x0})
\t/home/dev/go/src/github.com/acme/srv/server/handler.go:42 +0x1d
net/http.HandlerFunc.ServeHTTP(...)
\t/usr/local/go/src/net/http/server.go:2136 +0x29
main.main()
\t/home/dev/go/src/github.com/acme/srv/main.go:12 +0x45
exit status 2
'''

RUST = '''thread 'main' panicked at src/parser/lexer.rs:120:17:
called `Option::unwrap()` on a `None` value
stack backtrace:
   0: rust_begin_unwind
             at /rustc/90b35a6239c3d8bdabc530a6a0816f7ff89a0aaf/library/std/src/panicking.rs:645:5
   1: core::option::unwrap_failed
             at /rustc/90b35a6239c3d8bdabc530a6a0816f7ff89a0aaf/library/core/src/option.rs:1985:5
   2: mycrate::parser::lexer::Lexer::next_token
             at ./src/parser/lexer.rs:120:17
   3: mycrate::main
             at ./src/main.rs:9:5
   4: serde_json::de::from_str
             at /home/u/.cargo/registry/src/index.crates.io-6f17d22b/serde_json-1.0/src/de.rs:2:1
'''

RUST_OLD = "thread 'main' panicked at 'attempt to subtract with overflow', src/calc.rs:7:13"

NODE = '''TypeError: Cannot read properties of undefined (reading 'id')
    at getUser (/srv/app/src/users/service.ts:31:18)
    at async Router.handle (/srv/app/src/http/router.ts:12:5)
    at Layer.handle [as handle_request] (/srv/app/node_modules/express/lib/router/layer.js:95:5)
    at node:internal/process/task_queues:95:5
'''

FIREFOX = '''render@http://localhost:3000/static/js/components/list.js:14:9
@http://localhost:3000/static/js/main.js:3:1
'''

ASAN = '''==4242==ERROR: AddressSanitizer: heap-use-after-free on address 0x602000000010
READ of size 4 at 0x602000000010 thread T0
    #0 0x4f6b3a in Buffer::read(unsigned long) /build/proj/src/buffer.cc:57:12
    #1 0x4f6c01 in main /build/proj/src/main.cc:20:3
    #2 0x7f1c2b in __libc_start_main /usr/lib/x86_64-linux-gnu/libc.so.6:0:0
    #3 0x41e9c9 in _start (/build/proj/out/app+0x41e9c9)
'''


def _frames(text: str) -> list[tuple[str, int, bool]]:
    trace = parse(text)
    assert trace is not None
    return [(f.path, f.line, f.outside) for f in trace.frames]


def test_python_frames_innermost_first_and_the_message() -> None:
    trace = parse(PYTHON)
    assert trace is not None
    assert [(f.path, f.line, f.outside) for f in trace.frames] == [
        ("/usr/lib/python3.11/site-packages/requests/models.py", 90, True),
        ("/home/ci/build/proj/src/http/retry.py", 27, False),
        ("/home/ci/build/proj/tests/test_retry.py", 4, False)]
    assert trace.frames[1].function == "call_with_retries"
    assert trace.messages == ("could not convert string to float: 'abc'",)


def test_pytest_short_frames() -> None:
    text = "src/http/retry.py:27: in call_with_retries\n    x()\nE   KeyError: 'a'\n"
    assert _frames(text) == [("src/http/retry.py", 27, False)]


def test_line_numbers_are_a_few_ascii_digits() -> None:
    huge = "9" * 5000  # past int()'s limit of 4,300 digits
    text = (f'  File "src/http/retry.py", line {huge}, in call\n'
            '  File "src/http/client.py", line \u0669\u0662, in send\n'  # Arabic-Indic 92
            '  File "src/http/pool.py", line 12, in get\nValueError: bad\n')
    assert _frames(text) == [("src/http/pool.py", 12, False)]
    assert _frames(f"src/http/retry.py:{huge}: in call\nsrc/app.py:3: in main\n") == [
        ("src/app.py", 3, False)]


def test_java_and_kotlin_frames_with_caused_by() -> None:
    trace = parse(JAVA)
    assert trace is not None
    # the root cause's frames first, then the exception's, each innermost first
    assert [(f.path, f.line, f.outside) for f in trace.frames] == [
        ("com/acme/net/Channel.kt", 88, False), ("com/acme/queue/Worker.java", 42, False),
        ("com/acme/queue/Pool.java", 17, False), ("java/lang/Thread.java", 833, True)]
    assert trace.messages == ("queue is closed", "broken pipe")
    logged = "\tat com.acme.queue.Worker.take(Worker.java:42) ~[app.jar:1.4.2]\n"
    assert _frames(logged) == [("com/acme/queue/Worker.java", 42, False)]


def test_chained_python_exceptions_put_the_one_reported_first() -> None:
    text = ('Traceback (most recent call last):\n'
            '  File "src/a.py", line 3, in load\n'
            '  File "src/b.py", line 9, in read\n'
            "KeyError: 'name'\n\n"
            'During handling of the above exception, another exception occurred:\n\n'
            'Traceback (most recent call last):\n'
            '  File "src/c.py", line 20, in main\n'
            '  File "src/d.py", line 5, in fail\n'
            'RuntimeError: config broken\n')
    assert _frames(text) == [("src/d.py", 5, False), ("src/c.py", 20, False),
                             ("src/b.py", 9, False), ("src/a.py", 3, False)]


def test_go_panic_and_goroutine_dump() -> None:
    trace = parse(GO)
    assert trace is not None
    assert [(f.path, f.line, f.outside) for f in trace.frames] == [
        ("/home/dev/go/src/github.com/acme/srv/server/handler.go", 42, False),
        ("/usr/local/go/src/net/http/server.go", 2136, True),
        ("/home/dev/go/src/github.com/acme/srv/main.go", 12, False)]
    assert trace.frames[0].function == "main.(*Server).handle"
    assert trace.messages == ("runtime error: index out of range [5] with length 3",)


def test_rust_backtrace_and_panic_message() -> None:
    trace = parse(RUST)
    assert trace is not None
    inside = [(f.path, f.line) for f in trace.frames if not f.outside]
    assert inside == [("src/parser/lexer.rs", 120), ("src/main.rs", 9)]
    assert {f.path.split("/")[-1] for f in trace.frames if f.outside} == {
        "panicking.rs", "option.rs", "de.rs"}
    assert trace.messages == ("called `Option::unwrap()` on a `None` value",)
    old = parse(RUST_OLD)
    assert old is not None
    assert [(f.path, f.line) for f in old.frames] == [("src/calc.rs", 7)]
    assert old.messages == ("attempt to subtract with overflow",)


def test_javascript_v8_and_firefox_stacks() -> None:
    assert _frames(NODE) == [("/srv/app/src/users/service.ts", 31, False),
                             ("/srv/app/src/http/router.ts", 12, False),
                             ("/srv/app/node_modules/express/lib/router/layer.js", 95, True)]
    trace = parse(NODE)
    assert trace is not None
    assert trace.messages == ("Cannot read properties of undefined (reading 'id')",)
    assert _frames(FIREFOX) == [("static/js/components/list.js", 14, False),
                                ("static/js/main.js", 3, False)]
    bundled = ("    at render (webpack:///./src/ui/list.tsx:14:9)\n"
               "    at file:///home/dev/app/src/main.mjs:3:1\n")
    assert _frames(bundled) == [("src/ui/list.tsx", 14, False),
                                ("/home/dev/app/src/main.mjs", 3, False)]
    # a served path is relative to a folder of the project
    firefox = parse(FIREFOX)
    assert firefox is not None
    assert Locator(["public/static/js/main.js"]).locate(firefox.frames[1]) == \
        "public/static/js/main.js"


def test_sanitizer_report() -> None:
    trace = parse(ASAN)
    assert trace is not None
    assert [(f.path, f.line, f.outside) for f in trace.frames] == [
        ("/build/proj/src/buffer.cc", 57, False), ("/build/proj/src/main.cc", 20, False)]
    assert trace.frames[0].function == "Buffer::read(unsigned long)"
    assert trace.messages == ("heap-use-after-free",)


@pytest.mark.parametrize("text", [
    "how are retries handled", "parse_header", "where is the cache evicted at capacity",
    'the "retry the request" phrase', "src/http/retry.py line 27"])
def test_an_ordinary_query_holds_no_trace(text: str) -> None:
    assert parse(text) is None
    assert analyze(text).trace is None and analyze(text).message_phrases == ()


PATHS = ["src/http/retry.py", "tests/test_retry.py", "lib/src/http/retry.py", "src/main.rs",
         "crates/parser/src/lexer.rs", "app/src/main/java/com/acme/queue/Worker.java",
         "random.py", "a/util.py", "b/util.py"]


@pytest.mark.parametrize(("frame_path", "language", "expected"), [
    ("src/http/retry.py", "python", "src/http/retry.py"),  # the same relative path
    ("/home/ci/build/proj/src/http/retry.py", "python", "src/http/retry.py"),  # another machine
    ("/home/ci/build/proj/lib/src/http/retry.py", "python", "lib/src/http/retry.py"),  # longest
    ("C:\\work\\proj\\tests\\test_retry.py", "python", "tests/test_retry.py"),
    ("lexer.rs", "rust", "crates/parser/src/lexer.rs"),  # one indexed path ends with it
    ("src/lexer.rs", "rust", "crates/parser/src/lexer.rs"),
    ("com/acme/queue/Worker.java", "java", "app/src/main/java/com/acme/queue/Worker.java"),
    ("util.py", "python", None),  # two files end with it: no guess
    ("/elsewhere/other/retry.py", "python", None),  # an absolute path that ends otherwise
    ("/opt/src/thing/main.rs", "rust", None),
])
def test_frames_map_to_indexed_paths_by_their_suffix(frame_path: str, language: str,
                                                     expected: str | None) -> None:
    from kenning.retrieval.tracebacks import _frame

    frame = _frame(frame_path, "3", None, language)
    assert frame is not None
    assert Locator(PATHS).locate(frame) == expected


def test_frames_outside_the_project_are_ignored() -> None:
    trace = parse(PYTHON.replace("/usr/lib/python3.11/site-packages/requests/models.py",
                                 "/usr/lib/python3.11/random.py"))
    assert trace is not None
    locator = Locator(PATHS)
    # random.py is indexed at the root, but the frame is the standard library's
    assert trace.frames[0].outside and locator.locate(trace.frames[0]) is None
    assert [locator.locate(f) for f in trace.frames[1:]] == ["src/http/retry.py",
                                                             "tests/test_retry.py"]


WINDOWS_PYTHON = '''Traceback (most recent call last):
  File "C:\\Users\\ci\\proj\\tests\\test_retry.py", line 4, in test_retry_policy_backoff_grows
    call_with_retries(send, policy)
  File "D:\\a\\proj\\proj\\src\\http\\retry.py", line 27, in call_with_retries
    if not policy.should_retry(response.status):
  File "C:\\Users\\ci\\proj\\.venv\\Lib\\site-packages\\requests\\models.py", line 90, in status
    value = json.loads(bad)
  File "C:\\Program Files\\Python312\\Lib\\json\\__init__.py", line 346, in loads
    return _default_decoder.decode(s)
ValueError: could not convert string to float: 'abc'
'''


def test_windows_frame_paths_with_drive_letters_and_backslashes_map_as_posix_ones() -> None:
    """A trace from a Windows machine reads the same on any host: its project frames map to
    the indexed paths, an installed package's and the standard library's are outside."""
    trace = parse(WINDOWS_PYTHON)
    assert trace is not None
    assert [(f.path, f.line, f.outside, f.within) for f in trace.frames] == [
        ("/Program Files/Python312/Lib/json/__init__.py", 346, True, "json/__init__.py"),
        ("/Users/ci/proj/.venv/Lib/site-packages/requests/models.py", 90, True,
         "requests/models.py"),
        ("/a/proj/proj/src/http/retry.py", 27, False, None),
        ("/Users/ci/proj/tests/test_retry.py", 4, False, None)]
    assert [Locator(PATHS).locate(f) for f in trace.frames] == [
        None, None, "src/http/retry.py", "tests/test_retry.py"]
    panic = parse("thread 'main' panicked at crates\\parser\\src\\lexer.rs:10:5:\nbad token\n")
    assert panic is not None and panic.frames[0].path == "crates/parser/src/lexer.rs"


def test_message_phrases_leave_out_the_variable_parts() -> None:
    query = analyze("Crash on import\n" + PYTHON)
    assert query.message_phrases == (("could", "not", "convert", "string", "to", "float"),)
    # the frame lines are no words of the lexical query; the report's and the error's are
    assert "crash" in query.terms and "convert" in query.terms
    assert "home" not in query.terms and "ci" not in query.terms
    assert query.text.endswith(PYTHON.strip())


BUG = '''Retries crash when the server answers 503.
Traceback (most recent call last):
  File "/home/ci/build/proj/tests/test_retry.py", line 4, in test_retry_policy_backoff_grows
    call_with_retries(send, policy)
  File "/home/ci/build/proj/src/http/retry.py", line 27, in call_with_retries
    time.sleep(policy.delay(attempt))
  File "/usr/lib/python3.11/random.py", line 10, in uniform
    return a + (b - a) * self.random()
TypeError: unsupported operand type(s) for *: 'float' and 'NoneType'
'''


def test_a_traceback_query_puts_the_innermost_frame_declaration_first(indexed: Indexed) -> None:
    import kenning

    plain = kenning.search("Retries crash when the server answers 503.", indexed.root)
    found = kenning.search(BUG, indexed.root)
    assert (plain.results[0].path, plain.results[0].symbol) != ("src/http/retry.py",
                                                                "call_with_retries")
    first = found.results[0]
    assert (first.path, first.symbol) == ("src/http/retry.py", "call_with_retries")
    assert first.start_line <= 27 <= first.end_line and not first.weak
    # the outermost frame, a test, comes after the code one call away from the failure
    assert "tests/test_retry.py" in [hit.path for hit in found.results[:5]]
    assert found.warnings == ()


def test_a_traceback_frame_outside_the_filters_is_left_out(indexed: Indexed) -> None:
    import kenning

    found = kenning.search(BUG, indexed.root, path_filter="tests")
    assert found.results and all(hit.path.startswith("tests/") for hit in found.results)
    assert found.results[0].symbol == "test_retry_policy_backoff_grows"
    assert found.warnings == ()
    elsewhere = kenning.search(BUG, indexed.root, path_filter="web")
    assert len(elsewhere.warnings) == 1 and "none at an indexed file and line the filters keep" \
        in elsewhere.warnings[0]


def test_a_traceback_warns_only_when_no_project_searched_holds_a_frame(
        indexed: Indexed) -> None:
    import kenning

    both = kenning.search(BUG, [indexed.root, indexed.other])
    assert both.warnings == ()
    assert (both.results[0].path, both.results[0].symbol) == ("src/http/retry.py",
                                                              "call_with_retries")
    other = kenning.search(BUG, indexed.other)
    assert len(other.warnings) == 1 and str(indexed.other) in other.warnings[0]


def test_a_traceback_with_no_frame_in_the_project_warns(indexed: Indexed) -> None:
    import kenning

    text = ('Traceback (most recent call last):\n  File "/srv/other/app/billing.py", line 3, '
            'in charge\nValueError: the password hash does not match')
    found = kenning.search(text, indexed.root)
    assert len(found.warnings) == 1
    assert found.warnings[0].startswith("No frame of the stack trace in the query is in ")
    assert "1 frame read" in found.warnings[0]
    assert found.results  # searched by its message and words all the same
    assert found.results[0].path == "src/auth/passwords.py"


def test_a_frame_in_an_installed_package_is_in_the_project_that_is_that_package() -> None:
    text = ('Traceback (most recent call last):\n'
            '  File "/home/u/app/main.py", line 3, in <module>\n'
            '  File "/home/u/.venv/lib/python3.12/site-packages/requests/sessions.py", line 589, '
            'in request\n'
            '  File "/usr/lib/python3.12/json/decoder.py", line 355, in raw_decode\n'
            'json.decoder.JSONDecodeError: Expecting value: line 1 column 1 (char 0)\n')
    trace = parse(text)
    assert trace is not None
    requests = Locator(["src/requests/sessions.py", "src/requests/models.py", "decoder.py"])
    assert [requests.locate(f) for f in trace.frames] == [None, "src/requests/sessions.py", None]
    cpython = Locator(["Lib/json/decoder.py", "Lib/json/__init__.py"])
    assert [cpython.locate(f) for f in trace.frames] == ["Lib/json/decoder.py", None, None]
    app = Locator(["main.py", "app/util.py"])
    assert [app.locate(f) for f in trace.frames] == [None, None, "main.py"]


BILLING = {
    "billing/charge.py": '''def charge(card, amount):
    if amount <= 0:
        raise ValueError(f"amount must be positive, got {amount}")
    return card.debit(amount)
''',
    "billing/refund.py": '''def refund_positive_amount(card, amount):
    """Refund a positive amount: the amount must be a positive number, a positive amount
    must be at most what was charged, and the amount must be known; a positive amount under
    one cent is refused, as the amount must be a positive number of cents."""
    if amount > card.charged:
        raise ValueError("too much")
    return card.credit(amount)
''',
}


def test_the_error_message_leads_the_words(tmp_path: Path, local_model: None) -> None:
    import kenning

    root = write_repo(tmp_path / "billing", BILLING)
    text = ('Traceback (most recent call last):\n'
            '  File "/srv/pay/.venv/lib/python3.12/site-packages/shop/pay.py", line 9, in pay\n'
            'ValueError: amount must be positive, got -5\n')
    assert analyze(text).message_phrases == (("amount", "must", "be", "positive"),)
    found = kenning.search(text, root)
    assert [hit.symbol for hit in found.results][:1] == ["charge"]
    assert "No frame of the stack trace" in found.warnings[0]


LEDGER = {
    "ledger/post.py": '''from ledger.rounding import settle_fraction


def post_entry(book, entry):
    """Write one entry to the book."""
    total = settle_fraction(entry.cents, book.currency)
    book.lines.append((entry.account, total))
    return total
''',
    "ledger/rounding.py": '''def settle_fraction(cents, currency):
    scale = currency.minor_units
    return round(cents / 10 ** scale, scale)
''',
    **{f"ledger/report_{i}.py": f'''def summary_{i}(book):
    """Totals of the book's entries, report {i}: an entry's amount, its account."""
    return sum(total for _, total in book.lines if total > {i})
''' for i in range(12)},
}


def test_a_frame_widens_to_what_it_calls(tmp_path: Path, local_model: None) -> None:
    import kenning

    root = write_repo(tmp_path / "ledger", LEDGER)
    text = ('Posting an entry to the book fails with the total of the entry wrong.\n'
            'Traceback (most recent call last):\n'
            '  File "/opt/app/ledger/post.py", line 6, in post_entry\n'
            'KeyError: totals of entry\n')
    found = kenning.search(text, root, limit=5)
    symbols = [hit.symbol for hit in found.results]
    assert symbols[0] == "post_entry"
    assert "settle_fraction" in symbols  # the frame calls it; the report's words do not say it
