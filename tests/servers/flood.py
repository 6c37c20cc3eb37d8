"""A stdio "MCP server" that answers the handshake with an endless line: bytes and no newline, as a broken or
hostile server might. It stops after FLOOD_BYTES (default 64 MB) and then waits."""

from __future__ import annotations

import os
import sys
import time

sys.stdin.readline()  # the initialize request
chunk = b"x" * 65536
for _ in range(int(os.environ.get("FLOOD_BYTES", str(64 * 1024 * 1024))) // len(chunk)):
    sys.stdout.buffer.write(chunk)
sys.stdout.buffer.flush()
time.sleep(60)
