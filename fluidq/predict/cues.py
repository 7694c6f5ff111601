"""The default length-ranker backbone: instruction cues, hashed word and character n-grams.

:class:`LengthCues` turns a prompt into three blocks of features, all computed from the text
alone (numpy only, no download, no vocabulary to fit):

* **cues** (dense, 44 columns in cue set 2): what kind of answer the instruction asks for and how long.
  Requested counts ("in 3 sentences", "50 words", "a list of 10", "one word"), the genre asked
  for (essay, story, poem, letter, list, plan, code, recipe...), brevity cues ("briefly",
  "yes or no", "classify", "rewrite", "translate"), question words, code and math markers, and
  the prompt's own size (words, characters, lines, sentences, the size of a pasted input); cue
  set 2 (the default since 2026-12) adds short forms (joke, title, slogan, tweet...), definitions
  (define, synonym, pronounce...), long tasks (plan, itinerary, lesson, schedule...), factoid
  questions ("who was", "what is the capital", "how many"), formats (table, JSON, markdown...) and
  the number of list items inside the prompt;
* **word n-grams**: lower-cased word uni- and bi-grams hashed into ``2**n_bits`` columns
  (CRC-32, sub-linear counts, rows L2-normalised, as :class:`~fluidq.predict.HashedNgrams`), scaled
  by ``word_weight``;
* **character n-grams**: 5- and 6-grams (by default) of the lower-cased text (runs of spaces made one),
  hashed into ``2**n_bits`` further columns by a polynomial hash in numpy, rows L2-normalised,
  scaled by ``char_weight``.

The sparse block is the word columns then the character columns (``2 * 2**n_bits``); the cue block
is the dense tail that :class:`~fluidq.predict.LengthRanker` standardises.
"""
from __future__ import annotations

import re
from dataclasses import dataclass, field

import numpy as np
import scipy.sparse as sp

from .._validate import integer, real
from ..errors import ParameterError
from .features import HashedNgrams, as_prompts

__all__ = ["LengthCues", "CUE_NAMES", "CUE_NAMES_V1"]

_NUM_WORDS = {"a": 1, "an": 1, "one": 1, "single": 1, "two": 2, "couple": 2, "pair": 2, "three": 3, "four": 4,
              "five": 5, "six": 6, "seven": 7, "eight": 8, "nine": 9, "ten": 10, "eleven": 11, "twelve": 12,
              "fifteen": 15, "twenty": 20, "thirty": 30, "fifty": 50, "hundred": 100, "few": 3, "several": 4}
_NUM = r"(\d{1,4}|" + "|".join(sorted(_NUM_WORDS, key=len, reverse=True)) + r")"
# words a unit of the answer stands for: what "N <unit>" asks, in words
_UNITS = {"word": 1, "words": 1, "sentence": 15, "sentences": 15, "line": 8, "lines": 8, "paragraph": 70,
          "paragraphs": 70, "page": 400, "pages": 400, "item": 12, "items": 12, "example": 15, "examples": 15,
          "idea": 15, "ideas": 15, "tip": 20, "tips": 20, "way": 20, "ways": 20, "reason": 20, "reasons": 20,
          "question": 12, "questions": 12, "point": 15, "points": 15, "bullet": 12, "bullets": 12,
          "step": 20, "steps": 20, "name": 3, "names": 3, "title": 8, "titles": 8, "option": 12, "options": 12,
          "suggestion": 15, "suggestions": 15, "verse": 30, "verses": 30, "stanza": 30, "stanzas": 30,
          "haiku": 17, "tweet": 30, "tweets": 30, "slogan": 8, "slogans": 8, "keyword": 2, "keywords": 2,
          "synonym": 2, "synonyms": 2, "adjective": 2, "adjectives": 2, "character": 0.2, "characters": 0.2}
_COUNT = re.compile(r"\b" + _NUM + r"(?:\s+|-)(?:[a-z-]+\s+){0,2}?(" + "|".join(_UNITS) + r")\b")
_UNIT_WORDS = frozenset(_UNITS)
_DIGIT = re.compile(r"[0-9]")
_PTOKEN = re.compile(r"[a-z]+|[0-9]+|[^\sa-z0-9]")
_UPPER = re.compile(r"[A-Z]")
_BOUND_WORDS = frozenset("under less fewer most more maximum max up within least minimum over".split())
_BOUND = re.compile(r"\b(?:under|less than|fewer than|at most|no more than|maximum of|max|up to|within|"
                    r"at least|more than|minimum of|over)\s+" + _NUM + r"\b")

