"""The text prefilter, apart from the engine so that runs on files without DALI never import
LibCST: a file that never spells "dali" cannot import it. Module names are case-sensitive, so
an import of DALI always spells it in lower case; "DALI" in prose does not count."""

from __future__ import annotations

PREFILTER = b"dali"


def might_use_dali(data: bytes) -> bool:
    return PREFILTER in data
