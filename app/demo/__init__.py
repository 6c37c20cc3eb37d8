"""The keyless demo: a scripted stand-in for an LLM that uses tools the way a model does, so a new user can watch
discovery work (search, call, answer) without an API key. Nothing here is used by `toolsift serve`."""
