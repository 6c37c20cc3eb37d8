"""The Anthropic Python SDK (the release in tests/sdk-venv, whose tool runner speaks message threads) against the
gateway: `runner` finishes a two-tool task with `client.beta.messages.tool_runner`, `parse` extracts a typed
object with `client.messages.parse(output_format=...)`. Prints what it got as JSON. Run by that environment's
Python, so it imports nothing of the project."""

import json
import os
import sys

import anthropic
from anthropic import beta_tool
from pydantic import BaseModel

RAN: list[str] = []


@beta_tool
def get_weather(city: str) -> str:
    """Get the current weather for a city.

    Args:
        city: The city name.
    """
    RAN.append("get_weather")
    return f"Sunny, 22C in {city}"


@beta_tool
def convert(amount: float, currency: str) -> str:
    """Convert an amount of USD into another currency.

    Args:
        amount: Amount in USD.
        currency: Target currency code, e.g. EUR.
    """
    RAN.append("convert")
    return f"{amount * 0.92:.2f} {currency}"


class Person(BaseModel):
    name: str
    age: int


client = anthropic.Anthropic(base_url=os.environ["GATEWAY_URL"], api_key="unused", max_retries=0)
model = os.environ["MODEL"]
if sys.argv[1] == "runner":
    runner = client.beta.messages.tool_runner(
        model=model,
        max_tokens=1024,
        tools=[get_weather, convert],
        messages=[{"role": "user", "content": "Weather in Paris, and 10 USD in EUR?"}],
    )
    final = runner.until_done()
    text = "".join(block.text for block in final.content if block.type == "text")
    print(json.dumps({"text": text, "ran": RAN}))
else:
    message = client.messages.parse(
        model=model,
        max_tokens=1024,
        output_format=Person,
        messages=[{"role": "user", "content": "Ada Lovelace was 36. Extract name and age."}],
    )
    print(json.dumps({"parsed": message.parsed_output.model_dump()}))