def _cue(words="", prefixes="", phrases=(), starts=()):
    """A cue: any of ``words`` (whole tokens), a token starting with one of ``prefixes``, one of
    ``phrases`` (token sequences), or the prompt starting with one of ``starts``."""
    return (frozenset(words.split()), tuple(prefixes.split()), tuple(f" {p} " for p in phrases),
            tuple(f" {p} " for p in starts))


# each a 0/1 column, matched on the lower-cased prompt's tokens (runs of letters and digits); a
# token set and substring tests keep a prompt's cues at some 20 microseconds
_CUES = (
    ("one_word", _cue(phrases=("one word", "single word", "1 word", "in a word"))),
    ("yes_no", _cue(phrases=("yes or no", "true or false", "yes no"))),
    ("brief", _cue("brief briefly short shortly concise concisely quick quickly", "succinct", ("in short",))),
    ("summarize", _cue("tldr", "summar", ("tl dr", "in one sentence", "one sentence"))),
    ("classify", _cue("categorize categorise sentiment label identify choose select pick rate score detect extract",
                      "classif", ("which one", "which of"))),
    ("rewrite", _cue("rewrite rephrase paraphrase correct proofread grammar fix edit convert format simplify",
                     "translat")),
    ("list", _cue("list enumerate examples ideas suggestions tips", "bullet")),
    ("long_form", _cue("essay article blog story novel chapter script speech report guide tutorial plan itinerary "
                       "outline proposal letter email message post description")),
    ("poem", _cue("poem poetry song lyrics haiku limerick rap sonnet", "verse")),
    ("detail", _cue("comprehensive elaborate long lengthy full complete", "detail thorough extensive",
                    ("in depth", "step by step"))),
    ("explain", _cue("describe discuss compare contrast analyse analyze advantages why", "explain difference",
                     ("pros and cons", "how do", "how does", "how can", "how to", "how should", "how would",
                      "how is", "how are"))),
    ("write", _cue(phrases=("write a", "write an", "write me", "write the", "write some"),
                   starts=("write", "compose", "create", "draft", "generate", "develop", "design", "make", "produce",
                           "come up", "please write", "please create", "please make", "please generate"))),
    ("act_as", _cue("pretend roleplay", phrases=("act as", "role play", "you are a", "you are an", "i want you to"))),
    ("code", _cue("code function python javascript java sql program regex class script html css bash algorithm api "
                  "def", "implement")),
    ("math", _cue("calculate solve compute equation formula sum probability", "percent", ("how many", "how much"))),
    ("what_is", _cue()),          # set in cue_row: starts with what/who/when/where/which, not "what are some..."
    ("what_are", _cue("suggest", "recommend", ("what are some", "what are the", "what are good", "what are ways",
                                               "what were some", "what were the", "give me some", "give me a few",
                                               "give me ideas", "give me examples"))),
    ("what_if", _cue("imagine", "hypothetical", starts=("what if",))),
    ("how_to", _cue(phrases=("how to",), starts=("how do", "how can", "how should", "how would"))),
    ("name_the", _cue()),         # set in cue_row: starts with name/give/find/state/tell me, not "give me a/some"
    ("recipe", _cue("recipe ingredients cook bake dish")),
    ("opinion", _cue("think opinion advice", phrases=("should i", "would you", "do you", "can you", "help me"))),
    ("given_input", _cue("given below", phrases=("the following", "this text", "this sentence", "this paragraph",
                                                  "this article", "this passage"))),
    ("greeting", _cue("thanks thank", starts=("hi", "hello", "hey"))),
)
_TOKEN = re.compile(r"[a-z0-9]+")
_OPERATOR = re.compile(r"\d\s*[-+*/=^]\s*\d")
_INPUT_AFTER_COLON = re.compile(r":[ \t]*\n")
_TOP_N = re.compile(r" top \d+ ")
_WH = frozenset("what who when where which".split())


def _index(kind: int) -> dict:
    """word / prefix / phrase / start -> the cue columns it sets."""
    out: dict = {}
    for i, (_, parts) in enumerate(_CUES):
        for key in parts[kind]:
            out.setdefault(key, []).append(i)
    return out


