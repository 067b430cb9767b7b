"""What a question says about the patient and the situation, as qualifiers that a
passage's scope must fit: population (adult, child, pregnancy), age, the measurements
it gives ("INR 6.5", "creatinine clearance is about 24"), the route, the staff group a
workforce rule is asked for, and the conditions it says are absent ("no bleeding")."""

from __future__ import annotations

import re
from dataclasses import asdict, dataclass, field

NUMBER = r"\d+(?:\.\d+)?"
CHILD = re.compile(
    r"\b(?:child|children|paediatric|pediatric|infants?|bab(?:y|ies)|neonates?|neonatal|"
    r"newborns?|toddlers?|boy|girl|kids?)\b",
    re.IGNORECASE,
)
_ADULT = re.compile(
    r"\b(?:adults?|elderly|older (?:person|people|adult)|wom[ae]n|m[ae]n|mrs|mr|ms|gentleman|"
    r"lady|ladies)\b",
    re.IGNORECASE,
)
_PREGNANT = re.compile(
    r"\b(?:pregnan(?:t|cy)|antenatal|postpartum|postnatal|post-partum|obstetric|labour|"
    r"gestation(?:al)?)\b",
    re.IGNORECASE,
)
_AGE = re.compile(
    rf"\b(?:aged\s+)?({NUMBER})[\s-]*(years?|yrs?|months?|weeks?|days?)[\s-]*old\b|"
    rf"\baged\s+({NUMBER})\b|\b(?:mrs|mr|ms)\s+\w+,\s+({NUMBER})\b",
    re.IGNORECASE,
)
_UNIT_YEARS = {"year": 1.0, "yr": 1.0, "month": 1 / 12, "week": 1 / 52, "day": 1 / 365}
ADULT_AGE = 16.0
_ROUTES = {
    "intravenous": re.compile(r"\b(?:IV|intravenous(?:ly)?)\b"),
    "oral": re.compile(r"\b(?:oral(?:ly)?|PO|by mouth|tablets?)\b", re.IGNORECASE),
    "intramuscular": re.compile(r"\b(?:IM|intramuscular(?:ly)?)\b"),
    "subcutaneous": re.compile(r"\b(?:SC|subcut|subcutaneous(?:ly)?)\b"),
    "rectal": re.compile(r"\b(?:PR|rectal(?:ly)?)\b"),
}
_ORGAN_FUNCTION = {
    "renal": re.compile(
        r"\b(?:renal|kidneys?|creatinine|CrCl|e?GFR|dialysis|ha?emodialysis|CKD)\b", re.I
    ),
    "hepatic": re.compile(r"\b(?:hepatic|liver|cirrhos[ie]s|Child[- ]Pugh)\b", re.I),
}
"""How a text speaks of the kidneys' or the liver's function: a question says "in renal
impairment", the dosing sentence "if creatinine clearance is below 30 mL/min"."""
_ORGAN_FUNCTION_NAMED = re.compile(
    r"\b(?:renal|kidneys?|hepatic|liver)"
    r"(?:\s+(?:impairment|failure|insufficiency|dysfunction|function|disease))?\b",
    re.IGNORECASE,
)
"""How a question names an organ's function: "renal impairment", "kidney failure",
"hepatic impairment", "liver disease"."""
_STAFF = {
    "doctor": r"doctors?|medical staff|consultants?|registrars?|junior doctors?",
    "nurse": r"nurses?|nursing staff",
    "midwife": r"midwi(?:fe|ves)",
    "pharmacist": r"pharmacists?",
    "healthcare assistant": r"healthcare assistants?|HCAs?",
}
_WORKFORCE = r"(?:shifts?|rota|rostered|hours|rest|breaks?|night|leave|overtime|swaps?)"
_MEASURE = re.compile(
    rf"\b([A-Za-z][A-Za-z0-9]+)\s+(?:(?:is|was|of|at|now|=|:|about|around|approximately|"
    rf"roughly)\s+){{0,2}}({NUMBER})(?![\d.])(?!\s*(?:years?|yrs?|months?|weeks?|days?|doses?|hours?|hrs?|minutes?|mins?)\b)",
)
_NOT_A_MEASURE = frozenset([
    "and", "or", "of", "to", "in", "on", "at", "for", "with", "is", "was", "the", "a", "an",
    "about", "around", "approximately", "roughly", "bed", "room", "ward", "weighs", "weighing",
    "give", "gave", "given", "after", "before", "every", "over", "under", "below", "above",
    "than", "mg", "g", "kg", "ml", "mmol", "units", "hours", "minutes", "days", "weeks",
    "months", "years", "dose", "doses", "step", "steps", "version", "page", "table", "type",
    "grade", "stage", "class",
])  # fmt: skip
_ABSENT = re.compile(
    r"\b(?:no|without|not|denies)\s+(?:any\s+|active\s+|signs\s+of\s+)?([a-z]{4,})", re.IGNORECASE
)
_NOT_A_CONDITION = frozenset([
    "longer", "more", "less", "further", "other", "need", "needs", "needed", "known", "iv",
    "access", "improvement", "response", "change", "history",
    # determiners long enough to pass for a word ("without their consent" names no
    # condition; "the", "his" and "her" are too short to be read as one)
    "their", "this", "that", "these", "those", "your", "them", "such", "some", "each",
])  # fmt: skip


