"""The GPU check's report: ``report.json`` (everything) and ``report.md`` (a table of the parts,
then each part's figures), both rewritten atomically after every part."""

from __future__ import annotations

import json
import os
import tempfile


def write_text(path: str, text: str) -> None:
    """Write ``text`` atomically: a temporary file beside ``path``, then a rename."""
    os.makedirs(os.path.dirname(path), exist_ok=True)
    handle, temporary = tempfile.mkstemp(dir=os.path.dirname(path), suffix=".tmp")
    with os.fdopen(handle, "w") as file:
        file.write(text)
    os.replace(temporary, path)


def write_json(path: str, data) -> None:
    write_text(path, json.dumps(data, indent=2, default=str))


def _cell(value) -> str:
    if isinstance(value, float):
        return f"{value:.4g}"
    if value is None:
        return "-"
    return str(value).replace("|", "/").replace("\n", " ")


def _table(rows: list) -> list:
    columns = []
    for row in rows:
        columns += [k for k in row if k not in columns]
    lines = ["| " + " | ".join(columns) + " |", "| " + " | ".join("---" for _ in columns) + " |"]
    lines += ["| " + " | ".join(_cell(row.get(c)) for c in columns) + " |" for row in rows]
    return lines


def render_markdown(report: dict) -> str:
    meta = report["meta"]
    env = report["parts"].get("env", {}).get("result", {})
    lines = [f"# GPU check: {env.get('gpu', 'no GPU (' + meta['device'] + ')')}", "",
             f"{meta['started']}, `{meta['command']}`, device {meta['device']}, sizes {meta['size']}; "
             f"{meta['finished_parts']} of {len(meta['parts'])} parts run, {meta['seconds']:.0f} s.", ""]
    if meta["device"] != "cuda":
        lines += ["**CPU run: tiny sizes, a check that the script works. These figures measure nothing.**", ""]
    lines += ["| part | status | seconds | headline |", "| --- | --- | --- | --- |"]
    for name in meta["parts"]:
        part = report["parts"].get(name, {"status": "not run"})
        headline = part.get("result", {}).get("headline") or part.get("error", "")
        lines.append(f"| {name} | {part['status']} | {_cell(part.get('seconds'))} | {_cell(headline)[:200]} |")
    for name in meta["parts"]:
        part = report["parts"].get(name)
        if part is None:
            continue
        lines += ["", f"## {name}: {part['status']}", ""]
        result = part.get("result", {})
        for note in result.get("notes", []):
            lines.append(f"- {note}")
        for key, value in result.items():
            if key in ("notes", "headline", "failures_tail", "curve"):
                continue
            if isinstance(value, list) and value and all(isinstance(v, dict) for v in value):
                lines += ["", f"{key}:", ""] + _table(value) + [""]
            else:
                lines.append(f"- {key}: {_cell(json.dumps(value, default=str) if isinstance(value, (dict, list)) else value)}")
        if part.get("error"):
            lines += ["", "```", part["error"][-3000:], "```"]
        if result.get("failures_tail"):
            lines += ["", "```", result["failures_tail"][-3000:], "```"]
    return "\n".join(lines) + "\n"


def write_report(out: str, report: dict) -> None:
    write_json(os.path.join(out, "report.json"), report)
    write_text(os.path.join(out, "report.md"), render_markdown(report))
