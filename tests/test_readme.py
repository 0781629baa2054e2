"""The README's library example runs as written."""

import pathlib
import re

README = pathlib.Path(__file__).resolve().parents[1] / "README.md"


def test_readme_library_example_runs(tmp_path, monkeypatch):
    code = re.search(r"```python\n(.*?)```", README.read_text(), re.S).group(1)
    monkeypatch.chdir(tmp_path)
    namespace = {}
    exec(compile(code, str(README), "exec"), namespace)
    assert namespace["trainer"].loss < 1e-3
    assert (tmp_path / "siren.npz").exists() and namespace["optimizer"].step_count == 500


def test_readme_opens_with_the_two_commands():
    lines = [l for l in README.read_text().splitlines() if l.strip()]
    assert lines[1] == "```sh" and lines[2].startswith("make demo") and lines[3].startswith("make test")
