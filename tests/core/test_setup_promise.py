"""The README's test command and .ci/run must be the same command."""
import re
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]


def readme_commands():
    text = (ROOT / "README.md").read_text()
    blocks = re.findall(r"```bash\n(.*?)```", text, flags=re.S)
    return [line.strip() for b in blocks for line in b.splitlines() if line.strip()]


def test_readme_has_report_and_test_commands():
    cmds = readme_commands()
    assert any(c.endswith("fluidq report") for c in cmds)
    assert any("pytest" in c for c in cmds)


def test_ci_runs_exactly_the_readme_test_command():
    test_cmd = next(c for c in readme_commands() if "pytest" in c)
    ci_lines = [l.strip() for l in (ROOT / ".ci" / "run").read_text().splitlines()]
    assert test_cmd in ci_lines