_BY_WORD, _BY_PREFIX, _BY_PHRASE, _BY_START = (_index(k) for k in range(4))
_PREFIX_RE = re.compile(" (" + "|".join(sorted(map(re.escape, _BY_PREFIX), key=len, reverse=True)) + ")")
# a phrase may begin where another ends: find every start (a lookahead consumes nothing)
_PHRASE_RE = re.compile(" (?=(" + "|".join(sorted((re.escape(p.strip()) for p in _BY_PHRASE), key=len, reverse=True))
                        + ") )")
_STARTS = tuple(sorted(_BY_START, key=len, reverse=True))
_NOT_WHAT_IS = frozenset("some good ways tips".split())
_SENT = re.compile(r"[.!?]+(?:\s|$)")
# the second cue set (2026-12): short forms, definitions, long tasks, factoid questions, formats, and
# the items of a list inside the prompt; the columns follow the first set's
_SHORT_FORM = frozenset("joke jokes riddle riddles pun puns title titles slogan slogans caption captions tweet "
                        "headline headlines nickname nicknames tagline taglines motto mottos name names hashtag "
                        "hashtags emoji acronym abbreviation".split())
_DEFINE = frozenset("define definition meaning mean means synonym synonyms antonym antonyms spell spelling pronounce "
                    "pronunciation abbreviation acronym".split())
_LONG_TASK = frozenset("plan plans itinerary itineraries lesson curriculum course schedule routine strategy strategies "
                       "proposal roadmap notes overview history".split())
_FACTOID = re.compile(r"^(?:(?:what|which) (?:is|was) the (?:name|capital|population|date|year|meaning|difference)\b"
                      r"|(?:who|when|where) (?:is|was|did|were)\b)"
                      r"|\bwhat year\b|\bhow (?:old|tall|far|long|big|many|much)\b")
_FORMAT = re.compile(r"\b(?:table|json|csv|markdown|bullet points|outline|spreadsheet|chart)\b")
_FACTOID_WORDS = frozenset("what which who when where year how".split())
_FORMAT_WORDS = frozenset("table json csv markdown bullet outline spreadsheet chart".split())
_LIST_LINE = re.compile(r"(?m)^\s*(?:\d+[.)]|[-*\u2022])\s+")
_V2_NAMES = ("short_form", "define", "long_task", "factoid", "format", "log_list_lines")
_SIZE_NAMES = ("log_words", "log_chars", "log_lines", "log_sentences", "log_input_words", "questions",
               "ends_question", "digits_frac", "upper_frac", "log_first_line_words")
_COUNT_NAMES = ("has_count", "log_requested_words", "has_bound", "log_bound")
#: the dense columns of the first cue set (``LengthCues(cue_set=1)``, the default until 2026-12)
CUE_NAMES_V1 = tuple(n for n, _ in _CUES) + _SIZE_NAMES + _COUNT_NAMES
#: the dense columns of the default cue set (2): the first set's, then six more
CUE_NAMES = CUE_NAMES_V1 + _V2_NAMES
CUE_SETS = {1: CUE_NAMES_V1, 2: CUE_NAMES}
_I_LIST, _I_CODE, _I_MATH, _I_WHAT_IS, _I_NAME_THE, _I_GIVEN = (
    [n for n, _ in _CUES].index(k) for k in ("list", "code", "math", "what_is", "name_the", "given_input"))

_CHAR_MULT = np.int64(1_000_003)
_CHAR_SEEDS = {3: np.int64(0x5BD1E995), 4: np.int64(0x27D4EB2F), 5: np.int64(0x165667B1)}


def _number(tok: str) -> float:
    return float(tok) if tok.isdigit() else float(_NUM_WORDS.get(tok, 1))


