"""The entities a task names: names, dates, e-mails and codes to look up in the seeded data."""

from __future__ import annotations

import re

# Words that start a sentence or name a time, not an entity of the database.
_STOP_WORDS = """a an the i my me we our you your please and or but then also if for of to in on at by
    with from how what which who when where why is are was were be do does did can could would
    should will it its this that these those there here all every each any some no not
    take add make fix buy find show list get set give put send move change update cancel remove
    delete create book order request leave keep drop check tell let look see pay use mark
    january february march april may june july august september october november december
    monday tuesday wednesday thursday friday saturday sunday today tomorrow yesterday
    don't doesn't didn't can't won't isn't aren't i'm i've i'd i'll let's it's"""
_STOP = frozenset(_STOP_WORDS.split())
_QUOTED = re.compile(r"(?<!\w)['\"“‘]([^'\"”’]{2,80})['\"”’](?!\w)")
_DATE = re.compile(r"\b\d{4}-\d{2}-\d{2}\b")
_EMAIL = re.compile(r"\b[\w.+-]+@[\w-]+\.[\w.]+\b")
_CODE = re.compile(r"\b[A-Z]{2,}[-_]?\d+[A-Z0-9-]*\b")
_CAPS = re.compile(r"\b[A-Z][\w'’-]*(?:\s+(?:&\s+|of\s+|and\s+)?[A-Z][\w'’-]*)*")


def _stopword(word: str) -> bool:
    """A sentence word, not a name: ``What's`` and ``Don't`` included."""
    w = word.lower().replace("’", "'")
    return w in _STOP or re.sub(r"'(s|re|ll|ve|d|m)$", "", w) in _STOP


def singular(word: str) -> str:
    """``word`` lower-cased without a plural ending, so ``Categories`` matches ``category``."""
    w = word.lower()
    if len(w) > 4 and w.endswith("ies"):
        return w[:-3] + "y"
    if len(w) > 3 and w.endswith("s") and not w.endswith("ss"):
        return w[:-1]
    return w


def extract_literals(instruction: str) -> tuple[list[str], list[str]]:
    """The entities a task names (to look up in the data), and its quoted new values.

    Quoted text is usually a value the agent must write ('titled "Solid gear"'),
    so it is reported, not looked up; names, dates, e-mails and codes are looked up.
    """
    quoted = [m.group(1) for m in _QUOTED.finditer(instruction)]
    text = _QUOTED.sub(" ", instruction)
    found: list[str] = []
    for pattern in (_EMAIL, _DATE, _CODE):
        found += pattern.findall(text)
        text = pattern.sub(" ", text)
    for m in _CAPS.finditer(text):
        words = m.group(0).split()
        while words and _stopword(words[0]):
            words = words[1:]
        while words and (_stopword(words[-1]) or len(words[-1]) == 1):
            words = words[:-1]
        phrase = " ".join(words).strip(" &")
        sentence_start = not text[: m.start()].strip() or text[: m.start()].rstrip()[-1] in ".!?:;"
        if not phrase or (len(words) == 1 and (len(phrase) < 3 or sentence_start)):
            continue
        found.append(phrase)
    unique: dict[str, str] = {}
    for x in found:
        unique.setdefault(x.lower(), x)
    return list(unique.values()), quoted


def tokens(text: str) -> set[str]:
    """The words of ``text`` (three letters or more), singular."""
    return {singular(w) for w in re.findall(r"[a-zA-Z]+", text) if len(w) >= 3}
