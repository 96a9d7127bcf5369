"""docs/contracts.md, the register of upstream contracts: every row names its source (a commit, a
tag or a module version) and at least one test, and every test it names exists.

A source can be cited in a checkable form, in backquotes:
- `go:MODULE@VERSION/PATH`: a file of a Go module. The version must be pinned by a go.sum of this
  repository (so it is a real module version, its content fixed by its hash); where the module
  cache holds it, its content must be the pinned one and PATH must exist in it.
- `tar:FILE/PATH`: a file in one of the upstream tarballs of ../shared/upstream; where the tarball
  is on the machine, PATH must be in it.
- `git:OWNER/REPO@COMMIT:PATH`: a file of a repository at a commit that is not on the machine; the
  row must name with `fact:FILE` the file that records that reading (in ../shared/facts, or this
  repository's docs/readings), and that file must name the repository and the commit.
The rows of the sections listed in CHECKED_SECTIONS must each cite one source in that form.
"""
import re
import tarfile

import pytest

from gomod import cache_root, escape, module_dir
from helpers import ROOT

REGISTER = ROOT / "docs" / "contracts.md"
TEST_REF = re.compile(r"(tests/[\w/]+\.py)(?:::(\w+))?")
SOURCE = re.compile(r"\b[0-9a-f]{7,40}\b|\bv?\d+\.\d+\.\d+\b|\bv\d+\.\d+\b|release-\d+\.\d+")
CITATION = re.compile(r"`(go|tar|git|fact):([^`\s]+)`")
GIT = re.compile(r"^([\w.-]+/[\w.-]+)@([0-9a-f]{7,40}):(\S+)$")
SHARED = ROOT.parent / "shared"
# Where a `fact:FILE` is looked up: the shared facts, then the readings kept in this repository.
FACT_DIRS = (SHARED / "facts", ROOT / "docs" / "readings")
# The reading of what kfocp relies on without a row (its first table, one reliance a line): each
# of its rows is answered by a register row that carries `gap:N` (N its 1-based row number there).
GAPS = SHARED / "facts" / "register-gaps.md"
GAP = re.compile(r"`gap:(\d+(?:,\d+)*)`")
# The sections whose every row cites its source in a checkable form.
CHECKED_SECTIONS = ("NVIDIA GPU operator and Node Feature Discovery", "Knative Serving and KServe (OpenShift Serverless)",
                    "machine-api and proactive-node-scaling-operator", "OLM: what the GPU and Serverless roles rely on",
                    "cert-manager")


def rows(text=None):
    out = []
    section = ""
    for number, line in enumerate((text if text is not None else REGISTER.read_text()).splitlines(), 1):
        if line.startswith("## "):
            section = line[3:].strip()
        cells = [c.strip() for c in line.strip().strip("|").split("|")] if line.startswith("|") else []
        if len(cells) >= 3 and cells[0] not in ("relies on", "") and not set(cells[0]) <= set("-"):
            out.append((number, cells, section))
    return out


def go_sums():
    """{(module, version): h1 of its content} of every go.sum of the repository."""
    pins = {}
    for path in ROOT.rglob("go.sum"):
        if any(part.startswith(".") for part in path.relative_to(ROOT).parts):
            continue
        for line in path.read_text().splitlines():
            parts = line.split()
            if len(parts) == 3 and not parts[1].endswith("/go.mod"):
                pins[(parts[0], parts[1])] = parts[2]
    return pins


_MEMBERS = {}


def _tar_members(path):
    if path not in _MEMBERS:
        with tarfile.open(path) as tar:
            _MEMBERS[path] = set(m.name[2:] if m.name.startswith("./") else m.name for m in tar.getmembers())
    return _MEMBERS[path]


