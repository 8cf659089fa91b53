"""Model families, for the circularity warning of the calibration report: a machine judge ranking a
system run that was built with a model of its own family favours it (Clarke & Dietz, "LLM-based
relevance assessment still can't replace human relevance assessment", 2024, on evaluating systems
with the judge they use).

**The rule.** A model name is lower-cased; a provider prefix up to the last ``/`` and a tag after
``:`` are dropped; the family is the first of :data:`FAMILIES` whose key occurs in what is left
(so "meta-llama/Llama-3.1-8B-Instruct" and "llama3.2:1b" are both "llama", "gpt-4o-mini" and
"o3-mini" both "openai"); a name matching none is its own family (its leading letters).
"""

from __future__ import annotations

import re

# (family, keys), checked in order
FAMILIES: tuple[tuple[str, tuple[str, ...]], ...] = (
    ("openai", ("gpt", "chatgpt", "davinci")),
    ("openai", ("o1-", "o3-", "o4-")),
    ("anthropic", ("claude",)),
    ("google", ("gemini", "gemma", "palm", "bard")),
    ("llama", ("llama",)),
    ("mistral", ("mistral", "mixtral", "ministral", "codestral")),
    ("qwen", ("qwen", "qwq")),
    ("deepseek", ("deepseek",)),
    ("microsoft", ("phi-", "phi3", "phi4")),
    ("cohere", ("command-r", "command",)),
    ("falcon", ("falcon",)),
    ("yi", ("yi-",)),
    ("olmo", ("olmo",)),
)


def model_family(name: str | None) -> str | None:
    """The family of model ``name`` by the module's rule (None for no name)."""
    if not name or not name.strip():
        return None
    s = name.strip().lower().rsplit("/", 1)[-1].split(":", 1)[0]
    probe = s + "-"
    for family, keys in FAMILIES:
        if any(k in probe for k in keys):
            return family
    m = re.match(r"[a-z]+", s)
    return m.group(0) if m else s


def circularity(judge_models: list[str], run_models: dict[str, str]) -> list[dict]:
    """The system runs whose declared model is of a family of the judge's models:
    ``[{"run", "run_model", "judge_model", "family"}]``."""
    judge = {model_family(m): m for m in judge_models if model_family(m)}
    out = []
    for run, model in sorted(run_models.items()):
        fam = model_family(model)
        if fam in judge:
            out.append({"run": run, "run_model": model, "judge_model": judge[fam], "family": fam})
    return out
