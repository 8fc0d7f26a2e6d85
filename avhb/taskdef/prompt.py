"""A sample's prompt as lm-eval builds it: turns, then a chat request or a
plain text.

:func:`context_turns` gives lm-eval's messages: a system turn (the task's
``system_prompt`` and ``description`` joined by the few-shot delimiter when
both are set; the description is a template over the evaluated doc, or a
field of it), then each few-shot example as a user turn (its question,
followed by the ``target_delimiter``) and an assistant turn (its answer,
followed by the ``fewshot_delimiter``), then the evaluated doc's user turn.
An example's answer is its target: the choice it indexes when the task has
choices, the first of a list.  Each turn keeps its own media parts: an
example carries its own images, frames or audio (multimodal few-shot).

``gen_prefix`` (lm-eval's answer prefix): an example's answer starts with
it (joined by a space unless either side has white space at the join);
the evaluated doc's turns end with an assistant turn holding it, which the
model continues; a user turn before a prefix keeps its target delimiter
only when neither side has white space at the join.

Rendering:

* :func:`as_chat` with ``multiturn`` (lm-eval's ``--fewshot_as_multiturn``,
  its default with a chat template): one message per turn, each user
  message's media parts before its text, delimiters left out;
* :func:`as_chat` without: the system message, then one user message whose
  text is every turn's text plus its delimiter, concatenated (the last
  turn's delimiter dropped), each example's media parts placed before that
  example's text;
* :func:`as_text`: the whole context as one string (lm-eval's plain-text
  prompt, for log-likelihood requests): every turn's text and delimiter.
"""
from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from avhb.model.messages import Message, Role, TextPart

OWN = object()  # Task.text/target/choices: the task's own doc_to_* (not a few-shot example's override)


@dataclass
class Turn:
    role: Role
    text: str
    delimiter: str = ""
    parts: list[Any] = field(default_factory=list)  # media parts of a user turn


def join(prefix: str | None, suffix: str | None, delimiter: str = " ") -> str:
    """lm-eval's ``maybe_delimit``: the delimiter only when neither side has
    white space at the join."""
    if not prefix:
        return suffix or ""
    if not suffix:
        return prefix
    return prefix + suffix if (prefix[-1].isspace() or suffix[0].isspace()) else prefix + delimiter + suffix


def answer_text(answer: Any, choices: list[str] | None) -> str:
    """An example's answer as lm-eval writes it."""
    if choices and isinstance(answer, int) and not isinstance(answer, bool):
        return choices[answer]
    if isinstance(answer, list):
        return str(answer[0])
    return str(answer)


def needs_delimiter(prefix: str, suffix: str) -> bool:
    """lm-eval's ``requires_delimiter``: neither side has white space at the join."""
    if prefix == "":
        return False
    return not (prefix[-1].isspace() or suffix[0].isspace())


def qa_turns(question: str, answer: Any, choices: list[str] | None, target_delimiter: str, fewshot_delimiter: str,
             parts: list[Any] | None = None, gen_prefix: str | None = None) -> list[Turn]:
    """lm-eval's ``build_qa_turn``: the question, and the answer when there
    is one (an index into ``choices``, a list's first, or the text; after
    ``gen_prefix``), else the ``gen_prefix`` alone as the assistant's turn."""
    has_answer = answer is not None and answer != ""
    if has_answer and not gen_prefix:
        delimiter = target_delimiter
    elif gen_prefix and needs_delimiter(question, gen_prefix):
        delimiter = target_delimiter
    else:
        delimiter = ""
    turns = [Turn("user", question, delimiter, list(parts or []))]
    if has_answer:
        turns.append(Turn("assistant", join(gen_prefix, answer_text(answer, choices), " "), fewshot_delimiter))
    elif gen_prefix:
        turns.append(Turn("assistant", gen_prefix))
    return turns


def as_chat(turns: list[Turn], multiturn: bool = True) -> list[Message]:
    """Chat messages (module docstring); a last assistant turn (a
    ``gen_prefix``) stays its own message, which the model continues."""
    if multiturn:
        return [Message(t.role, [*t.parts, TextPart(t.text)]) for t in turns]
    system = [Message("system", [TextPart(turns[0].text)])] if turns and turns[0].role == "system" else []
    rest = turns[len(system):]
    prefix = [Message("assistant", [TextPart(rest[-1].text)])] if len(rest) > 1 and rest[-1].role == "assistant" else []
    rest = rest[:len(rest) - len(prefix)]
    parts: list[Any] = []
    for i, t in enumerate(rest):
        text = t.text + (t.delimiter if i < len(rest) - 1 else "")
        parts.extend(t.parts)
        if parts and isinstance(parts[-1], TextPart):
            parts[-1] = TextPart(parts[-1].text + text)
        else:
            parts.append(TextPart(text))
    return system + [Message("user", parts or [TextPart("")])] + prefix


def as_text(turns: list[Turn]) -> str:
    """The plain-text context (module docstring)."""
    return "".join(t.text + t.delimiter for t in turns)