def check_go(value, pins):
    module, rest = (value.split("@", 1) + [""])[:2]
    version, path = (rest.split("/", 1) + [""])[:2]
    if not (module and version and path):
        return "%s is not MODULE@VERSION/PATH" % value
    if (module, version) not in pins:
        return "%s@%s is pinned by no go.sum of the repository (tests/upstream/go.sum holds the modules read)" % (
            module, version)
    found = module_dir(module, version)
    if found is None:
        return None
    ziphash = cache_root() / "cache" / "download" / escape(module) / "@v" / (escape(version) + ".ziphash")
    if ziphash.is_file() and ziphash.read_text().strip() != pins[(module, version)]:
        return "the module cache's %s@%s is not the content go.sum pins" % (module, version)
    if not (found / path).exists():
        return "%s does not exist in %s@%s" % (path, module, version)
    return None


def check_tar(value):
    name, path = (value.split("/", 1) + [""])[:2]
    tarball = SHARED / "upstream" / name
    if not tarball.is_file():
        return None
    members = _tar_members(tarball)
    if path.rstrip("/") not in members and not any(m.startswith(path.rstrip("/") + "/") for m in members):
        return "%s is not in %s" % (path, name)
    return None


def fact_file(name):
    """The fact file `name` where it is on the machine, else None."""
    return next((folder / name for folder in FACT_DIRS if (folder / name).is_file()), None)


def check_git(value, facts):
    match = GIT.match(value)
    if not match:
        return "%s is not OWNER/REPO@COMMIT:PATH (a commit of 7 to 40 hex digits)" % value
    if not (SHARED / "facts").is_dir() and not any(fact_file(fact) for fact in facts):
        return None
    repo, commit = match.group(1), match.group(2)
    for fact in facts:
        path = fact_file(fact)
        if path is not None:
            text = path.read_text()
            if repo in text and commit[:8] in text:
                return None
    return "%s@%s is recorded in no fact file the row names (%s)" % (repo, commit, ", ".join(facts) or "none")


def problems(text=None):
    """What is wrong with the checkable citations of the register (or of `text`)."""
    pins = go_sums()
    found = []
    for number, cells, section in rows(text):
        source = cells[-2]
        cited = CITATION.findall(source)
        facts = [value for kind, value in cited if kind == "fact"]
        for fact in facts:
            if (SHARED / "facts").is_dir() and fact_file(fact) is None:
                found.append("line %d: fact file %s does not exist" % (number, fact))
        for kind, value in cited:
            error = (check_go(value, pins) if kind == "go" else check_tar(value) if kind == "tar"
                     else check_git(value, facts) if kind == "git" else None)
            if error:
                found.append("line %d: %s" % (number, error))
        if (section in CHECKED_SECTIONS or GAP.search(source)) and not any(c[0] in ("go", "tar", "git") for c in cited):
            found.append("line %d: cites no source in a checkable form (go:, tar: or git:): %s" % (number, source[:80]))
    return found


def test_every_row_cites_a_source_at_a_commit_or_version_and_a_test():
    found = rows()
    assert len(found) > 100
    assert ["line %d: %s" % (row[0], row[1][-2][:100]) for row in found if not SOURCE.search(row[1][-2])] == []
    assert ["line %d: %s" % (row[0], row[1][-1][:100]) for row in found if not TEST_REF.search(row[1][-1])] == []


def test_every_test_the_register_names_exists():
    missing = []
    for number, cells, _section in rows():
        for path, name in TEST_REF.findall(cells[-1]):
            source = ROOT / path
            if not source.exists() or (name and not re.search(r"def %s\b" % re.escape(name), source.read_text())):
                missing.append("line %d: %s%s" % (number, path, "::" + name if name else ""))
    assert missing == []


def test_every_checkable_citation_holds():
    assert problems() == []
    assert all(section in [row[2] for row in rows()] for section in CHECKED_SECTIONS)


GPU_OPERATOR = "github.com/NVIDIA/gpu-operator@v0.0.0-20250917190837-d73a0086a6ba"


def _register(*sources):
    lines = ["## NVIDIA GPU operator and Node Feature Discovery", "", "| relies on | source | test |", "|---|---|---|"]
    lines += ["| a planted row | %s | tests/unit/test_contracts_register.py |" % source for source in sources]
    return "\n".join(lines)


