"""OpenAI's Responses API: protocol types (`protocol`), input items (`items`), requests and answers both ways."""
