"""Chinese fact patterns (我喜欢…, 我住在…, 我在…工作, 我叫…, 我有…, 我打算…). Returns plain tuples so that
:mod:`agentbase.ingest.facts` owns the :class:`Fact` type."""

from __future__ import annotations

import re

__all__ = ["chinese_facts"]

# (text, category, subject_key, value, confidence, time_expr)
FactTuple = tuple[str, str, str | None, str | None, float, str | None]

_CLAUSE = re.compile(r"[，,；;。！!？?、]|(?:但是|不过|而且|所以|因为)")
_TIME = re.compile(
    r"\d{4}年(?:\d{1,2}月(?:\d{1,2}[日号])?)?|\d{1,2}月\d{1,2}[日号]|昨天|前天|今天|上周[一二三四五六日天]?|上个?星期|"
    r"上个?月|去年|前年|今年|最近|刚才|刚刚|明天|后天|下周[一二三四五六日天]?|下个?星期|下个?月|明年|这个?周末|周末"
)
_T = "(?:" + _TIME.pattern + ")?"
_ADV = "(?:很|非常|特别|真的|也|还|一直|比较|超|最|挺|更|都|就|确实|其实|本来)*"
_VALUE_END = re.compile(r"[，,。！!？?；;、]|因为|但是|所以|不过|而且")
_OCCUPATION_END = ("师", "员", "生", "家", "医生", "工程师", "经理", "老板", "司机", "护士", "教授", "作家", "记者", "律师")

_RULES: list[tuple[str, re.Pattern[str]]] = [
    ("favorite", re.compile(r"我" + _ADV + r"喜欢的(.{1,8}?)是(.+)")),
    ("name", re.compile(r"我(?:的名字)?(?:叫|是叫)(.+)|我的名字是(.+)")),
    ("age", re.compile(r"我(?:今年|现在)?(\d{1,3})岁")),
    ("residence", re.compile(r"我(?:现在|目前|一直)?(?:住在|生活在|定居在|居住在)(.+)")),
    ("moved", re.compile(r"我" + _T + r"(?:已经|刚|最近)?(?:搬到|搬去|搬家到)了?(.+)")),
    ("employer", re.compile(r"我(?:现在|目前|一直)?在(.+?)(?:工作|上班|任职|实习)")),
    ("preference", re.compile(r"我" + _ADV + r"(不喜欢|不太喜欢|讨厌|喜欢|热爱|爱吃|爱喝|爱|偏爱|受不了)(.+)")),
    ("plan", re.compile(r"我(?:们)?" + _T + r"(?:正在)?(打算|计划|准备|将要|想要|要去|想去|会去)(.+)")),
    ("possession", re.compile(r"我" + _T + r"(?:刚|刚刚|最近|已经)?(有|养了|养着|买了|拥有|收到了)(.+)")),
    ("identity", re.compile(r"我是(?:一名|一个|一位|个|名)?(.+)")),
]
_NOT_POSSESSION = re.compile(r"^(?:点|些|时|空|事|问题|一点|没|一个问题|办法|道理|兴趣)")
_NOT_IDENTITY = re.compile(r"^(?:说|不|在|从|想|觉得|因为|为了|要|会|真|很|来|去)")


def _value(raw: str) -> str | None:
    value = _VALUE_END.split(raw, maxsplit=1)[0].strip(" 了的吧呢啊呀哦")
    value = _TIME.sub("", value).strip()
    return value[:20] or None


def chinese_facts(sentence: str, subject: str = "用户") -> list[FactTuple]:
    """Facts from one Chinese sentence (one per clause at most).

    Args:
        sentence: a sentence that contains CJK characters.
        subject: how the user is named in the fact text (``"用户"``).

    Returns:
        ``(text, category, subject_key, value, confidence, time_expr)`` tuples.
    """
    out: list[FactTuple] = []
    for clause in _CLAUSE.split(sentence):
        if "我" not in clause or clause.endswith(("吗", "呢")):
            continue
        t = _TIME.search(clause)
        when = t.group() if t else None
        for kind, pattern in _RULES:
            m = pattern.search(clause)
            if not m:
                continue
            groups = [g for g in m.groups() if g]
            fact = _build(kind, groups, subject, clause, when)
            if fact:
                out.append(fact)
                break
    return out


def _build(kind: str, groups: list[str], s: str, clause: str, when: str | None) -> FactTuple | None:
    if kind == "favorite":
        value = _value(groups[1])
        key = f"最喜欢的{groups[0]}"
        return (f"{s}{key}是{value}", "preference", key, value, 0.9, when) if value else None
    if kind == "name":
        value = None if groups[0].startswith("了") else _value(groups[0])
        return (f"{s}的名字是{value}", "profile", "name", value, 0.9, when) if value and len(value) <= 8 else None
    if kind == "age":
        age = int(groups[0])
        return (f"{s}{age}岁", "profile", "age", str(age), 0.85, when) if 0 < age <= 120 else None
    if kind in ("residence", "moved"):
        value = _value(groups[0])
        verb = "住在" if kind == "residence" else "搬到了"
        return (f"{s}{verb}{value}", "profile", "residence", value, 0.85, when) if value else None
    if kind == "employer":
        value = _value(groups[0])
        return (f"{s}在{value}工作", "profile", "employer", value, 0.85, when) if value else None
    if kind == "preference":
        verb, value = groups[0], _value(groups[1])
        if not value:
            return None
        polarity = "negative" if verb in ("不喜欢", "不太喜欢", "讨厌", "受不了") else "positive"
        return (f"{s}{verb}{value}", "preference", f"opinion of {value}", polarity, 0.85, when)
    if kind == "plan":
        value = _value(groups[1])
        return (f"{s}{groups[0]}{value}", "plan", None, value, 0.7, when) if value else None
    if kind == "possession":
        if _NOT_POSSESSION.match(groups[1]):
            return None
        value = _value(groups[1])
        return (f"{s}{groups[0]}{value}", "possession", None, value, 0.75, when) if value else None
    if kind == "identity":
        if _NOT_IDENTITY.match(groups[0]):
            return None
        value = _value(groups[0])
        if not value or len(value) > 12:
            return None
        key = "occupation" if value.endswith(_OCCUPATION_END) else None
        return (f"{s}是{value}", "profile", key, value, 0.7, when)
    return None
