"""The terminal browser behind ``awm view PATH`` (a textual app).

The first screen lists the episodes (env, task, verdict, reward, how it ended, steps,
complexity) with filters: ``f`` failed only, ``e`` cycles the environment, ``c`` the
complexity, ``/`` searches every message, ``x`` clears them. Enter opens an episode:
its summary (with what the model wrote at the turn that failed a check), every
message in full in its own box, the verdict, the verifier's evidence and the
database diff. There ``n``/``p`` step to the next/previous episode of the list,
``s`` shows the system prompt, ``Escape`` goes back; ``q`` quits anywhere.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import replace
from pathlib import Path
from typing import Any, ClassVar

from textual.app import App, ComposeResult
from textual.binding import Binding, BindingType
from textual.containers import VerticalScroll
from textual.markup import escape
from textual.screen import Screen
from textual.widgets import DataTable, Footer, Input, Static

from awm_core.view.episodes import COMPLETED, Episode, EpisodeFilter
from awm_core.view.render import episode_blocks, episode_cells, episode_columns, label_style

__all__ = ["ViewerApp", "run_viewer"]

_COMPLEXITY_ORDER = {"easy": 0, "medium": 1, "hard": 2}


def _cycle(options: Sequence[str], current: str | None) -> str | None:
    """The next of ``None, options[0], options[1], ...`` after ``current``."""
    ring: list[str | None] = [None, *options]
    return ring[(ring.index(current) + 1) % len(ring)] if current in ring else None


class EpisodeList(Screen[None]):
    """Every episode in a table, filtered; Enter opens one."""

    BINDINGS: ClassVar[list[BindingType]] = [
        Binding("f", "toggle_failed", "failed only"),
        Binding("e", "next_env", "env"),
        Binding("c", "next_complexity", "complexity"),
        # priority: the App runs it as the key arrives, so keys typed right after "/"
        # (or pasted with it) reach the search box, not the table
        Binding("slash", "search", "search", priority=True),
        Binding("x", "clear_filters", "clear"),
        Binding("escape", "leave_search", "back to the list", show=False),
        Binding("q", "app.quit", "quit"),
    ]

    DEFAULT_CSS = """
    EpisodeList #status { height: auto; padding: 0 1; background: $boost; }
    EpisodeList Input { height: 3; }
    EpisodeList DataTable { height: 1fr; }
    """

    def __init__(self, episodes: Sequence[Episode], where: str, filt: EpisodeFilter) -> None:
        super().__init__()
        self.episodes = list(episodes)
        self.where = where
        self.filt = filt
        self.shown: list[Episode] = []
        self.envs = sorted({ep.env_id for ep in self.episodes})
        self.complexities = sorted(
            {ep.complexity for ep in self.episodes if ep.complexity},
            key=lambda c: (_COMPLEXITY_ORDER.get(c, 9), c),
        )
        self.columns = episode_columns(self.episodes)

    def compose(self) -> ComposeResult:
        yield Static(id="status")
        yield Input(
            value=self.filt.text,
            placeholder="/ search ids, instructions, everything the model wrote",
            id="search",
        )
        table: DataTable[object] = DataTable(id="episodes", cursor_type="row", zebra_stripes=True)
        yield table
        yield Footer()

    def on_mount(self) -> None:
        table = self.query_one(DataTable)
        for col in self.columns:
            table.add_column(col.header, key=col.header)
        self.refresh_rows()
        self.set_focus(table)

    def refresh_rows(self) -> None:
        table = self.query_one(DataTable)
        table.clear()
        self.shown = self.filt.apply(self.episodes)
        for ep in self.shown:
            table.add_row(*episode_cells(ep, self.columns), key=str(ep.index))
        judged = [ep for ep in self.episodes if ep.verdict is not None]
        passed = sum(ep.label == COMPLETED for ep in judged)
        score = f"{passed}/{len(judged)} completed" if judged else "not judged"
        filters = self.filt.describe() or "none (f failed · e env · c complexity · / search)"
        status = (
            f"[b]awm view[/b] {escape(self.where)}\n"
            f"{len(self.shown)} of {len(self.episodes)} episodes · {score} · "
            f"filters: {escape(filters)}"
        )
        if not self.shown:
            status += "\n[red]no episode matches; x clears the filters[/red]"
        self.query_one("#status", Static).update(status)

    def _set(self, **changes: Any) -> None:
        self.filt = replace(self.filt, **changes)
        self.refresh_rows()

    def action_toggle_failed(self) -> None:
        self._set(failed=not self.filt.failed)

    def action_next_env(self) -> None:
        self._set(env=_cycle(self.envs, self.filt.env))

    def action_next_complexity(self) -> None:
        if self.complexities:
            self._set(complexity=_cycle(self.complexities, self.filt.complexity))
        else:
            self.notify("these tasks record no complexity", severity="warning")

    def action_clear_filters(self) -> None:
        self.query_one(Input).value = ""
        self._set(failed=False, env=None, task=None, complexity=None, text="")

    # focus moves at once (not on the next tick, as widget.focus() does)
    def action_search(self) -> None:
        box = self.query_one(Input)
        if self.focused is box:  # "/" typed in the search itself
            box.insert_text_at_cursor("/")
        else:
            self.set_focus(box)

    def action_leave_search(self) -> None:
        self.set_focus(self.query_one(DataTable))

    def on_input_changed(self, event: Input.Changed) -> None:
        if event.value != self.filt.text:
            self._set(text=event.value)

    def on_input_submitted(self, event: Input.Submitted) -> None:
        self.set_focus(self.query_one(DataTable))

    def on_data_table_row_selected(self, event: DataTable.RowSelected) -> None:
        index = int(str(event.row_key.value))
        chosen = next(ep for ep in self.shown if ep.index == index)
        self.app.push_screen(EpisodeView(chosen, self.shown))


class EpisodeView(Screen[None]):
    """One episode, every message in full, scrollable."""

    BINDINGS: ClassVar[list[BindingType]] = [
        Binding("escape", "app.pop_screen", "back"),
        Binding("n", "move(1)", "next"),
        Binding("p", "move(-1)", "previous"),
        Binding("s", "toggle_system", "system prompt"),
        Binding("home,g", "top", "top", show=False),
        Binding("end,G", "bottom", "bottom", show=False),
        Binding("q", "app.quit", "quit"),
    ]

    DEFAULT_CSS = """
    EpisodeView #title { height: 1; padding: 0 1; background: $boost; }
    EpisodeView VerticalScroll { height: 1fr; }
    EpisodeView .block { border: round $primary; padding: 0 1; margin: 0 0; }
    EpisodeView .block.failed { border: round $error; }
    EpisodeView .block.summary { border: heavy $accent; }
    EpisodeView .block.summary.failed { border: heavy $error; }
    """

    def __init__(self, episode: Episode, neighbours: Sequence[Episode]) -> None:
        super().__init__()
        self.episode = episode
        self.neighbours = list(neighbours) or [episode]
        self.system = False

    def compose(self) -> ComposeResult:
        yield Static(id="title")
        yield VerticalScroll(id="body")
        yield Footer()

    async def on_mount(self) -> None:
        await self.show()

    async def show(self) -> None:
        ep = self.episode
        style = label_style(ep.label)
        position = (
            self.neighbours.index(ep) + 1 if ep in self.neighbours else 1,
            len(self.neighbours),
        )
        self.query_one("#title", Static).update(
            f"#{ep.index} [b]{escape(ep.env_id)} / {escape(ep.task_id)}[/b] · "
            f"[{style}]{escape(ep.label)}[/{style}] · {position[0]} of {position[1]} · "
            "esc back · n/p next/previous"
        )
        body = self.query_one("#body", VerticalScroll)
        await body.remove_children()
        widgets = []
        for block in episode_blocks(ep, system=self.system):
            classes = f"block {block.kind}" + (" failed" if block.failed else "")
            widget = Static(block.body, classes=classes, markup=False)
            widget.border_title = escape(block.title)
            widgets.append(widget)
        await body.mount_all(widgets)
        body.scroll_home(animate=False)
        self.set_focus(body)

    async def action_move(self, delta: int) -> None:
        if self.episode not in self.neighbours:
            return
        at = self.neighbours.index(self.episode) + delta
        if 0 <= at < len(self.neighbours):
            self.episode = self.neighbours[at]
            await self.show()

    async def action_toggle_system(self) -> None:
        self.system = not self.system
        await self.show()

    def action_top(self) -> None:
        self.query_one("#body", VerticalScroll).scroll_home(animate=False)

    def action_bottom(self) -> None:
        self.query_one("#body", VerticalScroll).scroll_end(animate=False)


class ViewerApp(App[None]):
    """``awm view``: the episode list, then one episode; ``q`` quits."""

    TITLE = "awm view"
    BINDINGS: ClassVar[list[BindingType]] = [Binding("q", "quit", "quit")]

    def __init__(
        self,
        episodes: Sequence[Episode],
        *,
        where: str | Path,
        filt: EpisodeFilter | None = None,
        open_episode: Episode | None = None,
    ) -> None:
        super().__init__()
        self.episodes = list(episodes)
        self.where = str(where)
        self.filt = filt or EpisodeFilter()
        self.open_episode = open_episode

    def get_default_screen(self) -> Screen[None]:
        return EpisodeList(self.episodes, self.where, self.filt)

    def on_mount(self) -> None:
        if self.open_episode is not None:
            shown = self.filt.apply(self.episodes) or [self.open_episode]
            self.push_screen(EpisodeView(self.open_episode, shown))


def run_viewer(
    episodes: Sequence[Episode],
    *,
    where: str | Path,
    filt: EpisodeFilter | None = None,
    open_episode: Episode | None = None,
) -> None:
    """Run the browser in this terminal until the user quits (exit 1 if it crashed)."""
    app = ViewerApp(episodes, where=where, filt=filt, open_episode=open_episode)
    app.run()
    if app.return_code:
        raise SystemExit(app.return_code)
