"""A fixed number of seeded cases of bench/fuzz_parser.py on every CI run (longer runs: the script)."""

from __future__ import annotations

import importlib.util
import math
import sys
from pathlib import Path
from types import ModuleType

ROOT = Path(__file__).resolve().parents[2]


def load_fuzzer() -> ModuleType:
    spec = importlib.util.spec_from_file_location("fuzz_parser", ROOT / "bench" / "fuzz_parser.py")
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules.setdefault("fuzz_parser", module)
    spec.loader.exec_module(module)
    return module


def test_parser_survives_a_short_mutation_fuzz(tmp_path: Path) -> None:
    fuzzer = load_fuzzer()
    result = fuzzer.fuzz(math.inf, cases=150, seed=20260301, hang_s=60, out_dir=tmp_path)
    assert result.runs == 150, result
    assert result.findings == [], result.findings


def test_the_fuzzer_reports_what_it_finds(tmp_path: Path) -> None:
    """The harness itself can fail: an unexpected exception becomes a saved finding."""
    fuzzer = load_fuzzer()

    def broken(data: bytes, **_: object) -> None:
        raise KeyError("boom")

    result = fuzzer.fuzz(math.inf, cases=3, seed=1, out_dir=tmp_path, target=broken)
    assert result.runs == len(result.findings) == 3
    assert list(tmp_path.glob("*.bin")) and "KeyError" in next(tmp_path.glob("*.txt")).read_text()