@dataclass(frozen=True, slots=True)
class Qualifiers:
    population: str | None = None
    """"adult" or "child" (None when the question does not say, or says both)."""
    age_years: float | None = None
    pregnant: bool = False
    measures: dict[str, float] = field(default_factory=dict)
    """Measurement name (lower case, as written) to the value the question gives."""
    routes: frozenset[str] = frozenset()
    staff: frozenset[str] = frozenset()
    """Staff groups a workforce rule is asked for ("shift length for nurses")."""
    absent: frozenset[str] = frozenset()
    """Conditions the question says the patient does not have ("no bleeding")."""
    organ_function: frozenset[str] = frozenset()
    """"renal" or "hepatic" where the question speaks of that organ's function."""

    def to_record(self) -> dict[str, object]:
        record = asdict(self)
        for key in ("routes", "staff", "absent", "organ_function"):
            record[key] = sorted(record[key])
        return {k: v for k, v in record.items() if v not in (None, False, {}, [])}


def age_words(years: float) -> str:
    """An age as a clinician says it: "aged 72", "aged 6 weeks", "aged 5 months"."""
    if years >= 1:
        return f"aged {years:g}"
    weeks = round(years * 52)
    return f"aged {weeks} weeks" if weeks < 13 else f"aged {round(years * 12)} months"


def age_of(text: str) -> float | None:
    for match in _AGE.finditer(text):
        if match.group(1):
            unit = match.group(2).lower().rstrip("s")
            return float(match.group(1)) * _UNIT_YEARS[unit]
        value = match.group(3) or match.group(4)
        if value:
            return float(value)
    return None


def routes_in(text: str) -> frozenset[str]:
    return frozenset(name for name, pattern in _ROUTES.items() if pattern.search(text))


def organ_function_in(text: str) -> frozenset[str]:
    """The organs whose function ``text`` speaks of ("renal", "hepatic")."""
    return frozenset(name for name, pattern in _ORGAN_FUNCTION.items() if pattern.search(text))


def organ_functions_named(text: str) -> list[tuple[str, frozenset[str]]]:
    """Each phrase of ``text`` that names an organ's function ("renal impairment"), with
    the organs it names: a passage that says "creatinine clearance" speaks of it too."""
    return [(m.group(), organ_function_in(m.group())) for m in _ORGAN_FUNCTION_NAMED.finditer(text)]


def staff_in(text: str) -> frozenset[str]:
    """Staff groups named beside a workforce word ("nurses on the rota", "no doctor is
    rostered"): the people a workforce rule is for, not whoever happens to be asking."""
    found = set()
    for name, words in _STAFF.items():
        near = rf"\b(?:{words})\b(?:\W+\w+){{0,4}}?\W+{_WORKFORCE}\b"
        before = rf"\b{_WORKFORCE}\b(?:\W+\w+){{0,4}}?\W+(?:{words})\b"
        if re.search(near, text, re.IGNORECASE) or re.search(before, text, re.IGNORECASE):
            found.add(name)
    return frozenset(found)


def measures_in(text: str) -> dict[str, float]:
    found: dict[str, float] = {}
    for name, value in _MEASURE.findall(text):
        key = name.lower()
        if key not in _NOT_A_MEASURE and not key.isdigit():
            found.setdefault(key, float(value))
    return found


def qualifiers_of(text: str) -> Qualifiers:
    age = age_of(text)
    child = bool(CHILD.search(text)) or (age is not None and age < ADULT_AGE)
    adult = bool(_ADULT.search(text)) or (age is not None and age >= ADULT_AGE)
    population = None if child == adult else ("child" if child else "adult")
    absent = frozenset(
        m.lower() for m in _ABSENT.findall(text) if m.lower() not in _NOT_A_CONDITION
    )
    return Qualifiers(
        population=population,
        age_years=age,
        pregnant=bool(_PREGNANT.search(text)),
        measures=measures_in(text),
        routes=routes_in(text),
        staff=staff_in(text),
        absent=absent,
        organ_function=organ_function_in(text),
    )
