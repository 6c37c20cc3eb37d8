"""OpenAI chat completions: protocol types (`protocol`), requests both ways (`requests`), answers both ways
(`answers`)."""
