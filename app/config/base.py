"""The base every closed config section shares."""

from __future__ import annotations

from pydantic import BaseModel, ConfigDict


class Strict(BaseModel):
    """A section whose unknown keys are errors, so a misspelt key fails at start-up instead of being ignored."""

    model_config = ConfigDict(extra="forbid")
