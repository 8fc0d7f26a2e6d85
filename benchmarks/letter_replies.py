"""Letter replies held to their option texts, on real judge replies: the
``letter`` parser (avhb/score/judge_replies.py) over MathVista's answer
extractions (GPT-4 reading each model's response as an option), with the
question's options given as ``option_texts`` and without them.

    python benchmarks/letter_replies.py MathVista/results/*/output_*.json
    python benchmarks/letter_replies.py --show-agreeing --show-text FILE...

The files are MathVista's published outputs (github.com/lupantech/MathVista,
``results/<model>/output_*.json``: one JSON object, problem id -> problem
with ``question_type``, ``choices``, ``extraction``, ``answer``); this script
downloads nothing.  A multiple-choice problem (``question_type``
``multi_choice``, a list of choices) counts when its extraction is
letter-shaped: a letter alone (``B``), or a letter closed by a bracket,
``.`` or ``:`` with or without text after it (``(B)``, ``B) decrease``,
``(D) 4√3``).  The choices are options A, B, C, ... in order, as MathVista's
scorer reads them.

Per file it prints: letter-shaped replies (of them with text beside the
letter); read as a letter without the option texts (what the letter alone
gives, as MathVista's scorer takes it); read with them, the letter alone or
with its own option's text; refused with them (text beside the letter that
is not its option's, or letters that disagree), each listed with its
options, and how the letter alone would have scored it against the answer;
read differently with and without the texts (none expected).  A second
table counts the extractions that are no letter but one option's text, as
the parser reads them with the option texts, against an exact (stripped)
match to a choice; ``--show-text`` lists the ones read that match no choice
exactly, for inspection.

Exit status: 0; 2 when a file cannot be read as MathVista's output (one line).
"""
from __future__ import annotations

import argparse
import json
import re
import sys
from dataclasses import dataclass, field
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))
from avhb.score.judge_replies import letter  # noqa: E402

LETTER_SHAPED = re.compile(
    r"\s*(?:[(\[]\s*[A-Za-z]\s*[)\]][.:]?|[A-Za-z][.):\]])(?:\s+(?P<text>\S.*))?\s*|\s*[A-Za-z]\s*", re.DOTALL)


class BadInput(Exception):
    """A file that is not MathVista's output (its message is one line)."""


@dataclass(frozen=True)
class Problem:
    pid: str
    choices: tuple[str, ...]
    extraction: str
    answer: str

    @property
    def letters(self) -> str:
        return "".join(chr(ord("A") + i) for i in range(len(self.choices)))

    @property
    def option_texts(self) -> dict[str, str]:
        return dict(zip(self.letters, self.choices))

    def option(self, got: str | None) -> str | None:
        return self.option_texts.get(got) if got else None


@dataclass
class Refusal:
    problem: Problem
    alone: str  # the letter read without the option texts

    @property
    def alone_right(self) -> bool:
        return self.problem.option(self.alone) == self.problem.answer


@dataclass
class LetterTally:
    name: str
    replies: int = 0
    with_text: int = 0
    read_alone: int = 0  # without the option texts
    read_bare: int = 0  # with them: a letter with no text beside it
    read_agreeing: int = 0  # with them: a letter beside its own option's text
    refused: list[Refusal] = field(default_factory=list)
    changed: list[tuple[Problem, str | None, str | None]] = field(default_factory=list)
    agreeing: list[tuple[Problem, str]] = field(default_factory=list)

    def add(self, other: "LetterTally") -> None:
        for name in ("replies", "with_text", "read_alone", "read_bare", "read_agreeing"):
            setattr(self, name, getattr(self, name) + getattr(other, name))
        self.refused += other.refused
        self.changed += other.changed


@dataclass
class TextTally:
    name: str
    replies: int = 0  # extractions that are not letter-shaped
    exact: int = 0  # equal to one choice (stripped)
    read: int = 0  # read as an option with the option texts
    read_exact: int = 0  # read as the choice it equals
    read_otherwise: list[tuple[Problem, str]] = field(default_factory=list)

    def add(self, other: "TextTally") -> None:
        for name in ("replies", "exact", "read", "read_exact"):
            setattr(self, name, getattr(self, name) + getattr(other, name))
        self.read_otherwise += other.read_otherwise


def load(path: Path) -> list[Problem]:
    """The multiple-choice problems of one output file."""
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
    except OSError as exc:
        raise BadInput(f"cannot read {path}: {exc.strerror}") from None
    except (UnicodeDecodeError, json.JSONDecodeError) as exc:
        raise BadInput(f"{path} is not JSON: {exc}") from None
    items = list(data.items()) if isinstance(data, dict) else list(enumerate(data)) if isinstance(data, list) else []
    if not items or not all(isinstance(row, dict) for _, row in items):
        raise BadInput(f"{path} is not MathVista's output (a JSON object of problems)")
    out = []
    for pid, row in items:
        if "question_type" not in row:
            raise BadInput(f"{path} is not MathVista's output: problem {pid} has no question_type")
        choices = row.get("choices")
        if row["question_type"] != "multi_choice" or not isinstance(choices, list) or not choices:
            continue
        extraction = row.get("extraction")
        out.append(Problem(str(row.get("pid", pid)), tuple(str(c) for c in choices),
                           extraction if isinstance(extraction, str) else "", str(row.get("answer"))))
    return out