def test_a_made_up_source_fails():
    assert problems(_register("made-up/repo @ deadbeef")) == [
        "line 5: cites no source in a checkable form (go:, tar: or git:): made-up/repo @ deadbeef"]
    assert problems(_register("`go:github.com/made-up/repo@v0.0.0-20250101000000-deadbeefdead/x.go`")) == [
        "line 5: github.com/made-up/repo@v0.0.0-20250101000000-deadbeefdead is pinned by no go.sum of the repository "
        "(tests/upstream/go.sum holds the modules read)"]
    made_up_git = problems(_register("`git:made-up/repo@deadbeef:x.go` `fact:gpu-autoscaling-serverless-readings.md`"))
    assert made_up_git == ["line 5: made-up/repo@deadbeef is recorded in no fact file the row names "
                           "(gpu-autoscaling-serverless-readings.md)"]
    assert problems(_register("`git:made-up/repo@deadbeef`")) == [
        "line 5: made-up/repo@deadbeef is not OWNER/REPO@COMMIT:PATH (a commit of 7 to 40 hex digits)"]


def test_a_path_that_does_not_exist_at_the_cited_version_fails():
    real = "`go:%s/controllers/object_controls.go`" % GPU_OPERATOR
    assert problems(_register(real)) == []
    if module_dir(*GPU_OPERATOR.split("@")) is not None:
        assert problems(_register("`go:%s/controllers/made_up.go`" % GPU_OPERATOR)) == [
            "line 5: controllers/made_up.go does not exist in %s" % GPU_OPERATOR]
    if (SHARED / "upstream" / "kubeflow-manifests-v1.10.2.tar.gz").is_file():
        assert problems(_register("`tar:kubeflow-manifests-v1.10.2.tar.gz/applications/kserve/kserve/kserve_kubeflow.yaml`")) == []
        assert problems(_register("`tar:kubeflow-manifests-v1.10.2.tar.gz/applications/made-up.yaml`")) == [
            "line 5: applications/made-up.yaml is not in kubeflow-manifests-v1.10.2.tar.gz"]


def gap_rows(text):
    """(program, reliance) of each row of the first table of register-gaps.md, in order."""
    out = []
    for line in text.split("\n\n| key |")[0].splitlines():
        cells = [c.strip() for c in line.strip().strip("|").split("|")] if line.startswith("| ") else []
        if len(cells) >= 4 and cells[0] != "program" and not set(cells[0]) <= set("-"):
            out.append((cells[0], cells[1]))
    return out


def answered(text=None):
    """{gap number: [register lines that answer it]}."""
    found = {}
    for number, cells, _section in rows(text):
        for match in GAP.findall(cells[-2]):
            for gap in match.split(","):
                found.setdefault(int(gap), []).append(number)
    return found


@pytest.mark.skipif(not GAPS.is_file(), reason="../shared/facts/register-gaps.md is absent")
def test_every_reliance_the_reading_found_has_a_row():
    gaps = gap_rows(GAPS.read_text())
    assert len(gaps) == 106, "register-gaps.md changed: renumber the register's gap: markers"
    found = answered()
    assert sorted(n for n in found if not 1 <= n <= len(gaps)) == []
    missing = ["%d: %s: %s" % (n, gaps[n - 1][0], gaps[n - 1][1][:90]) for n in range(1, len(gaps) + 1) if n not in found]
    assert missing == []


def test_a_row_that_answers_a_gap_must_cite_a_checkable_source():
    planted = "\n".join(["## Kubernetes", "", "| relies on | source | test |", "|---|---|---|",
                         "| a planted row | kubernetes v1.36.4 `gap:3` | tests/unit/test_contracts_register.py |"])
    assert answered(planted) == {3: [5]}
    assert problems(planted) == ["line 5: cites no source in a checkable form (go:, tar: or git:): kubernetes v1.36.4 `gap:3`"]
