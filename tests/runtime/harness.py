"""In-process sessions for runtime tests: the real AgentSession, a faux model, a recording UI."""

from __future__ import annotations

import json
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from caddie.ai.messages import TextContent, UserMessage
from caddie.ai.model import Context
from caddie.ai.providers.faux import FauxProvider, faux_model
from caddie.config.paths import agent_dir
from caddie.extensions.api import EventBus, ExtensionAPI, UnavailableUI
from caddie.extensions.runner import Extension
from caddie.runtime.factory import SessionRequest, open_session
from caddie.runtime.session import AgentSession
from caddie.runtime.session_events import SessionEvent


@dataclass
class RecordingUI(UnavailableUI):
    """An ExtensionUI that records what it is told and answers dialogs from a script."""

    notices: list[tuple[str, str]] = field(default_factory=list)
    statuses: dict[str, str] = field(default_factory=dict)
    widgets: dict[str, tuple[list[str], str]] = field(default_factory=dict)
    answers: list[Any] = field(default_factory=list)
    asked: list[tuple[str, str]] = field(default_factory=list)
    editor_text: str = ""
    title: str = ""

    def notify(self, message: str, level: str = "info") -> None:
        self.notices.append((message, level))

    def set_status(self, key: str, text: str | None) -> None:
        if text is None:
            self.statuses.pop(key, None)
        else:
            self.statuses[key] = text

    def set_widget(self, key: str, lines: Sequence[str] | Any, placement: str = "aboveEditor") -> None:
        if callable(lines):
            return
        if lines is None:
            self.widgets.pop(key, None)
        else:
            self.widgets[key] = (list(lines), placement)

    def set_title(self, title: str) -> None:
        self.title = title

    def set_editor_text(self, text: str) -> None:
        self.editor_text = text

    def get_editor_text(self) -> str:
        return self.editor_text

    def set_working_message(self, message: str | None) -> None:
        pass

    def _answer(self, kind: str, title: str) -> Any:
        self.asked.append((kind, title))
        return self.answers.pop(0) if self.answers else None

    async def confirm(
        self, title: str, message: str, timeout: float | None = None, *, signal: Any = None
    ) -> bool:
        return bool(self._answer("confirm", title))

    async def select(
        self, title: str, options: Sequence[str], timeout: float | None = None, *, signal: Any = None
    ) -> str | None:
        answer: str | None = self._answer("select", title)
        return answer

    async def input(
        self, title: str, placeholder: str | None = None, timeout: float | None = None, *, signal: Any = None
    ) -> str | None:
        answer: str | None = self._answer("input", title)
        return answer

    async def editor(self, title: str, prefill: str | None = None, *, signal: Any = None) -> str | None:
        answer: str | None = self._answer("editor", title)
        return answer


def inline_extension(register: Callable[[ExtensionAPI], Any], name: str = "inline") -> Extension:
    """An extension built from a function, as if loaded from a file."""
    extension = Extension(f"<{name}>", name)
    extension.api = ExtensionAPI(extension, EventBus())
    register(extension.api)
    return extension


@dataclass
class Run:
    session: AgentSession
    faux: FauxProvider
    ui: RecordingUI
    events: list[SessionEvent]

    @property
    def requests(self) -> list[Context]:
        return self.faux.requests

    def request_texts(self, index: int = -1) -> list[str]:
        """The user-side texts of one request, in order."""
        out = []
        for m in self.faux.requests[index].messages:
            if isinstance(m, UserMessage):
                content = m.content
                out.append(
                    content
                    if isinstance(content, str)
                    else "\n".join(b.text for b in content if isinstance(b, TextContent))
                )
        return out

    def types(self) -> list[str]:
        return [e.type for e in self.events]


async def start_session(
    cwd: Path,
    *,
    extensions: Sequence[Extension] = (),
    extension_paths: Sequence[str] = (),
    mode: str = "tui",
    reasoning: bool = True,
    session: str = "memory",
    session_file: str | None = None,
    flags: dict[str, str | bool] | None = None,
    no_extensions: bool = True,
    tools: list[str] | None = None,
    bundled: bool = False,
    settings: dict[str, Any] | None = None,
    exclude_tools: list[str] | None = None,
    trust: bool | None = None,
) -> Run:
    """A started session on a faux model; the bundled extensions stay off unless ``bundled``."""
    data = dict(settings or {})
    if not bundled:
        data.setdefault("disabledExtensions", ["mulligan", "goal", "mcp"])
    path = agent_dir() / "settings.json"
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps(data))
    faux = FauxProvider(models=[faux_model(reasoning=reasoning)])
    ui = RecordingUI()
    build = await open_session(
        SessionRequest(
            cwd=str(cwd),
            mode=mode,  # type: ignore[arg-type]
            model="faux/faux-1",
            session=session,  # type: ignore[arg-type]
            session_file=session_file,
            extension_paths=list(extension_paths),
            no_extensions=no_extensions,
            ui=ui,
            stream_fn=faux.stream,
            inline_extensions=list(extensions),
            flags=flags or {},
            tools=tools,
            exclude_tools=exclude_tools or [],
            trust=trust,
        )
    )
    build.session.core.agent.state.model = faux_model(
        reasoning=reasoning
    )  # the registry's faux does not reason
    events: list[SessionEvent] = []
    build.session.subscribe(events.append)
    await build.session.start()
    return Run(build.session, faux, ui, events)
