"""Default prompt templates (``*.j2``), with the sample context each is validated against.

A project may override any of them (``PromptTemplate`` in the admin); an override is accepted only
if it renders against the same sample context, through the one sandboxed renderer
(``pipeline.jacquard.templates.render_string``).
"""
from __future__ import annotations

from functools import cache
from pathlib import Path
from typing import Any

PROMPTS_DIR = Path(__file__).resolve().parent
_CAST = [{"slug": "lin-feng", "display_name": "林枫"}, {"slug": "chen-lao", "display_name": "陈老"}]

SAMPLE_CONTEXTS: dict[str, dict[str, Any]] = {
    "bible.j2": {"title": "雪夜来客", "genre": "玄幻", "drive": "情节驱动", "brief": "北境少年卷入宗门遗秘。",
                 "platform": {"name": "起点中文网", "target_min": 2500, "target_max": 3500, "hard_min": 2000,
                              "hard_max": 5000, "hook_required": True, "hook_min_strength": 3,
                              "hook_types": ["悬念提问", "威胁揭示"], "max_paragraph_chars": 300, "max_exposition": 4,
                              "max_new_entities": 6, "title_min": 2, "title_max": 30},
                 "guide": "- 读者：追更型男频读者为主。",
                 "voice": {"targets": ["平均句长约 18 字"], "narrative_voice": "第三人称有限视角",
                           "directives": [{"directive": "少用形容词堆叠", "do": "写动作", "dont": "写空洞情绪"}],
                           "exemplars": ["雪落在城门上，他没有回头。"], "speech": [("林枫", "短句，少解释")],
                           "preferred": ["冷笑一声"], "avoid": ["不禁", "莫名的"]},
                 "rules": [{"id": "W-001", "rule": "星火为引", "hard": True}], "rules_more": 0,
                 "docs": [{"name": "geography", "digest": "北境多雪。"}],
                 "roster": [{"name": "林枫", "aliases": ["林师兄"], "line": "北境少年"}], "roster_more": 0},
    "draft.j2": {"chapter": 7, "title": "入林", "target_chars": 3000, "word_min": 2500, "word_max": 3500,
                 "storyline_id": "main-arc", "place": "幽暗森林",
                 "objectives": ["林枫进入幽暗森林"], "characters": _CAST, "required_fixes": ["加快节奏"],
                 "hook_types": ["悬念提问", "威胁揭示"], "continues": True},
    "summarize.j2": {"chapter": 7, "title": "入林", "storyline_id": "main-arc", "characters": _CAST,
                     "foreshadowing_updates": {"ancient_prophecy": "advanced"},
                     "open_facts": [{"id": "fact-001", "kind": "promise", "text": "林枫答应护送陈老南下",
                                     "characters": ["lin-feng", "chen-lao"]}]},
    "refine.j2": {"style_directives": ["缩短句子"], "blacklist": ["不禁", "莫名的"],
                  "lint_findings": "- [必须修改] 破折号（——）（em_dash）×1：出现 1 处破折号“——” 例：【——】"},
    "judge.j2": {"chapter": 7, "objectives": [{"id": "OBJ-7-1", "description": "进入森林", "required": True}],
                 "checks": {"blacklist_hits_per_kchars": 0.3}, "platform": "qidian",
                 "lint_findings": "- [疑似问题] AI 句式（sentence_pattern）×1：疑似 AI 句式 1 处 例：【感到一阵愤怒】",
                 "hook_policy": {"required": True, "min_strength": 3, "allowed_types": ["question", "twist_reveal"]},
                 "chapter_ending": "他回头时，雪地里多了一行脚印。",
                 "golden_gates": [{"id": "immersion_min_score", "requirement": "代入感不低于 3.5",
                                   "evaluation_hint": "画面模糊判 fail", "threshold": None}],
                 "evidence": {"place": "幽暗森林", "roster": ["林枫（又称：林师兄）", "陈老【已退场】"],
                              "cast_state": [{"name": "林枫", "location": "幽暗森林", "inventory": ["密信"],
                                              "relationships": {"chen-lao": 50}, "status": ""}],
                              "foreshadowing_ledger": [{"id": "ancient_prophecy", "status": "推进中",
                                                        "description": "古老预言", "last_updated_chapter": 5}],
                              "open_facts": ["[fact-001] 承诺/誓言（第1章，林枫、陈老）：林枫答应护送陈老南下"],
                              "violations": [], "suspicions": ["已退场角色「陈老」在回忆中被提及"], "warnings": []}},
    "judge_rubric.j2": {"weights": {"plot_logic": "0.18", "character": "0.18", "immersion": "0.15",
                                    "foreshadowing": "0.10", "pacing": "0.08", "style_naturalness": "0.15",
                                    "emotional_impact": "0.08", "storyline_coherence": "0.08",
                                    "hook_strength": "0.00"}},
    "plan.j2": {"volume": 2, "chapter_start": 31, "chapter_end": 60, "storylines": ["main-arc"], "characters": _CAST},
    "consolidate.j2": {"summaries": ["## 第 1 章摘要\n- 林枫救下陈老。"], "level": "archive", "max_chars": 400,
                       "chapters": [1, 5],
                       "open_facts": ["[fact-001] 承诺/誓言（第1章，林枫、陈老）：林枫答应护送陈老南下"]},
    "world.j2": {"brief": "北境少年卷入宗门遗秘。", "genre": "xuanhuan", "platform": "qidian",
                 "research": ["宋代官制"]},
    "characters.j2": {"brief": "北境少年卷入宗门遗秘。", "count": 3, "rules": [{"id": "W-001", "rule": "星火为引"}],
                      "wanted": [{"name": "白衣客", "role": "antagonist", "first_chapter": 35, "brief": "来历不明"}]},
    "style.j2": {"brief": "北境少年卷入宗门遗秘。", "genre": "xuanhuan", "sample": ""},
    "review.j2": {"volume": 1, "chapter_range": [1, 30], "low_chapters": [7]},
    "promote_titles.j2": {"intent": "推广第 3 章", "platform": "xiaohongshu", "style": "casual", "topic": "雪夜来客"},
    "promote_body.j2": {"style": "casual", "word_min": 200, "word_max": 800, "hook": "他为什么在雪夜回头？",
                        "tone": "悬疑", "must_include": ["书名"], "must_avoid": ["剧透"]},
    "promote_cta.j2": {"platform": "wechat", "opening": "雪夜里，他回头了。"},
    "promote_hashtags.j2": {"topic": "雪夜来客", "platform": "xiaohongshu"},
    "promote_platforms.j2": {"title": "雪夜来客", "body": "正文", "hashtags": ["网络小说"]},
}


def template_names() -> list[str]:
    return sorted(SAMPLE_CONTEXTS)


@cache
def default_source(name: str) -> str:
    if name not in SAMPLE_CONTEXTS:
        raise KeyError(f"no default prompt template {name!r}; known: {', '.join(template_names())}")
    return (PROMPTS_DIR / name).read_text(encoding="utf-8")
