"""The in-memory session tree: entries indexed by id, each linked to its parent, the leaf (where the next
entry attaches), labels, branches root → leaf, and the context built from the current branch. Saving it is
``caddie.session.store``'s part."""

from __future__ import annotations

from dataclasses import dataclass, field

from caddie.ai.messages import AssistantMessage
from caddie.session.context import (
    BranchContext,
    build_branch_context,
    context_entries_of_path,
)
from caddie.session.entries import (
    LabelEntry,
    MessageEntry,
    SessionEntry,
    SessionInfoEntry,
    new_entry_id,
)


@dataclass(slots=True)
class TreeNode:
    entry: SessionEntry
    children: list[TreeNode] = field(default_factory=list)
    label: str | None = None


class SessionTree:
    """The entries of one session as a tree, in file order, with the leaf and the labels."""

    def __init__(self, entries: list[SessionEntry] | None = None) -> None:
        self._entries: list[SessionEntry] = []
        self._by_id: dict[str, SessionEntry] = {}
        """Id → the last entry with that id (as Pi's lookup)."""
        self._pos: dict[str, int] = {}
        """Id → index in ``_entries`` of the last entry with that id."""
        self._parent_index: list[int] = []
        """Per entry: the index of its parent (always smaller than its own), -1 for a root."""
        self._labels: dict[str, str] = {}
        self._label_times: dict[str, str] = {}
        self._leaf_id: str | None = None
        self._has_assistant = False
        # The path root → leaf, kept up to date on appends (the common case) so that reading the branch on
        # every inference does not walk the whole tree; any other leaf move drops it.
        self._path_leaf: str | None = None
        self._path: list[SessionEntry] = []
        for entry in entries or ():
            self._index(entry)

    # ----------------------------------------------------------------------------------------------
    # Reading

    @property
    def leaf_id(self) -> str | None:
        return self._leaf_id

    def entries(self) -> list[SessionEntry]:
        return list(self._entries)

    def __len__(self) -> int:
        return len(self._entries)

    def get_entry(self, entry_id: str) -> SessionEntry | None:
        return self._by_id.get(entry_id)

    def leaf_entry(self) -> SessionEntry | None:
        return self._by_id.get(self._leaf_id) if self._leaf_id else None

    def get_label(self, entry_id: str) -> str | None:
        return self._labels.get(entry_id)

    def labels(self) -> dict[str, str]:
        return dict(self._labels)

    def label_times(self) -> dict[str, str]:
        """Entry id → when its current label was set (Pi's ``labelTimestamp``)."""
        return dict(self._label_times)

    def branch(self, from_id: str | None = None) -> list[SessionEntry]:
        """Entries from the root to ``from_id`` (default: the leaf), all types included."""
        start = from_id if from_id is not None else self._leaf_id
        if start is None:
            return []
        if start == self._path_leaf:
            return list(self._path)
        index = self._pos.get(start, len(self._entries) - 1)  # an unknown id: the last entry, as Pi does
        path: list[SessionEntry] = []
        while index >= 0:  # parents are always earlier: this ends
            path.append(self._entries[index])
            index = self._parent_index[index]
        path.reverse()
        if from_id is None:
            self._path_leaf, self._path = start, list(path)
        return path

    def context_entries(self) -> list[SessionEntry]:
        return context_entries_of_path(self.branch())

    def build_context(self) -> BranchContext:
        """Messages, thinking level and model for the current branch — what the agent resumes with."""
        return build_branch_context(self.branch())

    def children(self, parent_id: str | None) -> list[SessionEntry]:
        return [e for e in self._entries if e.parent_id == parent_id]

    def session_name(self) -> str | None:
        for entry in reversed(self._entries):
            if isinstance(entry, SessionInfoEntry):
                return (entry.name or "").strip() or None
        return None

    def tree(self) -> list[TreeNode]:
        """Root nodes (normally one) with children sorted oldest first; orphans become roots. Every entry is
        in it exactly once, duplicated ids included."""
        nodes = [TreeNode(e, label=self._labels.get(e.id)) for e in self._entries]
        roots: list[TreeNode] = []
        for node, parent in zip(nodes, self._parent_index, strict=True):
            (nodes[parent].children if parent >= 0 else roots).append(node)
        stack = list(roots)
        while stack:
            node = stack.pop()
            node.children.sort(key=lambda n: n.entry.timestamp)
            stack.extend(node.children)
        return roots

    # ----------------------------------------------------------------------------------------------
    # Growing the tree and moving the leaf

    def _next_id(self) -> str:
        return new_entry_id(self._by_id)

    def move_leaf(self, entry_id: str | None) -> None:
        """Point the leaf at ``entry_id`` (None: before the first entry). Durable with the next append."""
        if entry_id is not None and entry_id not in self._by_id:
            raise KeyError(f"Entry {entry_id} not found")
        self._leaf_id = entry_id
        self._path_leaf, self._path = None, []

    def _index(self, entry: SessionEntry) -> None:
        parent = self._pos.get(entry.parent_id, -1) if entry.parent_id is not None else -1
        self._parent_index.append(parent)
        self._pos[entry.id] = len(self._entries)
        self._entries.append(entry)
        self._by_id[entry.id] = entry
        if self._path_leaf is not None and entry.parent_id == self._path_leaf:
            self._path.append(entry)
            self._path_leaf = entry.id
        elif entry.parent_id is None:
            self._path, self._path_leaf = [entry], entry.id
        else:
            self._path_leaf, self._path = None, []
        self._leaf_id = entry.id
        if isinstance(entry, LabelEntry):
            if entry.label:
                self._labels[entry.target_id] = entry.label
                self._label_times[entry.target_id] = entry.timestamp
            else:
                self._labels.pop(entry.target_id, None)
                self._label_times.pop(entry.target_id, None)
        elif isinstance(entry, MessageEntry) and isinstance(entry.message, AssistantMessage):
            self._has_assistant = True
