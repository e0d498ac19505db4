"""The token estimate of a text, for models no tokenizer fits, and the framing it assumes.

The estimate is a heuristic tuned against a real BPE tokenizer (cl100k_base; ``bench/
bench_estimator.py`` reports its error per kind of content). Text is split the way BPE
tokenizers pre-split it — words with their leading space, runs of up to three digits,
punctuation runs, whitespace — and each piece is weighed by its character classes:

* an ASCII word is one token up to a length that depends on its prefix, then a token per few
  more letters (long identifiers, rare words);
* a word with Latin diacritics (Vietnamese, French…) costs about a token per accented letter,
  since few accented syllables are in the vocabulary;
* CJK ideographs, kana and Hangul cost about a token a character (ideographs a little more);
  other scripts a per-character weight;
* punctuation costs a token per one or two characters, whitespace a token per run.

Blocks, messages, tool definitions and whole requests are counted by
:data:`harness.tokens.base.ESTIMATE`, the :class:`~harness.tokens.base.Tokenizer` over this
estimate: it caches texts by content and messages and tools by identity, and takes the overheads
below as its framing. This module knows no message type and keeps no cache.
"""

from __future__ import annotations

import math
import re

# Framing the provider adds around content (role markers, block delimiters, a tool's wrapper).
# Small and provider-specific; they keep an empty message from costing nothing.
MESSAGE_OVERHEAD = 4
BLOCK_OVERHEAD = 3
TOOL_OVERHEAD = 8

# What BPE tokenizers split on first (cl100k_base's pattern, in the stdlib's dialect: a letter is
# ``[^\W\d_]``). Each alternative is a named group so one scan classifies the pieces.
_PIECES = re.compile(
    r"(?P<contraction>'(?i:[sdmt]|ll|ve|re))"
    r"|(?P<short> ?[A-Za-z][a-z]{0,5}(?![^\W\d_]))"  # most English words: one token, fast
    r"|(?P<word>(?:[^\r\n\w]|_)?[^\W\d_]+)"
    r"|(?P<digits>\d{1,3})"
    r"|(?P<punct> ?(?:[^\s\w]|_)+[\r\n]*)"
    r"|(?P<space>\s*[\r\n]|\s+(?!\S)|\s)"
)

# ASCII words in lower case or Capitalised: (letters that are always one token, letters per
# extra token), by what precedes the letters.
_WORD_SPACE = (8, 8.0)   # " word": common words with their space are single tokens
_WORD_BARE = (6, 8.0)    # "word" at a line start or after a quote: split a little sooner
_WORD_PUNCT = (4, 7.0)   # ".attr", "_name", "(self"
_UPPER_EXTRA = 0.25      # ALLCAPS: acronyms beyond the common ones split every few letters
_CAMEL_PART = 6          # camelCase: a token per part, more for a long part
_RANDOM_LETTER = 0.8     # mixed case in short runs (ids, keys): nearly a token a letter
_REPEAT_RUN = 12         # "=====" and "-----" runs: long merges exist
# Words holding non-ASCII letters: weights per character class.
_ACCENTED_BASE = 0.8
_ACCENTED_LETTER = 0.85  # é, ư, ạ… few accented syllables are in the vocabulary
_ACCENTED_ASCII = 0.2    # the plain letters beside them
_HAN = 1.25              # CJK ideographs: common ones are one token, rarer ones two or three
_KANA = 1.0
_HANGUL = 1.2
_GREEK = 1.1
_CYRILLIC = 0.5
_HEBREW = 1.15
_ARABIC = 0.8
_INDIC = 1.4             # Devanagari and the other Brahmic scripts split into bytes early
_THAI = 1.1
_OTHER_LETTER = 1.0
_SYMBOL_BMP = 1.0        # “ ” — … ， 。
_SYMBOL_ASTRAL = 2.5     # emoji: several byte-level tokens each

_CAMEL = re.compile(r"[a-z][A-Z]")


