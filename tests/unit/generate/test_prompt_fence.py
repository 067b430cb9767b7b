"""The fence nonce: keyed, so an answer can be reproduced, and unknowable to a document."""

from __future__ import annotations

import stat
from pathlib import Path

import pytest

from appliance.generate.openai_compatible import OpenAICompatibleGenerator
from appliance.generate.prompt import FENCE_KEY_FILE, build_messages, fence_key, fence_nonce
from tests.unit.generate.test_openai_compatible import PASSAGES, _passage

KEY = bytes(range(32))


def _nonce_of(messages: list[dict[str, str]]) -> str:
    return messages[1]["content"].split()[1]


def test_the_same_question_on_the_same_passages_gets_the_same_prompt() -> None:
    first = build_messages("What antibiotic for sepsis?", PASSAGES, KEY)
    assert build_messages("What antibiotic for sepsis?", PASSAGES, KEY) == first
    assert _nonce_of(first) == fence_nonce(KEY, "What antibiotic for sepsis?", PASSAGES)
    assert len(_nonce_of(first)) == 16 and int(_nonce_of(first), 16) >= 0


@pytest.mark.parametrize(
    ("key", "question", "passages"),
    [
        (bytes(32), "What antibiotic for sepsis?", PASSAGES),  # another site
        (KEY, "What antibiotic for sepsis in pregnancy?", PASSAGES),
        (KEY, "What antibiotic for sepsis?", PASSAGES[:1]),
        (KEY, "What antibiotic for sepsis?", PASSAGES[::-1]),
        (KEY, "What antibiotic for sepsis?",
         [PASSAGES[0], _passage(2, "sepsis@4#0002", "Take blood cultures after antibiotics.")]),
    ],
)  # fmt: skip
def test_any_other_key_question_or_passage_gets_another_nonce(
    key: bytes, question: str, passages: list
) -> None:
    assert fence_nonce(key, question, passages) != fence_nonce(
        KEY, "What antibiotic for sepsis?", PASSAGES
    )


def test_fields_are_length_prefixed_so_moving_text_between_them_changes_the_nonce() -> None:
    joined = [_passage(1, "a", "bc")]
    split = [_passage(1, "ab", "c")]
    assert fence_nonce(KEY, "q", joined) != fence_nonce(KEY, "q", split)


def test_without_a_key_each_prompt_draws_a_fresh_nonce() -> None:
    assert _nonce_of(build_messages("q", PASSAGES)) != _nonce_of(build_messages("q", PASSAGES))


def test_the_key_is_made_once_readable_by_its_owner_only(tmp_path: Path) -> None:
    key = fence_key(tmp_path)
    path = tmp_path / FENCE_KEY_FILE
    assert len(key) == 32 and stat.S_IMODE(path.stat().st_mode) == 0o600
    assert fence_key(tmp_path) == key  # read back, not made again


def test_a_truncated_key_is_refused_not_used(tmp_path: Path) -> None:
    (tmp_path / FENCE_KEY_FILE).write_text("00ff\n")
    with pytest.raises(ValueError, match="not a fence key"):
        fence_key(tmp_path)


def test_the_generator_sends_the_keyed_prompt() -> None:
    generator = OpenAICompatibleGenerator("http://127.0.0.1:9/v1", "m", fence_key=KEY)
    body = generator.request_body("What antibiotic for sepsis?", PASSAGES)
    generator.close()
    assert body["messages"] == build_messages("What antibiotic for sepsis?", PASSAGES, KEY)


def test_a_key_file_that_is_not_hex_is_refused(tmp_path: Path) -> None:
    (tmp_path / FENCE_KEY_FILE).write_bytes(b"\xff\xfe not a key")
    with pytest.raises(ValueError, match="delete it to make one"):
        fence_key(tmp_path)
