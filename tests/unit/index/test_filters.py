"""Filter helpers the answer path uses to ask "what if the dates did not matter?"."""

from __future__ import annotations

import datetime as dt

from appliance.index.filters import ActiveOn, AllOf, AnyOf, in_force_day, without_dates

DAY = dt.date(2026, 12, 1)
DEPARTMENTS = AnyOf("departments", ("icu",))


def test_without_dates_keeps_every_other_clause() -> None:
    assert without_dates(ActiveOn(DAY)) is None
    assert without_dates(AllOf((DEPARTMENTS, ActiveOn(DAY)))) == AllOf((DEPARTMENTS,))
    assert without_dates(DEPARTMENTS) == DEPARTMENTS
    assert without_dates(None) is None


def test_in_force_day_finds_the_day_asked() -> None:
    assert in_force_day(AllOf((DEPARTMENTS, ActiveOn(DAY)))) == DAY
    assert in_force_day(DEPARTMENTS) is None
