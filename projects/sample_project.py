"""The demo novel: a small, complete project (world, cast, storylines, volume 1 plan with contracts,
initial state) that ``make demo`` loads and the tests use as a realistic fixture. Built through the
same services people use, so it is valid by construction."""
from __future__ import annotations

from django.contrib.auth.models import AbstractBaseUser
from django.db import transaction

from projects.models import (
    ChangeSource,
    ChapterContract,
    Character,
    OrchestratorState,
    PipelineStage,
    Project,
    Storyline,
    Volume,
    WorldDoc,
    WorldRule,
)
from projects.services.editing import story_object_create
from projects.services.projects import project_create
from projects.services.story_state import story_state_apply_patch

SAMPLE_SLUG = "demo"

STYLE_PROFILE = {
    "source_type": "template",
    "avg_sentence_length": 18,
    "dialogue_ratio": 0.4,
    "rhetoric_preferences": ["短句切换", "少用比喻"],
    "forbidden_words": ["莫名的", "不禁", "嘴角微微上扬"],
    "character_speech_patterns": {"lin-feng": "喜欢用反问句，口头禅'有意思'", "chen-lao": "文言腔，爱说'善'"},
}

AI_BLACKLIST = {
    "version": "2.1.0",
    "description": "AI 用语黑名单（演示用精简版）",
    "last_updated": "2026-11-01",
    "max_words": 250,
    "words": ["莫名的", "不禁", "嘴角微微上扬", "总而言之", "值得一提的是"],
    "categories": {
        "summary_word": [{"word": "总而言之", "replacement_hint": "删去，直接写结论"}],
        "emotion_cliche": [{"word": "嘴角微微上扬", "replacement_hint": "写具体动作"}],
        "narration_connector": [{"word": "与此同时", "context": "narration_only"}],
    },
    "whitelist": [],
    "update_log": [],
}

STORYLINE_SPEC = {
    "spec_version": 1,
    "rules": [
        {"id": "LS-001", "category": "continuity", "rule": "跨故事线的时间线必须一致", "constraint_type": "hard"},
        {"id": "LS-002", "category": "transition", "rule": "切线后 200 字内交代时间地点", "constraint_type": "soft"},
    ],
}

WORLD_DOCS = {
    "geography": "北境雪原与南方魔都隔着幽暗森林。",
    "history": "三百年前星火宗覆灭，残卷散落各地。",
    "rules": "灵力需以星火为引；凡人不能直接吸纳星火。",
}

WORLD_RULES = [
    ("W-001", "magic_system", "修炼者每日吸纳星火不得超过三次，否则经脉受损", "hard", ["第四次吸纳"]),
    ("W-002", "geography", "幽暗森林夜间无法辨别方向", "soft", []),
]

CHARACTERS = [
    ("lin-feng", "林枫", "出身北境的少年修士，执拗而聪明。", "C-LIN-FENG-001", "personality", "遇事先怀疑，再行动"),
    ("chen-lao", "陈老", "星火宗遗老，隐居雪原。", "C-CHEN-LAO-001", "speech", "说话带文言腔"),
    ("zhao-ming", "赵明", "魔都世家子弟，林枫的对手。", "C-ZHAO-MING-001", "relationship", "对林枫怀有敌意"),
]

OUTLINE_BLOCKS = [
    (1, "雪原来客", "main-arc", "林枫在雪原救下陈老", "得到密信", "ancient_prophecy 埋设"),
    (2, "密信", "main-arc", "赵明追踪而至", "林枫决意南下", "无"),
    (3, "入林", "main-arc", "幽暗森林迷途", "陈老传授星火诀", "ancient_prophecy 推进"),
]


def _outline() -> str:
    lines = ["## 第 1 卷大纲", ""]
    for number, title, line, conflict, arc, foreshadowing in OUTLINE_BLOCKS:
        lines += [
            f"### 第 {number} 章: {title}",
            f"- **Storyline**: {line}",
            "- **POV**: lin-feng",
            "- **Location**: 北境雪原",
            f"- **Conflict**: {conflict}",
            f"- **Arc**: {arc}",
            f"- **Foreshadowing**: {foreshadowing}",
            "- **StateChanges**: lin-feng.location",
            "- **TransitionHint**: null",
            "",
        ]
    return "\n".join(lines)


