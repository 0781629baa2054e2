"""The screenshot recipes of docs/viewer.md, run as written on each kind of page ``view`` writes: a
model's and a compressed file's.  Each must shoot the finished picture, the one ``ironlearn render``
draws, not the blank canvas Chromium's ``--screenshot`` took of a compressed file's page before
its worker had decoded it.

Each recipe runs in a process of its own: Playwright's synchronous API cannot start inside the
session's browser (``conftest.py``)."""

import os
import pathlib
import re
import shlex
import subprocess
import sys

import pytest

from helpers import patience, waves
from ironlearn import codec
from ironlearn.cli import main
from models import save_model
from pages import MIN_PSNR_DB, psnr_db, read_rgb

DOCS = pathlib.Path(__file__).resolve().parents[2] / "docs" / "viewer.md"
#: The page the recipes name, which the test replaces with its own.
RECIPE_PAGE = "file:///tmp/shotrun/viewer.html"
SIZE = (48, 32)


def recipes() -> list[tuple[str, str]]:
    """``(kind, text)`` of each recipe in the Screenshots section: ``python`` blocks, and commands
    indented as code that start with ``chromium``."""
    text = DOCS.read_text(encoding="utf-8")
    section = text[text.index("## Screenshots"):]
    section = section[:section.index("\n## ", 1)]
    found = [("python", code) for code in re.findall(r"```python\n(.*?)```", section, re.S)]
    commands = re.findall(r"^    (chromium .*?)(?<!\\)$", section, re.M | re.S)
    return found + [("shell", command.replace("\\\n", " ")) for command in commands]


@pytest.fixture(scope="module")
def pages(tmp_path_factory):
    """kind -> (page, the picture ``render`` draws at SIZE)."""
    folder = tmp_path_factory.mktemp("recipe")
    model = save_model(folder / "model.npz", "hashgrid")
    packed = folder / "picture.ilc"
    packed.write_bytes(codec.encode(waves(32, 48, 3), bpp=2.0, seconds=0.5))
    made = {}
    for kind, source in (("model", model), ("compressed file", packed)):
        page, expected = folder / f"{source.stem}.html", folder / f"{source.stem}-render.png"
        assert main(["view", str(source), "-o", str(page)]) == 0
        assert main(["render", str(source), "--size", f"{SIZE[0]}x{SIZE[1]}", "-o", str(expected)]) == 0
        made[kind] = (page, read_rgb(expected))
    return made


def shoot(kind: str, recipe: str, url: str, folder) -> None:
    """Run ``recipe`` on ``url`` in ``folder``, where it writes shot.png."""
    assert RECIPE_PAGE in recipe, f"the recipe no longer opens {RECIPE_PAGE}; update this test"
    recipe = recipe.replace(RECIPE_PAGE, url)
    if kind == "python":
        command = [sys.executable, "-c", recipe]
    else:  # as the page says: --no-sandbox only for root
        command = shlex.split(recipe) + (["--no-sandbox"] if os.geteuid() == 0 else [])
    done = subprocess.run(command, cwd=folder, capture_output=True, text=True, timeout=patience(300))
    assert done.returncode == 0, done.stderr[-2000:]


@pytest.mark.parametrize("kind", ["model", "compressed file"])
def test_every_screenshot_recipe_shoots_the_finished_picture(pages, tmp_path, kind):
    if not os.path.exists("/usr/bin/chromium"):
        pytest.skip("no Chromium at /usr/bin/chromium (.ci/run installs it with apt-get install chromium)")
    page, expected = pages[kind]
    found = recipes()
    assert any(language == "python" for language, _ in found)
    for number, (language, recipe) in enumerate(found):
        folder = tmp_path / str(number)
        folder.mkdir()
        shoot(language, recipe, f"{page.as_uri()}#bare&size={SIZE[0]}x{SIZE[1]}", folder)
        drawn = read_rgb(folder / "shot.png")[:SIZE[1], :SIZE[0]]
        assert psnr_db(drawn, expected) >= MIN_PSNR_DB, f"{language} recipe {number}: not the finished picture"
