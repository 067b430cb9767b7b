"""Understand the question as a ward writes it (the first step of the question path):
shorthand, spelling, a story reduced to its question, the patient's qualifiers."""

from appliance.understand.follow_up import FollowUpReader
from appliance.understand.qualifiers import Qualifiers, qualifiers_of
from appliance.understand.reader import DocumentWords, QuestionReader, UnderstoodQuestion
from appliance.understand.ward_language import WardLanguage

__all__ = [
    "DocumentWords",
    "FollowUpReader",
    "Qualifiers",
    "QuestionReader",
    "UnderstoodQuestion",
    "WardLanguage",
    "qualifiers_of",
]
