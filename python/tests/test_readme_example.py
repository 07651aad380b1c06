"""python/README.md's worked example runs top to bottom as a script, its ``patch`` part included."""

from __future__ import annotations

import re
import subprocess
import sys
from pathlib import Path

README = Path(__file__).resolve().parents[1] / "README.md"


def test_the_worked_example_runs_as_a_script(tmp_path: Path) -> None:
    blocks = re.findall(r"```python\n(.*?)```", README.read_text(encoding="utf-8"), re.S)
    assert len(blocks) >= 2 and "mmaemu.patch" in blocks[1]
    script = tmp_path / "example.py"
    script.write_text("\n".join(blocks[:2]) + '\nprint("END OF EXAMPLE")\n', encoding="utf-8")
    done = subprocess.run([sys.executable, str(script)], capture_output=True, text=True, timeout=600,
                          cwd=tmp_path)
    assert done.returncode == 0, done.stderr[-4000:]
    lines = done.stdout.splitlines()
    assert lines[0].startswith("SplitDecision(S=1, scheme='none', source='table'"), done.stdout[:2000]
    assert any(line.startswith("AssertionError: ") for line in lines)  # the deliberate difference, reported
    assert lines[-1] == "END OF EXAMPLE"
    # What the README says the example prints is what it prints (its elided lines, "...", aside).
    quoted = re.search(r"prints\n\n```text\n(.*?)```", README.read_text(encoding="utf-8"), re.S)
    assert quoted is not None
    for line in quoted.group(1).splitlines():
        if line.strip() != "...":
            assert line in lines, f"the README quotes {line!r}; the example printed:\n" + "\n".join(lines[:12])
