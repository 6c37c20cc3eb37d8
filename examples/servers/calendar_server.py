"""Demo MCP server: an in-memory calendar.

Events live in memory for the lifetime of the process; a few examples are seeded in the week of
2025-06-09. All times are UTC and the current user is you@example.com. Run over stdio with:

    python examples/servers/calendar_server.py
"""

from __future__ import annotations

import re
import threading
from datetime import UTC, date, datetime, time, timedelta
from typing import Annotated, Any, Literal

from fastmcp import FastMCP
from pydantic import Field

mcp = FastMCP(
    "calendar",
    instructions="Calendar: list, create, update and delete events, find free time and manage "
    "invitations. All times are UTC.",
)

ME = "you@example.com"
WORK_START, WORK_END = time(9, 0), time(17, 0)
EMAIL_RE = re.compile(r"^[^@\s]+@[^@\s]+\.[A-Za-z]{2,}$")

CALENDARS: dict[str, dict[str, str]] = {
    "work": {"id": "work", "name": "Work", "owner": ME},
    "personal": {"id": "personal", "name": "Personal", "owner": ME},
    "team": {"id": "team", "name": "Team Engineering (shared)", "owner": "priya@example.com"},
}

_lock = threading.Lock()  # sync tools run in worker threads
_events: dict[str, dict[str, Any]] = {}
_next_id = 1001

EventId = Annotated[str, Field(description="Event id from list_events or create_event, e.g. 'evt-1001'.")]
CalendarArg = Annotated[str, Field(description="Calendar id: 'work', 'personal' or 'team'.")]
Duration = Annotated[int, Field(ge=5, le=720, description="Length of the event in minutes (5-720).")]


def _calendar(calendar: str) -> str:
    key = calendar.strip().lower()
    if key not in CALENDARS:
        raise ValueError(f"Unknown calendar {calendar!r}. Available: {', '.join(CALENDARS)}.")
    return key


def _parse_dt(value: str) -> datetime:
    try:
        dt = datetime.fromisoformat(value.strip())
    except ValueError:
        raise ValueError(f"Invalid datetime {value!r}; use ISO 8601, e.g. '2025-06-12T14:30:00'.") from None
    return dt.replace(tzinfo=UTC) if dt.tzinfo is None else dt.astimezone(UTC)


def _parse_date(value: str, name: str) -> date:
    try:
        return date.fromisoformat(value.strip())
    except ValueError:
        raise ValueError(f"Invalid {name} {value!r}; use YYYY-MM-DD.") from None


def _email(email: str) -> str:
    email = email.strip().lower()
    if not EMAIL_RE.match(email):
        raise ValueError(f"Invalid email address {email!r}.")
    return email


def _title(title: str) -> str:
    if not title.strip():
        raise ValueError("Event title must not be empty.")
    return title.strip()


def _get(event_id: str, *, organizer_only: bool = False) -> dict[str, Any]:
    event = _events.get(event_id.strip())
    if event is None:
        raise ValueError(f"No event with id {event_id!r}. Use list_events to find event ids.")
    if organizer_only and event["organizer"] != ME:
        raise ValueError(f"{event['id']} is organized by {event['organizer']}; only they can modify it.")
    return event


def _end(event: dict[str, Any]) -> datetime:
    start: datetime = event["start"]
    return start + timedelta(minutes=event["duration_minutes"])


def _public(event: dict[str, Any]) -> dict[str, Any]:
    return {
        "id": event["id"],
        "calendar": event["calendar"],
        "title": event["title"],
        "start": event["start"].isoformat(),
        "end": _end(event).isoformat(),
        "duration_minutes": event["duration_minutes"],
        "organizer": event["organizer"],
        "attendees": [dict(a) for a in event["attendees"]],
    }


def _insert(
    calendar: str, title: str, start: datetime, minutes: int, attendees: dict[str, str], organizer: str = ME
) -> dict[str, Any]:
    global _next_id
    event = {
        "id": f"evt-{_next_id}",
        "calendar": calendar,
        "title": _title(title),
        "start": start,
        "duration_minutes": minutes,
        "organizer": organizer,
        "attendees": [{"email": e, "response": r} for e, r in attendees.items()],
    }
    _next_id += 1
    _events[event["id"]] = event
    return event


