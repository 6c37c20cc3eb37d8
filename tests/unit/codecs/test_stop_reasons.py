"""Each codec's stop words map to the engine's neutral `StopReason` and back to the same word, for every word its
format has (the upstream's own word is kept, so one kind with several words loses none), and a client of another
format gets its own format's word for the same kind."""

from __future__ import annotations

import pytest

from app.codecs.anthropic.answers import stop_in, stop_reason
from app.codecs.openai_chat.answers import finish_reason_of, stop_from_openai
from app.codecs.responses.answers import stop_of
from app.codecs.responses.items import incomplete_reason
from app.core.model import StopReason, ToolCall

ANTHROPIC = ["end_turn", "max_tokens", "stop_sequence", "tool_use", "pause_turn", "refusal",
             "model_context_window_exceeded", "a_reason_added_later"]  # fmt: skip
CHAT = ["stop", "length", "tool_calls", "content_filter", "function_call", "a_reason_added_later"]
INCOMPLETE = ["max_output_tokens", "content_filter", "a_reason_added_later"]


@pytest.mark.parametrize("word", ANTHROPIC)
def test_anthropic_stop_reasons_come_back_as_they_came(word: str) -> None:
    stop = stop_in(word, "###")
    assert stop is not None and stop_reason(stop) == word
    assert stop.sequence == ("###" if word == "stop_sequence" else None)


@pytest.mark.parametrize("word", CHAT)
def test_chat_finish_reasons_come_back_as_they_came(word: str) -> None:
    stop = stop_from_openai(word)
    assert stop is not None and finish_reason_of(stop) == word


@pytest.mark.parametrize("word", INCOMPLETE)
def test_a_responses_incomplete_reason_comes_back_as_it_came(word: str) -> None:
    stop = stop_of({"status": "incomplete", "incomplete_details": {"reason": word}}, called=False)
    assert incomplete_reason(stop) == word
    assert incomplete_reason(stop_of({"status": "completed"}, called=True)) is None


def test_another_formats_client_gets_its_own_word() -> None:
    sequence = stop_in("stop_sequence", "###")
    assert sequence == StopReason("stop_sequence", "###", "anthropic", "stop_sequence")
    assert (finish_reason_of(sequence), incomplete_reason(sequence)) == ("stop", None)
    assert [stop_reason(stop) for stop in (stop_from_openai("length"), stop_from_openai("function_call"))] == [
        "max_tokens", "tool_use",
    ]  # fmt: skip
    refused = stop_in("refusal")
    assert refused is not None and (finish_reason_of(refused), incomplete_reason(refused)) == (
        "content_filter", "content_filter",
    )  # fmt: skip
    paused = stop_in("pause_turn")
    assert paused is not None and finish_reason_of(paused) == "stop"
    assert stop_reason(StopReason("max_tokens")) == "max_tokens" and finish_reason_of(StopReason()) == "stop"


def test_a_tool_calls_arguments_are_kept_as_written_and_read_once() -> None:
    assert ToolCall("c", "f", '{"a": [1, 2]}').parsed == {"a": [1, 2]}
    assert ToolCall("c", "f", "").parsed == {}  # no arguments at all
    broken = ToolCall("c", "f", '{"a": 1')
    assert broken.parsed is None and broken.arguments == '{"a": 1'
    assert ToolCall("c", "f", "[" * 100_000).parsed is None  # nested beyond what Python reads
