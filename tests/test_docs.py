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


def test_the_docs_stay_documentation_sized():
    """The pages answer a user's questions about today, in at most 2,500 lines: history goes to the
    log, and the GPU reports (docs/gpu/, as the check wrote them) are records, not pages."""
    import pathlib

    docs = pathlib.Path(__file__).resolve().parents[1] / "docs"
    pages = [page for page in docs.glob("*.md") if page.name != "benchmark-log.md"]
    lines = sum(len(page.read_text().splitlines()) for page in pages)
    assert lines <= 2500, f"docs/ holds {lines} lines of pages besides the log; move history to benchmark-log.md"


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
              if not re.search(r"python benchmarks/\w+(?:\.py)?\b|`ironlearn \w", section)]
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


def _named_in_backticks(text: str) -> set:
    """Dotted names in backticks, ``encoder.BLAS_THREADS`` or ``train.timed.run_planned`` (a call's
    arguments dropped): what a page says the code holds."""
    import re

    names = set()
    for token in re.findall(r"`([A-Za-z_][\w.]*\.[A-Za-z_]\w*)(?:\([^`]*\))?`", text):
        if not re.search(r"\.(py|js|md|png|gif|ilc|npz|csv|json|html|cu|cuh|glsl|toml)$|\.\d", token):
            names.add(token)
    return names


def _resolves(name: str, modules: dict) -> bool | None:
    """Whether ``name`` is an attribute of the module its longest dotted prefix names (the module's
    dotted path or any tail of it: ``encoder``, ``search.encoder``); None where no prefix is a
    module of ironlearn's (``np.clip``, ``self.lr``)."""
    import importlib

    if name in modules:  # a module itself, imported or not yet
        return True
    parts = name.split(".")
    for cut in range(len(parts) - 1, 0, -1):
        found = modules.get(".".join(parts[:cut]))
        if not found:
            continue
        for module in found:
            value = importlib.import_module(module)
            try:
                for attribute in parts[cut:]:
                    value = getattr(value, attribute)
            except AttributeError:
                continue
            return True
        return False
    return None


def test_every_module_and_constant_a_page_names_exists():
    """A dotted name in backticks whose start is one of ironlearn's modules (`encoder.BLAS_THREADS`,
    `ratecontrol.Clock.files`, `ironlearn.render`) names something that module holds: a renamed
    constant or function is renamed in the docs too.  The log keeps its history as it was written."""
    import pathlib

    root = pathlib.Path(__file__).resolve().parents[1]
    src = root / "src"
    modules = {}
    for path in (src / "ironlearn").rglob("*.py"):
        dotted = ".".join(path.relative_to(src).with_suffix("").parts).removesuffix(".__init__")
        parts = dotted.split(".")
        for start in range(len(parts)):
            modules.setdefault(".".join(parts[start:]), []).append(dotted)
    # the check can fail, and leaves what is not ironlearn's alone
    assert _resolves("encoder.NO_SUCH_CONSTANT", modules) is False and _resolves("np.clip", modules) is None
    assert _resolves("search.encoder.BLAS_THREADS", modules) and _resolves("ratecontrol.Clock.files", modules)
    missing = []
    for page in [root / "README.md", *sorted((root / "docs").glob("*.md"))]:
        if page.name == "benchmark-log.md":
            continue
        for name in sorted(_named_in_backticks(page.read_text())):
            if _resolves(name, modules) is False:
                missing.append(f"{page.name}: {name}")
    assert not missing, f"the docs name what the code does not hold: {missing}"
