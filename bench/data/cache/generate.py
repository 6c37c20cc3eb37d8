"""Writes bench/data/cache/*.json: the three conversations bench/cache.py plays. Deterministic (seeded)."""

import json
import random
from pathlib import Path

OUT = Path(__file__).resolve().parent
rng = random.Random(33)
WORDS = (
    "the a of to and in is for on with that this by from as be are it or at an your you can will not when "
    "use file request user tool answer model project code change test run server data value error result list name "
    "time order report account note task check return each only must should before after keep send read write open "
    "close update create delete search find show explain summary detail step plan review commit branch build deploy "
    "config option default limit number text line output input message session history context prompt cache token "
    "price stock market package version dependency security issue release weather city date calendar event"
).split()


def prose(words):
    out, sentence = [], []
    for _ in range(words):
        sentence.append(rng.choice(WORDS))
        if len(sentence) >= rng.randint(8, 16):
            out.append(" ".join(sentence).capitalize() + ".")
            sentence = []
    if sentence:
        out.append(" ".join(sentence).capitalize() + ".")
    return " ".join(out)


def code(lines):
    out = []
    for _ in range(lines):
        kind = rng.random()
        name = rng.choice(WORDS) + "_" + rng.choice(WORDS)
        if kind < 0.2:
            out.append(f'def {name}(value: int, {rng.choice(WORDS)}: str = "{rng.choice(WORDS)}") -> dict[str, int]:')
        elif kind < 0.4:
            out.append(f"    # {prose(8)}")
        elif kind < 0.7:
            out.append(
                f"    {name} = {rng.choice(WORDS)}_{rng.randint(0, 99)}"
                f"({rng.choice(WORDS)}, limit={rng.randint(1, 500)})"
            )
        else:
            out.append(
                f"    if {name} is None or len({name}) > {rng.randint(2, 64)}:\n"
                f'        return {{"{rng.choice(WORDS)}": {rng.randint(0, 9)}}}'
            )
    return "\n".join(f"{n + 1:>5}\t{line}" for n, line in enumerate(out))


def client_tool(name, words, params):
    props = {p: {"type": "string", "description": prose(rng.randint(8, 20))} for p in params}
    return {
        "name": name,
        "description": prose(words),
        "parameters": {"type": "object", "properties": props, "required": params[:1]},
    }


M = {  # MCP tools of the first 20 of the data, in every catalog; queries as a model writes them
    "price": ("yahoo-finance/get_current_stock_price", "current stock price", {"symbol": "NVDA"}),
    "news": ("yahoo-finance/get_news", "stock news", {"symbol": "NVDA"}),
    "dividends": ("yahoo-finance/get_dividends", "stock dividends", {"symbol": "KO"}),
    "latest": ("npm-sentinel-mcp/npmLatest", "latest version npm package", {"packages": ["react"]}),
    "vulns": ("npm-sentinel-mcp/npmVulnerabilities", "npm package vulnerabilities", {"packages": ["lodash"]}),
    "deps": ("npm-sentinel-mcp/npmDeps", "npm package dependencies", {"packages": ["express"]}),
}


def mcp(key):
    tool, query, args = M[key]
    return {"mcp": tool, "query": query, "arguments": args}


def write(name, doc):
    (OUT / f"{name}.json").write_text(json.dumps(doc, indent=1, ensure_ascii=False) + "\n")


# 1. a chat app: 8 turns, 2k-token system prompt, short history, 4 discoveries and one found tool used again
plan = ["price", None, "latest", "price", "vulns", None, "news", None]
steps = []
for i, key in enumerate(plan):
    ask = {
        "price": "What is NVIDIA's stock price right now?",
        "latest": "Which is the latest version of react on npm?",
        "vulns": "Does lodash have known vulnerabilities?",
        "news": "Any news about NVIDIA stock today?",
    }.get(key) or f"Thanks. Can you explain point {i} of that again in simpler words?"
    steps.append(
        {"user": f"Turn {i + 1}: {ask}", "actions": [mcp(key)] if key else [], "answer": prose(rng.randint(40, 80))}
    )
write(
    "chat_app",
    {
        "name": "chat_app",
        "front": "chat",
        "description": "a chat app: 8 turns, short history, "
        "a 2k-token system prompt, one X-Session-Id, the client resending its history",
        "system": prose(1900),
        "client_tools": [],
        "steps": steps,
    },
)

