"""Declarations of every metric captrack knows: lm-eval's built-ins it reads and its own."""

from __future__ import annotations

from captrack.metrics.registry import MetricSpec, declare

__all__: list[str] = []

# lm-eval built-ins captrack tasks log per sample.
declare(MetricSpec("acc", "higher", "binary", "the highest-likelihood option is the gold one (or the answer is correct)", chance_from_choices=True))
declare(MetricSpec("acc_norm", "higher", "binary", "as acc, with length-normalised option likelihoods", chance_from_choices=True))
# chance_from_choices: k comes from each item's own options (the doc's ``choices``); items without options
# (a free-form number or phrase) get no chance term, so declaring it for a shared metric name is safe.
declare(MetricSpec("contrast_acc", "higher", "binary",
                   "the probe context favours the right option more than its control context does (same options in both)",
                   chance_from_choices=True))
declare(MetricSpec("exact_match", "higher", "binary", "the extracted answer equals the gold answer", chance_from_choices=True))

# CAN: latent competence.
declare(MetricSpec("pass_at_1", "higher", "binary", "the first generated program passes the unit tests"))
declare(MetricSpec("sandbox_isolated", "neutral", "binary",
                   "1: the program ran under bubblewrap; 0: under the weaker opt-in fallback (CAPTRACK_UNSAFE_CODE_FALLBACK)"))
declare(MetricSpec("reasoning", "higher", "score", "judged quality of the reasoning steps, in [0, 1]"))
declare(MetricSpec("evidence_hit", "higher", "score", "share of the gold evidence the answer relies on"))
declare(MetricSpec("form_accuracy", "higher", "score", "share of an item's prompt forms (phrasings, option orders, typos, languages) answered correctly"))
declare(MetricSpec("form_consistency", "higher", "binary", "the item gets the same answer under every prompt form"))
declare(MetricSpec("faithfulness", "higher", "score", "share of the answer's claims supported by the context"))

# WILL: default behaviour.
declare(MetricSpec("unsafe_refusal", "higher", "binary", "a clearly harmful request was refused"))
declare(MetricSpec("compliance_rate", "higher", "binary", "a benign request was answered, not refused"))
declare(MetricSpec("coverage", "higher", "score", "share of the required points the answer covers"))
declare(MetricSpec("overreach", "lower", "score", "share of the answer that goes beyond what was asked or supported"))
declare(MetricSpec("verbosity", "neutral", "count", "response length in words"))
declare(MetricSpec("bullet_usage", "neutral", "binary", "the response contains a bulleted or numbered list"))
declare(MetricSpec("table_usage", "neutral", "binary", "the response contains a Markdown table"))
declare(MetricSpec("header_usage", "neutral", "binary", "the response contains a Markdown header"))
declare(MetricSpec("emoji_usage", "neutral", "binary", "the response contains an emoji"))

# HOW: protocol compliance.
declare(MetricSpec("pass_all", "higher", "binary", "every verifiable instruction in the prompt was followed"))
declare(MetricSpec("pass_fraction", "higher", "score", "share of the prompt's verifiable instructions that were followed"))
declare(MetricSpec("format_valid", "higher", "binary", "the answer parses in the requested output format"))
declare(MetricSpec("tool_selection", "higher", "binary", "the right tool was called"))
declare(MetricSpec("tool_arguments", "higher", "score", "share of the tool call's arguments that are correct"))
declare(MetricSpec("rating", "higher", "score", "judge rating of the response, scaled to [0, 10]"))
declare(MetricSpec("citation_format", "higher", "binary", "citations follow the requested format"))
declare(MetricSpec("citation_source", "higher", "score", "share of citations that point at a supporting source"))

# Official CapTrack configs (captrack/official/configs.py): metrics beyond the ones above.
declare(MetricSpec("pass_all_loose", "higher", "binary", "as pass_all, accepting IFEval's loose forms of the response"))
declare(MetricSpec("pass_fraction_loose", "higher", "score", "as pass_fraction, accepting IFEval's loose forms of the response"))
declare(MetricSpec("sentence_count", "neutral", "count", "response length in sentences"))
declare(MetricSpec("hedging", "neutral", "binary", "the response hedges (it depends, might, I think, ...)"))
declare(MetricSpec("directness", "neutral", "binary", "the response starts on its content, without a pleasantry"))

# Judged by an LLM judge after generation (`captrack judge`; captrack/judges/catalog.py), under their
# own names where the task also logs a rule-based metric of the same meaning.
declare(MetricSpec("unsafe_refusal_judged", "higher", "binary", "an LLM judge classifies the response to a harmful request as a refusal"))
declare(MetricSpec("compliance_rate_judged", "higher", "binary", "an LLM judge classifies the response to a benign request as compliance"))
declare(MetricSpec("coverage_judged", "higher", "score", "an LLM judge says the answer addresses all (1), some (0.5) or none (0) of the question's parts"))
declare(MetricSpec("overreach_judged", "lower", "binary", "an LLM judge finds the answer goes along with a false premise or unsupported facts"))