def _contract(number: int, title: str) -> dict:
    return {
        "chapter": number,
        "storyline_id": "main-arc",
        "excitement_type": "setup",
        "preconditions": {"character_states": {"lin-feng": {"location": "北境雪原"}},
                          "required_world_rules": ["W-001"]},
        "objectives": [
            {"id": f"OBJ-{number}-1", "type": "plot", "required": True, "description": f"完成「{title}」的主要冲突"}
        ],
        "postconditions": {"state_changes": {"lin-feng": {"location": "北境雪原"}}, "foreshadowing_updates": {}},
        "acceptance_criteria": ["林枫的行动符合其性格契约"],
    }


INITIAL_DELTA = {
    "chapter": 0,
    "base_state_version": 0,
    "storyline_id": "main-arc",
    "ops": [
        {"op": "set", "path": "characters.lin-feng.display_name", "value": "林枫"},
        {"op": "set", "path": "characters.lin-feng.location", "value": "北境雪原"},
        {"op": "set", "path": "characters.lin-feng.emotional_state", "value": "警觉"},
        {"op": "set", "path": "characters.chen-lao.display_name", "value": "陈老"},
        {"op": "set", "path": "characters.chen-lao.location", "value": "北境雪原"},
        {"op": "set", "path": "characters.zhao-ming.display_name", "value": "赵明"},
        {"op": "set", "path": "characters.zhao-ming.location", "value": "魔都"},
        {"op": "inc", "path": "characters.lin-feng.relationships.zhao-ming", "value": -30},
        {"op": "set", "path": "world_state.time_marker", "value": "第三年冬"},
    ],
}


@transaction.atomic
def sample_project_create(*, owner: AbstractBaseUser | None = None, slug: str = SAMPLE_SLUG) -> Project:
    """Create the demo novel, or return it if it exists (so ``make demo`` can run twice)."""
    existing = Project.objects.filter(slug=slug).first()
    if existing is not None:
        return existing
    project = project_create(
        owner=owner, slug=slug, title="星火长夜", genre="xuanhuan", target_platform="qidian",
        genre_drive_type="plot", brief="北境少年林枫卷入星火宗遗秘，与魔都世家周旋，一路南下寻找预言真相。",
        style_profile=STYLE_PROFILE, ai_blacklist=AI_BLACKLIST, storyline_spec=STORYLINE_SPEC,
        relationships={"lin-feng": {"zhao-ming": -30, "chen-lao": 50}},
    )
    for name, content in WORLD_DOCS.items():
        story_object_create(instance=WorldDoc(project=project, name=name, content=content), editor=owner)
    for position, (rule_id, category, rule, kind, keywords) in enumerate(WORLD_RULES):
        story_object_create(instance=WorldRule(project=project, rule_id=rule_id, category=category, rule=rule,
                                               constraint_type=kind, keywords=keywords, position=position),
                            editor=owner)
    for slug_id, name, profile, contract_id, kind, rule in CHARACTERS:
        contracts = [{"id": contract_id, "type": kind, "rule": rule, "valid_from_chapter": 1, "valid_until": None,
                      "exceptions": []}]
        story_object_create(instance=Character(project=project, slug=slug_id, display_name=name, profile=profile,
                                               contracts=contracts), editor=owner)
    story_object_create(instance=Storyline(project=project, slug="main-arc", name="星火主线", type="main_arc",
                                           pov_characters=["lin-feng"], description="林枫追寻预言"), editor=owner)
    volume = story_object_create(instance=Volume(
        project=project, number=1, title="雪原", outline=_outline(),
        storyline_schedule={"volume": 1, "active_storylines": ["main-arc"]},
        foreshadowing_plan={"schema_version": 1, "items": [
            {"id": "ancient_prophecy", "description": "远古预言暗示主角命运", "scope": "long",
             "target_resolve_range": [10, 20]}]},
    ), editor=owner)
    for number, title, *_rest in OUTLINE_BLOCKS:
        story_object_create(instance=ChapterContract(project=project, volume=volume, chapter=number,
                                                     data=_contract(number, title)), editor=owner)
    story_state_apply_patch(project=project, delta=INITIAL_DELTA, source=ChangeSource.IMPORT, user=owner)
    Project.objects.filter(pk=project.pk).update(  # checkpoint: planned volume 1, ready to write
        orchestrator_state=OrchestratorState.WRITING, pipeline_stage=PipelineStage.COMMITTED,
        last_committed_volume=1, current_volume=1,
    )
    project.refresh_from_db()
    return project
