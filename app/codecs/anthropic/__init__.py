"""Anthropic's Messages API: protocol types (`protocol`), requests both ways (`requests`), answers both ways
(`answers`)."""
