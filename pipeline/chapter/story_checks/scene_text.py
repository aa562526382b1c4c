"""How a chapter's text is read by the story checks (#18): sentences, clauses, dialogue, memory or
flashback frames and negations. Pure string work, no ORM, no jieba.

The checks tell *acting* from *mentioning*: a name that is the subject of a narration clause, with
a verb after it, outside quotes and outside a memory frame, acts in the scene; a name inside
dialogue, inside a memory/flashback frame, or after a verb (an object: 想起林枫) is a mention.
"""
from __future__ import annotations

import re
from dataclasses import dataclass
from functools import cached_property

from projects.text_stats import quoted_mask

EVIDENCE_CHARS = 60
SENTENCE_END = "。！？!?；;…\n"
CLAUSE_END = SENTENCE_END + "，,：:、"
# A memory, a dream, a flashback, a grave: what follows in the paragraph happens in the past or in
# the mind, so a dead character may appear there (issue #18: "a mention in memory … or a flashback").
MEMORY_FRAMES = (
    "回忆", "忆起", "想起", "记起", "记得", "想到", "念及", "浮现", "脑海", "梦见", "梦到", "梦中", "梦里", "当年",
    "曾经", "如果", "要是", "假如", "倘若", "若是", "若还", "若在", "昔日", "往昔", "往事", "那年", "那时", "从前",
    "多年前", "年前", "生前", "临终", "遗像", "遗照", "遗物", "遗言", "遗书", "画像", "照片", "雕像", "冢", "尸",
    "骨灰", "遗愿", "墓", "坟", "灵位", "牌位", "灵堂", "祭拜", "祭奠", "悼", "怀念", "思念", "想念", "缅怀", "已故",
    "亡故", "故去", "去世", "逝世", "离世", "死后", "死前", "已死", "身死", "之死", "死讯", "战死", "阵亡", "殉",
    "幻象", "幻影", "幻觉",
)
NEGATIONS = ("不", "没", "未", "无", "非", "别", "莫", "勿", "禁止", "不能", "不可", "严禁", "不得", "不许", "不准",
             "休想", "无法", "绝不", "从未", "从不", "难以", "岂能", "何曾", "并非")
VERB_REACH = 3  # a verb may start this many characters after the name and its adverbs (缓步走来)
NEGATION_WINDOW = 6  # characters before a keyword, inside its clause, where a negation counts
# Words of "being talked about" rather than acting, right after a name (林枫的墓, 林枫死后 …)
PASSIVE_AFTER_NAME = ("的", "之", "死", "已", "曾", "当年", "生前", "那", "这", "般", "似", "一样", "一般")
# Before a name, these make it a thing talked or thought about, not a person in the scene
MENTION_VERBS = ("想", "念", "提", "记", "说起", "谈起", "聊起", "问起", "听说", "据说", "传说", "传闻", "知道", "以为",
                 "怀疑", "像", "如同", "好似", "仿佛", "似乎", "梦", "关于", "为了", "替")
# Right before a name, these put that person in the scene with the speaker (扶起林枫, 对林枫说)
PRESENCE_VERBS = ("看着", "望着", "盯着", "看向", "望向", "瞪着", "扶着", "扶起", "拉住", "抱住", "拦住", "搀着",
                  "对着")
BODY_PARTS = ("声音", "身影", "手", "目光", "眼睛", "脸", "笑声", "脚步", "掌", "剑", "刀")
# Speech and action verbs of narration. jieba's tags decide in general; this list covers the short
# ones it may tag otherwise (道, 笑) and speeds the common case.
ACTION_VERBS = (
    "说", "道", "问", "答", "喊", "叫", "吼", "笑", "哭", "叹", "骂", "喝",
    "冷哼", "开口", "低声", "沉声", "点头", "摇头",
    "走", "跑", "站", "坐", "起身", "转身",
    "抬", "伸", "握", "拔", "挥", "推", "拉", "拿", "取", "掏", "递", "接", "扔",
    "看", "望", "盯", "瞪", "瞥", "听", "闻", "抓", "按", "踢", "打", "砍", "刺", "劈", "冲", "跳", "跃", "飞", "踏",
    "迈", "来到", "出现", "现身", "进", "出", "回", "上前", "退", "停", "蹲", "跪", "躺", "扶", "抱", "拍", "敲", "吃",
    "喝", "写", "读", "扛", "背", "提", "举", "放", "披", "穿", "戴", "收", "运", "施", "祭", "催", "吸", "吐",
    "传来", "而来", "过来", "进来", "赶来", "奔", "赶",
    "点点头", "摆手", "皱眉", "示意", "吩咐", "嘱咐", "叮嘱", "招手",
    "挡", "拦", "扑", "抢", "夺", "拍", "指", "拱手", "抱拳", "行礼", "鞠躬", "睁开", "闭上", "咳",
)


