"""lm-eval task classes for the two probe shapes plain YAML cannot express.

``FormsTask`` asks one multiple-choice item under each of its prompt forms (C5a, C5c, the contrasts);
``ConversationTask`` renders a two-turn conversation as real chat turns under a chat template (H4);
``ConversationFormsTask`` does both: each form is a conversation (H4's forced-choice twin).
Task YAMLs select them with ``class: !function utils.<Name>``.
"""

from __future__ import annotations

import json
from typing import Any

from lm_eval.api.instance import Instance
from lm_eval.api.task import ConfigurableTask

from captrack.errors import InputError
from captrack.metrics.form_consistency import form_choices

__all__ = ["ConversationFormsTask", "ConversationTask", "FormsTask", "ProbeTask"]


class ProbeTask(ConfigurableTask):
    """A ConfigurableTask built from a YAML that names its class (lm-eval passes ``class`` along)."""

    def __init__(self, config: dict[str, Any] | None = None, **kwargs: Any) -> None:
        super().__init__(config={k: v for k, v in (config or {}).items() if k != "class"}, **kwargs)


class FormsTask(ProbeTask):
    """Multiple choice under every form of a doc: one loglikelihood request per (form, option)."""

    def construct_requests(self, doc: dict[str, Any], ctx: Any, **kwargs: Any) -> list[Instance]:
        """Swap the doc's first-form prompt inside `ctx` for each form and score each form's options."""
        apply_chat_template = kwargs.pop("apply_chat_template", False)
        kwargs.pop("chat_template", None)
        delimiter = "" if apply_chat_template else self.config.target_delimiter
        forms = form_choices(doc)
        first = forms[0][0]
        if not isinstance(ctx, str) or ctx.count(first) != 1:
            raise InputError(
                f"task {self.config.task}, doc {doc.get('id', '?')!r}: the rendered context must contain the "
                "first form's prompt exactly once (doc_to_text should be '{{prompt}}')"
            )
        requests: list[Instance] = []
        for prompt, choices in forms:
            context = ctx.replace(first, prompt)
            for choice in choices:
                requests.append(
                    Instance(request_type="loglikelihood", doc=doc, arguments=(context, f"{delimiter}{choice}"),
                             idx=len(requests), **kwargs)
                )
        return requests


class ConversationTask(ProbeTask):
    """Generation after a conversation: chat turns under a chat template, the plain transcript otherwise."""

    def construct_requests(self, doc: dict[str, Any], ctx: Any, **kwargs: Any) -> Any:
        """Re-render the context from ``doc["turns"]`` when a chat template applies."""
        chat_template = kwargs.get("chat_template")
        if kwargs.get("apply_chat_template") and chat_template is not None:
            ctx = chat_template(json.loads(doc["turns"]))
        return super().construct_requests(doc, ctx, **kwargs)


class ConversationFormsTask(FormsTask):
    """FormsTask whose forms are conversations: under a chat template each form's ``turns`` are real chat turns."""

    def construct_requests(self, doc: dict[str, Any], ctx: Any, **kwargs: Any) -> list[Instance]:
        """One loglikelihood request per (form, option), each form rendered from its own turns."""
        chat_template = kwargs.get("chat_template")
        if not kwargs.get("apply_chat_template") or chat_template is None:
            return super().construct_requests(doc, ctx, **kwargs)  # the plain transcripts in `prompt`
        kwargs.pop("apply_chat_template")
        kwargs.pop("chat_template")
        forms = doc["forms"] if isinstance(doc["forms"], list) else json.loads(doc["forms"])
        requests: list[Instance] = []
        for form in forms:
            if "turns" not in form:
                raise InputError(f"task {self.config.task}, doc {doc.get('id', '?')!r}: a form has no 'turns'")
            context = chat_template(json.loads(form["turns"]))
            for choice in form["choices"]:
                requests.append(Instance(request_type="loglikelihood", doc=doc, arguments=(context, str(choice)),
                                         idx=len(requests), **kwargs))
        return requests
