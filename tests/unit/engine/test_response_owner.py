"""A stored response's existence does not leak to a caller who does not own it: the owner is part of the store key,
so another caller's GET, DELETE or `previous_response_id` finds nothing and decodes nothing, exactly as for an
id that never existed (no work that grows with the entry, so nothing to time)."""

from __future__ import annotations

from typing import Any

import openai
import pytest

from app.engine import responses_store
from tests.support import Upstream, completion, make_config
from tests.support.responses import sdk


@pytest.fixture
def decodes(monkeypatch: pytest.MonkeyPatch) -> list[int]:
    """The size of every stored response the gateway decodes (JSON-parses)."""
    sizes: list[int] = []
    original = responses_store.load_json

    def counted(raw: bytes) -> Any:
        sizes.append(len(raw))
        return original(raw)

    monkeypatch.setattr(responses_store, "load_json", counted)
    return sizes


async def test_another_callers_response_is_never_decoded(
    upstream: Upstream, gateway_factory: Any, decodes: list[int]
) -> None:
    client, _ = await gateway_factory(make_config(auth={"api_keys": ["owner-key", "other-key"]}))
    upstream.script(completion("Mine."), completion("Still mine."))
    owner, other = sdk(client, "owner-key"), sdk(client, "other-key")
    made = await owner.responses.create(model="fast", input="a long conversation " * 20_000)
    for reader in (other.responses.retrieve(made.id), other.responses.retrieve("resp_never_existed")):
        with pytest.raises(openai.NotFoundError):
            await reader
    with pytest.raises(openai.BadRequestError):
        await other.responses.create(model="fast", input="continue", previous_response_id=made.id)
    with pytest.raises(openai.NotFoundError):
        await other.responses.delete(made.id)
    assert decodes == [], "the owner is checked before anything is decoded"
    assert (await owner.responses.retrieve(made.id)).output_text == "Mine."
    assert len(decodes) == 1 and decodes[0] > 400_000
