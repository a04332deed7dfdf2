"""The arguments and options of Pi's ``ctx.ui`` and tool renderers that caddie passes as Pi does, through the
real app: the footer data (``set_footer``'s third argument), ``custom()``'s awaitable factories and overlay
options, and the render context of ``render_call`` / ``render_result``."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from tests.tui.harness import LARGE, inline_extension, make_app, ready, submit, until, widget_text


async def test_a_footer_factory_gets_pis_footer_data_and_hears_of_branch_changes(tmp_path: Path) -> None:
    (tmp_path / ".git").mkdir()
    head = tmp_path / ".git" / "HEAD"
    head.write_text("ref: refs/heads/main\n")
    heard: list[str | None] = []
    disposed: list[bool] = []

    def register(api: Any) -> None:
        async def footer(args: str, ctx: Any) -> None:
            ctx.ui.set_status("build", "green")

            def factory(tui: Any, theme: Any, data: Any) -> Any:
                def changed() -> None:
                    heard.append(data.get_git_branch())
                    tui.request_render()

                stop = data.on_branch_change(changed)

                class Footer:
                    def dispose(self) -> None:
                        stop()
                        disposed.append(True)

                    def render(self, width: int) -> list[str]:
                        statuses = ",".join(f"{k}={v}" for k, v in data.get_extension_statuses().items())
                        providers = data.get_available_provider_count()
                        return [f"on {data.get_git_branch()} · {statuses} · {providers} providers"]

                return Footer()

            ctx.ui.set_footer(None if args == "off" else factory)

        api.register_command("myfooter", handler=footer)

    app, _ = make_app(tmp_path, extensions=[inline_extension(register)])
    async with app.run_test(size=LARGE) as pilot:
        await ready(app, pilot)
        await submit(pilot, app, "/myfooter")
        await until(pilot, lambda: "on main · build=green" in widget_text(app.footer))
        first = widget_text(app.footer)
        head.write_text("abc1234def5678\n")  # a detached HEAD
        await until(pilot, lambda: "on detached" in widget_text(app.footer), timeout=5)
        await submit(pilot, app, "/myfooter off")
        await until(pilot, lambda: "on detached" not in widget_text(app.footer))
    assert heard == ["detached"]
    assert disposed == [True], "the replaced footer is disposed (its listener stopped), as in Pi"
    assert "0 providers" in first, "the test's faux provider is not a usable provider"


def test_overlay_placement_follows_pis_layout() -> None:
    from caddie.extensions.api import OverlayMargin, OverlayOptions
    from caddie.modes.interactive.overlays import overlay_placement

    centred = overlay_placement(OverlayOptions(margin=0), 10, 120, 40)
    assert (centred.width, centred.row, centred.col) == (80, 15, 20), "Pi's default: 80 wide, centred"
    corner = overlay_placement(OverlayOptions(anchor="bottom-right", width="25%", margin=2), 5, 120, 40)
    assert (corner.width, corner.row, corner.col) == (30, 33, 88)
    placed = overlay_placement(OverlayOptions(row="100%", col=3, offset_x=-10, width=10, margin=0), 4, 80, 20)
    assert (placed.row, placed.col) == (16, 0), "kept inside the screen after the offset"
    capped = overlay_placement(
        OverlayOptions(width=10, min_width=30, max_height="50%", margin=OverlayMargin(top=1)), 40, 100, 30
    )
    assert (capped.width, capped.max_height, capped.row) == (30, 15, 8)


async def test_custom_awaits_an_async_factory_and_places_overlays_by_pis_options(tmp_path: Path) -> None:
    from caddie.extensions.api import OverlayOptions
    from caddie.modes.interactive.overlays import OverlayBox, OverlayScreen

    handles: list[Any] = []
    answers: list[Any] = []
    disposed: list[str] = []
    wide = [True]

    class Note:
        def __init__(self, name: str, rows: int, done: Any) -> None:
            self.name, self.rows, self.done = name, rows, done

        def render(self, width: int) -> list[str]:
            return [f"{self.name} {i}" for i in range(self.rows)]

        def handle_input(self, key: Any) -> None:
            if key.key == "q":
                self.done(f"{self.name} closed")

        def dispose(self) -> None:
            disposed.append(self.name)

    def register(api: Any) -> None:
        async def placed(args: str, ctx: Any) -> None:
            async def factory(tui: Any, theme: Any, keys: Any, done: Any) -> Note:
                return Note("placed", 20, done)

            def options() -> OverlayOptions:  # asked again at each layout
                return OverlayOptions(
                    anchor="top-left", width=30, max_height=6, offset_x=2, offset_y=1, margin=0,
                    visible=lambda w, h: wide[0],
                )  # fmt: skip

            answers.append(await ctx.ui.custom(factory, overlay=True, overlay_options=options))

        async def side(args: str, ctx: Any) -> None:
            answers.append(
                await ctx.ui.custom(
                    lambda tui, theme, keys, done: Note("side", 2, done),
                    overlay=True,
                    overlay_options=OverlayOptions(anchor="right-center", width=20, non_capturing=True),
                    on_handle=handles.append,
                )
            )

        api.register_command("placed", handler=placed)
        api.register_command("side", handler=side)

    app, _ = make_app(tmp_path, extensions=[inline_extension(register)])
    async with app.run_test(size=LARGE) as pilot:
        await ready(app, pilot)
        await submit(pilot, app, "/placed")
        await until(pilot, lambda: isinstance(app.screen, OverlayScreen))
        box = app.screen.query_one(OverlayBox)
        await until(pilot, lambda: box.region.width == 30)
        region = box.region
        wide[0] = False
        await pilot.resize_terminal(LARGE[0] - 1, LARGE[1])
        await until(pilot, lambda: not box.display)
        wide[0] = True
        await pilot.resize_terminal(*LARGE)
        await until(pilot, lambda: box.display)
        await pilot.press("q")
        await until(pilot, lambda: answers == ["placed closed"])

        await submit(pilot, app, "/side")
        await until(pilot, lambda: bool(handles))
        side_box = app.screen.query_one(OverlayBox)
        await until(pilot, lambda: side_box.region.width == 20)
        side_region, screen_width = side_box.region, app.size.width
        await pilot.press("h", "i")  # the keys stay with the editor
        typed = app.editor.text
        handle = handles[0]
        handle.focus()
        await pilot.pause()
        focused = handle.is_focused()
        handle.set_hidden(True)
        hidden = handle.is_hidden()
        handle.hide()
        await until(pilot, lambda: len(answers) == 2)
        gone = not app.screen.query(OverlayBox)
    assert (region.x, region.y, region.height) == (2, 1, 6), "offsets from the top-left; max_height caps it"
    assert side_region.right == screen_width - 1, "right-center within the default margin of 1"
    assert typed == "hi" and focused and hidden
    assert answers[1] is None and gone
    assert disposed == ["placed", "side"], "each component is disposed when it closes, as in Pi"


async def test_tool_renderers_get_pis_render_context_and_the_whole_result(tmp_path: Path) -> None:
    from caddie.ai.providers.faux import faux_message, faux_tool_call
    from caddie.extensions.api import ImageContent, TextContent, ToolDefinition, ToolRenderContext, ToolResult
    from caddie.modes.interactive.conversation import ToolBlock
    from tests.tui.harness import settle

    pixel = "iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJAAAADUlEQVR42mP8z8DwHwAFBQIAX8jx0gAAAABJRU5ErkJggg=="
    seen: list[tuple[str, Any]] = []

    async def snap(tool_call_id: str, params: Any, signal: Any, on_update: Any, ctx: Any) -> ToolResult:
        return ToolResult([TextContent("a picture"), ImageContent(pixel, "image/png")], {"ok": True})

    def render_call(args: Any, theme: Any, context: ToolRenderContext) -> str:
        context.state["calls"] = context.state.get("calls", 0) + 1
        seen.append(("call", context.tool_call_id))
        return f"┏ snap {args.get('what')} (call render {context.state['calls']})"

    def render_result(result: ToolResult, options: Any, theme: Any, context: ToolRenderContext) -> str:
        images = [c for c in result.content if isinstance(c, ImageContent)]
        seen.append(("result", (context.tool_call_id, context.state.get("calls"), context.last_component)))
        return f"┗ {len(images)} image(s), error={context.is_error}, expanded={context.expanded}"

    async def old(tool_call_id: str, params: Any, signal: Any, on_update: Any, ctx: Any) -> ToolResult:
        return ToolResult([TextContent("old output")], None)

    def register(api: Any) -> None:
        api.register_tool(
            ToolDefinition(
                name="snap", description="Take a picture.", parameters={"type": "object"}, execute=snap,
                render_call=render_call, render_result=render_result, render_shell="self",
            )
        )  # fmt: skip
        api.register_tool(
            ToolDefinition(
                name="old", description="A tool drawn the old way.", parameters={"type": "object"}, execute=old,
                render_call=lambda args, theme: "old call", render_result=lambda r, o, t: "old result drawn",
            )
        )  # fmt: skip

    steps = [
        faux_message(
            [faux_tool_call("snap", {"what": "cat"}, "call-1"), faux_tool_call("old", {}, "call-2")]
        ),
        faux_message("done"),
    ]
    app, _ = make_app(tmp_path, steps, extensions=[inline_extension(register)])
    async with app.run_test(size=LARGE) as pilot:
        await ready(app, pilot)
        await submit(pilot, app, "go")
        await settle(app, pilot)
        snap_block, old_block = app.conversation.blocks_of(ToolBlock)
        await until(pilot, lambda: "1 image(s)" in widget_text(snap_block))
        snap_text, old_text = widget_text(snap_block), widget_text(old_block)
        shell = (snap_block.padding, snap_block.component, old_block.padding, old_block.component)
        calls_before = snap_block.render_state["calls"]
        snap_block.render_context("call").invalidate()
        await until(pilot, lambda: snap_block.render_state["calls"] > calls_before)
    assert "┏ snap cat" in snap_text and "┗ 1 image(s), error=False, expanded=False" in snap_text
    assert "old call" in old_text and "old result drawn" in old_text, "three-argument renderers still work"
    assert {tool_call_id for kind, tool_call_id in seen if kind == "call"} == {"call-1"}
    results = [value for kind, value in seen if kind == "result"]
    assert results[0][0] == "call-1" and results[0][1] >= 1, "call and result share the call's state"
    assert any(last is not None for _, _, last in results[1:]), "last_component is the previous render"
    assert shell == (0, "transcript--text", 1, "transcript--tool"), "render_shell='self' drops the frame"


async def test_markdown_transformers_change_what_is_drawn_not_what_is_kept(tmp_path: Path) -> None:
    from caddie.ai.messages import AssistantMessage
    from caddie.ai.providers.faux import faux_message, faux_text, faux_thinking
    from caddie.extensions.api import MarkdownTransformContext
    from caddie.modes.interactive.conversation import InfoBlock, MarkdownText, ThinkingBlock, UserBlock
    from caddie.runtime.ui import HeadlessUI
    from tests.tui.harness import settle

    contexts: list[MarkdownTransformContext] = []

    def arrows(markdown: str, context: MarkdownTransformContext) -> str:
        contexts.append(context)
        return markdown.replace("-->", "→")

    def broken(markdown: str, context: MarkdownTransformContext) -> str:
        raise ValueError("no")

    def shout(markdown: str, context: MarkdownTransformContext) -> str:
        return markdown.upper() if context.message_type == "assistant" else markdown

    def register(api: Any) -> None:
        api.register_markdown_transformer(arrows)
        api.register_markdown_transformer(broken)
        api.register_markdown_transformer(shout)

    steps = [faux_message([faux_thinking("plan --> act"), faux_text("first --> second")])]
    app, _ = make_app(tmp_path, steps, extensions=[inline_extension(register)])
    async with app.run_test(size=LARGE) as pilot:
        await ready(app, pilot)
        await submit(pilot, app, "from --> to")
        await settle(app, pilot)
        answer = app.conversation.blocks_of(MarkdownText)[0]
        await until(pilot, lambda: "FIRST → SECOND" in widget_text(answer))
        user = widget_text(app.conversation.blocks_of(UserBlock)[0])
        thinking = app.conversation.blocks_of(ThinkingBlock)[0]
        thinking.expanded = True
        thinking.changed()
        await until(pilot, lambda: "plan → act" in widget_text(thinking))
        failures = [
            widget_text(b)
            for b in app.conversation.blocks_of(InfoBlock)
            if "markdown transformer" in widget_text(b)
        ]
        assert app.session is not None
        kept = [m for m in app.session.messages if isinstance(m, AssistantMessage)][-1].text()
        supported = app.ui.supports("markdown_transformers")
    assert "from → to" in user
    assert kept == "first --> second", "display only: the session keeps the original"
    assert {c.message_type for c in contexts} >= {"user", "assistant", "assistant-thinking"}
    assert all(c.available_width > 0 for c in contexts)
    assert len(failures) == 1 and "ValueError: no" in failures[0], "a failing transformer is reported once"
    assert supported and not HeadlessUI().supports("markdown_transformers")
