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
