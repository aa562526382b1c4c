"""The voice (issue #17 §3): a sample's statistics measured by code, the voice page (paste or
upload, refusals, roles), the style analyst's exemplars and directives, the statistical targets
and style drift measured against the sample."""
from __future__ import annotations

import json
import random

import pytest
from django.core.files.uploadedfile import SimpleUploadedFile
from django.urls import reverse

from pipeline.llm.offline.writers import style as offline_style
from pipeline.llm.types import LLMBadOutput
from pipeline.models import PipelineRun, RunKind, RunStatus
from pipeline.book.voice import checked_profile, prompt_sample, style_profile_of
from pipeline.chapter.style_drift import chapter_metrics, detect, drift_baseline
from projects.errors import InvalidData
from projects.models import Project, VoiceSample
from projects.services.projects import project_create
from projects.services.voice import (
    MAX_UPLOAD_BYTES,
    clean_sample_text,
    profile_with_statistics,
    sample_text_from_upload,
    voice_sample_save,
)
from projects.style_targets import default_targets, statistical_targets
from projects.voice_stats import passages, sentence_lengths, voice_statistics
from tests.conftest import member_client

SAMPLE = """# 第一章 雪夜

雪下了一整夜。林枫推开门，冷风灌进来，吹得灯火一阵乱晃。他没有回头，只是把手里的刀又握紧了些。

“你真要走？”苏婉站在廊下，声音很轻。

“不走，宗门就完了。”林枫说。他的声音像冻住的河面，平，却底下有暗流。

院子里的老槐树被雪压弯了枝，偶尔落下一团雪，砸在石阶上，发出闷闷的一声。远处的山门隐在夜色里，只剩一盏孤灯，像是谁忘了吹灭。

苏婉走下台阶，把一件旧斗篷披在他肩上。斗篷是师父留下的，边角磨得发白，领口还缝着一道歪歪扭扭的补丁。那是她十二岁那年缝的，针脚粗得像蜈蚣。

“活着回来。”她说。

林枫点了点头。他知道这句话有多重，也知道自己多半做不到。可他还是点了头，像小时候答应师父每天早起练刀一样，认真，笨拙，不留余地。

他走出山门的时候，雪已经停了。天边露出一线灰白，照着他脚下那条谁也没走过的路。
"""


# --- statistics -----------------------------------------------------------------------------------


def test_statistics_of_a_known_passage_with_dialogue():
    text = "“走吧。”他说。\n她点头。\n\n他们走了很久很久，才到山下。"
    stats = voice_statistics(text, idioms=False)
    # sentences: 走吧 (2) | 他说 (2) | 她点头 (3) | 他们走了很久很久，才到山下 (13)
    assert sentence_lengths(text) == [2, 2, 3, 13]
    assert stats["sentences"] == 4 and stats["paragraphs"] == 3
    assert stats["avg_sentence_length"] == 5.0
    assert stats["sentence_length_range"] == [2, 13]
    assert stats["sentence_length_std_dev"] == 4.64
    assert stats["dialogue_ratio"] == round(3 / 26, 4)  # 走吧。 inside the quotes, of 26 visible characters
    assert stats["avg_paragraph_length"] == 8.7  # paragraphs of 8, 4 and 14 characters
    assert stats["paragraph_length_cv"] == 0.474
    assert stats["punctuation_per_kchars"]["comma"] == round(1 / 26 * 1000, 2)
    assert stats["punctuation_per_kchars"]["full_stop"] == round(4 / 26 * 1000, 2)
    assert stats["idioms_per_kchars"] is None  # not measured here


def test_statistics_without_dialogue_match_the_drift_measure():
    text = "他走了。她也走了。\n风停了。"
    stats = voice_statistics(text)
    assert stats["dialogue_ratio"] == 0.0
    assert stats["avg_sentence_length"] == chapter_metrics(text)["avg_sentence_length"] == 3.33
    assert stats["idioms_per_kchars"] is None  # under 200 characters