@dataclass(frozen=True)
class Span:
    start: int
    end: int


class SceneText:
    """One chapter, read once: quote mask, sentence and clause bounds, paragraph frames."""

    def __init__(self, text: str) -> None:
        self.text = text or ""

    @cached_property
    def quoted(self) -> list[bool]:
        return quoted_mask(self.text)

    def _bounds(self, at: int, stops: str) -> Span:
        start = at
        while start > 0 and self.text[start - 1] not in stops and not self._quote_edge(start - 1, at):
            start -= 1
        end = at
        while end < len(self.text) and self.text[end] not in stops and not self._quote_edge(end, at):
            end += 1
        return Span(start, end)

    def _quote_edge(self, i: int, at: int) -> bool:
        """A quote mark, or the border between dialogue and narration, ends a clause."""
        if self.text[i] in "“”「」『』\"":
            return True
        return self.quoted[i] != self.quoted[at]

    def sentence(self, at: int) -> Span:
        return self._bounds(at, SENTENCE_END)

    def clause(self, at: int) -> Span:
        return self._bounds(at, CLAUSE_END)

    def paragraph(self, at: int) -> Span:
        start = self.text.rfind("\n", 0, at) + 1
        end = self.text.find("\n", at)
        return Span(start, len(self.text) if end == -1 else end)

    def evidence(self, at: int) -> str:
        """The sentence around ``at``, trimmed to EVIDENCE_CHARS: what a finding quotes."""
        span = self.sentence(at)
        return self.text[span.start:span.end].strip()[:EVIDENCE_CHARS]

    def narration(self, span: Span) -> str:
        """The span's text with dialogue blanked out (so a 死 said aloud frames nothing)."""
        return "".join(" " if self.quoted[i] else self.text[i] for i in range(span.start, span.end))

    def in_dialogue(self, at: int) -> bool:
        return 0 <= at < len(self.text) and self.quoted[at]

    def in_memory_frame(self, at: int) -> bool:
        """A memory/flashback/grave word in the narration of the same sentence, or earlier in the
        same paragraph (a flashback runs on until the paragraph ends)."""
        paragraph, sentence = self.paragraph(at), self.sentence(at)
        before = self.narration(Span(paragraph.start, sentence.end))
        return any(word in before for word in MEMORY_FRAMES)

    def negated(self, at: int) -> bool:
        """A negation in the few characters before ``at`` within its clause (不能御剑, 禁止入内)."""
        clause = self.clause(at)
        window = self.text[max(clause.start, at - NEGATION_WINDOW):at]
        return any(word in window for word in NEGATIONS)


def acts_after(text: str, end: int, clause_end: int) -> bool:
    """Does a verb follow the name that ends at ``end`` within its clause (after at most a few
    adverbs: 缓缓、忽然、轻轻地 …, or a voice or body part: 的声音、的身影)? A possessive or a death
    word right after it is a mention."""
    rest = text[end:clause_end]
    part = next((p for p in BODY_PARTS if rest.startswith("的" + p)), None)
    if part:
        rest = rest[1 + len(part):]
    elif not rest or rest.startswith(PASSIVE_AFTER_NAME):
        return False
    window = re.sub(r"^(?:[\u4e00-\u9fff]{1,2}地|忽然|突然|缓缓|慢慢|轻轻|默默|静静|猛地|"
                    r"也|又|再|还|便|就|才|正|已经|一边)+",
                    "", rest)
    return any(0 <= window.find(verb) <= VERB_REACH for verb in ACTION_VERBS)


def is_subject(text: str, start: int, clause_start: int) -> bool:
    """The name is not the object of a verb of talking or thinking about someone (想起林枫, 提到
    林枫, 听说林枫): then, followed by a verb, it acts, as a subject (林枫走来) or a pivot (只见林枫
    走来, 看见林枫走来: seen doing it in the scene)."""
    before = text[clause_start:start]
    return not any(word in before for word in MENTION_VERBS)


def is_present_object(text: str, start: int, clause_start: int) -> bool:
    """Right after a verb of touching or facing someone (扶起林枫, 看着林枫): they are in the scene."""
    before = text[max(clause_start, start - 3):start]
    return any(before.endswith(verb) for verb in PRESENCE_VERBS)
