"""``/login llama.cpp`` and ``/llama``: Pi's llama.cpp router, from the interactive UI.

``/login llama.cpp`` asks for the router's URL (default ``LLAMA_BASE_URL`` or ``http://127.0.0.1:8080``) and
an optional key, checks that a router answers there, and stores both in auth.json the way Pi does
(``{"type": "api_key", "key"?: …, "env": {"LLAMA_BASE_URL": …}}``). ``/llama`` lists the router's models —
loaded ones first, each with its state and context size — and acts on the one picked: an unloaded model is
loaded (asking whether to unload the others first), a loaded one unloaded (after a confirmation), and
"Download model…" searches Hugging Face for GGUF repositories (or takes ``owner/repository[:quant]``), asks
for a quantization and has the router download it. Loads and downloads show their progress; Esc offers to
stop them. A router that does not answer gives Retry / Close. Nothing here blocks the screen: every request
runs in a worker thread (``caddie.models.llama_router``).
"""

from __future__ import annotations

import asyncio
import contextlib
import os
import re
import threading
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any, ClassVar, Protocol, TypeVar

from rich.text import Text
from textual.binding import Binding, BindingType
from textual.containers import Vertical
from textual.screen import ModalScreen
from textual.widgets import Static

from caddie.ai.catalogue import LLAMA_ROUTER
from caddie.ai.model import Model
from caddie.ai.providers.request import NO_KEY_PLACEHOLDER
from caddie.errors import ConfigurationError
from caddie.models import ModelRegistry
from caddie.models.llama_router import (
    DEFAULT_LLAMA_SERVER_URL,
    HuggingFaceClient,
    LlamaRouterClient,
    LlamaRouterError,
    Quantization,
    format_bytes,
    normalize_server_url,
    parse_download_progress,
)
from caddie.models.local_servers import ServerModel
from caddie.models.registry import llama_server
from caddie.modes.interactive.dialogs import Choice, ConfirmScreen, InputScreen, ListScreen, SelectScreen
from caddie.runtime.session import AgentSession

__all__ = ["ProgressScreen", "run_llama", "run_llama_login"]

T = TypeVar("T")
DOWNLOAD = "\0download"
_EXACT_REPO = re.compile(r"^[^/\s]+/[^:\s]+(?::[^\s:]+)?$")


class LlamaHost(Protocol):
    session: AgentSession | None
    registry: ModelRegistry | None

    async def ask(self, screen: ModalScreen[Any], timeout: float | None, default: Any) -> Any: ...

    def show_info(self, content: Any, level: str = "info") -> None: ...

    def show_error(self, message: str) -> None: ...


# --------------------------------------------------------------------------------------------------
# /login llama.cpp


async def run_llama_login(host: LlamaHost) -> None:
    from caddie.modes.interactive.dialogs import SecretInputScreen

    registry = host.registry
    if registry is None:
        return
    default = os.environ.get("LLAMA_BASE_URL") or DEFAULT_LLAMA_SERVER_URL
    entered = await host.ask(InputScreen("llama.cpp server URL", default), None, None)
    if entered is None:
        host.show_info("Login cancelled; nothing stored.")
        return
    try:
        url = normalize_server_url(str(entered).strip() or default)
    except ConfigurationError as e:
        host.show_error(f"{e}. Nothing stored.")
        return
    key = await host.ask(SecretInputScreen("API key (optional)", "enter to skip"), None, None)
    if key is None:
        host.show_info("Login cancelled; nothing stored.")
        return
    client = LlamaRouterClient(url, str(key).strip() or None)
    try:
        models = await asyncio.to_thread(client.list)
    except LlamaRouterError as e:
        host.show_error(f"{e} Nothing stored; check the URL and that llama-server runs in router mode.")
        return
    try:
        registry.auth.set_credential(LLAMA_ROUTER, client.api_key, {"LLAMA_BASE_URL": url})
    except OSError as e:
        host.show_error(f"Cannot store the login in {registry.auth.path}: {e.strerror or e}.")
        return
    registry.refresh()
    await asyncio.to_thread(registry.discover_local)
    loaded = [m for m in models if m.status in ("loaded", "sleeping")]
    host.show_info(
        Text(
            f"Stored the llama.cpp router {url} in {registry.auth.path}. {_count(len(models), 'model')}, "
            f"{len(loaded)} loaded. /llama loads one; /model picks a loaded one."
        )
    )
    session = host.session
    if session is not None and session.model is None and loaded:
        model = registry.resolve(f"{LLAMA_ROUTER}/{loaded[0].id}")
        await session.set_model(model)
        host.show_info(Text(f"Model: {model.ref}"))


