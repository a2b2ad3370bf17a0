"""Training texts in the prompt format lm-eval scores: the zero-shot context followed by the gold answer.

The context is the task's own `fewshot_context(doc, 0)` (description, `doc_to_text`, and, for the chat variant,
the tokenizer's chat template); the answer is what lm-eval would score as the gold continuation:

- multiple choice: the target delimiter and the gold choice (`doc_to_choice[doc_to_target]`); for
  multiple-input tasks (Winogrande: `doc_to_text` gives the gold context's index) the gold context and the
  shared continuation `doc_to_target`;
- generation: the target delimiter and the reference answer (the first one when there are several);
- loglikelihood: the target as is; rolling loglikelihood (perplexity): the document alone.

With a chat template the delimiter follows lm-eval's rule for chat requests (none unless a `gen_prefix` needs
one). So a fine-tuned model sees exactly the text whose likelihood the benchmark compares across choices.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any

ChatTemplate = Callable[..., str]


def chat_template(tokenizer: Any) -> ChatTemplate | None:
    """A renderer of chat messages as lm-eval's hf model applies it, or None when the tokenizer has no template."""
    if not getattr(tokenizer, "chat_template", None):
        return None

    def render(messages: Sequence[dict[str, str]], add_generation_prompt: bool = True) -> str:
        return tokenizer.apply_chat_template(
            list(messages),
            tokenize=False,
            add_generation_prompt=add_generation_prompt,
            continue_final_message=not add_generation_prompt,
        )

    return render


def _first(value: Any) -> Any:
    return value[0] if isinstance(value, list | tuple) else value


def _delimiter(task: Any, chat: bool) -> str:
    delimiter = task.config.target_delimiter
    if chat:  # lm-eval's construct_requests: no delimiter after a chat template unless a gen_prefix needs one
        prefix = task.config.gen_prefix
        return delimiter if prefix and not prefix[-1:].isspace() else ""
    return delimiter


def prompt_and_answer(task: Any, doc: dict, template: ChatTemplate | None = None) -> tuple[str, str]:
    """(context, gold continuation) of one document, as lm-eval builds its zero-shot request."""
    output_type = task.OUTPUT_TYPE
    if output_type == "loglikelihood_rolling":
        return "", str(task.doc_to_target(doc))
    context = task.fewshot_context(doc, 0, apply_chat_template=template is not None, chat_template=template)
    delimiter = _delimiter(task, template is not None)
    target = task.doc_to_target(doc)
    if output_type == "multiple_choice":
        choices = task.doc_to_choice(doc)
        if task.multiple_input:
            gold = task.doc_to_text(doc)  # the index of the gold context
            return context[gold], delimiter + str(_first(target))
        gold = _first(target)
        answer = choices[gold] if isinstance(gold, int) else str(gold)
        return context, delimiter + answer
    if output_type == "generate_until":
        return context, delimiter + str(_first(target))
    if output_type == "loglikelihood":
        return context, str(_first(target))
    raise ValueError(f"task {task.config.task!r}: output type {output_type!r} has no training text")


def training_texts(task: Any, template: ChatTemplate | None = None) -> list[str]:
    """One text per training document of `task` (its `training_docs()`, processed as lm-eval processes them)."""
    docs = task.training_docs()
    if docs is None:
        raise ValueError(f"task {task.config.task!r} has no training documents")
    return ["".join(prompt_and_answer(task, doc, template)) for doc in docs]
