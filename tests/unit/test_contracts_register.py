"""docs/contracts.md, the register of upstream contracts: every row names its source (a commit, a
tag or a module version) and at least one test, and every test it names exists."""
import re

from helpers import ROOT

REGISTER = ROOT / "docs" / "contracts.md"
TEST_REF = re.compile(r"(tests/[\w/]+\.py)(?:::(\w+))?")
SOURCE = re.compile(r"\b[0-9a-f]{7,40}\b|\bv?\d+\.\d+\.\d+\b|\bv\d+\.\d+\b|release-\d+\.\d+")


def rows():
    out = []
    for number, line in enumerate(REGISTER.read_text().splitlines(), 1):
        cells = [c.strip() for c in line.strip().strip("|").split("|")] if line.startswith("|") else []
        if len(cells) >= 3 and cells[0] not in ("relies on", "") and not set(cells[0]) <= set("-"):
            out.append((number, cells))
    return out


def test_every_row_cites_a_source_at_a_commit_or_version_and_a_test():
    found = rows()
    assert len(found) > 100
    assert ["line %d: %s" % (number, cells[-2][:100]) for number, cells in found if not SOURCE.search(cells[-2])] == []
    assert ["line %d: %s" % (number, cells[-1][:100]) for number, cells in found if not TEST_REF.search(cells[-1])] == []


def test_every_test_the_register_names_exists():
    missing = []
    for number, cells in rows():
        for path, name in TEST_REF.findall(cells[-1]):
            source = ROOT / path
            if not source.exists() or (name and not re.search(r"def %s\b" % re.escape(name), source.read_text())):
                missing.append("line %d: %s%s" % (number, path, "::" + name if name else ""))
    assert missing == []
