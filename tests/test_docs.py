"""Every Python block in docs/api.md runs as written, in order, in an empty folder."""

import pathlib
import re

DOCS = pathlib.Path(__file__).resolve().parents[1] / "docs"


def test_every_block_of_the_api_page_runs(tmp_path, monkeypatch, capsys):
    text = (DOCS / "api.md").read_text()
    blocks = re.findall(r"```python\n(.*?)```", text, re.S)
    assert len(blocks) >= 4
    monkeypatch.chdir(tmp_path)
    namespace = {}
    for number, code in enumerate(blocks, start=1):
        exec(compile(code, f"docs/api.md, block {number}", "exec"), namespace)
    assert namespace["run"].metrics["steps"] == 200 and namespace["big"].shape == (400, 400, 1)
    assert namespace["corner"].shape == (256, 256, 1)
    assert capsys.readouterr().err == ""  # nothing printed unless asked
