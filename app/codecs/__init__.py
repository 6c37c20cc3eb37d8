"""One codec per wire format: its protocol types, and its translation to and from the engine's model.

A front and a provider of the same format share one codec, so what a format means (its stop reasons, its tool
choice, its reasoning fields) is written once. Codecs import only the core model and shared modules.
"""

TOOL_NAME_PATTERN = r"^[a-zA-Z0-9_-]{1,64}$"  # the tool names every format here accepts
