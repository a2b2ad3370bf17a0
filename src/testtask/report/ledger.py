"""A paper's claims ledger: `conf/claims/<paper-key>.yaml`, read and validated into frozen dataclasses.

The file is a mapping `{paper: <key>, claims: [<claim>, ...]}`; each claim:

    id: pot.table1a.bert.n50          # stable, unique: [a-z0-9][a-z0-9_.-]*
    where: "Table 1(a)"               # where the paper states it (section, table, figure)
    statement: "BERT, m = 50, n = 50: mean boost, mean bias (%)"   # short, our words
    paper: [4.1, 0.19]                # the paper's value(s): number, list, string or mapping (quoted as data)
                                      #   (the shape each rule needs: report/paper_values.py)
    ours:                             # how ours is obtained: a path into a sidecar ...
      output: table-1                 #   figures_dir/<paper>/table-1.json (or a file name: table-2.csv)
      path: rows[lm_type=bert,m=50,n=50].boost_mean   # see report/paths.py; a list of paths gives a list
      scale: 100                      #   optional factor (fractions -> %)
    # ... or `ours: {page: <model>, path: ...}`: into `make assess-model`'s page of that model (own claims) ...
    # ... or `ours: {function: <name>}`: a function of the paper's report hook (PAPER.report), given the sidecars
    rule: {kind: round, digits: 2}    # see report/rules.py
    needs: [accuracies_from_paper/m50]  # inputs under the paper's data root; absent -> "not computable"
    note: "..."                       # optional: the known explanation when it differs; it (and a category's
                                      #   texts) quotes the numbers an output holds by reference, {ours|.3f} or
                                      #   {figure-15:panels[0].p}, not as written-down digits (report/notes.py)
    figure: table-1                   # optional: the output shown beside it (default: ours.output)
    category:                         # why it differs or is not computable on the authors' release (CATEGORIES)
      kind: text-vs-code              #   one of the fixed list below, with that kind's fields
      text: "§2.2: clustered standard errors"
      code: "socialfoundations/training-on-the-test-task@c357810:notebooks/regress_utils.py:46: classical SEs"
      shown_by: "make figure-4 PAPER=training-on-the-test-task ARGS=protocol=paper_text"

A category is a claim about the cause, and each kind carries the evidence that shows it (`category.kind`, fields
required / optional; every kind but `inconsistent`, whose `arithmetic` is its evidence, also requires `shown_by`:
the command or computation that shows the cause):

| kind | required | optional | what it says, and the evidence it needs |
|---|---|---|---|
| `text-vs-code` | `text`, `code` | `key` | the paper's text and the authors' code disagree; the published number follows one of them. `code` cites the authors' line that computes the claim's value, as `owner/repo@commit:path:line` |
| `inconsistent` | `places` (list of ≥ 2), `arithmetic` | | the paper disagrees with itself: both places, and the arithmetic (with its numbers) that shows they disagree |
| `release-gap` | `missing` (list), `toward` | | the release lacks inputs the paper used: names them, and `toward` says why they would move our value toward the paper's (or make it computable) |
| `implementation` | `ours`, `authors` | `key` | a difference of this project's own implementation from the authors' (`ours`: what this project does, where; `authors`: what the authors' code or runs do) |
| `misrounded` | `output`, `printed`, `steps` | `of` | the paper prints the authors' own output on the same data, rounded in steps (`steps`: the decimals of each step) so that it lands more than half a unit of its last digit from the exact value; `output` cites where the authors' output is printed (`owner/repo@commit:path:line`); checked against ours |
| `within-error` | `basis` | `printed`, `se`, `varies`, `of`, `against` | `basis: rounding`: ours lies within half a unit of the last digit of the paper's `printed` value (a string, or a list of them, null to skip one); `basis: monte-carlo`: ours lies within 2 `se` of the paper's value (or of `against`: a number or a path into ours), for a quantity that varies from run to run (`varies` says why). Never for a deterministic value read from identical data. `of`: a path into ours (report/paths.py) when the checked number is part of it |
| `unexplained` | `tried` | | no explanation found: what was tried |

The evidence that needs our value (`misrounded`, `within-error`) is checked where the report has the verdict
(report/evidence.py); which claims need a category, and the ledger errors, are report/findings.py's.

Any error names the file, the claim id and the field.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from types import MappingProxyType
from typing import Any

import yaml

from testtask.errors import InputError
from testtask.report import notes, paper_values, paths, rules

_ID = re.compile(r"[a-z0-9][a-z0-9_.-]*")
_OUTPUT = re.compile(r"[A-Za-z0-9][A-Za-z0-9_.-]*")
_FIELDS = {"id", "where", "statement", "paper", "ours", "rule", "needs", "note", "figure", "category"}
_OURS_FIELDS = {"output", "path", "function", "scale", "page"}

TEXT_VS_CODE = "text-vs-code"
RELEASE_GAP = "release-gap"
INCONSISTENT = "inconsistent"
IMPLEMENTATION = "implementation"
MISROUNDED = "misrounded"
WITHIN_ERROR = "within-error"
UNEXPLAINED = "unexplained"
#: kind -> (required fields, optional fields); the order is the order of the report's findings
CATEGORIES: dict[str, tuple[tuple[str, ...], tuple[str, ...]]] = {
    TEXT_VS_CODE: (("text", "code", "shown_by"), ("key",)),
    INCONSISTENT: (("places", "arithmetic"), ()),
    RELEASE_GAP: (("missing", "toward", "shown_by"), ()),
    IMPLEMENTATION: (("ours", "authors", "shown_by"), ("key",)),
    MISROUNDED: (("output", "printed", "steps", "shown_by"), ("of",)),
    WITHIN_ERROR: (("basis", "shown_by"), ("printed", "se", "varies", "of", "against")),
    UNEXPLAINED: (("tried", "shown_by"), ()),
}
_LIST_FIELDS = {"missing": 1, "places": 2}  # list fields and their least length
ROUNDING, MONTE_CARLO = "rounding", "monte-carlo"  # within-error's bases
#: within-error's fields by basis: (required, not allowed)
_BASES = {
    ROUNDING: (("printed",), ("se", "varies", "against")),
    MONTE_CARLO: (("se", "varies"), ("printed",)),
}
#: an authors' line, `owner/repo@commit:path:line` (a range `:12-18` or more lines after a comma may follow)
CODE_REF = re.compile(r"[A-Za-z0-9][\w.-]*/[\w.-]+@[0-9a-f]{7,40}:[^\s:]+:\d+")
NUMERAL = re.compile(r"-?\d+(\.\d+)?")  # a printed value, as the paper prints it (its digits count)


SOURCES = ("published", "results", "published+results")  # testtask.settings.Source


class LedgerError(InputError, ValueError):
    """A ledger that cannot be used; the message names the file, the claim id and the field."""


@dataclass(frozen=True)
class Ours:
    output: str | None  # the sidecar (a name without extension means <name>.json)
    path: str | tuple[str, ...] | None  # into that sidecar; a tuple gives a list of values
    function: str | None  # a name in the paper's report hook
    scale: float = 1.0
    page: str | None = None  # a model whose `make assess-model` page (its JSON) the path reads instead

    @property
    def file(self) -> str | None:
        if self.output is None:
            return None
        return self.output if Path(self.output).suffix else f"{self.output}.json"


@dataclass(frozen=True)
class Rule:
    kind: str
    params: Mapping[str, Any]


@dataclass(frozen=True)
class Category:
    """Why a claim differs or is not computable on the authors' release (CATEGORIES)."""

    kind: str
    fields: Mapping[str, Any]

    def get(self, name: str) -> Any:
        return self.fields.get(name)

    def summary(self) -> str:
        """One line: the kind's fields in words."""
        f = self.fields
        key = f" (our key {f['key']})" if f.get("key") else ""
        if self.kind == TEXT_VS_CODE:
            return f"text: {f['text']}; authors' code: {f['code']}{key}"
        if self.kind == RELEASE_GAP:
            return "the release lacks " + ", ".join(f["missing"]) + f"; with it: {f['toward']}"
        if self.kind == INCONSISTENT:
            return "the paper disagrees with itself: " + " vs ".join(f["places"]) + f"; {f['arithmetic']}"
        if self.kind == IMPLEMENTATION:
            return f"ours: {f['ours']}; the authors: {f['authors']}{key}"
        if self.kind == MISROUNDED:
            steps = " then ".join(f"{d} decimals" for d in f["steps"])
            return f"the paper's {f['printed']} is the authors' output ({f['output']}) rounded to {steps}"
        if self.kind == WITHIN_ERROR:
            if f["basis"] == ROUNDING:
                printed = f["printed"] if isinstance(f["printed"], str) else ", ".join(map(str, f["printed"]))
                return f"rounding: within half a unit of the last digit of the printed {printed}"
            return (
                f"Monte Carlo: within 2 standard errors ({f['se']}); varies run to run because {f['varies']}"
            )
        return f"no explanation found; tried: {f['tried']}"

    @property
    def evidence(self) -> str:
        """The command or computation that shows the cause."""
        return str(self.fields.get("shown_by") or self.fields.get("arithmetic") or "")


