"""Deterministic Chinese prose for the offline backend: plausible sentences about the chapter's
characters, place and objectives, seeded so the same request gives the same text.

No sentence repeats within a chapter: a narrated sentence is a lead-in, a person, an action and a
tail drawn from shuffled decks, and no action comes twice with the same tail; exchanges between
two people and dialogue lines are used once each. The words are those of any story
(a place, a thing, people), so a book about a noodle shop does not read like a cultivation novel.
"""
from __future__ import annotations

import random

OPENINGS = [
    "{place}的风比昨夜更冷，{a}裹紧了衣领，抬头看了一眼灰白的天。",
    "天色刚亮，{place}还笼在一层薄雾里，{a}已经站在路口等了很久。",
    "{a}推开门的时候，屋里只剩一盏将熄的灯。",
    "{place}安静得出奇，连远处的狗都没有叫。",
    "雨是后半夜停的，{place}的屋檐还在滴水，{a}数着水声醒来。",
    "{a}一早就到了{place}，手里攥着{thing}，掌心全是汗。",
]
LEADS = ["", "片刻之后，", "这时，", "不知过了多久，", "风停的间隙，",
         "没过多久，", "等到天色再暗一些，", "趁着没人注意，",
         "又过了一会儿，", "就在这时，", "隔了很久，", "远处有人咳嗽了一声，", "灯芯噼啪一响，", "脚步声远去以后，"]
# A narrated sentence is a lead-in, a person, an action and a tail: 30 actions x 16 tails, so a chapter
# of ~120 sentences never needs the same action and tail twice.
ACTIONS = [
    "把{thing}又看了一遍", "没有说话，只是把袖口往下拉了拉", "侧身躲进了墙角的阴影里", "蹲下身拨开地上的浮土",
    "把冻僵的手伸向炉火", "想起很久以前有人说过的话", "深吸一口气，把涌到嘴边的话咽了回去", "握紧了拳头",
    "在{place}的尽头站了很久", "数了数身上剩下的钱，又默默收好",
    "盯着墙上走得很慢的钟", "把{thing}包好塞进了贴身的口袋",
    "终于开口，声音比预想的还要平静", "听见自己的心跳一下比一下重",
    "追到门口，只看见空荡荡的{place}", "想笑，却只是扯了扯嘴角",
    "把灯拨亮了些", "低头拨弄着桌上的碎屑", "皱起眉头，把刚才的话在心里又过了一遍", "转身要走，走到门口又停了下来",
    "把{thing}推到桌子中间", "靠着门框坐了下来", "擦了擦额头上的汗", "把门闩轻轻插上", "抬头望向{place}的方向",
    "从怀里摸出{thing}", "把碗里的汤一口喝完", "压低了帽檐", "在心里默默算着日子", "把窗推开一条缝",
]
TAILS = ["", "，像是在等什么", "，一句话也没说", "，目光却落在{thing}上", "，心里想着{place}的事", "，谁也没有注意到",
         "，像是早就料到了", "，半天没有动", "，手指微微发抖",
         "，嘴角抿成一条线", "，呼吸放得很轻", "，眼里闪过一丝犹豫",
         "，动作慢得出奇", "，连自己都觉得意外", "，外面的风声更紧了", "，屋里静得能听见灯芯的声音"]
# Sentences of two people; each is written at most once.
EXCHANGES = [
    "{b}走近两步，压低声音道：“{line}”",
    "{a}回头看了{b}一眼，说：“{line}”",
    "{b}靠在门边，慢慢地说：“{line}”",
    "{b}冷笑一声，把手背到了身后。",
    "两人对视片刻，谁也没有先开口。",
    "{b}把{thing}推到{a}面前，等着{a}开口。",
    "{b}的声音很轻，几乎被风吞没。",
    "{b}忽然笑了，那笑容里却没有半点暖意。",
    "{a}和{b}并肩站着，谁也没有看谁。",
    "{b}替{a}倒了一碗热水，自己却一口没喝。",
]
LINES = [
    "你也是为了这件事来的？",
    "别回头，他们就在后面。",
    "这东西，不能落到外人手里。",
    "天亮之前，我们必须离开这里。",
    "你以为躲在这里，就没人找得到你？",
    "好，这件事我应下了。",
    "我只问一句，你到底站在哪一边？",
    "只要人还在，就还有办法。",
    "再等一等，时候还没到。",
    "你不该回来的。",
    "这话，我只说一遍。",
    "以后的路，你得自己走了。",
]
TURNS = [
    "{goal}，这件事拖不得了。",
    "{a}终于下定决心：{goal}。",
    "直到这时，{a}才明白，{goal}并不像想象中那么简单。",
]
CLOSINGS = [
    "夜更深了，{place}的灯一盏接一盏熄灭，只有{a}的窗还亮着。",
    "{a}收起{thing}，转身走进夜色里，身后的脚印很快被风抹平。",
    "远处传来一声钟响，{a}知道，真正的麻烦才刚刚开始。",
]
DEFAULT_THINGS = ["那封旧信", "一把钥匙", "半张地图"]


class _Deck:
    """Items drawn in a seeded order without repeats; reshuffled once all were drawn."""

    def __init__(self, items: list[str], rng: random.Random) -> None:
        self._items, self._rng, self._left = list(items), rng, []

    def draw(self) -> str:
        if not self._left:
            self._left = self._rng.sample(self._items, len(self._items))
        return self._left.pop()


def paragraphs(*, seed: str, names: list[str], place: str, goals: list[str], target_chars: int,
               things: list[str] | None = None) -> list[str]:
    """Paragraphs totalling about ``target_chars`` characters, mentioning every name and goal,
    with no sentence written twice."""
    rng = random.Random(seed)
    names = names or ["他"]
    others = names[1:] or ["那人"]
    things = list(things or DEFAULT_THINGS)
    leads, actions, tails = _Deck(LEADS, rng), _Deck(ACTIONS, rng), _Deck(TAILS, rng)
    exchanges = rng.sample(EXCHANGES, len(EXCHANGES))  # each written once
    lines = rng.sample(LINES, len(LINES))  # each spoken once
    written: set[tuple[str, str]] = set()  # action + tail pairs already used, whoever did it

    def fill(template: str) -> str:
        line = lines.pop() if "{line}" in template and lines else ""
        if "{line}" in template and not line:
            return ""
        return template.format(a=names[0], b=rng.choice(others), place=place, thing=rng.choice(things), line=line,
                               goal=rng.choice(goals) if goals else "把事情查清楚")

    def sentence() -> str:
        if exchanges and rng.random() < 0.2:
            text = fill(exchanges.pop())
            if text:
                return leads.draw() + text
        for _ in range(30):  # redraw the rare pair already used
            action, tail = actions.draw(), tails.draw()
            if (action, tail) not in written:
                written.add((action, tail))
                who = names[0] if rng.random() < 0.6 else rng.choice(others)
                return leads.draw() + who + fill(action + tail) + "。"
        return ""

    result = [fill(rng.choice(OPENINGS))]
    for name in names[1:]:
        result.append(f"{name}也在这里。{sentence()}")
    for goal in goals:  # every objective of the contract shows up in the text
        result.append(rng.choice(TURNS).format(a=names[0], goal=goal))
    size = sum(map(len, result))
    while size < target_chars - 60:
        paragraph = "".join(sentence() for _ in range(rng.randint(2, 4)))
        if not paragraph:
            break
        result.append(paragraph)
        size += len(paragraph)
    result.append(fill(rng.choice(CLOSINGS)))
    return [p for p in result if p]
