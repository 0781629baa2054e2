"""Every Python block in docs/api.md runs as written, in order, in an empty folder."""

from helpers import run_page


def test_every_block_of_the_api_page_runs(tmp_path, monkeypatch, capsys):
    monkeypatch.chdir(tmp_path)
    namespace = run_page("api.md", at_least=4)
    assert namespace["run"].metrics["steps"] == 200 and namespace["big"].shape == (400, 400, 1)
    assert namespace["corner"].shape == (256, 256, 1)
    assert namespace["again"].shape == (400, 400, 1) and len(namespace["result"].data) > 0
    assert namespace["zoomed"].shape == (200, 200, 1) and namespace["small"].size == (200, 200)
    assert capsys.readouterr().err == ""  # nothing printed unless asked


def test_the_docs_index_links_every_page():
    import pathlib
    import re

    docs = pathlib.Path(__file__).resolve().parents[1] / "docs"
    linked = set(re.findall(r"\]\(([^)#]+\.md)", (docs / "README.md").read_text()))
    pages = {str(path.relative_to(docs)) for path in docs.rglob("*.md")} - {"README.md"}
    assert pages <= linked, f"docs/README.md does not link {sorted(pages - linked)}"
    assert all((docs / link).is_file() for link in linked), "a link of docs/README.md leads nowhere"


def test_the_readme_stays_short():
    import pathlib

    lines = (pathlib.Path(__file__).resolve().parents[1] / "README.md").read_text().splitlines()
    assert len(lines) <= 200, f"README.md has {len(lines)} lines; move detail into docs/"
    long = [number for number, line in enumerate(lines, 1) if len(line) > 400]
    assert not long, f"README.md lines over 400 characters: {long}"