@dataclass(frozen=True)
class Claim:
    id: str
    where: str
    statement: str
    paper: Any
    ours: Ours
    rule: Rule
    needs: tuple[str, ...] = ()
    note: str | None = None
    figure: str | None = None
    category: Category | None = None

    @property
    def shown_beside(self) -> str | None:
        """The output whose figure or table this claim is shown beside."""
        if self.figure:
            return self.figure
        return Path(self.ours.output).stem if self.ours.output else None


@dataclass(frozen=True)
class Ledger:
    paper: str
    file: Path
    claims: tuple[Claim, ...]
    # Where the outputs the claims read come from when the report builds them: `results` for a paper whose
    # figures can only be drawn from our runs (downstream-predictability); None: the command's `source`.
    source: str | None = None

    def functions(self) -> set[str]:
        return {c.ours.function for c in self.claims if c.ours.function}


def _frozen(value: Any) -> Any:
    if isinstance(value, Mapping):
        return MappingProxyType({k: _frozen(v) for k, v in value.items()})
    if isinstance(value, list):
        return tuple(_frozen(v) for v in value)
    return value


def thaw(value: Any) -> Any:
    """A frozen paper value back as plain dicts and lists (for rules and JSON)."""
    if isinstance(value, Mapping):
        return {k: thaw(v) for k, v in value.items()}
    if isinstance(value, tuple):
        return [thaw(v) for v in value]
    return value