def _letter_weight(ch: str) -> float:
    code = ord(ch)
    if code < 0x250 or 0x1E00 <= code < 0x1F00:  # Latin-1, extended A/B and additional (ạ ấ ầ)
        return _ACCENTED_LETTER
    if code < 0x900:
        if 0x370 <= code < 0x400:
            return _GREEK
        if 0x400 <= code < 0x530:
            return _CYRILLIC
        if 0x590 <= code < 0x600:
            return _HEBREW
        if 0x600 <= code < 0x700:
            return _ARABIC
        return _OTHER_LETTER
    if code < 0xE00:
        return _INDIC
    if code < 0xE80:
        return _THAI
    if 0x3040 <= code < 0x3100 or 0x31F0 <= code < 0x3200 or 0xFF66 <= code < 0xFFA0:
        return _KANA
    if 0xAC00 <= code < 0xD7B0 or 0x1100 <= code < 0x1200 or 0x3130 <= code < 0x3190:
        return _HANGUL
    if 0x3400 <= code < 0xA000 or 0xF900 <= code < 0xFB00 or 0x20000 <= code < 0x30000:
        return _HAN
    return _OTHER_LETTER


def _ascii_word_tokens(piece: str) -> float:
    first = piece[0]
    if first.isalpha():
        letters, (free, per) = piece, _WORD_BARE
    else:
        letters, (free, per) = piece[1:], (_WORD_SPACE if first == " " else _WORD_PUNCT)
    n = len(letters)
    if letters.islower() or (letters[0].isupper() and letters[1:].islower()) or n == 1:
        return 1.0 + max(0, n - free) / per
    if letters.isupper():
        return 1.0 + (n - 2) * _UPPER_EXTRA
    parts = 1 + len(_CAMEL.findall(letters))
    if n < 3 * parts:  # "XbQ", "cRzKa": a random id, about a token a letter
        return n * _RANDOM_LETTER
    return parts + max(0, n - _CAMEL_PART * parts) / _CAMEL_PART


def _word_tokens(piece: str) -> float:
    if piece.isascii():
        return _ascii_word_tokens(piece)
    first = piece[0]
    letters = piece if first.isalpha() else piece[1:]
    weights = [_ACCENTED_ASCII if ch.isascii() else _letter_weight(ch) for ch in letters]
    if all(w in (_ACCENTED_ASCII, _ACCENTED_LETTER) for w in weights):  # Latin with accents
        return _ACCENTED_BASE + sum(weights)
    # Other scripts: letters weighed one by one (a Japanese piece mixes kana and kanji); a
    # full-width comma or stop before them is a token of its own.
    prefix = 0.0 if first.isalpha() or first == " " else 0.5 if first.isascii() else 1.0
    return prefix + sum(weights)


def _punct_tokens(piece: str) -> float:
    core = piece.strip()
    if not core:
        return 1.0
    n = len(core)
    if core.isascii():
        if n <= 2:
            return 1.0
        if n >= 4 and core.count(core[0]) == n:
            return float(math.ceil(n / _REPEAT_RUN))
        return 1.15 + (n - 3) * 0.45
    tokens = 0.0
    ascii_run = 0
    for ch in core:
        if ch.isascii():
            ascii_run += 1
        else:
            tokens += _SYMBOL_ASTRAL if ord(ch) > 0xFFFF else _SYMBOL_BMP
    return tokens + math.ceil(ascii_run / 2)


def estimate_text(text: str) -> int:
    """Tokens of plain text (not cached: :data:`harness.tokens.base.ESTIMATE` caches texts)."""
    total = 0.0
    for match in _PIECES.finditer(text):
        kind = match.lastgroup
        if kind == "word":
            total += _word_tokens(match.group())
        elif kind == "punct":
            total += _punct_tokens(match.group())
        else:  # short words, contractions, digits, whitespace: one token each
            total += 1.0
    return math.ceil(total)