def cue_row(text: str, cue_set: int = 2) -> list:
    """The cue columns of one prompt: :data:`CUE_NAMES` (``cue_set=2``, the default) or
    :data:`CUE_NAMES_V1` (``cue_set=1``, its first columns)."""
    low = text.lower()
    toks = _TOKEN.findall(low)
    tokset = set(toks)
    joined = " " + " ".join(toks) + " "
    row = [0.0] * len(_CUES)
    hits = [i for w in tokset.intersection(_BY_WORD) for i in _BY_WORD[w]]
    hits += [i for p in set(_PREFIX_RE.findall(joined)) for i in _BY_PREFIX[p]]
    hits += [i for p in set(_PHRASE_RE.findall(joined)) for i in _BY_PHRASE[f" {p} "]]
    if joined.startswith(_STARTS):
        hits += [i for p in _STARTS if joined.startswith(p) for i in _BY_START[p]]
    for i in hits:
        row[i] = 1.0
    if "top" in tokset and _TOP_N.search(joined):
        row[_I_LIST] = 1.0
    if "```" in low or "c++" in low:
        row[_I_CODE] = 1.0
    if not row[_I_MATH] and any(c in low for c in "+-*/=^") and _OPERATOR.search(low):
        row[_I_MATH] = 1.0
    if ":" in text and _INPUT_AFTER_COLON.search(text):
        row[_I_GIVEN] = 1.0
    t0, t1, t2 = (toks + ["", "", ""])[:3]
    if t0 in _WH and not (t1 in ("are", "were") and (t2 in _NOT_WHAT_IS or joined.startswith(
            (f" {t0} {t1} the best ",)))):
        row[_I_WHAT_IS] = 1.0
    if ((t0 in ("name", "give", "find", "state") or (t0, t1) == ("tell", "me"))
            and not (t1 == "me" and t2 in ("a", "some"))):
        row[_I_NAME_THE] = 1.0
    words = low.split()
    lines = [ln for ln in text.splitlines() if ln.strip()]
    first = lines[0].split() if lines else []
    n_words = len(words)
    # a pasted input: whatever follows the first line (or a quoted block)
    input_words = n_words - len(first) if len(lines) > 1 else 0
    n_chars = max(len(text), 1)
    row += [np.log1p(n_words), np.log1p(len(text)), np.log1p(len(lines)), np.log1p(len(_SENT.findall(text)) or 1),
            np.log1p(input_words), min(text.count("?"), 5), float(text.rstrip().endswith("?")),
            len(_DIGIT.findall(text)) / n_chars, len(_UPPER.findall(text)) / n_chars,
            np.log1p(len(first))]
    req = []
    if not tokset.isdisjoint(_UNIT_WORDS):
        # "N <unit>": the first number at most 3 tokens before a unit with only words between them
        # (punctuation is a token here, so "14% tip" or "candidate. Reason" is no request; "500-word" is)
        pt = [t for t in _PTOKEN.findall(low) if t != "-"]
        for i in [i for i, t in enumerate(pt) if t in _UNIT_WORDS]:
            for j in range(max(i - 3, 0), i):
                u = pt[j]
                if (u in _NUM_WORDS or (u.isdigit() and len(u) <= 4)) and all(t.isalpha() for t in pt[j + 1:i]):
                    req.append(_number(u) * _UNITS[pt[i]])
                    break
    req = [r for r in req if r > 0]
    bounds = [_number(m.group(1)) for m in _BOUND.finditer(low)] if not tokset.isdisjoint(_BOUND_WORDS) else []
    row += [float(bool(req)), np.log1p(max(req)) if req else 0.0, float(bool(bounds)),
            np.log1p(max(bounds)) if bounds else 0.0]
    if cue_set >= 2:
        # each regex runs only where its words are among the tokens (a match needs them: same result)
        factoid = not tokset.isdisjoint(_FACTOID_WORDS) and bool(_FACTOID.search(low.strip()))
        fmt = not tokset.isdisjoint(_FORMAT_WORDS) and bool(_FORMAT.search(low))
        row += [float(not tokset.isdisjoint(_SHORT_FORM)), float(not tokset.isdisjoint(_DEFINE)),
                float(not tokset.isdisjoint(_LONG_TASK)), float(factoid), float(fmt),
                np.log1p(len(_LIST_LINE.findall(text))) if "\n" in text else 0.0]
    return row


