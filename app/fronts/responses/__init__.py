"""OpenAI's Responses API, `POST /v1/responses`, its compaction and the caller's stored responses: the front
(front.py, compact.py), its items, pages and stream, its request checks (wire.py) and its routes (routes.py); the
wire format's codec is app/codecs/responses/, which the Responses provider shares."""
