"""The shape of the code: layers that import only downwards, functions a reader can hold in mind.

Read from the source with ``ast``, without importing it: a lazy import inside a function counts
as much as one at the top of a module.
"""

import ast
import re
import pathlib

import pytest

ROOT = pathlib.Path(__file__).resolve().parents[1]
SRC = ROOT / "src" / "ironlearn"
MAX_FUNCTION_LINES = 60
MAX_MODULE_LINES = 450
#: The layers, lowest first: a package imports only from its own layer and those below it.
#: The modules at the top of ``ironlearn`` (backend, files, kernels, ...) are the lowest; the
#: package's ``__init__`` (the short way in) is above everything.
LAYERS = ("", "nn", "optim", "image", "train", "codec", "drawable", "viewer", "fitting", "api", "cli", "__init__", "__main__")


def python_files(*folders):
    return sorted(path for folder in folders for path in folder.rglob("*.py"))


def layer_of(module: str) -> int:
    """``module`` is dotted under ironlearn (``fitting.run``); its layer's index in :data:`LAYERS`."""
    head = module.split(".")[0]
    return LAYERS.index(head) if head in LAYERS else 0


def imported_modules(path: pathlib.Path) -> set[str]:
    """The ironlearn modules ``path`` imports, dotted under ironlearn (``fitting.options``)."""
    package = path.relative_to(SRC).parent.parts
    found = set()
    for node in ast.walk(ast.parse(path.read_text())):
        if isinstance(node, ast.ImportFrom) and node.level:
            base = list(package[:len(package) - node.level + 1])
            if node.module:
                found.add(".".join(base + [node.module]))
            else:  # from .. import codec
                found.update(".".join(base + [alias.name]) for alias in node.names)
        elif isinstance(node, ast.ImportFrom) and (node.module or "").startswith("ironlearn."):
            found.add(node.module.removeprefix("ironlearn."))
    return found


@pytest.mark.parametrize("path", python_files(SRC), ids=lambda p: str(p.relative_to(SRC)))
def test_a_module_imports_only_from_its_layer_and_below(path):
    module = ".".join(path.relative_to(SRC).with_suffix("").parts).removesuffix(".__init__")
    if module == "__init__":
        return
    upward = [name for name in imported_modules(path) if layer_of(name) > layer_of(module)]
    assert not upward, f"{module} imports {upward}, from a layer above its own"


@pytest.mark.parametrize("path", python_files(SRC, ROOT / "benchmarks"), ids=lambda p: p.name)
def test_functions_and_modules_stay_short(path):
    text = path.read_text()
    long = [f"{node.name} ({node.end_lineno - node.lineno + 1} lines)" for node in ast.walk(ast.parse(text))
            if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef))
            and node.end_lineno - node.lineno + 1 > MAX_FUNCTION_LINES]
    assert not long, f"over {MAX_FUNCTION_LINES} lines: {', '.join(long)}"
    if SRC in path.parents:
        assert text.count("\n") <= MAX_MODULE_LINES


def _command_modules() -> dict:
    """The cli modules that are commands (each adds its parser), by module name."""
    return {path.stem: path for path in sorted((SRC / "cli").glob("*.py")) if "def add_parser(" in path.read_text()}


@pytest.mark.parametrize("name", sorted(_command_modules()))
def test_no_command_imports_another(name):
    """What two commands share lives in a helper module (common, fit_options, argtypes, status)."""
    commands = _command_modules()
    others = {f"cli.{other}" for other in commands if other != name}
    assert not imported_modules(commands[name]) & others


#: What a command module may import from outside cli/: the API (which composes every job) and
#: the errors it raises.  The helpers (argtypes, common, fit_options, status) may import more: the
#: parser's data, the flags, the exit codes.
COMMAND_IMPORTS = {"api", "errors"}


@pytest.mark.parametrize("name", sorted(_command_modules()))
def test_a_command_parses_calls_the_api_and_prints(name):
    """A command module imports, from outside cli/, the API and the errors alone (issue 55: a
    command parses, makes one call to the API, prints)."""
    outside = {module for module in imported_modules(_command_modules()[name]) if not module.startswith("cli")}
    assert outside <= COMMAND_IMPORTS, \
        f"cli/{name}.py composes a job itself ({sorted(outside - COMMAND_IMPORTS)}); let ironlearn.api do it"


#: The kinds of picture, and the questions that tell them apart, that only the seam (drawable/) and
#: the codec, which defines a compressed file, may ask.
PICTURE_KINDS = {"Run", "CompressedFile", "Decoded"}
KIND_QUESTIONS = {"is_compressed", "is_run_model"}


