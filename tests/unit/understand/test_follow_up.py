"""Follow-ups read with the previous question's subject, on the real fact finder's
parses (spaCy en_core_web_md): the kinds of ellipsis a ward conversation makes, and
questions that stand on their own left as they are."""

from __future__ import annotations

import pytest

from appliance.nlp.clinical_facts import ClinicalFactExtractor
from appliance.understand.follow_up import FollowUpReader
from tests.unit.nlp.test_clinical_facts import extractor  # noqa: F401 (a fixture)

PREVIOUS = "What is the loading dose of phenytoin for status epilepticus in adults?"


@pytest.fixture(scope="module")
def reader(extractor: ClinicalFactExtractor) -> FollowUpReader:  # noqa: F811
    return FollowUpReader(lambda text: extractor.question_keys(text, {}))


@pytest.mark.parametrize(
    ("follow_up", "whole"),
    [
        # a modifier alone asks for another one of what was asked
        ("and the maximum?", "What is the maximum dose of phenytoin for status epilepticus in adults?"),
        ("What is the maintenance?", "What is the maintenance dose of phenytoin for status epilepticus in adults?"),
        # another aspect of the same subject
        ("and the infusion rate?", "What is the infusion rate of phenytoin for status epilepticus in adults?"),
        # a condition added to the whole question
        ("what if the level is above 20?", "What is the loading dose of phenytoin for status epilepticus in adults, if the level is above 20?"),
        # an entity in place of the one of its own kind
        ("what about levetiracetam?", "What is the loading dose of levetiracetam for status epilepticus in adults?"),
        ("and in children?", "What is the loading dose of phenytoin for status epilepticus in children?"),
        # a pronoun read as the previous subject
        ("is it compatible with glucose?", "Is phenytoin compatible with glucose?"),
        ("and its monitoring?", "Phenytoin's monitoring?"),
    ],
)  # fmt: skip
def test_a_follow_up_reads_with_the_previous_subject(
    reader: FollowUpReader, follow_up: str, whole: str
) -> None:
    assert reader.read(follow_up, PREVIOUS) == whole


@pytest.mark.parametrize(
    "question",
    [
        "What is the dose of vancomycin in renal impairment?",
        "When should blood cultures be taken in suspected sepsis?",
        "Is it safe to give ceftriaxone with calcium?",
    ],
)
def test_a_question_that_names_its_subject_stands_alone(
    reader: FollowUpReader, question: str
) -> None:
    assert reader.read(question, PREVIOUS) is None


def test_without_the_asked_shape_the_aspect_is_asked_about_the_subject(
    reader: FollowUpReader,
) -> None:
    previous = "How is hyperkalaemia treated on the ward?"
    assert reader.read("and the monitoring?", previous) == "The monitoring for hyperkalaemia?"
