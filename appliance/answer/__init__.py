"""The answer path: understand -> search -> gates -> generate -> verify -> recheck
access -> gates -> record.

- ``pipeline``: ``AnswerPipeline.ask``, the path as named steps.
- ``gates``: the refusal gates before generation and after verification.
- ``records``: the ``Answer`` every interface shows (``to_dict``).

Citation checking is ``appliance.verify.citations``; the audit record is written by
``appliance.audit_trail``.
"""

from appliance.answer.gates import (
    NOT_AN_ANSWER,
    NOT_ANSWERED,
    NOT_RELEVANT,
    NOTHING_VERIFIED,
    AnswerGates,
)
from appliance.answer.pipeline import AnswerPipeline, AnswerRecorder
from appliance.answer.records import Answer

__all__ = [
    "NOTHING_VERIFIED",
    "NOT_ANSWERED",
    "NOT_AN_ANSWER",
    "NOT_RELEVANT",
    "Answer",
    "AnswerGates",
    "AnswerPipeline",
    "AnswerRecorder",
]