def _count(n: int, word: str) -> str:
    return f"{n} {word}" if n == 1 else f"{n} {word}s"


# --------------------------------------------------------------------------------------------------
# Progress


@dataclass
class Progress:
    """What a running load or download reports (written by its worker thread, read by the screen)."""

    title: str
    model: str
    message: str
    ratio: float | None = None
    detail: str | None = None
    stop: threading.Event = field(default_factory=threading.Event)


class ProgressScreen(ModalScreen[str | None]):
    """A running load or download: the model, a message, a bar when the ratio is known; Esc → ``"stop"``."""

    DEFAULT_CSS = """
    ProgressScreen { align: center middle; }
    ProgressScreen > #dialog { width: 70; height: auto; border: round $accent; background: $surface; padding: 0 1; }
    ProgressScreen #title { text-style: bold; }
    ProgressScreen #hint { color: $text-muted; }
    """
    BINDINGS: ClassVar[list[BindingType]] = [Binding("escape", "stop", show=False)]

    def __init__(self, progress: Progress) -> None:
        super().__init__()
        self.progress = progress

    def compose(self) -> Any:
        with Vertical(id="dialog"):
            yield Static(Text(self.progress.title), id="title")
            yield Static(id="body")
            yield Static(Text("esc stop"), id="hint")

    def on_mount(self) -> None:
        self._draw()
        self.set_interval(0.1, self._draw)

    def _draw(self) -> None:
        p = self.progress
        lines = [Text(p.model), Text(""), Text(p.message)]
        if p.ratio is not None:
            filled = round(max(0.0, min(1.0, p.ratio)) * 40)
            lines.append(Text(f"{'█' * filled}{'─' * (40 - filled)} {round(p.ratio * 100)}%"))
        if p.detail:
            lines.append(Text(p.detail, style="dim"))
        self.query_one("#body", Static).update(Text("\n").join(lines))

    def action_stop(self) -> None:
        self.dismiss("stop")


async def _with_progress(
    host: LlamaHost,
    progress: Progress,
    work: Callable[[Progress], T],
    stop_title: str,
    cancel: Callable[[], None],
) -> tuple[bool, T | None]:
    """Run ``work`` in a thread behind a ``ProgressScreen``. Esc asks ``stop_title``; yes → ``cancel()`` and
    ``progress.stop`` set. Returns (stopped, work's result); ``work``'s exception propagates."""
    task = asyncio.ensure_future(asyncio.to_thread(work, progress))
    while True:
        screen = ProgressScreen(progress)
        asking = asyncio.ensure_future(host.ask(screen, None, None))
        done, _ = await asyncio.wait({task, asking}, return_when=asyncio.FIRST_COMPLETED)
        if task in done:
            if not asking.done():
                screen.dismiss(None)
                await asking
            return False, task.result()
        if asking.result() != "stop":
            continue
        if await host.ask(ConfirmScreen(stop_title, progress.model), None, False) and not task.done():
            progress.stop.set()
            try:
                await asyncio.to_thread(cancel)
            finally:
                with contextlib.suppress(Exception):  # the stop is what the user sees, not its fallout
                    await task
            return True, None
        if task.done():
            return False, task.result()


# --------------------------------------------------------------------------------------------------
# /llama


def _context_label(model: ServerModel) -> str | None:
    window = model.context_window
    if not window:
        return None
    return f"{round(window / 1000)}k" if window >= 1000 else str(window)


def describe(model: ServerModel) -> str:
    """``loaded · 8k context``, ``unloaded``, ``loading`` (Pi's descriptions)."""
    loaded = model.status in ("loaded", "sleeping")
    parts = ["loaded"] if loaded else ([model.status] if model.status and model.status != "unloaded" else [])
    if model.failed:
        parts.append("failed to load")
    context = _context_label(model) if loaded else None
    if context:
        parts.append(f"{context} context")
    return " · ".join(parts)


