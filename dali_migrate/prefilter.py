"""The text prefilter, apart from the engine so that runs on files without DALI never import
LibCST: a file that never spells "dali" cannot import it. Module names are case-sensitive, so
an import of DALI always spells it in lower case; "DALI" in prose does not count."""

from __future__ import annotations

PREFILTER = b"dali"


WIDE_BOMS = (b"\xff\xfe", b"\xfe\xff")  # UTF-16/32 text spells "dali" with NULs between: let the engine say so


def might_use_dali(data: bytes) -> bool:
    return PREFILTER in data or data.startswith(WIDE_BOMS)
