"""Demo MCP server: a personal notes store.

Notes live in memory for the lifetime of the process (nothing is written to
disk) and the store starts with three example notes. Run over stdio with:

    python examples/servers/notes.py
"""

from __future__ import annotations

import threading
from typing import Annotated, Any

from fastmcp import FastMCP
from pydantic import Field

mcp = FastMCP(
    "notes",
    instructions="Personal notes store: create, read, update, delete, tag and search notes",
)

MAX_TITLE = 200
MAX_BODY = 20_000

_lock = threading.Lock()  # sync tools run in worker threads
_notes: dict[str, dict[str, Any]] = {}
_next_id = 1

NoteId = Annotated[str, Field(description="Note id from create_note or list_notes, e.g. 'note-1'.")]
TagArg = Annotated[str, Field(description="Tag name; case-insensitive, stored lowercase, e.g. 'work'.")]


def _clean_title(title: str) -> str:
    title = title.strip()
    if not title:
        raise ValueError("Title must not be empty.")
    if len(title) > MAX_TITLE:
        raise ValueError(f"Title is too long ({len(title)} chars, max {MAX_TITLE}).")
    return title


def _clean_body(body: str) -> str:
    if len(body) > MAX_BODY:
        raise ValueError(f"Body is too long ({len(body)} chars, max {MAX_BODY}).")
    return body


def _clean_tag(tag: str) -> str:
    tag = tag.strip().lower().lstrip("#")
    if not tag or any(ch.isspace() for ch in tag) or len(tag) > 40:
        raise ValueError(f"Invalid tag {tag!r}: use 1-40 characters without spaces.")
    return tag


def _get(note_id: str) -> dict[str, Any]:
    note = _notes.get(note_id.strip())
    if note is None:
        raise ValueError(f"No note with id {note_id!r}. Use list_notes to see existing ids.")
    return note


def _summary(note: dict[str, Any]) -> dict[str, Any]:
    body = note["body"]
    snippet = body if len(body) <= 80 else body[:77].rstrip() + "..."
    return {"id": note["id"], "title": note["title"], "tags": note["tags"], "snippet": snippet}


def _insert(title: str, body: str, tags: list[str]) -> dict[str, Any]:
    global _next_id
    clean_tags = sorted({_clean_tag(t) for t in tags})
    note = {
        "id": f"note-{_next_id}",
        "title": _clean_title(title),
        "body": _clean_body(body),
        "tags": clean_tags,
        "revision": 1,
    }
    _next_id += 1
    _notes[note["id"]] = note
    return note


_insert("Grocery list", "Oat milk, eggs, spinach, sourdough, coffee beans.", ["personal", "shopping"])
_insert(
    "Q3 planning meeting",
    "Agenda: hiring plan, API v2 deprecation timeline, on-call rotation. Owner: Priya.",
    ["work", "meetings"],
)
_insert(
    "Book recommendations",
    "The Pragmatic Programmer; Designing Data-Intensive Applications; Piranesi.",
    ["personal", "reading"],
)


@mcp.tool
def create_note(
    title: Annotated[str, Field(description="Short title for the note (1-200 characters).")],
    body: Annotated[str, Field(description="Full text of the note (up to 20,000 characters).")],
    tags: Annotated[list[str] | None, Field(description="Optional tags, e.g. ['work', 'ideas'].")] = None,
) -> dict[str, Any]:
    """Create a new note and return it, including its generated id."""
    with _lock:
        return dict(_insert(title, body, tags or []))


@mcp.tool
def get_note(note_id: NoteId) -> dict[str, Any]:
    """Get a single note by id, returning its title, full body, tags and revision number."""
    with _lock:
        return dict(_get(note_id))


@mcp.tool
def update_note(
    note_id: NoteId,
    title: Annotated[str | None, Field(description="New title; omit to keep the current one.")] = None,
    body: Annotated[str | None, Field(description="New body text; omit to keep the current one.")] = None,
) -> dict[str, Any]:
    """Change the title and/or body of an existing note and return the updated note."""
    if title is None and body is None:
        raise ValueError("Nothing to update: provide a new title and/or body.")
    with _lock:
        note = _get(note_id)
        new_title = _clean_title(title) if title is not None else note["title"]
        new_body = _clean_body(body) if body is not None else note["body"]
        note.update(title=new_title, body=new_body, revision=note["revision"] + 1)
        return dict(note)


@mcp.tool
def delete_note(note_id: NoteId) -> dict[str, Any]:
    """Permanently delete a note; returns the id and title of the deleted note."""
    with _lock:
        note = _get(note_id)
        del _notes[note["id"]]
        return {"deleted": True, "id": note["id"], "title": note["title"]}


@mcp.tool
def list_notes(
    tag: Annotated[str | None, Field(description="Only return notes with this tag; omit for all.")] = None,
    limit: Annotated[int, Field(ge=1, le=100, description="Maximum number of notes to return (1-100).")] = 20,
) -> dict[str, Any]:
    """List notes, oldest first, optionally filtered by tag.

    Returns the total number of matches and a page of note summaries
    (id, title, tags and a short snippet of the body).
    """
    wanted = _clean_tag(tag) if tag is not None else None
    with _lock:
        matches = [n for n in _notes.values() if wanted is None or wanted in n["tags"]]
        return {"total": len(matches), "notes": [_summary(n) for n in matches[:limit]]}


@mcp.tool
def search_notes(
    text: Annotated[str, Field(description="Text to find in titles, bodies and tags (case-insensitive).")],
) -> dict[str, Any]:
    """Search notes for a piece of text and return summaries of the notes that contain it."""
    needle = text.strip().lower()
    if not needle:
        raise ValueError("Search text must not be empty.")
    with _lock:
        hits = [
            _summary(n)
            for n in _notes.values()
            if needle in n["title"].lower() or needle in n["body"].lower() or any(needle in t for t in n["tags"])
        ]
    return {"query": text, "count": len(hits), "notes": hits}


@mcp.tool
def add_tag(note_id: NoteId, tag: TagArg) -> dict[str, Any]:
    """Add a tag to a note (no-op if already present); returns the note's id and updated tags."""
    clean = _clean_tag(tag)
    with _lock:
        note = _get(note_id)
        if clean not in note["tags"]:
            note["tags"] = sorted([*note["tags"], clean])
        return {"id": note["id"], "tags": note["tags"]}


@mcp.tool
def remove_tag(note_id: NoteId, tag: TagArg) -> dict[str, Any]:
    """Remove a tag from a note; returns the note's id and remaining tags."""
    clean = _clean_tag(tag)
    with _lock:
        note = _get(note_id)
        if clean not in note["tags"]:
            raise ValueError(f"Note {note['id']!r} has no tag {clean!r}; its tags are {note['tags']}.")
        note["tags"] = [t for t in note["tags"] if t != clean]
        return {"id": note["id"], "tags": note["tags"]}


@mcp.tool
def list_tags() -> dict[str, Any]:
    """List every tag in use with the number of notes carrying it, most used first."""
    counts: dict[str, int] = {}
    with _lock:
        for note in _notes.values():
            for t in note["tags"]:
                counts[t] = counts.get(t, 0) + 1
    ordered = sorted(counts.items(), key=lambda kv: (-kv[1], kv[0]))
    return {"tags": [{"tag": t, "count": c} for t, c in ordered]}


if __name__ == "__main__":
    from call_log import logged  # beside this file, which runs as a script

    logged(mcp).run(show_banner=False, log_level="WARNING")
