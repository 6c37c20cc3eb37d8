"""The vocabulary every layer shares: the typed model of a chat, the tool catalog and the deferral decision.

Fronts, the engine, discovery, the MCP client and the providers all speak these types, so they sit below all of
them and import only the shared top-level modules (config, errors, tokens, ...).
"""
