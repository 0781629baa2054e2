"""The shape of the viewer's JavaScript: functions a reader can hold in mind, as
``tests/test_code_shape.py`` keeps the Python's.

A small scanner, not a parser: it splits a script into tokens, skipping comments and reading strings,
template literals (and the code in their ``${...}``) and regular expressions whole, so that no brace
inside them counts.  Then every ``{`` that opens a function's body is matched with its ``}``.  It
counts as a function:

- a declaration or expression with ``function`` (``function name(...) {``, ``IL.name = function (...) {``,
  ``(function name() {...})()``), async or a generator too;
- an arrow function with a block body (``IL.name = (...) => {``, ``const name = async (x) => {``,
  ``(event) => {`` passed as an argument);
- a method, in a class or an object literal (``constructor(...) {``, ``async name(...) {``, ``get x() {``).

A function's length runs from the line that opens it (the ``function`` keyword, the arrow's
parameters, the method's name) to the line of its closing brace, both counted; what it nests
counts within it, and is measured again on its own.  An arrow with an expression body
(``(t) => t * 2``) is no function of its own here: its lines count within the function around it,
and any function with a block inside it is measured.  Class bodies, blocks and object literals are
not functions.

What it cannot tell without parsing: a regular expression right after ``)`` (``if (x) /a/.test(s)``)
reads as a division; give it a name first.
"""

import pathlib
import re

import pytest

STATIC = pathlib.Path(__file__).resolve().parents[2] / "src" / "ironlearn" / "viewer" / "static"
#: The most lines a JavaScript function may have: 80 is too many (issue 55).  The Python's limit
#: is ``MAX_FUNCTION_LINES`` in tests/test_code_shape.py.
MAX_JS_FUNCTION_LINES = 79

#: Keywords after which a ``/`` starts a regular expression, not a division.
_BEFORE_REGEX = {"return", "typeof", "instanceof", "in", "of", "new", "delete", "void", "throw", "case", "do",
                 "else", "yield", "await"}
#: Keywords whose ``(...) {`` opens a block, not a method.
_BLOCKS = {"if", "for", "while", "switch", "catch", "with", "await"}
#: Words that may stand before a method's name, and open it.
_METHOD_PREFIXES = {"async", "get", "set", "static", "*"}
_WORD = re.compile(r"[A-Za-z_$][\w$]*")
_NUMBER = re.compile(r"\d[\w.]*|\.\d[\w]*")
_PUNCTUATORS = sorted(["=>", "...", "===", "!==", "==", "!=", "<=", ">=", "&&", "||", "??", "?.", "++", "--",
                       "+=", "-=", "*=", "/=", "**", "<<", ">>>", ">>", "&=", "|=", "^="], key=len, reverse=True)


