"""Reading model answers: fenced blocks, whole-answer fences and JSON."""

from __future__ import annotations

import pytest

from awm_core.llm.base import LLMOutputError
from awm_core.llm.extract import extract_block, parse_json_text, unfence


def test_extract_block_takes_the_first_block_of_the_language_or_untagged() -> None:
    text = "Here it is:\n```python\nx = 1\n```\nand\n```sql\nSELECT 1;\n```"
    assert extract_block(text, "sql") == "SELECT 1;\n"
    assert extract_block(text, "python") == "x = 1\n"
    assert extract_block("```\nSELECT 2;\n```", "sql") == "SELECT 2;\n"


def test_extract_block_without_a_fence_is_the_whole_answer() -> None:
    assert extract_block("  SELECT 1;  ", "sql") == "SELECT 1;\n"


def test_extract_block_names_the_languages_found_when_none_fits() -> None:
    with pytest.raises(LLMOutputError, match="found blocks tagged: python"):
        extract_block("```python\nx = 1\n```", "sql")


@pytest.mark.parametrize(
    "text",
    [
        '{"a": 1}',
        '```json\n{"a": 1}\n```',
        '```JSON {"a": 1}```',
        '```\n{"a": 1}\n```',
        '```json\n{"a": 1}',  # cut at max_tokens: no closing fence
    ],
)
def test_a_json_answer_is_read_through_a_whole_answer_fence(text: str) -> None:
    assert parse_json_text(text) == {"a": 1}


def test_unfence_says_whether_there_was_a_fence() -> None:
    assert unfence('```json\n{"a": 1}\n```') == ('{"a": 1}', True)
    assert unfence(' {"a": 1} ') == ('{"a": 1}', False)


def test_an_answer_that_is_not_json_is_a_typed_error() -> None:
    with pytest.raises(LLMOutputError, match="not JSON"):
        parse_json_text("sure, Completed!")
