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


def test_the_benchmarks_page_gives_figures_with_their_commands():
    """docs/benchmarks.md is documentation, not a lab log: no commit id in its text (history goes to
    benchmark-log.md), and every section with a table names the command that reproduces it."""
    import pathlib
    import re

    text = (pathlib.Path(__file__).resolve().parents[1] / "docs" / "benchmarks.md").read_text()
    shown = re.sub(r"\]\([^)]*\)", "]", text)  # a link's target is not text a reader sees
    commits = re.findall(r"\b(?=[0-9a-f]*[a-f])(?=[0-9a-f]*[0-9])[0-9a-f]{7,40}\b", shown)
    assert not commits, f"docs/benchmarks.md names commits {commits}; move history to benchmark-log.md"
    sections = re.split(r"^## ", text, flags=re.M)[1:]
    with_tables = [section for section in sections if re.search(r"^\| --- ", section, re.M)]
    assert len(with_tables) >= 10
    silent = [section.splitlines()[0] for section in with_tables
              if not re.search(r"python benchmarks/\w+\.py|`ironlearn \w", section)]
    assert not silent, f"these sections of docs/benchmarks.md give no command: {silent}"


def test_every_file_a_page_names_exists():
    """A path in backticks (`src/...`, `tests/...`, `benchmarks/...`, `codec/search/refine.py`) names
    a file of the repository: a moved module or test is renamed in the docs too.  The log keeps its
    history as it was written; what a command writes (under `runs/`) is not a file of the repository."""
    import pathlib
    import re

    root = pathlib.Path(__file__).resolve().parents[1]
    homes = [root, root / "src" / "ironlearn", root / "src" / "ironlearn" / "viewer"]
    missing = []
    for page in [root / "README.md", *sorted((root / "docs").glob("*.md"))]:
        if page.name == "benchmark-log.md":
            continue
        for path in re.findall(r"`((?:[\w.-]+/)+[\w.-]+\.(?:py|js|md))`", page.read_text()):
            if not path.startswith("runs/") and not any((home / path).is_file() for home in homes):
                missing.append(f"{page.name}: {path}")
    assert not missing, f"the docs name files that do not exist: {missing}"