def _kinds_asked(tree) -> list[str]:
    """Where ``tree`` asks which kind a picture is: ``isinstance`` (or ``issubclass``) on a kind,
    however imported or spelt (``drawable.Run``, ``(Run, Sequential)``), and the kind questions."""
    asked = []
    for node in ast.walk(tree):
        if isinstance(node, ast.Call) and isinstance(node.func, ast.Name) and node.func.id in ("isinstance",
                                                                                               "issubclass"):
            named = {part.id if isinstance(part, ast.Name) else part.attr for part in ast.walk(node.args[1])
                     if isinstance(part, (ast.Name, ast.Attribute))}
            asked += [f"line {node.lineno}: isinstance on {kind}" for kind in sorted(named & PICTURE_KINDS)]
        name = node.id if isinstance(node, ast.Name) else node.attr if isinstance(node, ast.Attribute) else None
        if name in KIND_QUESTIONS:
            asked.append(f"line {node.lineno}: {name}")
    return asked


@pytest.mark.parametrize("path", [path for path in python_files(SRC) if path.relative_to(SRC).parts[0]
                                  not in ("drawable", "codec")], ids=lambda p: str(p.relative_to(SRC)))
def test_only_the_picture_seam_tells_a_model_from_a_compressed_file(path):
    """Who draws, describes or pages a picture asks the :class:`ironlearn.drawable.Picture`, not its
    kind: ``isinstance`` on a kind and "is it compressed?" live in drawable/ (and the codec)."""
    asked = _kinds_asked(ast.parse(path.read_text()))
    assert not asked, f"ask the picture (ironlearn.drawable) instead: {asked}"


def test_the_seam_test_sees_each_spelling():
    spellings = ["isinstance(p, drawable.CompressedFile)", "isinstance(p, (Run, Sequential))",
                 "issubclass(type(p), codec.Decoded)", "codec.is_compressed(path)", "drawable.is_run_model(path)"]
    assert all(_kinds_asked(ast.parse(text)) for text in spellings)
    assert not _kinds_asked(ast.parse("isinstance(p, Sequential)"))


#: The text outside cli/ that names a command's flag because it is an artifact, not a message to a
#: caller, by module and how many: the two notes on a run's page (viewer/run.py: metrics.json is of
#: another step; the training picture left out), which the page shows alike to ``ironlearn view``
#: and ``ironlearn.view``; and fit-many's summary.csv (fitting/many/task.py), a file in the
#: command's language whoever wrote it.  Every message names its option as OptionError,
#: WordedError and Note do, and the command words it with its flag (cli/status.py, cli/common.py).
ARTIFACTS = {"viewer/run.py": 2, "fitting/many/task.py": 1}
#: A flag: ``--lr``, or one an f-string spells from a value (``--{}``).
_FLAG = re.compile(r"(?<![\w-])--(?:[a-z][a-z0-9-]*|\{\})")


def _strings(tree):
    """The strings of a module, its docstrings left out; an f-string is read whole, each value in it
    as ``{}`` (so a whole command line, which holds ``ironlearn ``, is one string)."""
    docstrings = {id(node.body[0].value) for node in ast.walk(tree)
                  if isinstance(node, (ast.Module, ast.ClassDef, ast.FunctionDef, ast.AsyncFunctionDef))
                  and node.body and isinstance(node.body[0], ast.Expr) and isinstance(node.body[0].value, ast.Constant)}
    pieces = {id(value) for node in ast.walk(tree) if isinstance(node, ast.JoinedStr) for value in node.values}
    return [("".join(value.value if isinstance(value, ast.Constant) else "{}" for value in node.values)
             if isinstance(node, ast.JoinedStr) else node.value) for node in ast.walk(tree)
            if isinstance(node, ast.JoinedStr) or (isinstance(node, ast.Constant) and isinstance(node.value, str)
                                                   and id(node) not in docstrings | pieces)]


def test_the_library_names_options_not_flags():
    """Outside cli/, a message names an option by its Python name (OptionError's ``{name}``); the
    command words it with its flag, as it words a whole command line (``ResumeNote``).  Compiler
    options do not count; a ``flag()`` call counts as a flag."""
    found = {}
    for path in python_files(SRC):
        where = str(path.relative_to(SRC))
        if where.startswith("cli/"):
            continue
        tree = ast.parse(path.read_text())
        for text in _strings(tree):
            if not text.startswith(("--std", "--fmad", "--gpu")):
                found[where] = found.get(where, 0) + len(_FLAG.findall(text))
        if where != "fitting/options.py":  # where flag() is defined, for the command
            found[where] = found.get(where, 0) + sum(isinstance(node, ast.Call) and isinstance(node.func, ast.Name)
                                                     and node.func.id == "flag" for node in ast.walk(tree))
    named = {where: count for where, count in found.items() if count != ARTIFACTS.get(where, 0)}
    assert not named, f"name the option, not its flag (OptionError, WordedError, Note): {named}"


