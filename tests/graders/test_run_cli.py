"""``python -m graders.drills.run``: JSON lines per file, exit code 0 whatever the verdicts, non-zero for misuse."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

from graders.drills.local import LocalRunner
from graders.drills.run import main

ROOT = Path(__file__).resolve().parents[2]
RIGHT = "import torch\n\ndef solution(x):\n    return torch.flip(x, [0])\n"
WRONG = "def solution(x):\n    return x\n"


@pytest.fixture
def files(tmp_path: Path) -> list[Path]:
    right, wrong = tmp_path / "right.py", tmp_path / "wrong.py"
    right.write_text(RIGHT, encoding="utf-8")
    wrong.write_text(WRONG, encoding="utf-8")
    return [right, wrong]


def test_it_prints_one_json_verdict_per_file(files: list[Path], capsys: pytest.CaptureFixture[str]) -> None:
    code = main(["--drill", "reverse-1d", *map(str, files)], make_runner=lambda device: LocalRunner(device))
    lines = capsys.readouterr().out.splitlines()
    assert code == 0
    verdicts = [json.loads(line) for line in lines]
    assert [v["file"] for v in verdicts] == [str(f) for f in files]
    assert [v["status"] for v in verdicts] == ["accepted", "wrong_answer"]
    assert all(len(v["tests"]) == v["total"] == 12 for v in verdicts)  # two examples, a twin pair, eight hidden


def test_it_grades_only_the_examples_with_visible_only(files: list[Path], capsys: pytest.CaptureFixture[str]) -> None:
    argv = ["--drill", "reverse-1d", "--visible-only", "--seed", "3", str(files[0])]
    assert main(argv, make_runner=LocalRunner) == 0
    verdict = json.loads(capsys.readouterr().out)
    assert (verdict["status"], verdict["total"], verdict["seed"]) == ("accepted", 2, 3)


def test_it_fails_for_a_missing_file_before_grading(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    made: list[str] = []
    code = main(["--drill", "reverse-1d", str(tmp_path / "nope.py")], make_runner=made.append)
    assert code == 2 and made == []
    assert "no such file" in capsys.readouterr().err


def test_it_fails_for_a_broken_drill_folder(
    tmp_path: Path, files: list[Path], capsys: pytest.CaptureFixture[str]
) -> None:
    (tmp_path / "bad.toml").write_text("slug = 1\n", encoding="utf-8")
    code = main(["--drill", "bad", "--drills-dir", str(tmp_path), str(files[0])], make_runner=LocalRunner)
    assert code == 2
    assert "bad.toml: field 'slug': must be str" in capsys.readouterr().err


def _cli(*args: str) -> subprocess.CompletedProcess[str]:
    command = [sys.executable, "-m", "graders.drills.run", *args]
    return subprocess.run(command, cwd=ROOT, capture_output=True, text=True, timeout=120, check=False)


def test_it_exits_non_zero_with_a_clear_message_for_an_unknown_drill(files: list[Path]) -> None:
    done = _cli("--drill", "no-such-drill", str(files[0]))
    assert done.returncode == 2
    assert done.stdout == ""
    assert "error: unknown drill 'no-such-drill' (known drills: " in done.stderr
    assert "reverse-1d" in done.stderr


def test_it_exits_non_zero_for_a_usage_error() -> None:
    done = _cli("--drill", "reverse-1d")
    assert done.returncode == 2
    assert "the following arguments are required: files" in done.stderr


@pytest.mark.sandbox
def test_it_grades_through_the_sandbox(files: list[Path]) -> None:
    done = _cli("--drill", "reverse-1d", *map(str, files))
    assert done.returncode == 0, done.stderr
    verdicts = [json.loads(line) for line in done.stdout.splitlines()]
    assert [v["status"] for v in verdicts] == ["accepted", "wrong_answer"]
    assert all(v["device"] == "cpu" for v in verdicts)
