"""A tool that asks the user one or more questions (Pi's questionnaire example). The model calls
``questionnaire`` with questions and their options; the user answers in a component shown in place of the
editor (``ui.custom``): ↑↓ pick an option, Enter confirms it, "Type something." opens a line to write a
free answer. Several questions get a tab bar (Tab / ← → between them) and a last "Submit" tab that lists the
answers. Esc cancels. The model gets one line per answer, the session keeps them in the result's details.

Load it with ``caddie -e examples/extensions/questionnaire.py``. Without a terminal UI (print, json, RPC)
the tool answers with an error the model can read.
"""

from __future__ import annotations

from dataclasses import asdict, dataclass, field
from typing import Any

from caddie.extensions.api import (
    AbortSignal,
    ExtensionAPI,
    ExtensionContext,
    KeyInput,
    OnUpdate,
    TextContent,
    ThemeView,
    ToolDefinition,
    ToolResult,
    matches_key,
)

OTHER = "__other__"

PARAMETERS = {
    "type": "object",
    "properties": {
        "questions": {
            "type": "array",
            "description": "Questions to ask the user",
            "items": {
                "type": "object",
                "properties": {
                    "id": {"type": "string", "description": "Unique identifier for this question"},
                    "label": {
                        "type": "string",
                        "description": "Short contextual label for tab bar, e.g. 'Scope', 'Priority' "
                        "(defaults to Q1, Q2)",
                    },
                    "prompt": {"type": "string", "description": "The full question text to display"},
                    "options": {
                        "type": "array",
                        "description": "Available options to choose from",
                        "items": {
                            "type": "object",
                            "properties": {
                                "value": {
                                    "type": "string",
                                    "description": "The value returned when selected",
                                },
                                "label": {"type": "string", "description": "Display label for the option"},
                                "description": {
                                    "type": "string",
                                    "description": "Optional description shown below label",
                                },
                            },
                            "required": ["value", "label"],
                        },
                    },
                    "allowOther": {
                        "type": "boolean",
                        "description": "Allow 'Type something' option (default: true)",
                    },
                },
                "required": ["id", "prompt", "options"],
            },
        }
    },
    "required": ["questions"],
}


@dataclass(slots=True)
class Question:
    id: str
    label: str
    prompt: str
    options: list[dict[str, str]]
    allow_other: bool = True

    def choices(self) -> list[dict[str, str]]:
        other = [{"value": OTHER, "label": "Type something."}] if self.allow_other else []
        return [*self.options, *other]


@dataclass(slots=True)
class Answer:
    id: str
    value: str
    label: str
    was_custom: bool
    index: int | None = None


@dataclass(slots=True)
class Outcome:
    questions: list[Question]
    answers: list[Answer] = field(default_factory=list)
    cancelled: bool = False


class Questionnaire:
    """The component: one tab per question (and a Submit tab when there are several)."""

    def __init__(self, questions: list[Question], theme: ThemeView, done: Any) -> None:
        self.questions, self.theme, self.done = questions, theme, done
        self.tab = 0
        self.option = 0
        self.typing: str | None = None
        """The free answer being written (None: not writing)."""
        self.answers: dict[str, Answer] = {}

    @property
    def several(self) -> bool:
        return len(self.questions) > 1

    def all_answered(self) -> bool:
        return all(q.id in self.answers for q in self.questions)

    def finish(self, cancelled: bool) -> None:
        self.done(Outcome(self.questions, list(self.answers.values()), cancelled))

    def answered(self, answer: Answer) -> None:
        self.answers[answer.id] = answer
        if not self.several:
            self.finish(False)
            return
        self.tab = min(self.tab + 1, len(self.questions))
        self.option = 0

    # -- keys -------------------------------------------------------------------------------------------
    def handle_input(self, key: KeyInput) -> None:
        if self.typing is not None:
            self.type_key(key)
            return
        tabs = len(self.questions) + 1
        if self.several and (matches_key(key, "tab") or matches_key(key, "right")):
            self.tab, self.option = (self.tab + 1) % tabs, 0
        elif self.several and (matches_key(key, "shift+tab") or matches_key(key, "left")):
            self.tab, self.option = (self.tab - 1) % tabs, 0
        elif self.tab == len(self.questions):  # the Submit tab
            if matches_key(key, "enter") and self.all_answered():
                self.finish(False)
            elif matches_key(key, "escape"):
                self.finish(True)
        elif matches_key(key, "up"):
            self.option = max(0, self.option - 1)
        elif matches_key(key, "down"):
            self.option = min(len(self.questions[self.tab].choices()) - 1, self.option + 1)
        elif matches_key(key, "enter"):
            question = self.questions[self.tab]
            choice = question.choices()[self.option]
            if choice["value"] == OTHER:
                self.typing = ""
            else:
                self.answered(Answer(question.id, choice["value"], choice["label"], False, self.option + 1))
        elif matches_key(key, "escape"):
            self.finish(True)

    def type_key(self, key: KeyInput) -> None:
        assert self.typing is not None
        if matches_key(key, "escape"):
            self.typing = None
        elif matches_key(key, "enter"):
            text = self.typing.strip() or "(no response)"
            self.typing = None
            self.answered(Answer(self.questions[self.tab].id, text, text, True))
        elif matches_key(key, "backspace"):
            self.typing = self.typing[:-1]
        elif key.character and key.character.isprintable():
            self.typing += key.character

    # -- drawing ----------------------------------------------------------------------------------------
    def render(self, width: int) -> list[str]:
        t = self.theme
        rule = t.fg("accent", "─" * max(1, width))
        lines = [rule]
        if self.several:
            lines += [" " + self.tab_bar(), ""]
        if self.tab == len(self.questions):
            lines += self.summary()
        else:
            question = self.questions[self.tab]
            lines += [" " + t.fg("text", question.prompt), "", *self.choice_lines(question)]
            if self.typing is not None:
                lines += ["", " " + t.fg("muted", "Your answer:"), f" > {self.typing}█", ""]
                lines.append(" " + t.fg("dim", "Enter to submit • Esc to cancel"))
        if self.typing is None:
            help_line = (
                "Tab/←→ navigate • ↑↓ select • Enter confirm • Esc cancel"
                if self.several
                else "↑↓ navigate • Enter select • Esc cancel"
            )
            lines += ["", " " + t.fg("dim", help_line)]
        return [*lines, rule]

    def tab_bar(self) -> str:
        t = self.theme
        parts = ["← "]
        for i, question in enumerate(self.questions):
            box = "■" if question.id in self.answers else "□"
            text = f" {box} {question.label} "
            colour = "success" if question.id in self.answers else "muted"
            parts.append((t.inverse(text) if i == self.tab else t.fg(colour, text)) + " ")
        submit = " ✓ Submit "
        on_submit = self.tab == len(self.questions)
        parts.append(
            (t.inverse(submit) if on_submit else t.fg("success" if self.all_answered() else "dim", submit))
            + " →"
        )
        return "".join(parts)

    def choice_lines(self, question: Question) -> list[str]:
        t = self.theme
        lines = []
        for i, choice in enumerate(question.choices()):
            chosen = i == self.option
            writing = choice["value"] == OTHER and self.typing is not None
            label = f"{i + 1}. {choice['label']}{' ✎' if writing else ''}"
            prefix = t.fg("accent", "> ") if chosen else "  "
            lines.append(prefix + t.fg("accent" if chosen or writing else "text", label))
            if choice.get("description"):
                lines.append("     " + t.fg("muted", choice["description"]))
        return lines

    def summary(self) -> list[str]:
        t = self.theme
        lines = [" " + t.fg("accent", t.bold("Ready to submit")), ""]
        for question in self.questions:
            answer = self.answers.get(question.id)
            if answer is not None:
                wrote = "(wrote) " if answer.was_custom else ""
                lines.append(" " + t.fg("muted", f"{question.label}: ") + t.fg("text", wrote + answer.label))
        lines.append("")
        if self.all_answered():
            lines.append(" " + t.fg("success", "Press Enter to submit"))
        else:
            missing = ", ".join(q.label for q in self.questions if q.id not in self.answers)
            lines.append(" " + t.fg("warning", f"Unanswered: {missing}"))
        return lines


