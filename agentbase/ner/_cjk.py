"""Chinese place and organisation names found by their suffix (市, 省, 公司, 大学 ...), without a segmenter.

For every suffix occurrence the name is the suffix plus up to five CJK characters before it, cut after the
last "boundary" character (particles, pronouns, common verbs: 的 在 去 到 我 ...) or after an earlier suffix, so
"我在北京市的华为公司工作" gives 北京市 and 华为公司. Overlapping candidates keep the longer one.
"""

from __future__ import annotations

import re

from .base import Entity

__all__ = ["CJK_CHAR", "extract_cjk", "has_cjk"]

CJK_CHAR = r"\u3400-\u4dbf\u4e00-\u9fff\uf900-\ufaff"

_SUFFIX_LABELS: dict[str, str] = {
    **dict.fromkeys(
        "有限公司 股份公司 公司 集团 大学 学院 中学 小学 幼儿园 银行 医院 研究院 研究所 实验室 协会 基金会 委员会 "
        "事务所 出版社 电视台 报社 俱乐部 工作室 政府 法院 部 局".split(),
        "ORG",
    ),
    **dict.fromkeys("特别行政区 自治区 自治州 市 省 县 区 镇 乡 州 国".split(), "GPE"),
    **dict.fromkeys("半岛 草原 沙漠 村 岛 湖 山 河 江 湾 路 街".split(), "LOC"),
    **dict.fromkeys(
        "机场 火车站 高铁站 地铁站 车站 博物馆 图书馆 体育馆 美术馆 体育场 酒店 饭店 宾馆 公园 广场 大厦 寺".split(),
        "FAC",
    ),
}
_SUFFIX_RE = re.compile(
    "(?<=[" + CJK_CHAR + "])(?:" + "|".join(sorted(_SUFFIX_LABELS, key=len, reverse=True)) + ")"
)
# A single-character suffix followed by one of these starts another word (市场, 国际, 部门, 区域 ...).
_NOT_BEFORE = set("分门长里位民场域面内外际家人籍货委政")
# Characters that end the word before a name: particles, pronouns, prepositions and common verbs.
_BOUNDARY = set(
    "的在了去到是从我你他她它们住和与跟及对把被给这那个就都也还要想来回向往离说于自过着有又或而但却让叫将已经"
    "曾刚才家该每各某所些吗呢吧啊哪里儿做进读念玩看买逛游观访飞搬爬登待呆留"
)
_WINDOW = 5
_IS_CJK = re.compile(f"[{CJK_CHAR}]").match
_CJK_SEARCH = re.compile(f"[{CJK_CHAR}]").search


def has_cjk(text: str) -> bool:
    """Whether ``text`` holds a CJK ideograph (the ranges of :data:`CJK_CHAR`)."""
    return _CJK_SEARCH(text) is not None


_GENERIC = frozenset(
    "城市 超市 都市 门市 股市 城区 市区 地区 社区 小区 郊区 山区 景区 校区 园区 片区 街区 灾区 全国 外国 本国 两国 各国 "
    "异国 祖国 王国 帝国 全省 外省 本省 全市 本市 全县 全部 内部 外部 一部 局部 结局 格局 布局 大局 开局 本局 马路 "
    "公路 道路 铁路 网路 思路 出路 走路 一路 上路 半路 街道 大街 逛街 上街 江湖 河流 河边 湖边 山上 山下 上山 下山 "
    "爬山 登山 冰山 火山 岛上 乡村 农村 大学 中学 小学 高中 总公司 分公司 子公司 本公司 大公司 小公司 新公司 老公司 "
    "大医院 小医院 好医院 州长 大酒店 大饭店 新酒店 某国 列国 美食街".split()
)


def _trim(text: str, suffix_start: int, suffix_spans: list[tuple[int, int]]) -> int | None:
    """Return the start of the name whose suffix begins at ``suffix_start``, or ``None`` if there is no name.

    An earlier suffix inside the window cuts the name (北京市海淀区 -> 海淀区) only when at least one character is
    left before this suffix, so 中国银行 stays whole.
    """
    start = suffix_start
    while start > 0 and suffix_start - start < _WINDOW and _IS_CJK(text[start - 1]):
        start -= 1
    for i in range(suffix_start - 1, start - 1, -1):
        if text[i] in _BOUNDARY:
            start = i + 1
            break
    for s_start, s_end in reversed(suffix_spans):
        if start < s_end <= suffix_start - 1 and s_start >= start:
            start = s_end
            break
    return start if start < suffix_start else None


def extract_cjk(text: str) -> list[Entity]:
    """Find Chinese place, facility and organisation names by suffix.

    Args:
        text: any string; text without CJK characters gives an empty list quickly.

    Returns:
        Non-overlapping entities (labels ORG, GPE, LOC or FAC) sorted by ``start``.
    """
    if not has_cjk(text):
        return []
    matches = [m for m in _SUFFIX_RE.finditer(text)
               if not (len(m.group()) == 1 and m.end() < len(text) and text[m.end()] in _NOT_BEFORE)]
    spans = [(m.start(), m.end()) for m in matches]
    candidates: list[Entity] = []
    for idx, m in enumerate(matches):
        start = _trim(text, m.start(), spans[:idx])
        if start is None:
            continue
        name = text[start:m.end()]
        if name in _GENERIC or len(name) < 2:
            continue
        candidates.append(Entity(name, _SUFFIX_LABELS[m.group()], start, m.end()))
    chosen: list[Entity] = []
    for cand in sorted(candidates, key=lambda e: (-(e.end - e.start), e.start)):
        if all(cand.end <= c.start or cand.start >= c.end for c in chosen):
            chosen.append(cand)
    return sorted(chosen, key=lambda e: e.start)
