"""The fixed catalogue of craft-lint rules: ids, severities, Chinese names and default thresholds.

``hard`` findings block the commit until fixed (or a person accepts the chapter at a gate);
``soft`` findings go to the judge as suspicions. Thresholds come from facts §13 where it gives
one; the others are house defaults, all overridable per platform and per project.
"""
from __future__ import annotations

import re
from dataclasses import dataclass

HARD, SOFT = "hard", "soft"


@dataclass(frozen=True)
class Rule:
    id: str
    severity: str
    name: str  # Chinese, for the judge, the refiner and the CLI
    narration_only: bool = False  # dialogue inside Chinese quotes is exempt


RULES: tuple[Rule, ...] = (
    Rule("em_dash", HARD, "破折号（——）"),
    Rule("md_separator", HARD, "Markdown 分隔线"),
    Rule("quote_format", HARD, "引号格式"),
    Rule("chapter_heading", HARD, "章节标题行"),
    Rule("narration_connector", SOFT, "叙述连接词", narration_only=True),
    Rule("blacklist", SOFT, "AI 黑名单用语"),
    Rule("simile_density", SOFT, "比喻密度", narration_only=True),
    Rule("ellipsis_density", SOFT, "省略号密度"),
    Rule("exclamation_density", SOFT, "感叹号密度"),
    Rule("sentence_length_std_dev", SOFT, "句长标准差"),
    Rule("sentence_length_run", SOFT, "连续等长句"),
    Rule("paragraph_length_cv", SOFT, "段落长度变异系数"),
    Rule("paragraph_too_long", SOFT, "段落过长"),
    Rule("sentence_repetition", SOFT, "句子重复", narration_only=True),
    Rule("four_char_idiom_density", SOFT, "四字成语密度", narration_only=True),
    Rule("vocabulary_diversity", SOFT, "词汇多样性"),
    Rule("sentence_pattern", SOFT, "AI 句式", narration_only=True),
    Rule("word_count", SOFT, "字数"),
    Rule("title", SOFT, "章节标题"),
)
RULES_BY_ID = {rule.id: rule for rule in RULES}
RULE_IDS = tuple(RULES_BY_ID)

DEFAULT_THRESHOLDS: dict[str, float] = {
    "em_dash_max": 0,  # facts §13 indicator 8: zero tolerance
    "narration_connector_max": 1,  # facts §13 indicator 6: red at >= 2
    "blacklist_max_hits": 0,  # every hit is a target for the refiner; facts §13 zones are in the indicators
    "simile_max_per_kchars": 2.0,  # facts §13 indicator 10
    "ellipsis_max_per_kchars": 3.0,  # facts §13 indicator 12
    "exclamation_max_per_kchars": 5.0,  # facts §13 indicator 13
    "density_min_count": 3,  # a density rule needs this many hits, so one mark in a short text is not a finding
    "sentence_length_std_dev_min": 6.0,  # facts §13 indicator 3 (green 8-18)
    "sentence_length_min_sentences": 6,  # fewer sentences: no meaningful spread
    "sentence_length_run_tolerance": 5,  # sentences whose lengths differ by at most this ...
    "sentence_length_run_min": 3,  # ... this many in a row
    "paragraph_length_cv_min": 0.3,  # facts §13 indicator 4 (green 0.4-1.2)
    "paragraph_min_paragraphs": 5,
    "paragraph_max_chars": 200,  # mobile readability: a longer paragraph fills more than a phone screen
    "repetition_similarity": 0.8,  # difflib ratio at or above which two sentences are "nearly the same"
    "repetition_min_chars": 6,  # shorter sentences ("好。") may repeat
    "repetition_window": 5,  # facts §13 indicator 2: among 5 adjacent sentences
    "idiom_max_per_kchars": 6.0,
    "vocabulary_diversity_min": 0.35,  # facts §13 indicator 5
    "vocabulary_window": 100,  # moving-average type-token ratio over this many words
}
MAX_EVIDENCE = 50  # evidence items kept per finding; ``count`` is always complete

# Default narration connectors (the ai-blacklist template's narration_connector category, facts §10.16)
# when the project's blacklist has none.
DEFAULT_CONNECTORS = ("首先", "其次", "此外", "总之", "总而言之", "综上所述", "与此同时", "不仅如此",
                      "值得一提的是", "换句话说", "事实上", "由此可见")
SIMILE_WORDS = frozenset({"像", "好像", "就像", "像是", "仿佛", "宛如", "犹如", "如同", "好似", "恍若", "恍如",
                          "宛若", "似的"})

_EMOTIONS = ("愤怒|悲伤|恐惧|喜悦|兴奋|紧张|不安|绝望|失落|温暖|暖意|无奈|愧疚|害怕|震惊|惊讶|感动|孤独|委屈|"
             "焦虑|欣慰|痛苦|幸福|迷茫|心酸|酸楚|怒火|寒意|悔意|难过|激动|恐慌|安心|羞愧|庆幸|疲惫|悲凉|苦涩|希望|力量")
_CLAUSE = r"[^。！？!?\n]"


@dataclass(frozen=True)
class SentencePattern:
    id: str
    name: str
    level: str  # high | medium (facts §13 indicator 9: red at >= 1 high hit)
    regex: re.Pattern


# Markers of the AI sentence patterns SP-01..SP-08 (facts §13 indicator 9). A marker is a suspicion:
# the judge confirms it.
SENTENCE_PATTERNS: tuple[SentencePattern, ...] = (
    SentencePattern("SP-01", "情绪标签：直接说出情绪", "high", re.compile(
        rf"(?:感到|感觉到|涌起|涌上|升起|充满了?|充斥着|泛起|生出){_CLAUSE}{{0,6}}?(?:{_EMOTIONS})")),
    SentencePattern("SP-02", "模板转折：看似……实则", "high", re.compile(
        rf"(?:看似|表面上){_CLAUSE}{{1,30}}?(?:实则|实际上|其实)|与其说{_CLAUSE}{{1,30}}?不如说")),
    SentencePattern("SP-03", "因果解释：之所以……是因为", "medium", re.compile(
        rf"之所以{_CLAUSE}{{1,40}}?(?:是因为|是由于|是为了)|正因(?:为)?如此|毕竟|这也是为什么")),
    SentencePattern("SP-04", "否定对照：不是……而是", "medium", re.compile(
        rf"(?:不是|并非|并不是){_CLAUSE}{{1,15}}?[，,]\s*而是")),
    SentencePattern("SP-05", "顿悟总结：终于明白", "high", re.compile(
        r"(?:终于|这才|才真正|这一刻才)(?:明白|懂得|意识到|理解)")),
    SentencePattern("SP-06", "微表情套话：闪过一丝", "medium", re.compile(
        r"(?:眼中|眼里|眼底|眸中|嘴角|脸上|唇边)(?:闪过|划过|掠过|浮现|勾起|扬起|露出|泛起)(?:了)?(?:一丝|一抹|一道)")),
    SentencePattern("SP-07", "难以言喻的模糊描写", "medium", re.compile(
        r"难以言喻|无法言说|无以言表|说不清道不明|说不出的")),
    SentencePattern("SP-08", "凝固套话：时间仿佛静止", "high", re.compile(
        r"(?:时间|空气|世界)(?:仿佛|似乎|好像)?(?:在这一刻)?(?:静止|凝固|凝结|停止)(?:了)?")),
)
