"""A ``session/prompt``'s content blocks as the parts of a user message (REQ-ACP-002): text, images, and
embedded context (a resource's text, labelled as an attachment the model sees once; a link named in the text)."""

from __future__ import annotations

import base64
import binascii
import os
from dataclasses import dataclass, field
from typing import Any

from acp.schema import (
    EmbeddedResourceContentBlock,
    ImageContentBlock,
    ResourceContentBlock,
    TextContentBlock,
    TextResourceContents,
)

from ... import uris
from ...sandbox.denylist import DenyCheck

#: the longest embedded resource kept (the rest is cut, and the model is told)
MAX_RESOURCE_CHARS = 200_000


@dataclass
class Parts:
    text: str = ""
    images: list[tuple[bytes, str]] = field(default_factory=list)  # raw bytes, media type
    attachments: list[str] = field(default_factory=list)


class PromptError(ValueError):
    """A block that cannot be used, with what is wrong."""


def parts_of(blocks: list[Any], deny: DenyCheck, folder: str) -> Parts:
    """``deny``: the deny-read list. An embedded file on it is refused as an LSP attachment is (REQ-ATTACH-001):
    the editor read it, but its contents would go to the model provider. ``folder``: the session's folder, which
    a relative path is read against (REQ-URI-001)."""
    parts = Parts()
    texts: list[str] = []
    for i, block in enumerate(blocks):
        if isinstance(block, TextContentBlock):
            texts.append(block.text)
        elif isinstance(block, ImageContentBlock):
            try:
                raw = base64.b64decode(block.data, validate=True)
            except (binascii.Error, ValueError):
                raise PromptError(f"prompt[{i}]: the image data is not valid base64") from None
            parts.images.append((raw, block.mime_type))
        elif isinstance(block, EmbeddedResourceContentBlock):
            resource = block.resource
            _check_file(i, resource.uri, deny, folder)
            if isinstance(resource, TextResourceContents):
                text = resource.text
                if len(text) > MAX_RESOURCE_CHARS:
                    text = text[:MAX_RESOURCE_CHARS] + f"\n… ({len(text) - MAX_RESOURCE_CHARS:,} characters cut)"
                parts.attachments.append(f"The user attached {resource.uri}:\n{_fence(text)}")
            else:
                texts.append(f"[{resource.uri}: binary content, not included]")
        elif isinstance(block, ResourceContentBlock):
            texts.append(f"[{block.name}]({block.uri})")
        else:
            raise PromptError(f"prompt[{i}]: {getattr(block, 'type', type(block).__name__)} content is not "
                              "supported (the agent takes text, images and embedded context)")
    parts.text = "\n".join(texts)
    return parts  # its limits are the send-message use case's (REQ-ACP-016), the same as an LSP message's


def _check_file(index: int, uri: str, deny: DenyCheck, folder: str) -> None:
    """An embedded resource that names a file (a file: URI in any case, or a bare path, which ACP allows) is
    turned into its canonical path by the one URI rule (REQ-URI-001) before the deny-read list looks at it; one
    that cannot be turned into a path is refused, not passed on. Other schemes name no file: nothing to check."""
    if uris.scheme(uri) not in (None, "file"):
        return
    try:
        path = uris.file_path(uri, base=folder, bare=True)
        spelt = uris.spelt_path(uri, base=folder, bare=True)
    except uris.UriError as exc:
        raise PromptError(f"prompt[{index}]: {exc} Nothing was sent.") from None
    # the client opened the file by the name as spelt (a link, then ".."), the checks see the canonical name:
    # the deny-read list is asked about both
    entry = (deny.entry_for(os.path.realpath(path), resolved=True)
             or deny.entry_for(os.path.realpath(spelt), resolved=True))
    if entry is not None:
        raise PromptError(f"prompt[{index}]: {path} is on the deny-read list ({entry}: credentials and "
                          "phoenix-lsp's own data), so nothing was sent; its contents would go to the model "
                          "provider. Remove it from the prompt.")


def _fence(text: str) -> str:
    longest = 2
    run = 0
    for ch in text:
        run = run + 1 if ch == "`" else 0
        longest = max(longest, run)
    fence = "`" * (longest + 1)
    return f"{fence}\n{text}\n{fence}"
