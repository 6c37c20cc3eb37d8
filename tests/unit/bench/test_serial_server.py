"""bench/serial_server.py, the called server of `bench/load.py --call-ms`: the finance example's tools and answers,
each call taking the given time, one at a time, without changing the example server itself."""

from __future__ import annotations

import asyncio
import time

from fastmcp import Client

from bench import serial_server

ARGUMENTS = {"amount": 100, "from_currency": "USD", "to_currency": "EUR"}


async def test_the_same_tools_and_answers_one_call_at_a_time() -> None:
    slow, plain = serial_server.serial_finance(40), serial_server.serial_finance(40)
    plain.middleware = [one for one in plain.middleware if not isinstance(one, serial_server.OneCallAtATime)]
    async with Client(slow) as slow_client, Client(plain) as plain_client:
        assert [tool.name for tool in await slow_client.list_tools()] == [
            tool.name for tool in await plain_client.list_tools()
        ]
        started = time.perf_counter()
        answers = await asyncio.gather(*(slow_client.call_tool("convert_currency", ARGUMENTS) for _ in range(4)))
        elapsed = time.perf_counter() - started
        expected = await plain_client.call_tool("convert_currency", ARGUMENTS)

    assert elapsed >= 4 * 0.040 * 0.95  # four calls sent together, served one after the other
    assert all(answer.structured_content == expected.structured_content for answer in answers)
    assert expected.structured_content is not None and expected.structured_content["converted"] == 87.7


def test_each_copy_is_a_fresh_server() -> None:
    first, second = serial_server.serial_finance(10), serial_server.serial_finance(10)
    assert first is not second
    assert sum(isinstance(one, serial_server.OneCallAtATime) for one in first.middleware) == 1