class _Tokens(list):
    """The tokens of a script that matter here, each as (text, line): words, numbers and punctuators
    as written, a string, template literal or regular expression as one placeholder token (``"str"``,
    ``"tpl"``, ``"re"``), comments left out.  The code inside a template's ``${...}`` is tokenised as
    any other."""

    def __init__(self, source: str):
        super().__init__()
        self.source, self.i, self.line = source, 0, 1
        self.templates = []  # for each ``${`` open, how many braces deep its code is
        while self.i < len(source):
            self.step()
        if self.templates:
            raise ValueError("an unterminated ${...} in a template literal")

    def skip_to(self, end: int):
        self.line += self.source.count("\n", self.i, end)
        self.i = end

    def add(self, text: str, end: int):
        self.append((text, self.line))
        self.skip_to(end)

    def step(self):
        source, i = self.source, self.i
        if source[i].isspace():
            self.skip_to(i + 1)
        elif source.startswith("//", i):
            end = source.find("\n", i)
            self.skip_to(end if end >= 0 else len(source))
        elif source.startswith("/*", i):
            self.skip_to(source.index("*/", i + 2) + 2)
        elif source[i] in "'\"":
            end = i + 1
            while source[end] != source[i]:
                end += 2 if source[end] == "\\" else 1
            self.add("str", end + 1)
        elif source[i] == "`":
            self.append(("tpl", self.line))
            self.template(i + 1)
        elif source[i] == "/" and self.regex_may_start():
            self.regex()
        elif source[i] == "}" and self.templates and self.templates[-1] == 0:  # the end of a ``${``
            self.templates.pop()
            self.template(i + 1)
        else:
            self.word_or_punctuator()

    def template(self, i: int):
        """Read a template literal's text from ``i`` to its closing backtick or its next ``${``."""
        source = self.source
        while source[i] != "`" and not source.startswith("${", i):
            i += 2 if source[i] == "\\" else 1
        if source[i] == "`":
            self.skip_to(i + 1)
        else:
            self.templates.append(0)
            self.skip_to(i + 2)

    def regex_may_start(self) -> bool:
        """Whether a ``/`` here starts a regular expression: not after what ends a value (a name, a
        number, a string, ``)``, ``]``), but after an operator, ``(``, ``{``, ``}``, ``return``..."""
        before = self[-1][0] if self else None
        if before is None or before in _BEFORE_REGEX:
            return True
        return not (_WORD.fullmatch(before) or before[0].isdigit() or before in (")", "]", "++", "--"))

    def regex(self):
        source, end, in_class = self.source, self.i + 1, False
        while in_class or source[end] != "/":  # a / inside [...] does not end it
            if source[end] == "\n":
                raise ValueError(f"line {self.line}: a regular expression that does not end on its line")
            in_class = (in_class or source[end] == "[") and source[end] != "]"
            end += 2 if source[end] == "\\" else 1
        end += 1
        while end < len(source) and source[end].isalnum():  # its flags
            end += 1
        self.add("re", end)

    def word_or_punctuator(self):
        source, i = self.source, self.i
        match = _WORD.match(source, i) or _NUMBER.match(source, i)
        text = match.group() if match else next((p for p in _PUNCTUATORS if source.startswith(p, i)), source[i])
        if self.templates and text in ("{", "}"):
            self.templates[-1] += 1 if text == "{" else -1
        self.add(text, i + len(text))


def _matching(toks, index, opening, closing, step):
    """The index of the bracket that matches the one at ``index``, looking forward (step 1) or back (-1)."""
    depth = 0
    while True:
        text = toks[index][0]
        depth += (text == opening) - (text == closing)
        if depth == 0:
            return index
        index += step


def _name_before(toks, start):
    """What a function that starts at ``toks[start]`` is called: the name it is assigned to
    (``IL.live``, ``const say``), its key in an object, or "(anonymous)"."""
    if start >= 2 and toks[start - 1][0] in ("=", ":"):
        names, k = [toks[start - 2][0]], start - 3
        while k >= 1 and toks[k][0] == "." and _WORD.fullmatch(toks[k - 1][0]):
            names.insert(0, toks[k - 1][0])
            k -= 2
        if _WORD.fullmatch(names[-1]):
            return ".".join(names)
    return "(anonymous)"


def _function_at(toks, i):
    """For a ``{`` at ``toks[i]`` that opens a function's body: the index of the token that opens
    the function, and its name; None for a block, a class body or an object."""
    if toks[i - 1][0] == "=>":  # an arrow: its parameters, or its one parameter
        start = _matching(toks, i - 2, ")", "(", -1) if toks[i - 2][0] == ")" else i - 2
        name = None
    elif toks[i - 1][0] == ")":
        head = _matching(toks, i - 1, ")", "(", -1) - 1  # what stands before the parameters
        word = toks[head][0] if head >= 0 else None
        if word in ("function", "*"):  # function (...) {, function* (...) {
            start, name = head - (word == "*"), None
        elif head >= 1 and toks[head - 1][0] in ("function", "*"):  # function name(...) {
            start, name = head - 1 - (toks[head - 1][0] == "*"), word
        elif word is not None and word not in _BLOCKS and (_WORD.fullmatch(word) or word == "]"):  # a method
            start = _matching(toks, head, "]", "[", -1) if word == "]" else head
            name = "[...]" if word == "]" else word
            while start > 0 and toks[start - 1][0] in _METHOD_PREFIXES:
                start -= 1
        else:
            return None
    else:
        return None
    if start > 0 and toks[start - 1][0] == "async":
        start -= 1
    return start, name or _name_before(toks, start)


