"""Load and validate the CapTrack taxonomy (taxonomy/captrack.yaml): groups, capabilities, members."""

from __future__ import annotations

import functools
from collections.abc import Iterator, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import yaml

from captrack.bounded import load_yaml, read_text
from captrack.errors import InputError, UnknownNameError
from captrack.metrics.registry import DIRECTIONS, get_metric
from captrack.paths import taxonomy_path

__all__ = [
    "CAPABILITY_KEYS",
    "GROUP_KEYS",
    "Capability",
    "Group",
    "Member",
    "Taxonomy",
    "load_taxonomy",
    "merge_taxonomy",
]

GROUP_KEYS: tuple[str, ...] = ("CAN", "WILL", "HOW")
CAPABILITY_KEYS: tuple[str, ...] = (
    "C1", "C2", "C3", "C4", "C5a", "C5b", "C5c",
    "W1", "W2", "W3a", "W3b",
    "H1", "H2", "H3", "H4", "H5", "H6",
)


@dataclass(frozen=True)
class Member:
    """One (task, metric, filter) scored per sample that counts towards a capability."""

    task: str
    metric: str
    direction: str
    capability: str
    group: str
    filter: str = "none"
    facet: str = ""
    reference_column: str = ""


@dataclass(frozen=True)
class Capability:
    """One of CapTrack's 17 capabilities, with its members and optional facets."""

    key: str
    name: str
    group: str
    description: str
    members: tuple[Member, ...]
    facets: Mapping[str, str] = field(default_factory=dict)  # facet key -> published column

    @property
    def tag(self) -> str:
        """The lm-eval tag selecting this capability's tasks (outside the captrack_* glob)."""
        return f"captrack-{self.key.lower()}"


@dataclass(frozen=True)
class Group:
    """CAN, WILL or HOW."""

    key: str
    name: str
    description: str
    capabilities: tuple[Capability, ...]

    @property
    def tag(self) -> str:
        """The lm-eval tag selecting this group's tasks."""
        return f"captrack-{self.key.lower()}"


@dataclass(frozen=True)
class Taxonomy:
    """The whole taxonomy with lookups by task, metric and capability."""

    version: int
    groups: tuple[Group, ...]
    source: Path
    shared_items: tuple[tuple[str, ...], ...] = ()  # tasks whose items are forms of the same source items (doc `id`)

    def shares_items(self, task: str) -> bool:
        """Whether `task`'s items are forms of source items another task also asks (taxonomy key shared_items)."""
        return any(task in tasks for tasks in self.shared_items)

    @property
    def capabilities(self) -> tuple[Capability, ...]:
        """All capabilities in taxonomy order (C1 ... H6)."""
        return tuple(c for g in self.groups for c in g.capabilities)

    @property
    def members(self) -> tuple[Member, ...]:
        """All members of all capabilities."""
        return tuple(m for c in self.capabilities for m in c.members)

    @property
    def tasks(self) -> tuple[str, ...]:
        """Every task named in the taxonomy, sorted."""
        return tuple(sorted({m.task for m in self.members}))

    def capability(self, key: str) -> Capability:
        """Look a capability up by key (``C1`` ... ``H6``, case-insensitive)."""
        for cap in self.capabilities:
            if cap.key.lower() == key.lower():
                return cap
        raise UnknownNameError("capability", key, [c.key for c in self.capabilities])

    def members_of(self, task: str, metric: str | None = None) -> list[Member]:
        """Members for a task (and metric); an unknown task or metric raises with close matches."""
        found = [m for m in self.members if m.task == task]
        if not found:
            raise UnknownNameError("task", task, self.tasks)
        if metric is None:
            return found
        of_metric = [m for m in found if m.metric == metric]
        if not of_metric:
            raise UnknownNameError(f"metric of task {task!r}", metric, [m.metric for m in found])
        return of_metric

    def tags_for(self, task: str) -> list[str]:
        """The lm-eval tags a task YAML must carry: ``captrack``, ``captrack-probes`` for the built-in
        suite (it needs no data), its groups and capabilities."""
        members = self.members_of(task)
        groups = sorted({m.group for m in members}, key=GROUP_KEYS.index)
        caps = sorted({m.capability for m in members}, key=CAPABILITY_KEYS.index)
        suite = ["captrack-probes"] if task.startswith("captrack_probe_") else []
        return ["captrack", *suite, *(f"captrack-{g.lower()}" for g in groups)] + [
            f"captrack-{c.lower()}" for c in caps
        ]

    def __iter__(self) -> Iterator[Capability]:
        return iter(self.capabilities)