def answer_lines(outcome: Outcome) -> str:
    labels = {q.id: q.label for q in outcome.questions}
    lines = []
    for answer in outcome.answers:
        label = labels.get(answer.id, answer.id)
        if answer.was_custom:
            lines.append(f"{label}: user wrote: {answer.label}")
        else:
            lines.append(f"{label}: user selected: {answer.index}. {answer.label}")
    return "\n".join(lines)


def failed(message: str) -> ToolResult:
    return ToolResult([TextContent(message)], {"questions": [], "answers": [], "cancelled": True})


async def ask(
    tool_call_id: str, params: dict[str, Any], signal: AbortSignal, on_update: OnUpdate, ctx: ExtensionContext
) -> ToolResult:
    if not ctx.ui.supports("custom"):
        return failed("Error: UI not available (running in non-interactive mode)")
    raw = params.get("questions") or []
    if not raw:
        return failed("Error: No questions provided")
    questions = [
        Question(q["id"], q.get("label") or f"Q{i + 1}", q["prompt"], list(q.get("options") or []),
                 q.get("allowOther") is not False)
        for i, q in enumerate(raw)
    ]  # fmt: skip
    outcome = await ctx.ui.custom(lambda tui, theme, keys, done: Questionnaire(questions, theme, done))
    if not isinstance(outcome, Outcome):  # the screen closed under it
        outcome = Outcome(questions, cancelled=True)
    details = asdict(outcome)
    if outcome.cancelled:
        return ToolResult([TextContent("User cancelled the questionnaire")], details)
    return ToolResult([TextContent(answer_lines(outcome))], details)


def render_call(args: dict[str, Any], theme: ThemeView) -> str:
    questions = args.get("questions") or []
    labels = ", ".join(q.get("label") or q.get("id", "") for q in questions if isinstance(q, dict))
    count = len(questions)
    text = theme.fg("toolTitle", theme.bold("questionnaire "))
    text += theme.fg("muted", f"{count} question{'s' if count != 1 else ''}")
    return text + (theme.fg("dim", f" ({labels})") if labels else "")


def render_result(result: ToolResult, options: Any, theme: ThemeView) -> str:
    details = result.details if isinstance(result.details, dict) else None
    if details is None:
        return result.content[0].text if result.content and isinstance(result.content[0], TextContent) else ""
    if details.get("cancelled"):
        return theme.fg("warning", "Cancelled")
    lines = []
    for answer in details.get("answers", []):
        shown = (
            f"{theme.fg('muted', '(wrote) ')}{answer['label']}"
            if answer["was_custom"]
            else (f"{answer['index']}. {answer['label']}")
        )
        lines.append(f"{theme.fg('success', '✓ ')}{theme.fg('accent', answer['id'])}: {shown}")
    return "\n".join(lines)


def register(api: ExtensionAPI) -> None:
    api.register_tool(
        ToolDefinition(
            name="questionnaire",
            label="Questionnaire",
            description="Ask the user one or more questions. Use for clarifying requirements, getting "
            "preferences, or confirming decisions. For single questions, shows a simple option list. For "
            "multiple questions, shows a tab-based interface.",
            parameters=PARAMETERS,
            execute=ask,
            render_call=render_call,
            render_result=render_result,
        )
    )