def _claim(raw: Any, file: Path, index: int, seen: set[str]) -> Claim:
    where = f"{file}: claim #{index + 1}"

    def fail(field: str, message: str) -> LedgerError:
        return LedgerError(f"{where}, field {field!r}: {message}")

    if not isinstance(raw, Mapping):
        raise LedgerError(f"{where}: a claim must be a mapping, got {type(raw).__name__}")
    claim_id = raw.get("id")
    if not isinstance(claim_id, str) or not _ID.fullmatch(claim_id):
        raise fail("id", f"must match {_ID.pattern}, got {claim_id!r}")
    where = f"{file}: claim {claim_id}"
    if claim_id in seen:
        raise fail("id", "duplicate id")
    seen.add(claim_id)
    unknown = sorted(set(raw) - _FIELDS)
    if unknown:
        raise fail(unknown[0], f"unknown field (fields: {', '.join(sorted(_FIELDS))})")
    for text in ("where", "statement"):
        if not isinstance(raw.get(text), str) or not raw[text].strip():
            raise fail(text, "a non-empty string is required")
    if "paper" not in raw or raw["paper"] is None:
        raise fail("paper", "the paper's value is required (number, list, string or mapping)")
    for optional in ("note", "figure"):
        if raw.get(optional) is not None and not isinstance(raw[optional], str):
            raise fail(optional, "must be a string")
    if raw.get("figure") is not None and not _OUTPUT.fullmatch(raw["figure"]):
        raise fail("figure", f"not an output name: {raw['figure']!r}")
    if raw.get("note") is not None:
        try:
            notes.references(raw["note"])
        except notes.NoteError as err:
            raise fail("note", str(err)) from None

    ours_raw = raw.get("ours")
    if not isinstance(ours_raw, Mapping):
        raise fail(
            "ours", "a mapping {output, path[, scale]}, {page, path[, scale]} or {function} is required"
        )
    extra = sorted(set(ours_raw) - _OURS_FIELDS)
    if extra:
        raise fail(f"ours.{extra[0]}", f"unknown field (fields: {', '.join(sorted(_OURS_FIELDS))})")
    has_path, has_function = "path" in ours_raw, "function" in ours_raw
    if has_path == has_function:
        raise fail("ours", "give either path (with output or page) or function, not both or neither")
    page = ours_raw.get("page")
    if page is not None:
        if not isinstance(page, str) or not _OUTPUT.fullmatch(page):
            raise fail("ours.page", f"a model name (of `make assess-model`'s pages), got {page!r}")
        if "output" in ours_raw or has_function:
            raise fail("ours.page", "a page is read by its path: give path, not output or function")
    output = ours_raw.get("output")
    if output is not None and (not isinstance(output, str) or not _OUTPUT.fullmatch(output)):
        raise fail("ours.output", f"not an output name: {output!r}")
    path: str | tuple[str, ...] | None = None
    if has_path:
        if output is None and page is None:
            raise fail("ours.output", "a path needs the output (sidecar) or the assess-model page it reads")
        raw_path = ours_raw["path"]
        path_list = raw_path if isinstance(raw_path, list) else [raw_path]
        if not path_list or not all(isinstance(p, str) for p in path_list):
            raise fail("ours.path", "a path string or a list of them is required")
        for p in path_list:
            try:
                paths.validate(p)
            except paths.PathError as err:
                raise fail("ours.path", str(err)) from None
        path = tuple(path_list) if isinstance(raw_path, list) else raw_path
    function = ours_raw.get("function")
    if has_function and (not isinstance(function, str) or not function.isidentifier()):
        raise fail("ours.function", f"must be a function name, got {function!r}")
    if has_function and raw.get("figure") is None:
        # the output a function reads, so that `report.build_missing` builds it and the page shows it beside
        raise fail(
            "figure", "a claim computed by a function must name the output it reads (figure-N / table-N)"
        )
    scale = ours_raw.get("scale", 1.0)
    if isinstance(scale, bool) or not isinstance(scale, (int, float)):
        raise fail("ours.scale", f"must be a number, got {scale!r}")

    rule_raw = raw.get("rule")
    if not isinstance(rule_raw, Mapping) or "kind" not in rule_raw:
        raise fail("rule", "a mapping with kind (and its parameters) is required")
    params = {k: v for k, v in rule_raw.items() if k != "kind"}
    problem = rules.check_params(str(rule_raw["kind"]), params)
    if problem:
        raise fail("rule", problem)
    n_paths = len(path) if isinstance(path, tuple) else None
    wrong = paper_values.problem(str(rule_raw["kind"]), raw["paper"], params, n_paths)
    if wrong:
        raise fail("paper", wrong)

    category = _category(raw.get("category"), fail) if raw.get("category") is not None else None

    needs = raw.get("needs") or []
    if not isinstance(needs, list) or not all(isinstance(n, str) and n.strip() for n in needs):
        raise fail("needs", "a list of input paths (relative to the paper's data root) is required")
    for need in needs:
        if Path(need).is_absolute() or ".." in Path(need).parts:
            raise fail("needs", f"{need!r} must be relative to the paper's data root, without '..'")

    return Claim(
        id=claim_id,
        where=raw["where"].strip(),
        statement=raw["statement"].strip(),
        paper=_frozen(raw["paper"]),
        ours=Ours(output=output, path=path, function=function, scale=float(scale), page=page),
        rule=Rule(kind=str(rule_raw["kind"]), params=MappingProxyType(params)),
        needs=tuple(needs),
        note=raw.get("note"),
        figure=raw.get("figure"),
        category=category,
    )


