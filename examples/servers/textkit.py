"""Demo MCP server: everyday text utilities.

Counting, slugs, email/URL extraction, JSON formatting, base64, hashing,
regex search, diffs and UUIDs. Everything is computed locally. Run over stdio
with:

    python examples/servers/textkit.py
"""

from __future__ import annotations

import base64
import binascii
import difflib
import hashlib
import json
import re
import unicodedata
import uuid
from typing import Annotated, Any, Literal

from fastmcp import FastMCP
from pydantic import Field

mcp = FastMCP(
    "textkit",
    instructions="Text utilities: word counts, slugs, email/URL extraction, JSON formatting, "
    "base64, hashing, regex search, diffs and UUID generation",
)

MAX_MATCHES = 100
EMAIL_RE = re.compile(r"[A-Za-z0-9._%+-]+@[A-Za-z0-9-]+(?:\.[A-Za-z0-9-]+)*\.[A-Za-z]{2,}")
URL_RE = re.compile(r"\bhttps?://[^\s<>\"'`]+", re.IGNORECASE)

TextArg = Annotated[str, Field(description="The input text.")]


def _unique(items: list[str]) -> list[str]:
    return list(dict.fromkeys(items))


@mcp.tool
def count_words(text: TextArg) -> dict[str, Any]:
    """Count words, characters, lines, sentences and paragraphs in a text.

    Also returns an estimated reading time in minutes at 200 words per minute.
    """
    words = re.findall(r"\b\w[\w'-]*\b", text)
    sentences = [s for s in re.split(r"[.!?]+(?:\s+|$)", text) if s.strip()]
    paragraphs = [p for p in re.split(r"\n\s*\n", text) if p.strip()]
    return {
        "words": len(words),
        "characters": len(text),
        "characters_no_spaces": len(re.sub(r"\s", "", text)),
        "lines": len(text.splitlines()),
        "sentences": len(sentences),
        "paragraphs": len(paragraphs),
        "reading_time_minutes": round(len(words) / 200, 1),
    }


@mcp.tool
def slugify(text: Annotated[str, Field(description="Text to turn into a slug, e.g. a title.")]) -> str:
    """Convert text into a lowercase, hyphen-separated URL slug, e.g. 'Héllo, World!' -> 'hello-world'."""
    ascii_text = unicodedata.normalize("NFKD", text).encode("ascii", "ignore").decode("ascii")
    slug = re.sub(r"[^a-z0-9]+", "-", ascii_text.lower()).strip("-")
    if not slug:
        raise ValueError("Text contains no letters or digits to build a slug from.")
    return slug


@mcp.tool
def extract_emails(text: TextArg) -> list[str]:
    """Extract all email addresses from a text; returns unique addresses in order of appearance."""
    return _unique(EMAIL_RE.findall(text))


@mcp.tool
def extract_urls(text: TextArg) -> list[str]:
    """Extract all http(s) URLs from a text; returns unique URLs in order of appearance."""
    urls = []
    for url in URL_RE.findall(text):
        url = url.rstrip(".,;:!?")
        if url.endswith(")") and url.count("(") < url.count(")"):
            url = url[:-1]
        urls.append(url)
    return _unique(urls)


@mcp.tool
def format_json(
    text: Annotated[str, Field(description="A JSON document to validate and pretty-print.")],
    indent: Annotated[int, Field(ge=0, le=8, description="Spaces per indentation level (0-8).")] = 2,
) -> str:
    """Validate and pretty-print a JSON document; returns the reformatted JSON text."""
    try:
        data = json.loads(text)
    except json.JSONDecodeError as exc:
        raise ValueError(f"Invalid JSON: {exc.msg} at line {exc.lineno}, column {exc.colno}.") from None
    return json.dumps(data, indent=indent, ensure_ascii=False)


@mcp.tool
def base64_encode(text: Annotated[str, Field(description="Text to encode (encoded as UTF-8 first).")]) -> str:
    """Encode text as standard base64 (UTF-8 bytes); returns the base64 string."""
    return base64.b64encode(text.encode("utf-8")).decode("ascii")


@mcp.tool
def base64_decode(data: Annotated[str, Field(description="Base64 string (standard or URL-safe).")]) -> str:
    """Decode a base64 string and return the result as UTF-8 text."""
    cleaned = re.sub(r"\s", "", data).replace("-", "+").replace("_", "/")
    cleaned += "=" * (-len(cleaned) % 4)
    try:
        raw = base64.b64decode(cleaned, validate=True)
    except (binascii.Error, ValueError):
        raise ValueError("Invalid base64 input.") from None
    try:
        return raw.decode("utf-8")
    except UnicodeDecodeError:
        raise ValueError(f"Decoded {len(raw)} bytes, but they are not valid UTF-8 text.") from None


@mcp.tool
def hash_text(
    text: Annotated[str, Field(description="Text to hash (hashed as UTF-8 bytes).")],
    algorithm: Annotated[Literal["md5", "sha1", "sha256"], Field(description="Hash algorithm.")] = "sha256",
) -> dict[str, str]:
    """Compute a hash of a text; returns the algorithm and the hex digest."""
    digest = hashlib.new(algorithm, text.encode("utf-8")).hexdigest()
    return {"algorithm": algorithm, "hex_digest": digest}


@mcp.tool
def regex_search(
    pattern: Annotated[str, Field(description="Python regular expression, e.g. '[A-Z]{2,3}-[0-9]+'.")],
    text: Annotated[str, Field(description="Text to search.")],
) -> dict[str, Any]:
    """Find all matches of a regular expression in a text (Python `re` syntax).

    Returns up to 100 matches, each with the matched text, start/end offsets,
    numbered groups and named groups, plus the total match count.
    """
    try:
        compiled = re.compile(pattern)
    except re.error as exc:
        raise ValueError(f"Invalid regular expression: {exc}.") from None
    matches, total = [], 0
    for m in compiled.finditer(text):
        total += 1
        if len(matches) < MAX_MATCHES:
            matches.append(
                {
                    "match": m.group(0),
                    "start": m.start(),
                    "end": m.end(),
                    "groups": list(m.groups()),
                    "named_groups": m.groupdict(),
                }
            )
    return {"total_matches": total, "truncated": total > MAX_MATCHES, "matches": matches}


@mcp.tool
def diff_text(
    a: Annotated[str, Field(description="Original text.")],
    b: Annotated[str, Field(description="Changed text.")],
) -> dict[str, Any]:
    """Compare two texts line by line.

    Returns a unified diff, the number of added and removed lines, whether the
    texts are identical, and a similarity ratio between 0 and 1.
    """
    a_lines, b_lines = a.splitlines(), b.splitlines()
    diff = list(difflib.unified_diff(a_lines, b_lines, fromfile="a", tofile="b", lineterm=""))
    added = sum(1 for line in diff if line.startswith("+") and not line.startswith("+++"))
    removed = sum(1 for line in diff if line.startswith("-") and not line.startswith("---"))
    return {
        "identical": a == b,
        "added_lines": added,
        "removed_lines": removed,
        "similarity": round(difflib.SequenceMatcher(None, a, b).ratio(), 4),
        "diff": "\n".join(diff),
    }


@mcp.tool
def generate_uuid(
    count: Annotated[int, Field(ge=1, le=100, description="How many UUIDs to generate (1-100).")] = 1,
) -> list[str]:
    """Generate random version-4 UUIDs; returns them as a list of strings."""
    return [str(uuid.uuid4()) for _ in range(count)]


if __name__ == "__main__":
    from call_log import logged  # beside this file, which runs as a script

    logged(mcp).run(show_banner=False, log_level="WARNING")
