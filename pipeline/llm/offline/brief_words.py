"""The words of a brief, for the offline backend: person names, places and things picked by jieba's
part-of-speech tagger (``nr`` person names, ``ns`` place names, ``n``/``nz`` nouns), so that the
offline quick start builds its world and cast from what the author wrote instead of a fixed demo.

Everything here is deterministic: jieba's dictionary segmentation has no randomness, and the seed
that picks among phrasings is a hash of the brief's text.
"""
from __future__ import annotations

import hashlib
import logging
import random
import re
from dataclasses import dataclass
from functools import lru_cache

from pypinyin import lazy_pinyin

MAX_WORDS = 8
CJK_WORD = re.compile(r"^[\u4e00-\u9fff]{2,6}$")
# A noun ending in one of these names a place (面馆, 废土, 雪原, 渡口 …); ending in the next ones,
# a person (老板娘, 剑客, 医师 …). jieba tags both ``n``; the ending is the cheapest honest guess.
PLACE_ENDINGS = frozenset("馆店铺城镇村庄寨山峰岭谷河湖海岛港湾街巷楼宫殿寺庙观府院原林关州国都市"
                          "土漠境域岸堡营站场园口洲坊")
PERSON_ENDINGS = frozenset("娘人者师客王女儿生手长官主匠婆翁妇兵士侠医僧姬郎爷叔姐妹哥弟徒商探")
# Words of the brief's frame rather than of its story.
STOPWORDS = frozenset({"故事", "小说", "主角", "作者", "世界", "时候", "东西", "事情", "一切", "自己", "问题"})
# Fallbacks for a brief without nouns: neutral, so nothing of the demo novel leaks into another book.
FALLBACK_PLACES = ("小镇", "旧城", "渡口")
FALLBACK_THINGS = ("旧信", "钥匙", "地图")
FALLBACK_ROLES = ("过客", "旧友", "对手")
SURNAMES = "沈顾许温程叶宋陆谢江韩方"
GIVEN_NAMES = ("禾", "遥", "川", "青", "砚", "知秋", "晚舟", "照", "野", "安", "棠", "屿")


@dataclass(frozen=True)
class BriefWords:
    people: tuple[str, ...]  # names the brief gives (nr)
    roles: tuple[str, ...]  # nouns naming a kind of person (老板娘)
    places: tuple[str, ...]  # place names (ns) and nouns naming a place
    things: tuple[str, ...]  # the other nouns (n, nz)
    seed: str  # a hash of the brief: picks phrasings, the same for the same brief

    def rng(self, purpose: str) -> random.Random:
        return random.Random(f"{self.seed}|{purpose}")

    def place(self, index: int = 0) -> str:
        places = self.places or FALLBACK_PLACES
        return places[index % len(places)]

    def thing(self, index: int = 0) -> str:
        things = self.things or FALLBACK_THINGS
        return things[index % len(things)]

    def role(self, index: int = 0) -> str:
        roles = self.roles or FALLBACK_ROLES
        return roles[index % len(roles)]


def _tagged(text: str) -> list[tuple[str, str]]:
    import jieba
    import jieba.posseg

    jieba.setLogLevel(logging.WARNING)  # no "Building prefix dict" chatter in every worker's log
    return [(pair.word, pair.flag) for pair in jieba.posseg.cut(text)]


@lru_cache(maxsize=128)
def brief_words(brief: str) -> BriefWords:
    """The brief's people, roles, places and things, each in order of first appearance, at most
    MAX_WORDS of each."""
    people: list[str] = []
    roles: list[str] = []
    places: list[str] = []
    things: list[str] = []
    for word, flag in _tagged(brief or ""):
        if not CJK_WORD.match(word) or word in STOPWORDS:
            continue
        if flag == "nr":
            bucket = people
        elif flag == "ns" or (flag == "n" and word[-1] in PLACE_ENDINGS):
            bucket = places
        elif flag == "n" and word[-1] in PERSON_ENDINGS:
            bucket = roles
        elif flag in ("n", "nz"):
            bucket = things
        else:
            continue
        if word not in bucket and len(bucket) < MAX_WORDS:
            bucket.append(word)
    seed = hashlib.sha256((brief or "").encode()).hexdigest()[:16]
    return BriefWords(tuple(people), tuple(roles), tuple(places), tuple(things), seed)


def invented_names(words: BriefWords, count: int) -> list[str]:
    """``count`` person names for a cast the brief does not name, chosen by the brief's seed."""
    rng = words.rng("names")
    surnames, given = rng.sample(SURNAMES, len(SURNAMES)), rng.sample(GIVEN_NAMES, len(GIVEN_NAMES))
    return [surnames[i % len(surnames)] + given[i % len(given)] for i in range(count)]


def name_slug(name: str, taken: set[str]) -> str:
    """A slug id for a display name (its pinyin), unique among ``taken`` (which it joins)."""
    base = "-".join(p for p in (re.sub(r"[^a-z0-9]", "", s.lower()) for s in lazy_pinyin(name)) if p) or "character"
    slug, n = base, 2
    while slug in taken:
        slug, n = f"{base}-{n}", n + 1
    taken.add(slug)
    return slug