def _category(raw: Any, fail: Any) -> Category:
    """The claim's `category` mapping, validated (`fail(field, message)` makes the error)."""
    kinds = ", ".join(CATEGORIES)
    if not isinstance(raw, Mapping) or "kind" not in raw:
        raise fail("category", f"a mapping with kind ({kinds}) and that kind's fields is required")
    kind = raw["kind"]
    if kind not in CATEGORIES:
        raise fail("category.kind", f"{kind!r} is not a category; choose {kinds}")
    required, optional = CATEGORIES[kind]
    fields = {k: v for k, v in raw.items() if k != "kind"}
    unknown = sorted(set(fields) - set(required) - set(optional))
    if unknown:
        raise fail(
            f"category.{unknown[0]}", f"{kind} takes {', '.join(required + optional)}, not {unknown[0]}"
        )
    for name in required:
        if name not in fields or fields[name] in (None, "", []):
            raise fail(f"category.{name}", f"a {kind} category needs {name}")
    for name, value in fields.items():
        if name in _LIST_FIELDS:
            least = _LIST_FIELDS[name]
            if (
                not isinstance(value, list)
                or len(value) < least
                or not all(isinstance(v, str) and v.strip() for v in value)
            ):
                raise fail(f"category.{name}", f"a list of at least {least} non-empty strings is required")
        elif name == "se":
            if isinstance(value, bool) or not isinstance(value, (int, float)) or value <= 0:
                raise fail(
                    "category.se", f"the stated standard error must be a positive number, got {value!r}"
                )
        elif name == "printed":
            values = value if isinstance(value, list) and kind == WITHIN_ERROR else [value]
            if not values or not all(
                v is None or (isinstance(v, str) and NUMERAL.fullmatch(v)) for v in values
            ):
                raise fail(
                    "category.printed",
                    "the paper's printed value as a quoted numeral with its digits ('0.19', '25.0'; a list of them "
                    f"for within-error), got {value!r}",
                )
        elif name == "steps":
            if (
                not isinstance(value, list)
                or not value
                or not all(isinstance(d, int) and not isinstance(d, bool) and d >= 0 for d in value)
            ):
                raise fail(
                    "category.steps", f"a list of decimals (whole numbers >= 0) is required, got {value!r}"
                )
        elif name == "against":
            if isinstance(value, bool) or not isinstance(value, (int, float, str)):
                raise fail("category.against", f"a number or a path into ours, got {value!r}")
        elif not isinstance(value, str) or not value.strip():
            raise fail(f"category.{name}", "a non-empty string is required")
    for name, value in fields.items():  # its texts may quote our values as a note does
        for text in value if isinstance(value, list) else [value]:
            if isinstance(text, str):
                try:
                    notes.references(text)
                except notes.NoteError as err:
                    raise fail(f"category.{name}", str(err)) from None
    for name in ("of", "against"):
        if isinstance(fields.get(name), str):
            try:
                paths.validate(fields[name])
            except paths.PathError as err:
                raise fail(f"category.{name}", str(err)) from None
    for name in ("code", "output"):
        if name in fields and not CODE_REF.search(fields[name]):
            raise fail(
                f"category.{name}",
                "cite the authors' line that computes the claim's value, as owner/repo@commit:path:line",
            )
    if "arithmetic" in fields and not re.search(r"\d", fields["arithmetic"]):
        raise fail("category.arithmetic", "the arithmetic that shows the disagreement, with its numbers")
    if kind == WITHIN_ERROR:
        basis = fields["basis"]
        if basis not in _BASES:
            raise fail("category.basis", f"{basis!r}: choose {ROUNDING} or {MONTE_CARLO}")
        needed, barred = _BASES[basis]
        for name in needed:
            if name not in fields:
                raise fail(f"category.{name}", f"a within-error category on {basis} needs {name}")
        for name in barred:
            if name in fields:
                raise fail(f"category.{name}", f"a within-error category on {basis} takes no {name}")
    return Category(kind=str(kind), fields=_frozen(fields))