def _overlaps(calendar: str, start: datetime, minutes: int, skip: str | None = None) -> list[str]:
    end = start + timedelta(minutes=minutes)
    return [
        e["id"]
        for e in _events.values()
        if e["calendar"] == calendar and e["id"] != skip and e["start"] < end and start < _end(e)
    ]


def _june(day: int, hour: int, minute: int = 0) -> datetime:
    return datetime(2025, 6, day, hour, minute, tzinfo=UTC)


_insert("work", "Weekly 1:1 with Dana", _june(9, 10), 30, {"dana@example.com": "accepted"})
_insert("work", "Sprint planning", _june(9, 13), 90, {"alex@example.com": "accepted", "priya@example.com": "tentative"})
_insert("work", "Customer demo: Acme Corp", _june(9, 15, 30), 60, {"sam@acme.example": "needs-action"})
_insert(
    "team",
    "Architecture review: payments API",
    _june(10, 15),
    60,
    {ME: "needs-action", "alex@example.com": "accepted"},
    organizer="priya@example.com",
)
_insert("personal", "Dentist appointment", _june(11, 8, 30), 45, {})


@mcp.tool
def list_calendars() -> list[dict[str, Any]]:
    """List the calendars available to the user, with id, display name, owner and event count."""
    with _lock:
        return [
            {**c, "event_count": sum(e["calendar"] == c["id"] for e in _events.values())} for c in CALENDARS.values()
        ]


@mcp.tool
def list_events(
    calendar: CalendarArg,
    start_date: Annotated[str, Field(description="First day to include, YYYY-MM-DD.")],
    end_date: Annotated[str, Field(description="Last day to include (inclusive), YYYY-MM-DD.")],
) -> dict[str, Any]:
    """List events in a calendar between two dates (inclusive), sorted by start time.

    Returns each event's id, title, start/end (ISO 8601, UTC), duration, organizer and attendees
    with their responses.
    """
    cal = _calendar(calendar)
    first, last = _parse_date(start_date, "start_date"), _parse_date(end_date, "end_date")
    if last < first:
        raise ValueError("end_date must be on or after start_date.")
    if (last - first).days > 366:
        raise ValueError("Date range too large; request at most one year at a time.")
    lo = datetime.combine(first, time(0), UTC)
    hi = datetime.combine(last + timedelta(days=1), time(0), UTC)
    with _lock:
        found = sorted(
            (e for e in _events.values() if e["calendar"] == cal and lo <= e["start"] < hi), key=lambda e: e["start"]
        )
        return {"calendar": cal, "count": len(found), "events": [_public(e) for e in found]}


@mcp.tool
def create_event(
    calendar: CalendarArg,
    title: Annotated[str, Field(description="Event title, e.g. 'Project kickoff'.")],
    start: Annotated[str, Field(description="Start time as ISO 8601 datetime; no offset means UTC.")],
    duration_minutes: Duration = 60,
    attendees: Annotated[list[str] | None, Field(description="Email addresses to invite, if any.")] = None,
) -> dict[str, Any]:
    """Create an event organized by the user and return it, plus ids of any overlapping events."""
    cal = _calendar(calendar)
    when = _parse_dt(start)
    invitees = {_email(a): "needs-action" for a in attendees or [] if a.strip().lower() != ME}
    with _lock:
        conflicts = _overlaps(cal, when, duration_minutes)
        event = _insert(cal, title, when, duration_minutes, invitees)
        return {"event": _public(event), "conflicts": conflicts}


