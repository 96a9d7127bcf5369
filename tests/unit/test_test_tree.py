"""The test tree collects as one session: pytest imports test modules by their basename (there is
no package __init__), so two files of the same name anywhere under tests/ stop the whole run with
"import file mismatch"."""
from collections import Counter
from pathlib import Path

TESTS = Path(__file__).resolve().parents[1]


def test_every_test_module_has_a_basename_of_its_own():
    names = Counter(path.name for path in TESTS.rglob("test_*.py"))
    assert [name for name, count in names.items() if count > 1] == []
