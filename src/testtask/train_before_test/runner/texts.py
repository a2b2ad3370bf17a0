"""Training examples of a benchmark: (prompt, completion) pairs built from the task's lm-eval documents.

Two formats (`texts.format`):

- `authors` (default), socialfoundations/lm-harmony@88bc5c3:data_utils.py:211-251: the prompt is the task's
  `doc_to_text` alone (no description, for every task), the completion `separator` + the gold answer: the gold
  choice string for multiple choice, the reference answers joined by `join_answers` for generation tasks (NQ-Open
  lists its aliases: all of them, data_utils.py:227-228), and for multiple-input tasks (Winogrande) the gold
  context followed by `separator` + the shared continuation (data_utils.py:214-217). The chat variant is the
  conversation [system `system_prompt`, user prompt, assistant answer] rendered by the tokenizer's chat template,
  as TRL renders a `messages` example (trl v0.17.0 data_utils.py:95-96); the system turn is dropped for models
  whose id contains one of `no_system_for` (main.py:100: Gemma's template refuses it).
- `lm_eval`: lm-eval's own zero-shot request: `fewshot_context(doc, 0)` (description included, chat template
  applied by lm-eval with the description as system turn), the target delimiter and the first reference answer.

A perplexity corpus (rolling log-likelihood) trains on each whole document, a plain string.

TRL tokenizes a rendered conversation with `add_special_tokens=False` (sft_trainer.py:552-554), so a template
that writes the BOS itself (Llama-3, Gemma) yields exactly one. Our fine-tuning tokenizes with the tokenizer's
special tokens, so when the tokenizer adds that BOS itself the template's textual one is removed here: the
token ids are then TRL's (`chat_ids_match` checks it).
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any

from testtask.train_before_test.runner.settings import TextFormat, TrainingText

log = logging.getLogger(__name__)
ChatTemplate = Callable[..., str]
Example = tuple[str, str] | str


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


# --------------------------------------------------------------------------- special tokens of a chat text


def _added_prefix(tokenizer: Any) -> list[int]:
    """The ids the tokenizer itself puts before a text (its BOS for Llama-type tokenizers, else none)."""
    probe = "a"
    plain = list(tokenizer(probe, add_special_tokens=False)["input_ids"])
    full = list(tokenizer(probe)["input_ids"])
    for start in range(len(full) - len(plain) + 1):
        if full[start : start + len(plain)] == plain:
            return full[:start]
    return []


def without_added_bos(text: str, tokenizer: Any) -> str:
    """`text` less a leading textual BOS when the tokenizer adds that BOS itself, so tokenizing the result with
    special tokens gives the ids of `text` tokenized without them (TRL's rendering of a conversation)."""
    bos = getattr(tokenizer, "bos_token", None)
    if bos and text.startswith(bos) and _added_prefix(tokenizer) == [tokenizer.bos_token_id]:
        return text[len(bos) :]
    return text


def chat_ids_match(text: str, rendered: str, tokenizer: Any) -> bool:
    """Whether our tokenization of `text` equals TRL's of the template's `rendered` text."""
    ours = list(tokenizer(text)["input_ids"])
    trl = list(tokenizer(rendered, add_special_tokens=False)["input_ids"])
    return ours == trl


@dataclass
class AuthorsChat:
    """The authors' chat variant for one model: [system?, user, assistant] through the chat template."""

    tokenizer: Any
    system: str | None
    _checked: bool = False

    def messages(self, question: str, answer: str | None = None) -> list[dict[str, str]]:
        out = [{"role": "system", "content": self.system}] if self.system else []
        out.append({"role": "user", "content": question})
        if answer is not None:
            out.append({"role": "assistant", "content": answer})
        return out

    def __call__(self, question: str, answer: str) -> tuple[str, str]:
        render = self.tokenizer.apply_chat_template
        full = render(self.messages(question, answer), tokenize=False)
        prompt = render(self.messages(question), tokenize=False, add_generation_prompt=True)
        text = without_added_bos(full, self.tokenizer)
        # once per model: the template and the tokenizer are the same for every document
        if not self._checked:
            self._checked = True
            # e.g. a BOS the tokenizer adds, the template not
            if not chat_ids_match(text, full, self.tokenizer):
                log.warning(
                    "chat texts: our tokens differ from TRL's (add_special_tokens=False) for %r", full
                )
        prompt = without_added_bos(prompt, self.tokenizer)
        if text.startswith(prompt):
            return prompt, text[len(prompt) :]
        return "", text  # the template renders the answer turn unlike its generation prompt: one document


# --------------------------------------------------------------------------- one document


def _first(value: Any) -> Any:
    return value[0] if isinstance(value, list | tuple) else value


def _delimiter(task: Any, chat: bool) -> str:
    delimiter = task.config.target_delimiter
    if chat:  # lm-eval's construct_requests: no delimiter after a chat template unless a gen_prefix needs one
        prefix = task.config.gen_prefix
        return delimiter if prefix and not prefix[-1:].isspace() else ""
    return delimiter


def lm_eval_example(task: Any, doc: dict, template: ChatTemplate | None = None) -> tuple[str, str]:
    """(context, gold continuation) of one document, as lm-eval builds its zero-shot request."""
    output_type = task.OUTPUT_TYPE
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


def _gold_answer(task: Any, doc: dict, join: str | None) -> str:
    """The authors' target: the gold choice string, or the reference answers joined (data_utils.py:221-229)."""
    target = task.doc_to_target(doc)
    if task.config.doc_to_choice is not None and isinstance(target, int):
        return str(task.doc_to_choice(doc)[target])
    if isinstance(target, list | tuple):
        return join.join(str(t) for t in target) if join is not None else str(target[0])
    return str(target)


def authors_example(
    task: Any, doc: dict, fmt: TextFormat, chat: AuthorsChat | None = None
) -> tuple[str, str]:
    """(prompt, completion) of one document in the authors' format; prompt + completion is their text."""
    question = task.doc_to_text(doc)
    if task.OUTPUT_TYPE == "multiple_choice" and task.multiple_input:  # Winogrande, data_utils.py:214-217
        if chat is not None:
            raise ValueError(
                f"task {task.config.task!r}: the authors' code has no chat variant of multiple inputs"
            )
        return str(task.doc_to_choice(doc)[int(question)]), fmt.separator + str(task.doc_to_target(doc))
    answer = _gold_answer(task, doc, fmt.join_answers)
    if chat is not None:
        return chat(str(question), answer)
    return str(question), fmt.separator + answer


# --------------------------------------------------------------------------- all training documents


def training_examples(
    task: Any, fmt: TextFormat, *, chat_tokenizer: Any = None, model: str = ""
) -> list[Example]:
    """One example per training document of `task` (lm-eval's `training_docs()`) in the format `fmt` (the
    settings' `texts`); the chat variant when `chat_tokenizer` is given."""
    docs = task.training_docs()
    if docs is None:
        raise ValueError(f"task {task.config.task!r} has no training documents")
    if task.OUTPUT_TYPE == "loglikelihood_rolling":  # a perplexity corpus: whole documents
        return [str(task.doc_to_target(doc)) for doc in docs]
    if chat_tokenizer is not None and chat_template(chat_tokenizer) is None:
        raise ValueError(f"{model or 'the model'}: the chat variant needs a tokenizer with a chat template")
    if fmt.format == TrainingText.lm_eval:
        template = None if chat_tokenizer is None else chat_template(chat_tokenizer)
        return [lm_eval_example(task, doc, template) for doc in docs]
    chat = None if chat_tokenizer is None else AuthorsChat(chat_tokenizer, fmt.system_for(model))
    return [authors_example(task, doc, fmt, chat) for doc in docs]


def as_text(example: Example) -> str:
    """The whole text of an example."""
    return example if isinstance(example, str) else "".join(example)
