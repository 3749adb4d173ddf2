"""H3 probe: pick the right tool among two to four generated ones and call it with the right arguments."""

from __future__ import annotations

import json
import random
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from captrack.probes import generator
from captrack.probes.world import FIRST_NAMES, TOWNS, plan

__all__ = ["TOOLS", "ToolDraw", "request_for", "tool_draws", "tool_prompt"]

Call = tuple[str, dict[str, Any]]

# name -> (description, {parameter: type})
TOOLS: dict[str, tuple[str, dict[str, str]]] = {
    "get_weather": ("Current weather in a town.", {"town": "string", "unit": "string: celsius or fahrenheit"}),
    "convert_currency": ("Convert an amount of money.", {"amount": "number", "source": "string", "target": "string"}),
    "set_alarm": ("Set an alarm clock.", {"hour": "integer 0-23", "minute": "integer 0-59"}),
    "send_message": ("Send a text message to a contact.", {"contact": "string", "text": "string"}),
    "book_table": ("Book a restaurant table.", {"town": "string", "people": "integer", "day": "string"}),
    "play_song": ("Play a song by name.", {"title": "string"}),
    "add_reminder": ("Add a reminder to the calendar.", {"task": "string", "day": "string"}),
}
_CURRENCIES = ("EUR", "USD", "GBP", "JPY", "CHF")
_DAYS = ("Monday", "Tuesday", "Wednesday", "Thursday", "Friday", "Saturday", "Sunday")
_SONGS = ("Blue River", "Paper Moon", "Quiet Harbour", "Glass Garden")
_TASKS = ("water the plants", "call the plumber", "pay the rent", "buy bread")


def _weather(rng: random.Random) -> tuple[str, Call]:
    town, unit = rng.choice(TOWNS), rng.choice(("celsius", "fahrenheit"))
    return f"What's the weather like in {town} right now, in {unit}?", ("get_weather", {"town": town, "unit": unit})


def _currency(rng: random.Random) -> tuple[str, Call]:
    amount = rng.randint(5, 500)
    source, target = rng.sample(_CURRENCIES, 2)
    return f"How much is {amount} {source} in {target}?", ("convert_currency", {"amount": amount, "source": source, "target": target})


def _alarm(rng: random.Random) -> tuple[str, Call]:
    hour, minute = rng.randint(5, 9), rng.choice((0, 15, 30, 45))
    return f"Wake me up at {hour}:{minute:02d} tomorrow morning.", ("set_alarm", {"hour": hour, "minute": minute})


def _message(rng: random.Random) -> tuple[str, Call]:
    contact, text = rng.choice(FIRST_NAMES), rng.choice(("running late", "see you soon", "call me back"))
    return f"Text {contact} saying '{text}'.", ("send_message", {"contact": contact, "text": text})


def _table(rng: random.Random) -> tuple[str, Call]:
    town, people, day = rng.choice(TOWNS), rng.randint(2, 8), rng.choice(_DAYS)
    return f"Book a table for {people} people in {town} on {day}.", ("book_table", {"town": town, "people": people, "day": day})


def _song(rng: random.Random) -> tuple[str, Call]:
    title = rng.choice(_SONGS)
    return f"Put on the song {title}.", ("play_song", {"title": title})


def _reminder(rng: random.Random) -> tuple[str, Call]:
    task, day = rng.choice(_TASKS), rng.choice(_DAYS)
    return f"Remind me to {task} on {day}.", ("add_reminder", {"task": task, "day": day})


_REQUESTS: dict[str, Callable[[random.Random], tuple[str, Call]]] = {
    "get_weather": _weather, "convert_currency": _currency, "set_alarm": _alarm, "send_message": _message,
    "book_table": _table, "play_song": _song, "add_reminder": _reminder,
}


def _spec(name: str) -> dict[str, Any]:
    description, params = TOOLS[name]
    return {"name": name, "description": description, "parameters": params}


@dataclass(frozen=True)
class ToolDraw:
    """What item i of a seed draws: the target tool, the other offered ones, the worked example, the request."""

    target: str
    level: int
    offered: tuple[str, ...]
    others: tuple[str, ...]  # offered minus the target; the example calls others[0]
    request: str
    call: Call
    example: str
    example_call: Call


def tool_draws(seed: int, n: int | None) -> list[ToolDraw]:
    """The items' draws in generation order (the `tools` items and their forced-choice twin share them)."""
    rng = random.Random(seed)
    out = []
    for i in range(16 if n is None else n):
        target, level = plan(i, tuple(sorted(TOOLS)))
        others = rng.sample([t for t in sorted(TOOLS) if t != target], level)
        offered = [target, *others]
        rng.shuffle(offered)
        request, call = _REQUESTS[target](rng)
        example, example_call = _REQUESTS[others[0]](rng)
        out.append(ToolDraw(target, level, tuple(offered), tuple(others), request, call, example, example_call))
    return out


def request_for(tool: str, rng: random.Random) -> tuple[str, Call]:
    """A request that `tool` answers, with its argument values drawn from `rng`."""
    return _REQUESTS[tool](rng)


def tool_prompt(draw: ToolDraw, request: str) -> str:
    """The item's prompt (offered tools, the worked example) ending on `request`."""
    listing = "\n".join(json.dumps(_spec(t)) for t in draw.offered)
    example_name, example_arguments = draw.example_call
    return (
        f"You can call these tools:\n{listing}\n\nReply with one JSON object of the form "
        '{"name": <tool name>, "arguments": {<argument>: <value>}} and nothing else.\n\n'
        f"Request: {draw.example}\nAnswer: {json.dumps({'name': example_name, 'arguments': example_arguments})}\n\n"
        f"Request: {request}\nAnswer:"
    )


@generator("tools", version=1.0)
def tools(seed: int, n: int | None) -> list[dict[str, Any]]:
    """A request and two, three or four offered tools (the level), after one worked request for another tool."""
    items = []
    for i, d in enumerate(tool_draws(seed, n)):
        name, arguments = d.call
        items.append({
            "id": f"tools:{i}", "kind": d.target, "level": d.level, "prompt": tool_prompt(d, d.request),
            "call": json.dumps({"name": name, "arguments": arguments}),
        })
    return items
