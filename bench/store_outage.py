"""A Redis that hangs or stops under a served gateway: what a request pays, and what it claims.

Starts a fast upstream (bench/fake_upstream.py), a redis-server and two `toolsift serve`: one without Redis, one
with it (`store.redis_url`). Each request is a chat with three limits (requests a minute, tokens a day, requests
at once) and a session, or a Responses create; the gateway on Redis is measured with Redis answering, hung (every
client paused, as under a long `DEBUG SLEEP`) and stopped. Requests are sequential, `--gap` seconds apart, so some
land after the store's circuit breaker let a probe through. A create that answers `store: true` must be found by a
later GET, once Redis is back: the bench counts those that are not.

    python bench/store_outage.py [--requests 40] [--gap 0.1] [--no-record] [--out NAME]
"""

from __future__ import annotations

import argparse
import statistics
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import httpx

sys.path.insert(0, str(Path(__file__).resolve().parent))
sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from common import add_record_options, free_port, machine, record, start_gateway, start_redis, wait_until_up

ROOT = Path(__file__).resolve().parent.parent
KEY = "bench-store-key"
LIMITS = {"requests_per_minute": 100_000, "tokens_per_day": 10**9, "concurrent": 8}
CHAT = {"model": "fast", "messages": [{"role": "user", "content": "Say hello."}]}


def redis_command(port: int, *words: str) -> None:
    subprocess.run(["redis-cli", "-p", str(port), *words], check=True, capture_output=True, timeout=10)


def config(upstream_port: int, redis_url: str | None) -> dict[str, Any]:
    sessions: dict[str, Any] = {"redis_url": redis_url} if redis_url else {}
    return {
        "providers": {"up": {"base_url": f"http://127.0.0.1:{upstream_port}/v1", "api_key": "bench"}},
        "models": {"fast": {"provider": "up", "model": "bench-model"}},
        "auth": {"api_keys": [{"name": "bench", "key": KEY, "limits": LIMITS}]},
        "sessions": sessions,
    }


def timed(client: httpx.Client, base: str, count: int, gap: float) -> tuple[list[float], list[dict[str, Any]]]:
    """Milliseconds of `count` chats with a session, then of `count` creates; the creates' answers."""
    took: list[float] = []
    made: list[dict[str, Any]] = []
    for number in range(2 * count):
        started = time.perf_counter()
        if number < count:
            answer = client.post(f"{base}/v1/chat/completions", json=CHAT, headers={"x-session-id": "bench"})
        else:
            answer = client.post(f"{base}/v1/responses", json={"model": "fast", "input": f"Say hello {number}."})
            made.append(answer.json())
        took.append((time.perf_counter() - started) * 1000)
        if answer.status_code != 200:
            raise SystemExit(f"{answer.status_code}: {answer.text[:200]}")
        time.sleep(gap)
    return took, made


def summary(took: list[float]) -> dict[str, float]:
    return {"p50_ms": round(statistics.median(took), 1), "max_ms": round(max(took), 1)}


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--requests", type=int, default=40, help="chats, and as many creates, per state")
    parser.add_argument("--gap", type=float, default=0.1, help="seconds between requests")
    add_record_options(parser, "store_outage")
    args = parser.parse_args()
    upstream_port, redis_port, plain_port, shared_port = free_port(), free_port(), free_port(), free_port()
    redis_url = f"redis://127.0.0.1:{redis_port}/0"
    upstream = subprocess.Popen([sys.executable, str(ROOT / "bench" / "fake_upstream.py"), str(upstream_port)])
    redis = start_redis(redis_port)
    plain, _ = start_gateway(config(upstream_port, None), plain_port)
    shared, _ = start_gateway(config(upstream_port, redis_url), shared_port)
    results: dict[str, Any] = {}
    lost = 0
    try:
        wait_until_up(f"http://127.0.0.1:{upstream_port}/", upstream)
        wait_until_up(f"http://127.0.0.1:{plain_port}/healthz", plain)
        wait_until_up(f"http://127.0.0.1:{shared_port}/healthz", shared)
        with httpx.Client(timeout=120, headers={"authorization": f"Bearer {KEY}"}) as client:
            bases = {"no Redis": f"http://127.0.0.1:{plain_port}", "Redis": f"http://127.0.0.1:{shared_port}"}
            for base in bases.values():
                timed(client, base, 10, 0)  # warm-up
            claimed: list[dict[str, Any]] = []
            for state in ("no Redis", "Redis answering", "Redis hung", "Redis stopped"):
                base = bases["no Redis" if state == "no Redis" else "Redis"]
                if state == "Redis hung":
                    redis_command(redis_port, "CLIENT", "PAUSE", "600000", "ALL")
                if state == "Redis stopped":
                    redis.terminate()
                    redis.wait(10)
                took, made = timed(client, base, args.requests, args.gap)
                chats, creates = took[: args.requests], took[args.requests :]
                stored = [answer for answer in made if answer.get("store")]
                if state in ("Redis hung", "Redis stopped"):
                    claimed += stored
                results[state] = {
                    "chat": summary(chats),
                    "create": summary(creates),
                    "creates_answering_store_true": len(stored),
                }
                print(f"{state:16} chat {summary(chats)}  create {summary(creates)}  store:true {len(stored)}")
            redis = start_redis(redis_port)
            time.sleep(2)  # past the breaker's cooldown
            for answer in claimed:
                lost += client.get(f"{bases['Redis']}/v1/responses/{answer['id']}").status_code != 200
        results["claimed_stored_but_lost"] = lost
        print(f"claimed store: true but not found after Redis came back: {lost}")
    finally:
        for process in (shared, plain, upstream, redis):
            process.terminate()
            process.wait(15)
    results["machine"] = machine()
    if not args.no_record:
        record(args.out or "store_outage", results)
    return 1 if lost else 0


if __name__ == "__main__":
    sys.exit(main())