# 2. an agent like Claude Code: 40 turns, ~60k tokens of history, 15 client tools, 5 discoveries
CC = {
    "Bash": ["command", "description", "timeout"],
    "Glob": ["pattern", "path"],
    "Grep": ["pattern", "path", "glob", "output_mode"],
    "Read": ["file_path", "offset", "limit"],
    "Edit": ["file_path", "old_string", "new_string"],
    "MultiEdit": ["file_path", "edits"],
    "Write": ["file_path", "content"],
    "NotebookEdit": ["notebook_path", "new_source"],
    "WebFetch": ["url", "prompt"],
    "WebSearch": ["query"],
    "TodoWrite": ["todos"],
    "Task": ["description", "prompt", "subagent_type"],
    "ExitPlanMode": ["plan"],
    "BashOutput": ["bash_id"],
    "KillShell": ["shell_id"],
}
tools = [
    client_tool(
        n, rng.randint(250, 900) if n in ("Bash", "Task", "TodoWrite", "Read", "Edit") else rng.randint(60, 300), p
    )
    for n, p in CC.items()
]
mcp_at = {5: "price", 11: "latest", 18: "vulns", 26: "deps", 33: "dividends", 37: "latest"}
steps = []
for i in range(40):
    actions = []
    if i in mcp_at:
        actions.append(mcp(mcp_at[i]))
        user = (
            f"Step {i + 1}: "
            + {
                "price": "check the current NVIDIA stock price for the dashboard fixture",
                "latest": "find the latest react version and pin it",
                "vulns": "check lodash for known vulnerabilities",
                "deps": "list the dependencies of express",
                "dividends": "get Coca-Cola's dividends for the example",
            }[mcp_at[i]]
        )
    else:
        tool = ["Read", "Bash", "Grep", "Edit", "Read", "Bash", "Glob", "Read"][i % 8]
        args = {
            "Read": {"file_path": f"src/module_{i}.py"},
            "Bash": {"command": f"pytest -q tests/test_{i}.py"},
            "Grep": {"pattern": f"def .*_{i}"},
            "Edit": {"file_path": f"src/module_{i}.py", "old_string": "x", "new_string": "y"},
            "Glob": {"pattern": "src/**/*.py"},
        }[tool]
        size = {"Read": 150, "Bash": 60, "Grep": 40, "Edit": 8, "Glob": 30}[tool]
        result = code(size) if tool == "Read" else "\n".join(prose(12) for _ in range(size // 4 + 1))
        actions.append({"client": tool, "arguments": args, "result": result})
        user = f"Step {i + 1}: " + prose(rng.randint(10, 30))
    steps.append({"user": user, "actions": actions, "answer": prose(rng.randint(30, 90))})
write(
    "agent",
    {
        "name": "agent",
        "front": "messages",
        "description": "an agent like Claude Code: 40 turns, about 60k "
        "tokens of history, 15 client tools plus MCP tools, 5 discoveries (and one found tool used again)",
        "system": prose(2800),
        "client_tools": tools,
        "steps": steps,
    },
)

# 3. a Codex-like Responses session: 20 turns, shell and apply_patch, 3 discoveries
tools = [
    client_tool("shell", 400, ["command", "workdir", "timeout_ms"]),
    client_tool("apply_patch", 500, ["input"]),
    client_tool("update_plan", 150, ["plan", "explanation"]),
    client_tool("view_image", 40, ["path"]),
]
mcp_at = {4: "latest", 9: "vulns", 15: "deps"}
steps = []
for i in range(20):
    if i in mcp_at:
        actions = [mcp(mcp_at[i])]
        user = (
            f"Task {i + 1}: "
            + {
                "latest": "what is the newest react release? pin it in package.json",
                "vulns": "audit lodash for known vulnerabilities",
                "deps": "which dependencies does express pull in?",
            }[mcp_at[i]]
        )
    else:
        tool = ["shell", "shell", "apply_patch", "update_plan"][i % 4]
        args = {
            "shell": {"command": ["bash", "-lc", f"rg -n 'fn_{i}' src"]},
            "apply_patch": {"input": code(6)},
            "update_plan": {"plan": [{"step": prose(6), "status": "in_progress"}]},
        }[tool]
        result = code(70) if tool == "shell" else "Success. Updated the following files:\nM src/lib.rs"
        actions = [{"client": tool, "arguments": args, "result": result}]
        user = f"Task {i + 1}: " + prose(rng.randint(10, 25))
    steps.append({"user": user, "actions": actions, "answer": prose(rng.randint(20, 60))})
write(
    "codex",
    {
        "name": "codex",
        "front": "responses",
        "description": "a Codex-like Responses session: 20 turns, "
        "shell and apply_patch, the client resending its whole input (store: false), 3 discoveries",
        "system": prose(2300),
        "client_tools": tools,
        "steps": steps,
    },
)

# The chat app on the bundled demo's catalog (examples/servers, 39 tools): the same turns, asking for demo tools.
DEMO_TURNS = {  # the data's tool -> the turn's text, the demo tool, the search, its arguments, what its result says
    "yahoo-finance/get_current_stock_price": (
        "What is NVIDIA's stock price right now?",
        "finance/get_stock_quote",
        "stock quote price",
        {"symbol": "NVDA"},
        '"symbol":"NVDA"',
    ),
    "npm-sentinel-mcp/npmLatest": (
        "What's the weather in Paris right now?",
        "weather/get_current_weather",
        "current weather city",
        {"city": "Paris"},
        "Paris",
    ),
    "npm-sentinel-mcp/npmVulnerabilities": (
        "Note that NVIDIA closed higher today.",
        "notes/create_note",
        "create a note",
        {"title": "NVDA", "body": "Closed higher today."},
        "NVDA",
    ),
    "yahoo-finance/get_news": (
        "Put a 30-minute NVIDIA review in my work calendar tomorrow at 10.",
        "calendar/create_event",
        "create calendar event",
        {"calendar": "work", "title": "NVDA review", "start": "2026-12-01T10:00", "duration_minutes": 30},
        "NVDA review",
    ),
}
demo = json.loads((OUT / "chat_app.json").read_text())
for step in demo["steps"]:
    for action in step["actions"]:
        user, tool, query, arguments, expect = DEMO_TURNS[action["mcp"]]
        step["user"] = step["user"].split(": ", 1)[0] + ": " + user
        action.update(mcp=tool, query=query, arguments=arguments, expect=expect)
demo.update(name="chat_app_demo", description=demo["description"] + ", on the bundled demo's 39 tools")
write("chat_app_demo", demo)
