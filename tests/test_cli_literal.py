"""The CLI's human output prints user text literally (issue 26 s4): no Rich markup, no emoji codes.

`pack export lib:notes` printed `lib🎶` (":notes:" read as an emoji code) and a title "Use [admin] :warning:" showed as
"Use  ⚠" ("[admin]" read as a style tag). Each through the real CLI in a subprocess.
"""
from __future__ import annotations

from .test_cli_habits import cli, home, initialized  # noqa: F401  (fixtures)

TITLE = "Use [admin] :warning: [bold]x[/bold]"
BODY = "Body with [red]markup[/red] and :notes: and :smile:."


def _workspace(home, tmp_path):  # noqa: F811
    body = tmp_path / "intro.md"
    body.write_text(BODY)
    cli("pack", "new", "notes", home=home)
    cli("doc", "put", "lib:notes", "intro", "--title", TITLE, "--summary", "About [admin] :notes:", "--file", body,
        home=home)


def test_pack_export_prints_the_selector_literally(home, tmp_path):  # noqa: F811
    _workspace(home, tmp_path)
    proc = cli("pack", "export", "lib:notes", tmp_path / "notes-pack", home=home)
    assert "lib:notes" in proc.stdout and "🎶" not in proc.stdout


def test_titles_and_bodies_print_as_written(home, tmp_path):  # noqa: F811
    _workspace(home, tmp_path)
    for args in (("read", "lib:notes", "intro"), ("docs", "lib:notes"), ("search", "lib:notes", "admin"),
                 ("pack", "list")):
        proc = cli(*args, env={"COLUMNS": "200"}, home=home)
        shown = proc.stdout
        assert "⚠" not in shown and "🎶" not in shown and "😄" not in shown, (args, shown)
        if args[0] != "pack":
            assert "[admin]" in shown and ":warning:" in shown, (args, shown)
        else:
            assert "lib:notes" in shown, shown
    read = cli("read", "lib:notes", "intro", home=home).stdout
    assert BODY in read and TITLE in read
