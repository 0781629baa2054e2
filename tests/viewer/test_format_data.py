"""The .ilc format's numbers reach the page's decoder as data generated from the codec
(``viewer/format_data.py``, the page's ``format.js``), never as copies: the data is the codec's
values under the codec's names, the header's layout is ``header.LAYOUT`` field for field, every
name the scripts read is in it, no script holds a literal of the format, and the page holds the
data unchanged.
"""

import json
import re
from pathlib import Path

from ironlearn import viewer
from ironlearn.codec.bitstream import container
from ironlearn.codec.bitstream import header
from ironlearn.viewer.format_data import NAMES, format_data, format_script, plain

HINTS = ("TRUNCATED_HINT", "CORRUPTED_HINT", "FOREIGN_HINT")

STATIC = Path(viewer.__file__).parent / "static"
#: The scripts that decode and draw a file (viewer.js only reads a bound and a hint: its zoom and
#: layout numbers are its own).
DECODER_SCRIPTS = ("unpack.js", "ilcfile.js", "ilcdecode.js", "picture.js")
READERS = (*DECODER_SCRIPTS, "viewer.js")
#: Numbers of the format that a script may still write, each for a reason of its own.
ALLOWED = {256: "zlib's CRC32 table has 256 entries (ilcfile.js), as MAX_SECTIONS and MAX_HIDDEN happen to be",
           16: "Python's repr writes a float's exponent from 1e16 on (ilcfile.js), as LATENTS_PER_BIT happens to be"}


def _as_json(value):
    return json.loads(json.dumps(value))


def _scripts(names=DECODER_SCRIPTS) -> dict:
    """Each script's code, its comments left out (they may name what they explain)."""
    found = {}
    for name in names:
        text = (STATIC / name).read_text(encoding="utf-8")
        found[name] = "\n".join(line.split("//")[0] if not line.lstrip().startswith("//") else ""
                                for line in text.splitlines())
    return found


def test_the_data_is_the_codecs_values_under_the_codecs_names():
    data = _as_json(format_data())  # as the page reads it: floats and all, to the bit
    for section, (module, names) in NAMES.items():
        for name in names:
            assert data[section][name] == _as_json(plain(getattr(module, name))), (section, name)
    for name in HINTS:
        assert data["container"][name] == getattr(container, name)
    assert data["container"]["MAGIC"] == list(container.MAGIC) and data["container"]["VERSION"] == container.VERSION


def test_the_header_layout_is_the_codecs_field_for_field():
    layout = _as_json(format_data())["header"]["LAYOUT"]
    assert [item["name"] for item in layout] == [item.name for item in header.LAYOUT]
    for found, item in zip(layout, header.LAYOUT):
        if isinstance(item, header.Field):
            assert (found["kind"], tuple(found["bounds"]), found["what"]) == (item.kind, tuple(item.bounds), item.what)
            assert found["check"] == (None if item.check is None else item.check.__name__.lstrip("_"))
            assert found["since"] == item.since  # an older file's value is the field's lowest bound
        else:
            assert found["since"] == item.since
            assert [(f["name"], f["kind"], tuple(f["bounds"]), f["what"]) for f in found["fields"]] == \
                   [(f.name, f.kind, tuple(f.bounds), f.what) for f in item.fields]
    checks = re.search(r"IL\.HEADER_CHECKS = \{([^}]*)\}", (STATIC / "ilcfile.js").read_text())[1]
    named = {check for item in layout for check in [item.get("check")] if check}
    assert named == set(re.findall(r"(\w+):", checks))  # the page knows each check by its name


def test_every_name_the_scripts_read_is_in_the_data():
    data = format_data()
    for name, code in _scripts(READERS).items():
        for section, key in re.findall(r"IL\.FORMAT\.(\w+)\.(\w+)", code):
            assert key in data[section], (name, section, key)
        for names, section in re.findall(r"const \{([^}]*)\} = IL\.FORMAT\.(\w+)", code):
            for key in re.findall(r"\b([A-Z][A-Z0-9_]*)\b", names):
                assert key in data[section], (name, section, key)


def _numbers(value):
    """Every number in ``value`` (nested lists and dicts)."""
    if isinstance(value, dict):
        return [n for item in value.values() for n in _numbers(item)]
    if isinstance(value, list):
        return [n for item in value for n in _numbers(item)]
    return [value] if isinstance(value, (int, float)) and not isinstance(value, bool) else []


def _literals(code: str) -> set:
    """The numbers a script writes: decimals, hexadecimals and powers of two (``2 ** -12``)."""
    found = {float(2 ** int(power)) for power in re.findall(r"\b2 \*\* (-?\d+)\b", code)}
    found |= {float(int(text, 16)) for text in re.findall(r"\b0x[0-9a-fA-F]+\b", code)}
    code = re.sub(r"\b0x[0-9a-fA-F]+\b|\b2 \*\* -?\d+\b", "", code)
    found |= {float(text) for text in re.findall(r"(?<![\w.])-?\d+(?:\.\d+)?(?:[eE][+-]?\d+)?(?![\w.])", code)}
    return found


def test_no_script_holds_a_copy_of_the_formats_numbers_or_words():
    data = format_data()
    # Numbers that say something (not 0..9, not 0.5): any of them in a script would be a copy.
    telling = {float(n) for n in _numbers(data) if abs(n) >= 10 or (n != int(n) and len(repr(float(n))) > 5)}
    hints = [data["container"][name] for name in HINTS]
    for name, code in _scripts().items():
        copied = (_literals(code) & telling) - {float(n) for n in ALLOWED}
        assert not copied, (name, sorted(copied))
        assert not [hint for hint in hints if hint in code], name
    # What the scripts held before the data came: the signature, a bound, a coefficient, a hint.
    decoder = "".join(_scripts().values())
    for literal in ("0x89", "2 ** 28", "2 ** 26", "2 ** -12", "6.93147180369", "1.44269504088", "0.7071067811865476",
                    "-12.0", "4 * 40", "0.2 + x", "CODER_PRECISION = ", "IL.MAX_LEVELS = ", "IL.PORTABLE"):
        assert literal not in decoder, literal


def test_the_page_holds_the_data_unchanged(browser, tmp_path):
    page_path = tmp_path / "app.html"
    viewer.write_app(page_path)
    assert format_script() in page_path.read_text(encoding="utf-8")
    page = browser.new_page()
    try:
        page.goto(page_path.as_uri())
        page.wait_for_function("window.ironlearnViewer && window.ironlearnViewer.waiting")
        found = json.loads(page.evaluate("JSON.stringify(IL.FORMAT)"))
        layout = page.evaluate("IL.HEADER_LAYOUT.map((item) => [item.name, typeof (item.check || item.count)])")
    finally:
        page.close()
    assert found == _as_json(format_data())
    assert layout == [[item.name, "function" if getattr(item, "check", True) else "undefined"] for item in header.LAYOUT]