def test_statistics_of_a_short_and_of_an_empty_text():
    one = voice_statistics("雪。", idioms=False)
    assert one["sentences"] == 1 and one["sentence_length_std_dev"] is None and one["paragraph_length_cv"] is None
    empty = voice_statistics("")
    assert empty["chars"] == empty["sentences"] == empty["paragraphs"] == 0
    assert empty["avg_sentence_length"] == 0.0 and empty["dialogue_ratio"] == 0.0
    assert empty["sentence_length_range"] == [0, 0] and empty["punctuation_per_kchars"]["comma"] == 0.0
    assert voice_statistics("# 标题\n\n---\n")["chars"] == 0  # headings and scene breaks are not prose


def test_statistics_of_a_real_sample_measure_idioms():
    stats = voice_statistics(SAMPLE)
    assert stats["chars"] > 300 and stats["idioms_per_kchars"] is not None
    assert 8 <= stats["sentence_length_std_dev"] <= 18


def test_passages_are_whole_sentences_of_50_to_150_characters():
    found = passages(SAMPLE)
    assert len(found) >= 3
    for passage in found:
        assert 50 <= len(passage) <= 150 and passage in SAMPLE and passage[-1] in "。！？”"


# --- the offline analyst and the reading of its answer ----------------------------------------------


def _slice(text=SAMPLE, source="original"):
    return {"sample": text, "statistics": voice_statistics(text), "source_type": source, "brief": "", "genre": ""}


def test_the_offline_analyst_picks_exemplars_from_the_sample_deterministically():
    slice_ = _slice()
    first = json.loads(offline_style(slice_, random.Random(1))["style_profile"])
    again = json.loads(offline_style(slice_, random.Random(99))["style_profile"])
    assert first == again
    assert 3 <= len(first["style_exemplars"]) <= 5
    for exemplar in first["style_exemplars"]:
        assert 50 <= len(exemplar) <= 150 and exemplar in SAMPLE
    assert all(set(d) == {"directive", "do", "dont"} for d in first["writing_directives"])
    template = json.loads(offline_style({"sample": ""}, random.Random(1))["style_profile"])
    assert template["source_type"] == "template" and "style_exemplars" not in template


def test_code_statistics_override_the_models_numbers():
    slice_ = _slice(source="reference")
    claimed = json.loads(offline_style(slice_, random.Random(1))["style_profile"])
    assert claimed["avg_sentence_length"] == 18 and claimed["dialogue_ratio"] == 0.35  # what the "model" says
    profile = checked_profile(claimed, sample=SAMPLE, statistics=slice_["statistics"], source_type="reference",
                              stage="voice:style")
    stats = slice_["statistics"]
    assert profile["avg_sentence_length"] == stats["avg_sentence_length"] != 18
    assert profile["dialogue_ratio"] == stats["dialogue_ratio"]
    assert profile["sentence_length_std_dev"] == stats["sentence_length_std_dev"]
    assert profile["sentence_length_range"] == stats["sentence_length_range"]
    assert profile["paragraph_length_cv"] == stats["paragraph_length_cv"]
    assert profile["paragraph_style"]["avg_paragraph_length"] == stats["avg_paragraph_length"]
    assert profile["source_type"] == "reference"


def test_a_measure_the_sample_lacks_is_left_out():
    profile = profile_with_statistics({"sentence_length_std_dev": 3, "paragraph_style": "bad"},
                                      {**voice_statistics("雪。", idioms=False)}, source_type="original")
    assert "sentence_length_std_dev" not in profile and profile["paragraph_style"] == {"avg_paragraph_length": 2.0}


class _Call:
    def __init__(self, value):
        self.texts = {"style_profile": value if isinstance(value, str) else json.dumps(value, ensure_ascii=False)}


GOOD_DIRECTIVES = [{"directive": "短句", "do": "写动作", "dont": "堆形容词"}]