def model_choices(models: list[ServerModel]) -> list[Choice]:
    """Loaded models first, then by id; "Download model…" last."""
    ordered = sorted(models, key=lambda m: (m.status != "loaded", m.id))
    choices = []
    for m in ordered:
        row = Text(m.id)
        description = describe(m)
        if description:
            row.append(f"  {description}", style="dim")
        choices.append(Choice(m.id, row, m.id))
    row = Text("Download model…")
    row.append("  Hugging Face owner/repository[:quant]", style="dim")
    choices.append(Choice(DOWNLOAD, row, "download"))
    return choices


async def run_llama(host: LlamaHost) -> None:
    registry = host.registry
    if registry is None:
        return
    url = llama_server(registry)
    if url is None:
        host.show_info(f"Configure llama.cpp with /login {LLAMA_ROUTER}", "warning")
        return
    key = registry.api_key_for(
        Model(id="", name="", api="openai-completions", provider=LLAMA_ROUTER, base_url=url)
    )
    try:
        client = LlamaRouterClient(url, key if key and key != NO_KEY_PLACEHOLDER else None)
    except ConfigurationError as e:
        host.show_error(f"{e} (LLAMA_BASE_URL or /login {LLAMA_ROUTER}).")
        return
    dialog = _RouterModels(host, registry, client)
    await dialog.run()


