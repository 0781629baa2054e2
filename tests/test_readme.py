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


def test_the_readme_commands_run_in_the_order_written():
    """Each new fit in the usage block writes a folder no earlier one wrote (a second fit of photo.jpg
    into runs/photo was refused), and each resume continues a folder an earlier fit wrote."""
    import os
    import shlex

    usage = re.search(r"## Usage\n\n```sh\n(.*?)```", README.read_text(), re.S).group(1)
    written = []
    for line in usage.splitlines():
        words = shlex.split(line, comments=True)
        if words[:2] != ["ironlearn", "fit"] or "--help" in words:
            continue
        picture = words[2]
        out = words[words.index("--out") + 1] if "--out" in words else \
            os.path.join("runs", os.path.splitext(os.path.basename(picture))[0])
        if "--resume" in words:
            assert out in written, line
        else:
            assert out not in written or "--force" in words, line
            written.append(out)
