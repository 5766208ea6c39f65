"""``# noqa: DMxxx`` on a line and ``# dali-migrate: noqa[: DMxxx]`` for a whole file."""

from __future__ import annotations

import re
from dataclasses import dataclass

_LINE_NOQA = re.compile(r"#\s*noqa(?::\s*(?P<codes>[A-Z]+[0-9]+(?:[\s,]+[A-Z]+[0-9]+)*))?", re.I)
_FILE_NOQA = re.compile(r"#\s*dali-migrate:\s*noqa(?::\s*(?P<codes>[A-Z]+[0-9]+(?:[\s,]+[A-Z]+[0-9]+)*))?", re.I)
ALL = frozenset({"*"})


def _codes(match: re.Match) -> frozenset[str]:
    codes = match.group("codes")
    if not codes:
        return ALL
    return frozenset(c.upper() for c in re.split(r"[\s,]+", codes) if c)


@dataclass
class Suppressions:
    file_codes: frozenset[str]
    line_codes: dict[int, frozenset[str]]

    @property
    def whole_file(self) -> bool:
        return self.file_codes == ALL

    def suppressed(self, code: str, first_line: int, last_line: int) -> bool:
        if _matches(self.file_codes, code):
            return True
        return any(_matches(self.line_codes.get(line, frozenset()), code)
                   for line in range(first_line, last_line + 1))


def _matches(codes: frozenset[str], code: str) -> bool:
    return codes == ALL or code in codes


def parse_suppressions(text: str) -> Suppressions:
    file_codes: set[str] = set()
    line_codes: dict[int, frozenset[str]] = {}
    if "noqa" not in text.lower():  # upper case counts too, as in ruff
        return Suppressions(frozenset(), line_codes)
    for number, line in enumerate(text.splitlines(), start=1):
        if "noqa" not in line.lower():
            continue
        file_match = _FILE_NOQA.search(line)
        if file_match:
            codes = _codes(file_match)
            file_codes = set(ALL) if codes == ALL else file_codes | codes
            continue
        line_match = _LINE_NOQA.search(line)
        if line_match:
            line_codes[number] = _codes(line_match)
    return Suppressions(frozenset(file_codes), line_codes)