def tally(name: str, problems: list[Problem]) -> tuple[LetterTally, TextTally]:
    letters, texts = LetterTally(name), TextTally(name)
    for p in problems:
        alone = letter(p.extraction, {"letters": p.letters})
        held = letter(p.extraction, {"letters": p.letters, "option_texts": p.option_texts})
        shaped = LETTER_SHAPED.fullmatch(p.extraction)
        if shaped is None:
            texts.replies += 1
            exact = [k for k, v in p.option_texts.items() if v.strip() == p.extraction.strip()]
            texts.exact += bool(exact)
            if held is not None:
                texts.read += 1
                if held in exact:
                    texts.read_exact += 1
                else:
                    texts.read_otherwise.append((p, held))
            continue
        letters.replies += 1
        beside = shaped.group("text")
        letters.with_text += beside is not None
        letters.read_alone += alone is not None
        if held is not None:
            if beside is None:
                letters.read_bare += 1
            else:
                letters.read_agreeing += 1
                letters.agreeing.append((p, held))
        if alone is not None and held is None:
            letters.refused.append(Refusal(p, alone))
        elif held is not None and held != alone:
            letters.changed.append((p, alone, held))
    return letters, texts


def _one_line(text: str, width: int = 90) -> str:
    text = " ".join(text.split())
    return text if len(text) <= width else text[:width - 3] + "..."


def _options(p: Problem) -> str:
    return "; ".join(f"{k}={_one_line(v, 40)}" for k, v in p.option_texts.items())


def report(letters: list[LetterTally], texts: list[TextTally], show_agreeing: bool, show_text: bool) -> str:
    total_l, total_t = LetterTally("all"), TextTally("all")
    for t in letters:
        total_l.add(t)
    for u in texts:
        total_t.add(u)
    out = ["Letter-shaped extractions (letter parser, letters A.. as many as the choices)", "",
           "| file | replies | with text | read, letter alone | read with texts: bare | : agreeing text | refused "
           "| letter alone right / wrong on the refused | read differently |",
           "|---|---:|---:|---:|---:|---:|---:|---:|---:|"]
    for t in [*letters, total_l] if len(letters) > 1 else letters:
        right = sum(r.alone_right for r in t.refused)
        out.append(f"| {t.name} | {t.replies} | {t.with_text} | {t.read_alone} | {t.read_bare} | {t.read_agreeing} "
                   f"| {len(t.refused)} | {right} / {len(t.refused) - right} | {len(t.changed)} |")
    out += ["", "Refused with the option texts (the letter alone's option; the answer):"]
    for t in letters:
        for r in t.refused:
            verdict = "right" if r.alone_right else "wrong"
            out.append(f"  {t.name} pid {r.problem.pid}: {_one_line(r.problem.extraction)!r}  options {_options(r.problem)}"
                       f"  | letter alone {r.alone} ({verdict}); answer {_one_line(r.problem.answer, 40)!r}")
    if not total_l.refused:
        out.append("  none")
    for t in letters:
        for p, alone, held in t.changed:
            out.append(f"  READ DIFFERENTLY {t.name} pid {p.pid}: {_one_line(p.extraction)!r} alone {alone}, "
                       f"with texts {held}")
    if show_agreeing:
        out += ["", "Read with their own option's text beside the letter:"]
        for t in letters:
            out += [f"  {t.name} pid {p.pid}: {_one_line(p.extraction)!r} -> {held}  options {_options(p)}"
                    for p, held in t.agreeing]
    out += ["", "Extractions that are no letter (the parser with the option texts)", "",
            "| file | replies | equal to a choice | read as an option | : the choice it equals | : another |",
            "|---|---:|---:|---:|---:|---:|"]
    for u in [*texts, total_t] if len(texts) > 1 else texts:
        out.append(f"| {u.name} | {u.replies} | {u.exact} | {u.read} | {u.read_exact} | {len(u.read_otherwise)} |")
    if show_text:
        out += ["", "Read as an option without equalling a choice:"]
        for u in texts:
            out += [f"  {u.name} pid {p.pid}: {_one_line(p.extraction)!r} -> {held}  options {_options(p)}"
                    for p, held in u.read_otherwise]
    return "\n".join(out)


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0],
                                 formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("files", nargs="+", type=Path, help="MathVista output files (results/<model>/output_*.json)")
    ap.add_argument("--show-agreeing", action="store_true", help="list the letters read beside their option's text")
    ap.add_argument("--show-text", action="store_true",
                    help="list the extractions read as an option that equal no choice exactly")
    args = ap.parse_args(argv)
    letters, texts = [], []
    for path in args.files:
        try:
            problems = load(path)
        except BadInput as exc:
            print(f"letter_replies: error: {exc}", file=sys.stderr)
            return 2
        name = "/".join(path.parts[-2:])
        got_l, got_t = tally(name, problems)
        letters.append(got_l)
        texts.append(got_t)
    print(report(letters, texts, args.show_agreeing, args.show_text))
    return 0


if __name__ == "__main__":
    sys.exit(main())
