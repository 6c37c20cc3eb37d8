"""What a stdio server said on stderr, and how its process ended: the cause a "Connection closed" hides.

A server that fails usually says why on stderr (a traceback, `can't open file`, `Cannot find module`) and exits
with a code. Each connection attempt gets a pipe for stderr, read on the event loop: the last lines are kept,
bounded in lines and bytes, for `/healthz`, the console and `toolsift check`, and lines are logged
(`toolsift.mcp.stderr`, info), each cut at LINE_CHARS, at most STDERR_RATE a second (a burst of STDERR_BURST); the
rest are counted, not logged (app/mcp/client/chatter.py): a server writing 100 MB of stderr once wrote more than
that into the gateway's log. The part of a line past its cut is never decoded, and a line without an end is cut
and the rest of it skipped, so a read costs time linear in its bytes.

The process's exit code is the other half of the cause: the stdio transport (app/mcp/client/pipe.py) hands each
process it starts to `took`.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import os
import signal
from collections import deque
from typing import Any, TextIO

from app.mcp.client.chatter import Chatter, Dropped

log = logging.getLogger("toolsift.mcp.stderr")

TAIL_LINES = 20
TAIL_BYTES = 8192
LINE_CHARS = 500
STDERR_RATE, STDERR_BURST = 20.0, 100
DRAIN_SECONDS = 2.0  # after a connection ends: how long its stderr may still arrive (a child's last words)


class ServerOutput:
    """One stdio server's stderr tail and its last process, across its connection attempts."""

    def __init__(self, server: str, on_dropped: Dropped | None = None) -> None:
        self.server = server
        self.chatter = Chatter(STDERR_RATE, STDERR_BURST)
        self._on_dropped = on_dropped
        self._skipping = False  # the rest of a line already logged cut, until its end
        self.tail: deque[str] = deque(maxlen=TAIL_LINES)
        self._process: Any = None
        self._writer: TextIO | None = None
        self._reader: int | None = None
        self._attempt = 0  # which pipe a delayed stop is for (a new pipe may reuse the old one's number)
        self._partial = b""

    def open(self) -> TextIO:
        """A fresh pipe for the next attempt's stderr (the tail starts over), watched for the process it starts."""
        self.close()
        self.tail.clear()
        self._process = None
        read, write = os.pipe()
        os.set_blocking(read, False)
        self._reader, self._writer = read, os.fdopen(write, "w")
        self._attempt += 1
        asyncio.get_running_loop().add_reader(read, self._read)
        return self._writer

    def took(self, process: Any) -> None:
        """The process this attempt started (the transport hands it over): its exit code is half the cause."""
        self._process = process

    def ended(self) -> None:
        """The attempt is over: stop writing, and read what is left for a moment, then let go of the pipe."""
        if self._writer is not None:
            self._writer.close()
            self._writer = None
        if self._reader is not None:
            asyncio.get_running_loop().call_later(DRAIN_SECONDS, self._stop_reading, self._attempt)

    def close(self) -> None:
        if self._writer is not None:
            self._writer.close()
            self._writer = None
        self._stop_reading(self._attempt)

    def drain_now(self) -> None:
        """Read what the pipe holds now, so a cause composed right after a failure has the server's last words."""
        while self._read():
            pass

    async def settle(self, seconds: float) -> None:
        """Wait up to `seconds` for the last process to end on its own (a lost connection: did it exit?)."""
        deadline = asyncio.get_running_loop().time() + seconds
        while self._process is not None and self.exit is None and asyncio.get_running_loop().time() < deadline:
            await asyncio.sleep(0.05)

    @property
    def pid(self) -> int | None:
        """The last process's id while it runs (None before it started, once it ended, or unknown)."""
        if self._process is None or getattr(self._process, "returncode", None) is not None:
            return None
        pid = getattr(self._process, "pid", None)
        return pid if isinstance(pid, int) else None

    @property
    def finished(self) -> bool:
        """Whether the last process is known to have ended."""
        return self._process is not None and getattr(self._process, "returncode", None) is not None

    async def exited(self) -> None:
        """Return when the last process ends (never, when there is none to watch): a server that dies while idle
        is seen at once, not at the next liveness ping."""
        process = self._process
        try:
            if process is not None:
                await process.wait()
                return
        except Exception:  # a process that cannot be waited for is left to the liveness ping
            pass
        await asyncio.Event().wait()

    @property
    def exit(self) -> str | None:
        """How the last process ended, when it has: `exited with code 1`, `killed by SIGKILL`."""
        code = getattr(self._process, "returncode", None)
        if code is None:
            return None
        if code < 0:
            with contextlib.suppress(ValueError):
                return f"killed by {signal.Signals(-code).name}"
            return f"killed by signal {-code}"
        return f"exited with code {code}"

    def last(self) -> str | None:
        return self.tail[-1] if self.tail else None

    def cause(self, what: str, problem: str | None) -> str:
        """`what` failed, explained: the cause a person can fix when one was found (`problem`: a command not on
        PATH, a script that is no file), how the process ended, and otherwise its last line on stderr."""
        self.drain_now()
        ended = self.exit
        if problem is None and ended is not None and what.lower().startswith(("connection closed", "client failed")):
            what, ended = f"{ended} before the MCP handshake", None
        parts = [problem or what, *([ended] if ended else [])]
        last = self.last()
        if problem is None and last:
            parts.append(f"stderr: {last}")
        return "; ".join(parts)

    def _read(self) -> bool:
        """Read once; whether more may be waiting."""
        reader = self._reader
        if reader is None:
            return False
        try:
            data = os.read(reader, 65536)
        except BlockingIOError:
            return False
        except OSError:
            data = b""
        if not data:
            self._stop_reading(self._attempt)
            return False
        self._take(data)
        return True

    def _take(self, data: bytes) -> None:
        """`data`'s complete lines: the last ones kept for the tail, as many as the budget allows logged."""
        if self._skipping:  # the rest of a line too long to keep: up to its end, counted only
            end = data.find(b"\n")
            skipped = len(data) if end < 0 else end
            self._dropped(0, skipped)
            if end < 0:
                return
            self._skipping, data = False, data[end + 1 :]
        lines = (self._partial + data).split(b"\n")
        self._partial = lines.pop()
        if len(self._partial) > LINE_CHARS * 4:  # a line without an end is still a line
            lines.append(self._partial)
            self._partial = b""
            self._skipping = True
        dropped = dropped_bytes = 0
        for line in lines:
            if not line.strip():
                continue
            if self.chatter.allow():
                self._log(line)
            else:
                dropped += 1
                dropped_bytes += len(line)
        if dropped:
            self._dropped(dropped, dropped_bytes)
        for line in lines[-TAIL_LINES:]:
            self._keep(line)

    def _dropped(self, lines: int, size: int) -> None:
        """Lines (and bytes) not logged: counted for the next line that is, and for the gateway's counter."""
        self.chatter.drop(lines, size)
        if self._on_dropped is not None:
            if lines:
                self._on_dropped(self.server, "stderr_lines", lines)
            if size:
                self._on_dropped(self.server, "stderr_bytes", size)

    def _log(self, raw: bytes) -> None:
        dropped, dropped_bytes = self.chatter.take_dropped()
        text = _text(raw)
        if dropped or dropped_bytes:
            log.info(
                "mcp stderr server=%s dropped_lines=%d dropped_bytes=%d %s", self.server, dropped, dropped_bytes, text
            )
        else:
            log.info("mcp stderr server=%s %s", self.server, text)

    def _keep(self, raw: bytes) -> None:
        if not raw.strip():
            return
        self.tail.append(_text(raw))
        while sum(len(line) for line in self.tail) > TAIL_BYTES:
            self.tail.popleft()

    def _line(self, raw: bytes) -> None:
        """A last line on its own (what was left without an end when reading stopped)."""
        if self.chatter.allow():
            self._log(raw)
        else:
            self._dropped(1, len(raw))
        self._keep(raw)

    def _stop_reading(self, attempt: int) -> None:
        reader = self._reader
        if attempt != self._attempt or reader is None:
            return
        if self._partial:
            self._line(self._partial)
            self._partial = b""
        with contextlib.suppress(Exception):
            asyncio.get_running_loop().remove_reader(reader)
        with contextlib.suppress(OSError):
            os.close(reader)
        self._reader = None


def _text(raw: bytes) -> str:
    """A line as text, cut at LINE_CHARS; only the bytes that can be kept are decoded."""
    text = raw[: LINE_CHARS * 4].decode("utf-8", "replace").rstrip("\r\n")
    return text if len(text) <= LINE_CHARS else text[: LINE_CHARS - 3] + "..."