class _RouterModels:
    """One ``/llama`` session: the model list, and each action picked from it."""

    def __init__(self, host: LlamaHost, registry: ModelRegistry, client: LlamaRouterClient) -> None:
        self.host = host
        self.registry = registry
        self.client = client

    async def catalog(self) -> list[ServerModel] | None:
        """The router's models (and the registry told); on failure Retry / Close (None)."""
        while True:
            try:
                models = await asyncio.to_thread(self.client.list)
            except LlamaRouterError as e:
                choice = await self.host.ask(
                    SelectScreen(f"llama.cpp unavailable\n{self.client.server}\n\n{e}", ["Retry", "Close"]),
                    None,
                    None,
                )
                if choice != "Retry":
                    return None
                continue
            await asyncio.to_thread(self.registry.discover_local)
            return models

    async def run(self) -> None:
        models = await self.catalog()
        while models is not None:
            picked = await self.host.ask(
                ListScreen(
                    "llama.cpp models",
                    model_choices(models),
                    message=self.client.server,
                    filter_placeholder="type to filter" if len(models) > 8 else None,
                    hint="enter load/unload/download · esc close",
                ),
                None,
                None,
            )
            if picked is None:
                return
            try:
                if picked == DOWNLOAD:
                    await self.download()
                else:
                    model = next((m for m in models if m.id == picked), None)
                    if model is not None:
                        await self.act_on(model, models)
            except LlamaRouterError as e:
                self.host.show_error(str(e))
            models = await self.catalog()

    async def act_on(self, model: ServerModel, models: list[ServerModel]) -> None:
        if model.status in ("loaded", "sleeping"):
            if await self.host.ask(ConfirmScreen("Unload model?", model.id), None, False):
                await asyncio.to_thread(self.client.unload, model.id)
                await asyncio.to_thread(self.client.wait_unloaded, model.id)
                self.host.show_info(f"Unloaded {model.id}")
        elif model.status == "unloaded":
            await self.load(model, models)
        else:
            self.host.show_info(f"{model.id} is {model.status}", "warning")

    async def load(self, target: ServerModel, models: list[ServerModel]) -> None:
        others = [m for m in models if m.id != target.id and m.status in ("loaded", "sleeping")]
        replace = False
        if others:
            title = f"{len(others)} model{' is' if len(others) == 1 else 's are'} loaded"
            choice = await self.host.ask(
                SelectScreen(title, ["Unload all and load", "Keep loaded and load", "Cancel"]), None, None
            )
            if choice not in ("Unload all and load", "Keep loaded and load"):
                return
            replace = choice == "Unload all and load"
        if replace:
            for other in others:
                await asyncio.to_thread(self.client.unload, other.id)
                await asyncio.to_thread(self.client.wait_unloaded, other.id)

        def work(progress: Progress) -> ServerModel | None:
            self.client.load(target.id)
            progress.message = "Loading model"
            return self.client.wait_loaded(target.id, progress.stop.is_set)

        progress = Progress("Loading model", target.id, "Starting…")
        try:
            stopped, loaded = await _with_progress(
                self.host, progress, work, "Stop loading?", lambda: self.client.unload(target.id)
            )
        except LlamaRouterError:
            if replace:
                await self.restore(others)
            raise
        if stopped:
            if replace:
                await self.restore(others)
            return
        self.host.show_info(f"Loaded {target.id}" if loaded is not None else f"Load started for {target.id}")

    async def restore(self, models: list[ServerModel]) -> None:
        self.host.show_info("Restoring previously loaded models")
        for model in models:
            with contextlib.suppress(LlamaRouterError):
                await asyncio.to_thread(self.client.load, model.id)
                await asyncio.to_thread(self.client.wait_loaded, model.id, lambda: False)

    async def download(self) -> None:
        query = await self.host.ask(
            InputScreen("Download model", "Model name or owner/repository[:quant]"), None, None
        )
        query = str(query or "").strip()
        if not query:
            return
        hf = HuggingFaceClient.from_env()
        if _EXACT_REPO.match(query):
            selected = query
        else:
            if len(query) < 2:
                self.host.show_info("Type at least 2 characters", "warning")
                return
            results = await asyncio.to_thread(hf.search, query)
            if not results:
                self.host.show_info("No GGUF models found", "warning")
                return
            choices = [
                Choice(r, Text(r).append(f"  {_compact(n)} downloads", style="dim"), r) for r, n in results
            ]
            picked = await self.host.ask(
                ListScreen("Download model", choices, hint="enter select · esc back"), None, None
            )
            if picked is None:
                return
            selected = str(picked)
        repository, _, quant = selected.partition(":")
        repo_id, gated, quants = await asyncio.to_thread(hf.details, repository)
        if gated:
            approval = "Manual approval is required" if gated == "manual" else "Accept the access terms"
            title = (
                f"Hugging Face access required\n{repo_id}\n\n{approval} at:\nhttps://huggingface.co/{repo_id}\n\n"
                "The llama.cpp server needs HF_TOKEN with access."
            )
            if await self.host.ask(SelectScreen(title, ["Continue", "Back"]), None, None) != "Continue":
                return
        if not quant and quants:
            chosen = await self.host.ask(
                ListScreen(f"Select quantization\n{repo_id}", quant_choices(quants)), None, None
            )
            if chosen is None:
                return
            quant = str(chosen)
        model = f"{repo_id}:{quant}" if quant else repo_id

        def work(progress: Progress) -> None:
            self.client.download(model)
            progress.message = "Downloading model"
            seen, polls = False, 0
            while not progress.stop.is_set():
                entry, raw = self.client.download_state(model)
                polls += 1
                if entry is not None and entry.status == "downloading":
                    seen = True
                    parsed = parse_download_progress(raw)
                    if parsed is not None:
                        progress.ratio, progress.detail = parsed
                elif entry is not None and (seen or polls >= 2):
                    self.client.list(reload=True)
                    return
                progress.stop.wait(0.5)

        progress = Progress("Downloading model", model, "Starting…")
        stopped, _ = await _with_progress(
            self.host, progress, work, "Stop download?", lambda: self.client.unload(model)
        )
        if not stopped:
            self.host.show_info(f"Downloaded {model}")


def quant_choices(quants: list[Quantization]) -> list[Choice]:
    out = []
    for q in quants:
        details = [
            format_bytes(q.size) if q.size is not None else None,
            "recommended" if q.name == "Q4_K_M" else None,
        ]
        extra = " · ".join(d for d in details if d)
        out.append(Choice(q.name, f"{q.name} · {extra}" if extra else q.name, q.name))
    return out


def _compact(value: int) -> str:
    if value >= 1_000_000:
        return f"{value / 1_000_000:.{0 if value >= 10_000_000 else 1}f}M"
    if value >= 1_000:
        return f"{value / 1_000:.{0 if value >= 100_000 else 1}f}k"
    return str(value)
