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

    def register(api: Any) -> None:
        async def footer(args: str, ctx: Any) -> None:
            ctx.ui.set_status("build", "green")

            def factory(tui: Any, theme: Any, data: Any) -> Any:
                def changed() -> None:
                    heard.append(data.get_git_branch())
                    tui.request_render()

                data.on_branch_change(changed)

                class Footer:
                    def render(self, width: int) -> list[str]:
                        statuses = ",".join(f"{k}={v}" for k, v in data.get_extension_statuses().items())
                        providers = data.get_available_provider_count()
                        return [f"on {data.get_git_branch()} · {statuses} · {providers} providers"]

                return Footer()

            ctx.ui.set_footer(factory)

        api.register_command("myfooter", handler=footer)

    app, _ = make_app(tmp_path, extensions=[inline_extension(register)])
    async with app.run_test(size=LARGE) as pilot:
        await ready(app, pilot)
        await submit(pilot, app, "/myfooter")
        await until(pilot, lambda: "on main · build=green" in widget_text(app.footer))
        first = widget_text(app.footer)
        head.write_text("abc1234def5678\n")  # a detached HEAD
        await until(pilot, lambda: "on detached" in widget_text(app.footer), timeout=5)
    assert heard == ["detached"]
    assert "0 providers" in first, "the test's faux provider is not a usable provider"