@pytest.mark.parametrize("bad", [
    "not json",
    [1, 2],  # not an object
    {"style_exemplars": "院子里的老槐树", "writing_directives": GOOD_DIRECTIVES},  # exemplars not a list
    {"style_exemplars": [1, 2, 3], "writing_directives": GOOD_DIRECTIVES},  # not strings
    {"style_exemplars": ["一段并不在样文里的文字" * 6] * 3, "writing_directives": GOOD_DIRECTIVES},  # invented
    {"style_exemplars": ["雪下了一整夜。"], "writing_directives": GOOD_DIRECTIVES},  # too short
    {"style_exemplars": "PASSAGES", "writing_directives": []},  # no directive
    {"style_exemplars": "PASSAGES", "writing_directives": ["只是一句话"]},  # legacy strings refused here
    {"style_exemplars": "PASSAGES", "writing_directives": [{"directive": "短句", "do": "", "dont": "x"}]},
    {"style_exemplars": "PASSAGES", "writing_directives": "短句"},
])
def test_bad_analyst_output_is_llm_bad_output(bad):
    if isinstance(bad, dict) and bad.get("style_exemplars") == "PASSAGES":
        bad = {**bad, "style_exemplars": passages(SAMPLE)[:3]}
    with pytest.raises(LLMBadOutput):
        style_profile_of(_Call(bad), slice_=_slice(), stage="voice:style")


def test_exemplars_not_in_the_sample_are_dropped_when_enough_remain():
    real = passages(SAMPLE)[:3]
    value = {"style_exemplars": [*real, "编造的一段" * 12], "writing_directives": GOOD_DIRECTIVES}
    profile = style_profile_of(_Call(value), slice_=_slice(), stage="voice:style")
    assert profile["style_exemplars"] == real


def test_the_prompt_sample_is_clipped_at_a_paragraph():
    long = "\n".join(["他走了很远的路，终于到了。" * 10] * 100)
    clipped = prompt_sample(long, 1000)
    assert len(clipped) <= 1000 and long.startswith(clipped) and clipped.endswith("。")


# --- uploads and the sample's size ------------------------------------------------------------------


def test_uploads_refused_with_a_message():
    with pytest.raises(InvalidData, match="UTF-8"):
        sample_text_from_upload(SAMPLE.encode("gbk"), "a.txt")
    with pytest.raises(InvalidData):
        sample_text_from_upload(b"\x89PNG\r\n\x1a\n\0\0\0\rIHDR", "a.txt")
    with pytest.raises(InvalidData):
        sample_text_from_upload(SAMPLE.encode(), "a.docx")
    with pytest.raises(InvalidData):
        sample_text_from_upload(b"a" * (MAX_UPLOAD_BYTES + 1), "a.txt")
    assert sample_text_from_upload("\ufeff".encode() + SAMPLE.encode(), "a.md").startswith("# 第一章")
    with pytest.raises(InvalidData):
        clean_sample_text("   ")
    with pytest.raises(InvalidData):
        clean_sample_text("太短了。")
    with pytest.raises(InvalidData):
        clean_sample_text("字" * 30_001)


# --- the page -------------------------------------------------------------------------------------


@pytest.fixture
def project(db):
    return project_create(owner=None, slug="snow", title="雪夜", target_platform="qidian", genre="xuanhuan")


def _url(project):
    return reverse("settings-voice", args=[project.slug])


@pytest.mark.django_db(transaction=True)
def test_an_editor_pastes_a_sample_and_the_analyst_fills_the_profile(make_user, settings):
    settings.CELERY_TASK_ALWAYS_EAGER = True
    project = project_create(owner=None, slug="snow", title="雪夜", target_platform="qidian", genre="xuanhuan")
    editor = member_client(project, make_user, "editor")
    response = editor.post(_url(project), {"action": "save", "source_type": "original", "text": SAMPLE})
    assert response.status_code == 302
    sample = VoiceSample.objects.get(project=project)
    assert sample.statistics["avg_sentence_length"] == voice_statistics(SAMPLE)["avg_sentence_length"]
    run = PipelineRun.objects.get(project=project, kind=RunKind.STYLE)
    assert run.status == RunStatus.DONE
    project.refresh_from_db()
    profile = project.style_profile
    assert profile["source_type"] == "original"
    assert profile["avg_sentence_length"] == sample.statistics["avg_sentence_length"]
    assert 3 <= len(profile["style_exemplars"]) <= 5 and all(e in SAMPLE for e in profile["style_exemplars"])
    assert profile["writing_directives"][0]["do"]
    assert project.orchestrator_state == "INIT"  # the analysis runs beside the book
    page = editor.get(_url(project)).content.decode()
    assert "平均每句" in page and profile["style_exemplars"][0] in page and "样文" in page
    english = member_client(project, make_user, "owner", language="en").get(_url(project)).content.decode()
    assert "A sentence has" in english and "Exemplar passages" in english