@functools.cache
def _load_cached(path: str) -> Taxonomy:
    return _parse(Path(path))


def load_taxonomy(path: str | Path | None = None) -> Taxonomy:
    """Load and validate a taxonomy file (default: captrack's own).

    Raises:
        InputError: the file is malformed (the message names the capability and field).
        UnknownNameError: a member names a metric that is not declared.
    """
    return _load_cached(str(Path(path) if path else taxonomy_path()))


def merge_taxonomy(taxonomy: Taxonomy, extra: str | Path) -> Taxonomy:
    """`taxonomy` with the members of `extra` added (same schema; only members of existing capabilities).

    An extra file lists your own lm-eval tasks under CapTrack's capabilities, e.g.
    ``groups: {CAN: {capabilities: {C1: {members: [{task: mmlu, metric: acc, direction: higher}]}}}}``.

    Raises:
        InputError: the file is malformed, names a group or capability CapTrack does not have, or
            repeats a member (the message names the file, capability and member).
    """
    path = Path(extra)
    try:
        raw = load_yaml(read_text(path))
    except (OSError, yaml.YAMLError) as exc:
        raise InputError(f"{path}: cannot read the extra taxonomy: {exc}") from exc
    if not isinstance(raw, dict) or not isinstance(raw.get("groups"), dict):
        raise InputError(f"{path}: expected 'groups: {{CAN|WILL|HOW: {{capabilities: {{C1: {{members: [...]}}}}}}}}'")
    added: dict[str, list[Any]] = {}
    for group_key, body in raw["groups"].items():
        if group_key not in GROUP_KEYS:
            raise UnknownNameError(f"group in {path}", str(group_key), GROUP_KEYS)
        if not isinstance(body, dict) or not isinstance(body.get("capabilities"), dict):
            raise InputError(f"{path}: group {group_key} needs a 'capabilities' mapping of C1..H6 to members")
        for cap_key, cap_body in body["capabilities"].items():
            cap = taxonomy.capability(str(cap_key))
            if cap.group != group_key:
                raise InputError(f"{path}: capability {cap.key} belongs to group {cap.group}, not {group_key}")
            members = (cap_body or {}).get("members") if isinstance(cap_body, dict) else None
            if not isinstance(members, list) or not members:
                raise InputError(f"{path}: capability {cap.key} needs a non-empty 'members' list")
            added.setdefault(cap.key, []).extend(members)
    groups = tuple(
        Group(g.key, g.name, g.description, tuple(_with_members(path, c, added.get(c.key, [])) for c in g.capabilities))
        for g in taxonomy.groups
    )
    _check_unique(path, [m for g in groups for c in g.capabilities for m in c.members])
    return Taxonomy(version=taxonomy.version, groups=groups, source=path, shared_items=taxonomy.shared_items)


def _with_members(path: Path, cap: Capability, raw_members: list[Any]) -> Capability:
    where = f"{path}: capability {cap.key}"
    extra = tuple(_parse_member(where, cap.group, cap.key, cap.facets, m) for m in raw_members)
    return Capability(cap.key, cap.name, cap.group, cap.description, cap.members + extra, cap.facets)


