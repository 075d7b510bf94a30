"""The example of Documentation/python.md, extracted verbatim and run from the source tree's top."""
import os
import re

TOP = os.path.abspath(os.path.join(os.path.dirname(__file__), "..", ".."))


def test_documentation_example_runs(monkeypatch, capsys):
    text = open(os.path.join(TOP, "Documentation", "python.md")).read()
    blocks = re.findall(r"```python\n(.*?)```", text, re.S)
    assert blocks, "no ```python block in Documentation/python.md"
    monkeypatch.chdir(TOP)
    for code in blocks:
        exec(compile(code, "Documentation/python.md", "exec"), {})
    out = capsys.readouterr().out
    assert "sim" in out and "inner dimensions" in out and "22 unknown" in out