def parse(data: Any, file: Path, paper: str | None = None) -> Ledger:
    """A ledger from parsed YAML `data` (LedgerError naming `file`, the claim id and the field)."""
    if not isinstance(data, Mapping) or not isinstance(data.get("claims"), list):
        raise LedgerError(f"{file}: a mapping with `paper` and a list `claims` is required")
    key = data.get("paper")
    if not isinstance(key, str):
        raise LedgerError(f"{file}, field 'paper': the paper key is required")
    if paper is not None and key != paper:
        raise LedgerError(f"{file}, field 'paper': {key!r}, but the file is the ledger of {paper!r}")
    extra = sorted(set(data) - {"paper", "claims", "source"})
    if extra:
        raise LedgerError(f"{file}, field {extra[0]!r}: unknown top-level field (paper, source, claims)")
    source = data.get("source")
    if source not in (None, *SOURCES):
        raise LedgerError(f"{file}, field 'source': {source!r}: expected one of {', '.join(SOURCES)}")
    seen: set[str] = set()
    claims = tuple(_claim(raw, file, i, seen) for i, raw in enumerate(data["claims"]))
    return Ledger(paper=key, file=file, claims=claims, source=source)


def load(file: Path, paper: str | None = None) -> Ledger:
    file = Path(file)
    try:
        data = yaml.safe_load(file.read_text(encoding="utf-8"))
    except yaml.YAMLError as err:
        raise LedgerError(f"{file}: not valid YAML ({err})") from err
    return parse(data, file, paper)


def check_functions(ledger: Ledger, functions: Mapping[str, Any] | None) -> None:
    """LedgerError when a claim names a function the paper's report hook does not have."""
    available = functions or {}
    for claim in ledger.claims:
        name = claim.ours.function
        if name and name not in available:
            known = ", ".join(sorted(available)) or "none: the paper has no report hook"
            raise LedgerError(
                f"{ledger.file}: claim {claim.id}, field 'ours.function': no function {name!r} in the paper's "
                f"report hook (PAPER.report; known: {known})"
            )
