"""The LLM room: the Anthropic Messages API client and image preparation.

Both modules import their heavy dependencies (``anthropic``, Pillow) lazily, on first use.
"""

from phoenix_lsp.llm.client import (
    TOOL_INPUT_ERROR_KEY,
    LlmClient,
    LlmFailure,
    LlmRequest,
    LlmSuccess,
    is_retryable_status,
)
from phoenix_lsp.llm.images import ImageError, prepare_image

__all__ = [
    "TOOL_INPUT_ERROR_KEY",
    "ImageError",
    "LlmClient",
    "LlmFailure",
    "LlmRequest",
    "LlmSuccess",
    "is_retryable_status",
    "prepare_image",
]