def functions(source: str) -> list[tuple[str, int, int]]:
    """Each function of ``source``, as (name, first line, last line), in the order they open; one
    inside others is named after them, classes too (``IL.interactive > drawOriginal``,
    ``IL.Painter > frame``)."""
    toks = _Tokens(source)
    found, around = [], []  # around: (name, first token, last token) of each function and class body
    for i, (text, _) in enumerate(toks):
        if text == "class":
            body = next(k for k in range(i, len(toks)) if toks[k][0] == "{")
            name = toks[i + 1][0] if body > i + 1 and toks[i + 1][0] != "extends" else _name_before(toks, i)
            around.append((name, i, _matching(toks, body, "{", "}", 1)))
        elif text == "{" and i > 0 and (opened := _function_at(toks, i)):
            start, name = opened
            end = _matching(toks, i, "{", "}", 1)
            found.append((name, start, end))
            around.append((name, start, end))
    named = []
    for name, start, end in sorted(found, key=lambda function: function[1]):
        outer = sorted((o for o in around if o[1] < start and end < o[2]), key=lambda o: o[1])
        named.append((" > ".join([o[0] for o in outer] + [name]), toks[start][1], toks[end][1]))
    return named


def long_functions(source: str, limit: int = MAX_JS_FUNCTION_LINES) -> dict[str, int]:
    """The functions of ``source`` over ``limit`` lines, with their lengths."""
    return {name: last - first + 1 for name, first, last in functions(source) if last - first + 1 > limit}


@pytest.mark.parametrize("path", sorted(STATIC.glob("*.js")), ids=lambda path: path.name)
def test_javascript_functions_stay_short(path):
    long = long_functions(path.read_text(encoding="utf-8"))
    assert not long, f"over {MAX_JS_FUNCTION_LINES} lines: {long}"


SAMPLE = r"""
"use strict";
IL.one = function (a) {
  const s = "{ not a \" brace", t = '}', re = /[/{]\}/g, half = a / 2 / 1;  // it's {
  const tpl = `${a ? `${ { b: 1 }.b }` : "}"} {
  }`;
  /* a comment } */
  function inner(x) {
    if (x) { return (y) => { return y; }; }
    try { return (z) => z; } catch (error) { return null; }
  }
  return inner;
};
IL.Two = class extends Error {
  constructor(m) {
    super(m);
  }
  async *walk() {
    for (const x of [1]) yield x;
  }
  [Symbol.iterator]() { return this.walk(); }
};
const three = async (x) => {
  return { get value() { return x; }, f: (y) => { return y; } };
};
async function four() {}
"""


def test_the_scanner_finds_every_function_and_its_lines():
    assert functions(SAMPLE) == [
        ("IL.one", 3, 13), ("IL.one > inner", 8, 11), ("IL.one > inner > (anonymous)", 9, 9),
        ("IL.Two > constructor", 15, 17), ("IL.Two > walk", 18, 20), ("IL.Two > [...]", 21, 21), ("three", 23, 25),
        ("three > value", 24, 24), ("three > f", 24, 24), ("four", 26, 26)]


def test_the_scanner_measures_a_long_function():
    source = "IL.long = function () {\n" + "  call();\n" * 78 + "};\n"
    assert long_functions(source) == {"IL.long": 80}
    assert long_functions(source.replace("  call();\n", "", 1)) == {}