@mcp.tool
def update_event(
    event_id: EventId,
    title: Annotated[str | None, Field(description="New title; omit to keep.")] = None,
    start: Annotated[str | None, Field(description="New ISO 8601 start time; omit to keep.")] = None,
    duration_minutes: Annotated[
        int | None, Field(ge=5, le=720, description="New length in minutes (5-720); omit to keep.")
    ] = None,
) -> dict[str, Any]:
    """Change the title, start time and/or duration of an event the user organizes.

    Returns the updated event plus ids of any events it now overlaps.
    """
    if title is None and start is None and duration_minutes is None:
        raise ValueError("Nothing to update: provide title, start and/or duration_minutes.")
    new_title = _title(title) if title is not None else None
    new_start = _parse_dt(start) if start is not None else None
    with _lock:
        event = _get(event_id, organizer_only=True)
        event["title"] = new_title or event["title"]
        event["start"] = new_start or event["start"]
        event["duration_minutes"] = duration_minutes or event["duration_minutes"]
        conflicts = _overlaps(event["calendar"], event["start"], event["duration_minutes"], skip=event["id"])
        return {"event": _public(event), "conflicts": conflicts}


@mcp.tool
def delete_event(event_id: EventId) -> dict[str, Any]:
    """Delete an event the user organizes; returns the id and title of the deleted event."""
    with _lock:
        event = _get(event_id, organizer_only=True)
        del _events[event["id"]]
        return {"deleted": True, "id": event["id"], "title": event["title"]}


@mcp.tool
def find_free_slots(
    calendar: CalendarArg,
    date: Annotated[str, Field(description="Day to search, YYYY-MM-DD.")],
    duration_minutes: Duration,
) -> dict[str, Any]:
    """Find free time in a calendar on a given day within working hours (09:00-17:00 UTC).

    Returns every gap between events that is at least duration_minutes long, with its start, end
    and length in minutes.
    """
    cal = _calendar(calendar)
    day = _parse_date(date, "date")
    cursor = datetime.combine(day, WORK_START, UTC)
    day_end = datetime.combine(day, WORK_END, UTC)
    with _lock:
        busy = sorted((e["start"], _end(e)) for e in _events.values() if e["calendar"] == cal)
    slots = []
    for busy_start, busy_end in [*busy, (day_end, day_end)]:
        gap_end = min(busy_start, day_end)
        if gap_end - cursor >= timedelta(minutes=duration_minutes):
            slots.append(
                {
                    "start": cursor.isoformat(),
                    "end": gap_end.isoformat(),
                    "minutes": int((gap_end - cursor).total_seconds() // 60),
                }
            )
        cursor = max(cursor, busy_end)
        if cursor >= day_end:
            break
    return {"calendar": cal, "date": day.isoformat(), "working_hours": "09:00-17:00 UTC", "free_slots": slots}


@mcp.tool
def invite_attendee(
    event_id: EventId,
    email: Annotated[str, Field(description="Email address of the person to invite.")],
) -> dict[str, Any]:
    """Invite someone to an event the user organizes; returns the event's updated attendee list."""
    addr = _email(email)
    with _lock:
        event = _get(event_id, organizer_only=True)
        if addr == ME or any(a["email"] == addr for a in event["attendees"]):
            raise ValueError(f"{addr} is already part of event {event['id']}.")
        event["attendees"].append({"email": addr, "response": "needs-action"})
        return {"id": event["id"], "attendees": [dict(a) for a in event["attendees"]]}


@mcp.tool
def respond_to_invite(
    event_id: EventId,
    response: Annotated[Literal["accept", "decline", "tentative"], Field(description="The user's RSVP.")],
) -> dict[str, Any]:
    """Respond to an invitation the user received (accept, decline or tentative); returns the new status."""
    status = {"accept": "accepted", "decline": "declined", "tentative": "tentative"}[response]
    with _lock:
        event = _get(event_id)
        mine = next((a for a in event["attendees"] if a["email"] == ME), None)
        if mine is None:
            raise ValueError(f"You are not invited to {event['id']} (organizer: {event['organizer']}).")
        mine["response"] = status
        return {"id": event["id"], "title": event["title"], "response": status}


if __name__ == "__main__":
    from call_log import logged  # beside this file, which runs as a script

    logged(mcp).run(show_banner=False, log_level="WARNING")