def _parse(path: Path) -> Taxonomy:
    try:
        raw = load_yaml(read_text(path))
    except (OSError, yaml.YAMLError) as exc:
        raise InputError(f"{path}: cannot read the taxonomy: {exc}") from exc
    if not isinstance(raw, dict) or not isinstance(raw.get("groups"), dict):
        raise InputError(f"{path}: expected a mapping with 'version' and 'groups'")
    groups = tuple(_parse_group(path, key, body) for key, body in raw["groups"].items())
    found = [g.key for g in groups]
    if found != list(GROUP_KEYS):
        raise InputError(f"{path}: groups must be {list(GROUP_KEYS)} in that order, got {found}")
    keys = [c.key for g in groups for c in g.capabilities]
    if keys != list(CAPABILITY_KEYS):
        missing = sorted(set(CAPABILITY_KEYS) - set(keys))
        extra = sorted(set(keys) - set(CAPABILITY_KEYS))
        raise InputError(
            f"{path}: capabilities must be CapTrack's 17 in order; missing {missing}, unexpected {extra}"
        )
    _check_unique(path, [m for g in groups for c in g.capabilities for m in c.members])
    return Taxonomy(version=int(raw.get("version", 1)), groups=groups, source=path,
                    shared_items=_parse_shared(path, raw.get("shared_items", {})))


def _parse_shared(path: Path, raw: Any) -> tuple[tuple[str, ...], ...]:
    """shared_items: {source name: [task, ...]}: tasks whose docs' `id` names the same source items."""
    if not isinstance(raw, dict) or not all(isinstance(v, list) and all(isinstance(t, str) for t in v) for v in raw.values()):
        raise InputError(f"{path}: shared_items must map a source name to a list of task names")
    return tuple(tuple(tasks) for tasks in raw.values())


def _parse_group(path: Path, key: str, body: Any) -> Group:
    if not isinstance(body, dict) or not isinstance(body.get("capabilities"), dict):
        raise InputError(f"{path}: group {key!r} needs 'name' and a 'capabilities' mapping")
    caps = tuple(
        _parse_capability(path, key, cap_key, cap_body)
        for cap_key, cap_body in body["capabilities"].items()
    )
    return Group(key, str(body.get("name", key)), str(body.get("description", "")), caps)


def _parse_capability(path: Path, group: str, key: str, body: Any) -> Capability:
    where = f"{path}: capability {key}"
    if not isinstance(body, dict) or not body.get("members"):
        raise InputError(f"{where}: needs 'name' and a non-empty 'members' list")
    facets = {
        str(name): str((spec or {}).get("published_column", name))
        for name, spec in (body.get("facets") or {}).items()
    }
    if not facets:
        facets = {"": str(body.get("published_column", f"{key} {body.get('name', '')}"))}
    members = tuple(_parse_member(where, group, key, facets, m) for m in body["members"])
    return Capability(
        key=key,
        name=str(body.get("name", key)),
        group=group,
        description=str(body.get("description", "")),
        members=members,
        facets=facets,
    )


def _parse_member(
    where: str, group: str, capability: str, facets: Mapping[str, str], raw: Any
) -> Member:
    if not isinstance(raw, dict) or not {"task", "metric"} <= set(raw):
        raise InputError(f"{where}: each member needs task and metric; got {raw!r}")
    spec = get_metric(str(raw["metric"]))
    # The direction is the MetricSpec's; a member may restate it, and then it must agree.
    direction = str(raw.get("direction", spec.direction))
    if direction not in DIRECTIONS:
        raise InputError(f"{where}: member {raw['task']}/{raw['metric']}: direction must be one of {DIRECTIONS}")
    if spec.direction != direction:
        raise InputError(
            f"{where}: member {raw['task']}/{raw['metric']} says direction {direction!r} but metric "
            f"{spec.name!r} is declared {spec.direction!r} (captrack/metrics/catalog.py)"
        )
    facet = str(raw.get("facet", ""))
    if facet not in facets:
        raise UnknownNameError(f"facet of {where}", facet, facets)
    return Member(
        task=str(raw["task"]),
        metric=spec.name,
        direction=direction,
        capability=capability,
        group=group,
        filter=str(raw.get("filter", "none")),
        facet=facet,
        reference_column=str(raw.get("reference_column", "")),
    )


def _check_unique(path: Path, members: list[Member]) -> None:
    seen: set[tuple[str, str, str, str]] = set()
    for m in members:
        key = (m.task, m.metric, m.filter, m.capability)
        if key in seen:
            raise InputError(f"{path}: {m.task}/{m.metric} is listed twice under {m.capability}")
        seen.add(key)
