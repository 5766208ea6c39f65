"""What a rule is: a code, a message, documentation, and a check over a module's facts."""

from __future__ import annotations

import inspect
import re
from dataclasses import dataclass
from typing import ClassVar, Iterator

import libcst as cst

from ..analysis import ModuleFacts

DOC_SECTIONS = ("What it does", "Why", "Example", "Use instead", "Fix safety")


@dataclass(frozen=True)
class Finding:
    code: str
    message: str
    node: cst.CSTNode


SAFETY_LEVELS = ("exact", "equivalent", "behaviour change", "none")
SAFETY_MEANINGS = {
    "exact": "migrated outputs are bit-identical to the original's",
    "equivalent": "same distribution, other values: random operators draw from a new ndd RNG stream, "
                  "shuffling readers use another seed",
    "behaviour change": "something a person must review (checkpoints saved before do not load)",
    "none": "never fixed: the site gets a TODO",
}


class Rule:
    """Base class. Subclasses set the class attributes and implement ``check``.

    The class docstring is the rule's documentation, in ``## Section`` blocks named by
    DOC_SECTIONS; ``dali-migrate explain CODE`` prints it.
    """

    code: ClassVar[str]
    name: ClassVar[str]
    message: ClassVar[str]
    # "always": the codemod migrates every site; "sometimes": some sites get a TODO instead;
    # "never": the codemod only marks the site with a TODO comment.
    fix: ClassVar[str]
    # What a fix does to the data: "exact" (bit-identical outputs), "equivalent" (the same
    # distribution, other values: a new RNG stream, a reader shuffled with another seed),
    # "behaviour change" (something a person must review); "none" for rules never fixed.
    safety: ClassVar[str] = "exact"

    def check(self, facts: ModuleFacts) -> Iterator[Finding]:
        raise NotImplementedError

    def finding(self, node: cst.CSTNode, detail: str | None = None) -> Finding:
        message = self.message if detail is None else f"{self.message}: {detail}"
        return Finding(self.code, message, node)

    @classmethod
    def docs(cls) -> str:
        return inspect.cleandoc(cls.__doc__ or "")

    @classmethod
    def explained(cls) -> str:
        """The documentation as ``dali-migrate explain`` shows it, with the safety level."""
        return f"{cls.docs()}\n\nSafety level: {cls.safety} ({SAFETY_MEANINGS[cls.safety]})"

    @classmethod
    def doc_sections(cls) -> dict[str, str]:
        sections: dict[str, str] = {}
        for match in re.finditer(r"^## (.+?)\n(.*?)(?=^## |\Z)", cls.docs(), re.S | re.M):
            sections[match.group(1).strip()] = match.group(2).strip()
        return sections


class ValueRule(Rule):
    """A rule on dynamic-mode code: it reads the ndd value model (``values.ValueModel``), which
    finds each mistake once and tags it with the rule's code, rather than the pipeline-mode facts."""

    fix = "never"
    safety = "none"

    def check(self, facts: ModuleFacts) -> Iterator[Finding]:
        return iter(())

    def check_values(self, model) -> Iterator:
        return (problem for problem in model.problems if problem.code == self.code)
