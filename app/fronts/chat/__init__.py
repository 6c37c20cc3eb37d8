"""OpenAI's Chat Completions, `POST /v1/chat/completions`: the front (front.py), its request checks and stream
chunks (wire.py) and its routes (routes.py); the wire format's codec is app/codecs/openai_chat/, which the OpenAI
provider shares."""