@dataclass(frozen=True, kw_only=True, eq=False)
class LengthCues:
    """Instruction cues, hashed word n-grams and hashed character n-grams (the default backbone).

    Parameters
    ----------
    n_bits : int
        ``2**n_bits`` hash columns shared by the word and character n-grams (default 16).
    word_weight, char_weight : float
        Scale of the (L2-normalised) word and character n-gram blocks, ``>= 0``; 0 drops a block.
    char_min, char_max : int
        Shortest and longest character n-gram (default 5..6; 4..4 was the default before 2026-12:
        with cue set 2, 5..6 ranks better in the development cross-validation, see
        docs/latency-claims.md).
    cue_set : int
        2 (the default): :data:`CUE_NAMES`; 1: :data:`CUE_NAMES_V1`, the columns before 2026-12 (a
        saved ranker without a ``cue_set`` is read as 1).
    """

    n_bits: int = 16
    word_weight: float = 1.0
    char_weight: float = 1.0
    char_min: int = 5
    char_max: int = 6
    cue_set: int = 2
    _words: HashedNgrams = field(default=None, repr=False, compare=False)

    name = "length-cues"

    def __post_init__(self):
        object.__setattr__(self, "n_bits", integer("n_bits", self.n_bits, minimum=4))
        if self.n_bits > 26:
            raise ParameterError("n_bits", self.n_bits, "an integer in 4..26")
        object.__setattr__(self, "word_weight", real("word_weight", self.word_weight, nonnegative=True))
        object.__setattr__(self, "char_weight", real("char_weight", self.char_weight, nonnegative=True))
        object.__setattr__(self, "char_min", integer("char_min", self.char_min, minimum=1))
        object.__setattr__(self, "char_max", integer("char_max", self.char_max, minimum=self.char_min))
        if self.char_max > 8:
            raise ParameterError("char_max", self.char_max, "an integer in char_min..8")
        object.__setattr__(self, "cue_set", integer("cue_set", self.cue_set, minimum=1))
        if self.cue_set not in CUE_SETS:
            raise ParameterError("cue_set", self.cue_set, f"one of {', '.join(map(str, CUE_SETS))}")
        object.__setattr__(self, "_words", HashedNgrams(n_bits=self.n_bits, ngram_max=2))

    @property
    def n_sparse(self) -> int:
        return 2 << self.n_bits

    @property
    def n_features(self) -> int:
        return self.n_sparse + len(self.dense_names)

    @property
    def dense_names(self) -> tuple:
        return CUE_SETS[self.cue_set]

    def transform(self, prompts) -> sp.csr_matrix:
        m, dense = self.transform_parts(prompts)
        return sp.hstack([m, sp.csr_matrix(dense)], format="csr")

    def transform_parts(self, prompts):
        """``(sparse n-gram block, dense cue block)`` of ``prompts``."""
        prompts = as_prompts(prompts)
        names = self.dense_names
        dense = np.array([cue_row(p, self.cue_set) for p in prompts], dtype=float).reshape(len(prompts), len(names))
        half = 1 << self.n_bits
        words = (self.word_weight * self._words.transform_parts(prompts)[0] if self.word_weight > 0
                 else sp.csr_matrix((len(prompts), half)))
        chars = (self.char_weight * self._chars(prompts) if self.char_weight > 0
                 else sp.csr_matrix((len(prompts), half)))
        return sp.hstack([words, chars], format="csr"), dense

    def _chars(self, prompts) -> sp.csr_matrix:
        """Hashed character n-grams, rows L2-normalised (sub-linear counts)."""
        n = len(prompts)
        half = 1 << self.n_bits
        mask = np.int64(half - 1)
        texts = [" " + " ".join(p.lower().split()) + " " for p in prompts]
        raw = np.frombuffer("\x00".join(texts).encode("utf-8", "replace"), dtype=np.uint8).astype(np.int64)
        sizes = np.array([len(t.encode("utf-8", "replace")) for t in texts], dtype=np.int64)
        owner = np.repeat(np.arange(n, dtype=np.int64), sizes + 1)[:raw.size]
        rows, cols = [], []
        for k in range(self.char_min, self.char_max + 1):
            if raw.size < k:
                continue
            h = np.full(raw.size - k + 1, _CHAR_SEEDS.get(k, np.int64(0x9E3779B1 + k)), dtype=np.int64)
            for j in range(k):
                h = (h * _CHAR_MULT + raw[j:raw.size - k + 1 + j]) % np.int64(2**31 - 1)
            same = owner[:raw.size - k + 1] == owner[k - 1:]
            ok = same & (raw[:raw.size - k + 1] != 0) & (raw[k - 1:] != 0)   # no separator inside
            rows.append(owner[:raw.size - k + 1][ok])
            cols.append(h[ok] & mask)
        if not rows:
            return sp.csr_matrix((n, half))
        m = sp.csr_matrix((np.ones(sum(r.size for r in rows)), (np.concatenate(rows), np.concatenate(cols))),
                          shape=(n, half))
        m.sum_duplicates()
        m.data = np.log1p(m.data)
        norms = np.sqrt(np.asarray(m.multiply(m).sum(axis=1)).ravel())
        norms[norms == 0] = 1.0
        return (sp.diags(1.0 / norms) @ m).tocsr()

    def to_dict(self) -> dict:
        return {"backbone": self.name, "n_bits": self.n_bits, "word_weight": self.word_weight,
                "char_weight": self.char_weight, "char_min": self.char_min, "char_max": self.char_max,
                "cue_set": self.cue_set}
