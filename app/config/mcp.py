"""MCP on both sides: the servers the gateway connects to, and what it serves as one (tool sets, run_task)."""

from __future__ import annotations

from typing import Annotated, Any, Literal

from pydantic import Field, StrictBool, model_validator

from app.config.base import Strict
from app.config.identities import secret_names
from app.config.pasted import normalize


class McpServerConfig(Strict):
    """A stdio (`command`) or remote (`url`) MCP server.

    Keys other MCP clients write in a pasted entry are read or ignored (app/config/pasted.py); any other unknown
    key is an error. Flags take JSON booleans only: `"defer_loading": "yes"` is a mistake, not a yes.
    """

    command: str | None = None
    args: list[str] = Field(default_factory=list)
    env: dict[str, str] = Field(default_factory=dict)
    cwd: str | None = None
    inherit_env: list[str] = Field(
        default_factory=list, description="more variables (or NAME* patterns) this server gets from the gateway"
    )
    url: str | None = None
    transport: Literal["stdio", "streamable-http", "http", "sse"] | None = None
    headers: dict[str, str] = Field(default_factory=dict)
    defer_loading: StrictBool | None = Field(None, description="unset: tool_discovery.defer decides")
    always_load: list[str] = Field(
        default_factory=list, description="tools of a deferred server that stay loaded (the server's own names)"
    )
    disabled: StrictBool = False
    description: str | None = None
    startup_timeout: float | None = Field(None, gt=0)
    tool_timeout: float | None = Field(None, gt=0)
    instances: int = Field(
        1, ge=1, le=64, description="stdio only: processes of this server, calls spread over them, each restarted alone"
    )
    # With `${identity.NAME}` in `headers` or `env`: one connection (or process) per identity that calls it.
    list_as: str | None = Field(None, description="the identity whose connection lists the tools")
    identity_idle_seconds: float = Field(600.0, gt=0, description="an identity's connection idle this long closes")
    max_identity_connections: int = Field(64, ge=1, description="identities' connections open at once, per process")

    @property
    def identity_secrets(self) -> list[str]:
        """The identity secrets its headers and env reference (`${identity.NAME}`), in order."""
        values = [*self.headers.values(), *self.env.values()]
        return list(dict.fromkeys(name for value in values for name in secret_names(value)))

    @model_validator(mode="before")
    @classmethod
    def _pasted_keys(cls, data: Any) -> Any:
        return normalize(data)

    @model_validator(mode="after")
    def _command_or_url(self) -> McpServerConfig:
        if bool(self.command) == bool(self.url):
            raise ValueError("set exactly one of 'command' (stdio) or 'url' (remote)")
        if self.url and self.transport == "stdio":
            raise ValueError("transport 'stdio' needs 'command', not 'url'")
        if self.command and self.transport not in (None, "stdio"):
            raise ValueError(f"transport {self.transport!r} needs 'url', not 'command'")
        if self.url and self.instances > 1:
            raise ValueError("'instances' applies to stdio servers ('command'): a remote server scales on its side")
        if self.instances > 1 and self.identity_secrets:
            raise ValueError("'instances' applies to shared servers: one naming ${identity.NAME} runs one per identity")
        return self

    @property
    def transport_name(self) -> str:
        if self.command:
            return "stdio"
        if self.transport in (None, "http"):
            return "streamable-http"
        return self.transport


class McpLimitsConfig(Strict):
    """What the gateway takes from one MCP server's tool listing: a server is untrusted input like any caller."""

    max_tools_per_server: int = Field(1000, ge=1, description="tools past this many in a listing are dropped")
    max_name_chars: int = Field(128, ge=1, description="a tool with a longer name is dropped")
    max_description_chars: int = Field(4096, ge=64, description="longer tool descriptions are cut")
    max_schema_bytes: int = Field(65536, ge=256, description="a tool whose input schema is larger is dropped")
    max_message_bytes: int = Field(
        16 * 1024 * 1024,
        ge=65536,
        description="a server's message (a stdio line, an HTTP answer or event) over this ends its connection",
    )
    max_call_bytes: int = Field(
        64 * 1024 * 1024,
        ge=65536,
        description="a remote server's answer stream for one request (its events in all) over this fails that request",
    )
    rebuild_interval_seconds: float = Field(
        1.0, ge=0, description="tool-list changes within this interval cost one catalog rebuild"
    )

    @model_validator(mode="after")
    def _a_call_holds_a_message(self) -> McpLimitsConfig:
        if self.max_call_bytes < self.max_message_bytes:
            raise ValueError(
                f"max_call_bytes ({self.max_call_bytes:,}) is below max_message_bytes ({self.max_message_bytes:,}):"
                " one request's answer is a message, so raise max_call_bytes with it"
            )
        return self


class ExcludeSpec(Strict):
    exclude: list[str]


ServerSelection = StrictBool | list[str] | ExcludeSpec


class ToolSetConfig(Strict):
    description: str = ""
    servers: dict[str, ServerSelection]


class RunTaskConfig(Strict):
    """`run_task` on the MCP front: a client hands over a whole task, the gateway's loop runs it."""

    model: str = Field(min_length=1, description="the model (alias or upstream name) that runs the task")
    max_rounds: Annotated[int, Field(ge=1, le=100)] = 10
    deadline_seconds: float = Field(300.0, gt=0)
    system_prompt: str | None = None
    allow_destructive: StrictBool = Field(False, description="run tools a server annotates destructiveHint: true")


class McpFrontConfig(Strict):
    mode: Literal["lazy", "proxy", "full"] = "lazy"
    # Accepted so older configs load; what lazy clients found now lives in the sessions' store, under its bounds.
    max_clients: int = Field(10_000, ge=1, description="no longer used: the sessions' store bounds MCP clients")
    run_task: RunTaskConfig | None = None
