"""A seeded corpus of edits on real source files, for testing and benchmarking ``edit_file``.

:func:`build_edit_corpus` copies modules of the Python standard library into a folder, in
several file styles (as-is, CRLF, tab-indented, no final newline, stray trailing spaces), and
generates edits on windows of their lines: a renamed identifier, an inserted line, a deleted
line. Each edit also comes in the drifted forms models produce (dedented, over-indented, tabs
for spaces and back, trailing whitespace added or dropped, CRLF sent for LF, a final newline
the file does not have). Every case knows the file bytes the edit was meant to produce;
:func:`judge` tells whether an outcome was exact, right-place (right lines, trailing whitespace
aside), a refusal, or wrong.

Used by ``tests/test_edit_corpus.py`` and reusable by benchmarks.
"""

from __future__ import annotations

import random
import re
import sysconfig
from dataclasses import dataclass
from pathlib import Path
from typing import Literal

STDLIB_MODULES: tuple[str, ...] = (
    "textwrap.py",
    "shlex.py",
    "difflib.py",
    "argparse.py",
    "csv.py",
    "fractions.py",
    "heapq.py",
    "bisect.py",
    "calendar.py",
    "json/encoder.py",
    "string.py",
    "dataclasses.py",
)

Variant = Literal["lf", "crlf", "tabs", "no_final_newline", "trailing_ws"]
VARIANTS: tuple[Variant, ...] = ("lf", "crlf", "tabs", "no_final_newline", "trailing_ws")
Verdict = Literal["exact", "right_place", "refused", "wrong"]

_IDENT = re.compile(r"\b[A-Za-z_]\w*\b")


@dataclass(frozen=True)
class EditCase:
    """One edit to try. ``expected`` is the file the unperturbed edit produces; ``start`` and
    ``end`` are the byte span of the intended lines in the original file. ``exact_count`` and
    ``loose_count`` say how often ``old_string`` occurs exactly / with whitespace ignored."""

    name: str
    file: str
    old_string: str
    new_string: str
    perturbation: str
    original: bytes
    expected: bytes
    start: int
    end: int
    exact_count: int
    loose_count: int

    @property
    def ambiguous(self) -> bool:
        """More than one place fits; the only right answer is a refusal."""
        if self.perturbation in ("none", "crlf_sent"):  # exact once line endings are normalised
            return self.exact_count > 1
        return self.loose_count > 1


@dataclass(frozen=True)
class _Styled:
    lines: list[str]  # logical lines, no terminators
    eol: str
    final_newline: bool

    def render(self, lines: list[str] | None = None) -> bytes:
        body = self.eol.join(self.lines if lines is None else lines)
        if self.final_newline:
            body += self.eol
        return body.encode("utf-8")

    def offset(self, line_index: int) -> int:
        """Byte offset where logical line ``line_index`` starts."""
        return sum(len(ln.encode("utf-8")) + len(self.eol) for ln in self.lines[:line_index])


def _style(text: str, variant: Variant, rng: random.Random) -> _Styled:
    lines = text.split("\n")
    if text.endswith("\n"):
        lines.pop()
    if variant == "tabs":
        lines = [_spaces_to_tabs(ln) for ln in lines]
    elif variant == "trailing_ws":
        lines = [
            ln + " " * rng.randint(1, 3) if ln.strip() and rng.random() < 0.15 else ln
            for ln in lines
        ]
    eol = "\r\n" if variant == "crlf" else "\n"
    return _Styled(lines, eol, variant != "no_final_newline")


