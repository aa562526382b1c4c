"""Deterministic Chinese web-novel prose for the offline backend: plausible sentences about the
chapter's characters, places and objectives, seeded so the same request gives the same text."""
from __future__ import annotations

import random

OPENINGS = [
    "{place}的风比昨夜更冷，{a}裹紧了衣领，抬头看了一眼灰白的天。",
    "天色刚亮，{place}还笼在一层薄雾里，{a}已经站在路口等了很久。",
    "{a}推开门的时候，屋里只剩一盏将熄的油灯。",
    "雪落了一整夜，{place}的屋檐下挂满了冰凌。",
]
ACTIONS = [
    "{a}把手里的密信又看了一遍，指尖在那行小字上停了停。",
    "{a}没有说话，只是把刀往腰间按了按。",
    "{b}走近两步，压低声音道：“{line}”",
    "{a}回头看了{b}一眼，“{line}”",
    "远处传来马蹄声，{a}侧身躲进了廊柱的阴影里。",
    "{a}蹲下身，在雪地里拨开一层浮土，露出半块刻着星纹的石板。",
    "{b}冷笑一声，袖中滑出一柄短刃。",
    "炉火噼啪作响，{a}把冻僵的手伸过去，心里却一直在算时辰。",
    "{a}想起师父说过的话：星火为引，三次为限。",
    "两人对视片刻，谁也没有先开口。",
    "{a}深吸一口气，把那股翻涌的灵力压回丹田。",
    "门外的脚步声停了，{a}握紧了拳头。",
]
LINES = [
    "有意思，你也是为了那块石板来的？",
    "别回头，他们就在后面。",
    "这封信，不能落到赵家人手里。",
    "天亮之前，我们必须出林子。",
    "你以为躲在这里，就没人找得到你？",
    "善。此事，老夫应下了。",
    "我只问一句，你到底站在哪一边？",
    "星火不灭，宗门就还在。",
]
TURNS = [
    "{goal}，这件事拖不得了。",
    "{a}终于下定决心：{goal}。",
    "直到这时，{a}才明白，{goal}并不像想象中那么简单。",
]
CLOSINGS = [
    "夜更深了，{place}的灯一盏接一盏熄灭，只有{a}的窗还亮着。",
    "{a}收起石板，转身走进风雪里，身后的脚印很快被新雪盖住。",
    "远处传来一声钟响，{a}知道，真正的麻烦才刚刚开始。",
]


def paragraphs(*, seed: str, names: list[str], place: str, goals: list[str], target_chars: int) -> list[str]:
    """Paragraphs totalling about ``target_chars`` characters, mentioning every name and goal."""
    rng = random.Random(seed)
    names = names or ["他"]
    other = names[1] if len(names) > 1 else "那人"

    def fill(template: str) -> str:
        return template.format(a=names[0], b=rng.choice(names[1:] or [other]), place=place,
                               line=rng.choice(LINES), goal=rng.choice(goals) if goals else "把事情查清楚")

    result = [fill(rng.choice(OPENINGS))]
    for name in names[1:]:
        result.append(f"{name}也在这里。{fill(rng.choice(ACTIONS))}")
    for goal in goals:  # every objective of the contract shows up in the text
        result.append(rng.choice(TURNS).format(a=names[0], goal=goal))
    size = sum(map(len, result))
    while size < target_chars - 60:
        paragraph = "".join(fill(rng.choice(ACTIONS)) for _ in range(rng.randint(2, 4)))
        result.append(paragraph)
        size += len(paragraph)
    result.append(fill(rng.choice(CLOSINGS)))
    return [p for p in result if p]
