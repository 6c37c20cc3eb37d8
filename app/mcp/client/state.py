"""A server connection's state and the error a call gets when it cannot run, shared by one connection and a pool
of them."""

from __future__ import annotations

from enum import StrEnum


class ServerState(StrEnum):
    CONNECTING = "connecting"
    UP = "up"
    DOWN = "down"
    DISABLED = "disabled"


class ServerUnavailable(Exception):
    """The server is not connected (or not for this caller); the message says why."""
