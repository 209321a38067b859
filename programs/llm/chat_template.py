"""The GGUF's chat template, rendered here for an engine whose server takes a prompt, not messages (xllamacpp).

:class:`ChatTemplate` renders a conversation byte for byte as llama-cpp-python's ``Jinja2ChatFormatter`` renders it,
so both engines read the same prompt; :attr:`ChatTemplate.stop` is the stop string it adds (the end-of-sequence
text). jinja2 is imported when a template is built.
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from datetime import datetime
from typing import Any

__all__ = ["ChatTemplate"]


class ChatTemplate:
    """The GGUF's Jinja chat template, rendered as llama-cpp-python's ``Jinja2ChatFormatter`` renders it (a sandboxed
    jinja2 environment with ``trim_blocks``, ``lstrip_blocks``, ``loopcontrols``, a pass-through ``{% generation %}``
    tag and Transformers' ``tojson``), so both engines read the same prompt."""

    def __init__(self, template: str, *, eos_token: str = "", bos_token: str = ""):
        import jinja2
        import jinja2.ext
        from jinja2.sandbox import ImmutableSandboxedEnvironment

        class IgnoreGenerationTags(jinja2.ext.Extension):
            tags = {"generation"}

            def parse(self, parser: Any) -> Any:
                parser.stream.skip(1)
                return parser.parse_statements(("name:endgeneration",), drop_needle=True)

        env = ImmutableSandboxedEnvironment(loader=jinja2.BaseLoader(), trim_blocks=True, lstrip_blocks=True,
                                            extensions=[IgnoreGenerationTags, jinja2.ext.loopcontrols])
        env.filters["tojson"] = _tojson
        self.template = template
        self.eos_token = eos_token
        self.bos_token = bos_token
        self._compiled = env.from_string(template)

    def render(self, messages: Sequence[dict[str, str]], *, add_generation_prompt: bool = True) -> str:
        def raise_exception(message: str) -> None:
            raise ValueError(message)

        return self._compiled.render(
            messages=list(messages), eos_token=self.eos_token, bos_token=self.bos_token,
            raise_exception=raise_exception, add_generation_prompt=add_generation_prompt,
            functions=None, function_call=None, tools=None, tool_choice=None,
            strftime_now=lambda f: datetime.now().strftime(f),
        )

    @property
    def stop(self) -> list[str]:
        """The stop strings a rendered prompt adds (llama-cpp-python's: the end-of-sequence text)."""
        return [self.eos_token] if self.eos_token else []


def _tojson(x: Any, ensure_ascii: bool = False, indent: int | None = None,
            separators: tuple[str, str] | None = None, sort_keys: bool = False) -> str:
    return json.dumps(x, ensure_ascii=ensure_ascii, indent=indent, separators=separators, sort_keys=sort_keys)