def test_an_upload_is_saved(project, make_user, sent):
    owner = member_client(project, make_user, "owner")
    upload = SimpleUploadedFile("sample.md", SAMPLE.encode(), content_type="text/markdown")
    response = owner.post(_url(project), {"action": "save", "source_type": "reference", "upload": upload})
    assert response.status_code == 302
    sample = VoiceSample.objects.get(project=project)
    assert (sample.file_name, sample.source_type) == ("sample.md", "reference")
    run = PipelineRun.objects.get(project=project, kind=RunKind.STYLE)
    assert (run.status, run.stage) == (RunStatus.QUEUED, "voice:style")


@pytest.mark.parametrize(("name", "data", "message"), [
    ("sample.txt", SAMPLE.encode("gbk"), "UTF-8"),
    ("sample.txt", b"\0\1\2\3binary" * 50, "不是文本文件"),
    ("sample.txt", b"", ""),
    ("sample.txt", ("字" * 200_000).encode(), "KiB"),
    ("sample.exe", SAMPLE.encode(), ".txt"),
    ("sample.txt", "太短。".encode(), "至少"),
])
def test_hostile_uploads_are_refused_in_words(project, make_user, sent, name, data, message):
    owner = member_client(project, make_user, "owner")
    upload = SimpleUploadedFile(name, data)
    response = owner.post(_url(project), {"action": "save", "source_type": "original", "upload": upload})
    assert response.status_code == 200
    assert message in response.content.decode()
    assert not VoiceSample.objects.filter(project=project).exists() and not PipelineRun.objects.exists()


def test_an_empty_form_and_both_inputs_are_refused(project, make_user, sent):
    owner = member_client(project, make_user, "owner", language="en")
    assert "Paste a sample or upload a file." in owner.post(_url(project), {"source_type": "original"}).content.decode()
    upload = SimpleUploadedFile("s.txt", SAMPLE.encode())
    both = owner.post(_url(project), {"source_type": "original", "text": SAMPLE, "upload": upload})
    assert "not both" in both.content.decode()
    assert not VoiceSample.objects.exists()


def test_a_huge_body_is_refused_without_a_500(project, make_user):
    owner = member_client(project, make_user, "owner")
    upload = SimpleUploadedFile("big.txt", b"a" * 3_000_000)
    response = owner.post(_url(project), {"action": "save", "source_type": "original", "upload": upload})
    assert response.status_code == 413


def test_reviewers_and_viewers_cannot_give_a_sample(project, make_user):
    for role in ("reviewer", "viewer"):
        client = member_client(project, make_user, role)
        assert client.get(_url(project)).status_code == 403
        assert client.post(_url(project), {"source_type": "original", "text": SAMPLE}).status_code == 403
    assert not VoiceSample.objects.exists()


def test_the_settings_page_links_to_the_voice_page(project, make_user):
    owner = member_client(project, make_user, "owner")
    page = owner.get(reverse("settings", args=[project.slug])).content.decode()
    assert _url(project) in page and "文风" in page


