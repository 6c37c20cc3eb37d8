"""Anthropic's Messages API, `POST /v1/messages` and `count_tokens`: the front (front.py), its stream (stream.py),
its request checks (wire.py) and its routes (routes.py); the wire format's codec is app/codecs/anthropic/, which
the Anthropic provider shares."""