#: The codec's rooms by job, lowest first (after Cool-chic's layout): a codec module imports only
#: from its own room and those below it, and the rooms below ``search`` (all that reads a file)
#: import nothing of training.
CODEC_ROOMS = ("shapes", "model", "bitstream", "quantise", "search")


@pytest.mark.parametrize("path", python_files(SRC / "codec"), ids=lambda p: str(p.relative_to(SRC / "codec")))
def test_the_codec_is_laid_out_by_job(path):
    parts = path.relative_to(SRC / "codec").with_suffix("").parts
    if parts == ("__init__",):
        return
    room = CODEC_ROOMS.index(parts[0])
    imported = imported_modules(path)
    upward = [name for name in imported if name.startswith("codec.")
              and CODEC_ROOMS.index(name.split(".")[1]) > room]
    assert not upward, f"codec/{'/'.join(parts)} imports {upward}, from a room above its own"
    if CODEC_ROOMS[room] != "search":
        training = [name for name in imported if name.split(".")[0] in ("train", "optim")]
        assert not training, f"codec/{'/'.join(parts)} reads a file, yet imports {training}"


def test_the_viewers_python_holds_no_reference_only_the_tests_use():
    """The page's own Python (its plan, shader and payloads) is what ironlearn runs: every public
    function and class of ``viewer/`` is used by ironlearn's code or by the command line, not only by
    tests (a Python twin that only holds the page's JavaScript to account, like a compressed
    picture's plan and shader, lives in ``tests/viewer/``).  The package's ``__init__`` re-exports,
    which is not a use."""
    viewer = SRC / "viewer"
    sources = {path: path.read_text() for path in python_files(SRC) if path.name != "__init__.py" or path.parent != viewer}
    unused = []
    for path in python_files(viewer):
        if path.name == "__init__.py":
            continue
        for node in ast.parse(sources[path]).body:
            if isinstance(node, (ast.FunctionDef, ast.ClassDef)) and not node.name.startswith("_"):
                pattern = re.compile(rf"\b{node.name}\b")
                uses = sum(len(pattern.findall(text)) for text in sources.values())
                if uses <= 1:  # its definition alone
                    unused.append(f"viewer/{path.name}: {node.name}")
    assert not unused, f"used by nothing in ironlearn (a test's reference belongs in tests/viewer/): {unused}"


#: Where training loops and optimizers live: every other timed loop that trains is a Trainer run.
TRAINING_HOMES = ("train", "optim")


def _hand_written_training(tree) -> list[str]:
    """A hand-written optimizer or training loop in ``tree``: Adam's second-moment decay (0.999)
    written out, or a loop run against the clock that updates arrays in place."""
    found = [f"line {node.lineno}: Adam's 0.999" for node in ast.walk(tree)
             if isinstance(node, ast.Constant) and node.value == 0.999]
    for loop in (node for node in ast.walk(tree) if isinstance(node, ast.While)):
        timed = {n.attr if isinstance(n, ast.Attribute) else n.id for n in ast.walk(loop.test)
                 if isinstance(n, (ast.Name, ast.Attribute))} & {"perf_counter", "monotonic", "clock"}
        updates = [n for n in ast.walk(loop) if isinstance(n, ast.AugAssign) and isinstance(n.target, ast.Subscript)]
        if timed and updates:
            found.append(f"line {loop.lineno}: a loop against the clock that updates arrays")
    return found


@pytest.mark.parametrize("path", [path for path in python_files(SRC) if path.relative_to(SRC).parts[0]
                                  not in TRAINING_HOMES], ids=lambda p: str(p.relative_to(SRC)))
def test_every_timed_training_loop_is_a_trainer_run(path):
    """One timed driver (train/timed.py): the fit, the codec's MLP, its latents and its context
    model all train as Trainer runs on a plan, none by a loop and an optimizer of its own."""
    found = _hand_written_training(ast.parse(path.read_text()))
    assert not found, f"train it with ironlearn.train.Trainer and train.timed.run_planned: {found}"


def test_the_training_loop_test_sees_a_hand_written_adam():
    loop = ("while time.perf_counter() - started < seconds:\n"
            "    m, v = 0.9 * m + 0.1 * g, 0.999 * v + 0.001 * g ** 2\n"
            "    layer[j] -= rate * m / (np.sqrt(v) + 1e-8)\n")
    assert len(_hand_written_training(ast.parse(loop))) == 2