def test_delete_and_analyse_again(project, make_user, sent):
    owner = member_client(project, make_user, "owner")
    assert owner.post(_url(project), {"action": "analyse"}).status_code == 302
    assert not PipelineRun.objects.exists()  # nothing to analyse
    voice_sample_save(project=project, editor=None, text=SAMPLE)
    owner.post(_url(project), {"action": "analyse"})
    owner.post(_url(project), {"action": "analyse"})  # the first one is cancelled: its answer would be stale
    runs = list(PipelineRun.objects.filter(project=project, kind=RunKind.STYLE).order_by("pk"))
    assert [r.status for r in runs] == [RunStatus.CANCELLED, RunStatus.QUEUED]
    owner.post(_url(project), {"action": "delete"})
    assert not VoiceSample.objects.exists()


# --- targets and drift ----------------------------------------------------------------------------


def test_targets_without_a_sample_are_the_platforms_and_genres_defaults(project):
    targets = statistical_targets(project)
    assert targets["source"] == "defaults" and targets["platform"] == "qidian"
    assert targets["sentence_length_std_dev"] == [8.0, 18.0] and targets["paragraph_length_cv"] == [0.4, 1.2]
    assert targets["narration_connectors"] == 0 and targets["vocabulary_richness"] == "medium"
    assert targets["max_paragraph_chars"] == 300
    assert default_targets("fanqie")["avg_sentence_length"] < default_targets("qidian")["avg_sentence_length"]
    assert default_targets("qidian", "yanqing")["dialogue_ratio"] > default_targets("qidian")["dialogue_ratio"]


def test_targets_from_a_sample(project):
    sample = voice_sample_save(project=project, editor=None, text=SAMPLE)
    targets = statistical_targets(Project.objects.get(pk=project.pk))
    stats = sample.statistics
    assert targets["source"] == "sample"
    assert targets["avg_sentence_length"] == stats["avg_sentence_length"]
    assert targets["dialogue_ratio"] == stats["dialogue_ratio"]
    low, high = targets["sentence_length_std_dev"]
    assert low <= stats["sentence_length_std_dev"] <= high and low >= 6.0
    assert targets["narration_connectors"] == 0


def test_drift_is_measured_against_the_samples_numbers():
    profile = {"avg_sentence_length": 30, "dialogue_ratio": 0.5}  # what the quick start's template said
    chapter = "他走了很远。" * 50
    # against the profile: sentences of 5 characters are far too short, and there is no dialogue
    assert detect(chapters=[(5, chapter)], profile=profile, current=None, as_of=5)["active"]
    targets = {"source": "sample", "avg_sentence_length": 5.0, "dialogue_ratio": 0.0}
    baseline = drift_baseline(profile, targets)
    assert baseline["avg_sentence_length"] == 5.0 and baseline["dialogue_ratio"] == 0.0
    assert detect(chapters=[(5, chapter)], profile=baseline, current=None, as_of=5) is None
    assert drift_baseline(profile, {"source": "defaults", "avg_sentence_length": 5.0}) == profile


@pytest.mark.django_db(transaction=True)
def test_the_quick_start_reads_the_style_from_a_sample(make_user, settings):
    from pipeline.questions.answers import gate_answer_submit
    from pipeline.models import GateQuestion, GateStatus
    from pipeline.book.orchestrator import advance
    from tests.sample_pages import BRIEF

    settings.CELERY_TASK_ALWAYS_EAGER = True
    owner = make_user("owner")
    project = project_create(owner=owner, slug="qs", title="雪原", brief=BRIEF)
    voice_sample_save(project=project, editor=owner, text=SAMPLE, source_type="reference")
    advance(project_id=project.pk, user=owner)
    binding = GateQuestion.objects.get(project=project, status=GateStatus.OPEN)
    gate_answer_submit(question_id=binding.pk, answers={"platform": "qidian", "genre": "xuanhuan"}, user=owner)
    project.refresh_from_db()
    profile = project.style_profile
    assert profile["source_type"] == "reference"
    assert profile["avg_sentence_length"] == voice_statistics(SAMPLE)["avg_sentence_length"]
    assert profile["style_exemplars"] and all(e in SAMPLE for e in profile["style_exemplars"])