def _spaces_to_tabs(line: str) -> str:
    body = line.lstrip(" ")
    lead = len(line) - len(body)
    return "\t" * (lead // 4) + " " * (lead % 4) + body


def _tabs_to_spaces(line: str) -> str:
    body = line.lstrip("\t")
    return "    " * (len(line) - len(body)) + body


def _indent(line: str) -> str:
    return "    " + line if line.strip() else line


def _loose_count(lines: list[str], old_lines: list[str]) -> int:
    keys = [ln.strip() for ln in lines]
    want = [ln.strip() for ln in old_lines]
    n = len(want)
    return sum(1 for i in range(len(keys) - n + 1) if keys[i : i + n] == want)


def _modify(old_lines: list[str], rng: random.Random, tag: int) -> list[str] | None:
    """A plausible change to a window of lines, or None if this window does not allow one."""
    content = [i for i, ln in enumerate(old_lines) if ln.strip()]
    if not content:
        return None
    kind = rng.choice(["rename", "insert", "delete"] if len(content) > 1 else ["rename", "insert"])
    new = list(old_lines)
    i = rng.choice(content)
    if kind == "rename":
        match = _IDENT.search(new[i])
        if match is None:
            return None
        new[i] = new[i][: match.end()] + f"_e{tag}" + new[i][match.end() :]
    elif kind == "insert":
        lead = new[i][: len(new[i]) - len(new[i].lstrip())]
        new.insert(i + 1, f"{lead}# reasonix edit {tag}")
    else:
        del new[i]
    return new


def _perturbations(variant: Variant, at_eof: bool) -> list[str]:
    options = ["none", "dedent", "indent", "trailing_ws_added", "crlf_sent"]
    options.append("spaces_for_tabs" if variant == "tabs" else "tabs_for_spaces")
    if variant == "trailing_ws":
        options.append("trailing_ws_stripped")
    if variant == "no_final_newline" and at_eof:
        options.append("final_newline")
    return options


def _perturb(kind: str, old: list[str], new: list[str]) -> tuple[list[str], list[str]] | None:
    """Apply one drift to the model's old and new lines alike, or None if it changes nothing."""
    if kind == "dedent":
        leads = [ln[: len(ln) - len(ln.lstrip())] for ln in old if ln.strip()]
        common = leads[0] if leads else ""
        for lead in leads[1:]:
            while not lead.startswith(common):
                common = common[:-1]
        if not common:
            return None
        return (
            [ln.removeprefix(common) for ln in old],
            [ln.removeprefix(common) for ln in new],
        )
    if kind == "indent":
        return [_indent(ln) for ln in old], [_indent(ln) for ln in new]
    if kind == "trailing_ws_added":
        return [ln + "  " for ln in old], [ln + "  " for ln in new]
    if kind == "trailing_ws_stripped":
        stripped = [ln.rstrip() for ln in old]
        return (stripped, [ln.rstrip() for ln in new]) if stripped != old else None
    if kind == "tabs_for_spaces":
        converted = [_spaces_to_tabs(ln) for ln in old]
        return (converted, [_spaces_to_tabs(ln) for ln in new]) if converted != old else None
    if kind == "spaces_for_tabs":
        converted = [_tabs_to_spaces(ln) for ln in old]
        return (converted, [_tabs_to_spaces(ln) for ln in new]) if converted != old else None
    return old, new


def build_edit_corpus(
    dest: Path,
    *,
    seed: int = 0,
    cases_per_file: int = 10,
    modules: tuple[str, ...] = STDLIB_MODULES,
    variants: tuple[Variant, ...] = VARIANTS,
) -> list[EditCase]:
    """Write the corpus files under ``dest`` and return the edit cases (deterministic for a
    seed). Tools must reset a file to ``case.original`` before each case."""
    rng = random.Random(seed)
    stdlib = Path(sysconfig.get_paths()["stdlib"])
    cases: list[EditCase] = []
    tag = 0
    for module in modules:
        source = (stdlib / module).read_text(encoding="utf-8")
        for variant in variants:
            styled = _style(source, variant, rng)
            rel = f"{variant}/{module.replace('/', '_')}"
            target = dest / rel
            target.parent.mkdir(parents=True, exist_ok=True)
            original = styled.render()
            target.write_bytes(original)
            lines = styled.lines
            joined = "\n".join(lines) + ("\n" if styled.final_newline else "")
            made = 0
            attempts = 0
            while made < cases_per_file and attempts < cases_per_file * 20:
                attempts += 1
                size = rng.randint(1, 6)
                at_eof = variant == "no_final_newline" and rng.random() < 0.4
                start = len(lines) - size if at_eof else rng.randrange(0, len(lines) - size)
                old_lines = lines[start : start + size]
                tag += 1
                new_lines = _modify(old_lines, rng, tag)
                if new_lines is None:
                    continue
                ends_file = start + size == len(lines)
                if ends_file and not styled.final_newline and (not new_lines or not new_lines[-1]):
                    continue  # would end the file with a newline it must not gain
                newline = "" if ends_file and not styled.final_newline else "\n"
                expected = styled.render(lines[:start] + new_lines + lines[start + size :])
                span_start = styled.offset(start)
                span_end = styled.offset(start + size) - (0 if newline else len(styled.eol))
                kind = rng.choice(_perturbations(variant, ends_file))
                drifted = _perturb(kind, old_lines, new_lines)
                if drifted is None:
                    continue
                p_old, p_new = drifted
                tail = "\n" if kind == "final_newline" else newline
                sep = "\r\n" if kind == "crlf_sent" else "\n"
                old_string = sep.join(p_old) + (sep if tail else "")
                new_string = sep.join(p_new) + (sep if tail and p_new else "")
                exact_count = joined.count(old_string.replace("\r\n", "\n"))
                if kind not in ("none", "crlf_sent") and exact_count:
                    # The drifted text names another real place exactly; from the tool's side
                    # that is a valid exact edit, not a drift, so it tests nothing here.
                    continue
                cases.append(
                    EditCase(
                        name=f"{rel}:{start + 1}:{kind}",
                        file=rel,
                        old_string=old_string,
                        new_string=new_string,
                        perturbation=kind,
                        original=original,
                        expected=expected,
                        start=span_start,
                        end=span_end,
                        exact_count=exact_count,
                        loose_count=_loose_count(lines, old_lines),
                    )
                )
                made += 1
            cases.extend(_ambiguous_cases(rel, styled, joined, original, rng))
    return cases


def _ambiguous_cases(
    rel: str, styled: _Styled, joined: str, original: bytes, rng: random.Random
) -> list[EditCase]:
    """Two edits whose old_string (a whole repeated line) occurs more than once."""
    counts: dict[str, int] = {}
    for ln in styled.lines:
        if len(ln.strip()) > 3:
            counts[ln] = counts.get(ln, 0) + 1
    repeated = sorted(ln for ln, c in counts.items() if c > 1)
    out: list[EditCase] = []
    for line in rng.sample(repeated, min(2, len(repeated))):
        if joined.count(line + "\n") < 2:
            continue
        out.append(
            EditCase(
                name=f"{rel}:ambiguous:{line.strip()[:30]}",
                file=rel,
                old_string=line + "\n",
                new_string=line + "  # changed\n",
                perturbation="none",
                original=original,
                expected=original,
                start=0,
                end=0,
                exact_count=joined.count(line + "\n"),
                loose_count=_loose_count(styled.lines, [line]),
            )
        )
    return out


def judge(case: EditCase, after: bytes, refused: bool) -> Verdict:
    """How the tool did on ``case``, given the file bytes after the call."""
    if refused:
        return "refused" if after == case.original else "wrong"
    if after == case.expected:
        return "exact"
    if case.ambiguous:
        return "wrong"
    head = case.original[: case.start]
    tail = case.original[case.end :]
    if not (after.startswith(head) and after.endswith(tail)):
        return "wrong"
    if len(after) < len(head) + len(tail):
        return "wrong"
    got = after[len(head) : len(after) - len(tail)]
    want = case.expected[len(head) : len(case.expected) - len(tail)]
    return "right_place" if _loose_lines(got) == _loose_lines(want) else "wrong"


def _loose_lines(data: bytes) -> list[str]:
    return [ln.rstrip() for ln in data.decode("utf-8").replace("\r\n", "\n").split("\n")]
