"""The LLM's markdown as Telegram HTML, and long messages split after rendering.

Every piece of text is escaped; only the light markdown people expect is converted (bold,
italics, strikethrough, code and code blocks, links, lists, headings as bold, quotes) by a real
parser (markdown-it-py), so broken markdown stays literal text instead of breaking the message.
Splitting happens on the rendered HTML, counting what the person sees (tags count nothing, an
entity counts one), so escaping can never push a message over Telegram's limit; a tag or code
block cut by a split is closed at the end of one part and reopened at the start of the next.
"""

from __future__ import annotations

import html
import re
from collections.abc import Sequence

from markdown_it import MarkdownIt
from markdown_it.token import Token

from bot.contracts.envelopes import ApprovalPrompt
from bot.text.split import split_text

MAX_MESSAGE_CHARS = 4096
SAFE_LINK_SCHEMES = ("http://", "https://", "tg://", "mailto:")

_md = MarkdownIt("commonmark", {"html": False}).enable("strikethrough")

_INLINE_TAGS = {"strong": "b", "em": "i", "s": "s"}


def escape(text: str) -> str:
    return html.escape(text, quote=False)


def markdown_to_html(markdown: str) -> str:
    """Telegram HTML for the LLM's markdown; everything that is not markup is escaped."""
    blocks: list[str] = []
    _render_blocks(_md.parse(markdown), blocks)
    return "\n\n".join(b for b in blocks if b.strip()).strip()


def _render_blocks(tokens: Sequence[Token], blocks: list[str]) -> None:
    lists: list[list[int]] = []  # per open list: [next number] or [] for bullets
    prefix_next = ""
    quote_depth = 0
    current: list[str] = []

    def flush() -> None:
        if current:
            text = "".join(current)
            blocks.append(f"<blockquote>{text}</blockquote>" if quote_depth else text)
            current.clear()

    for token in tokens:
        kind = token.type
        if kind in ("bullet_list_open", "ordered_list_open"):
            flush() if not lists else None
            lists.append(_list_counter(token))
        elif kind in ("bullet_list_close", "ordered_list_close"):
            lists.pop()
            if not lists:
                flush()
        elif kind == "list_item_open":
            marker = _next_marker(lists)
            if current:
                current.append("\n")
            prefix_next = "   " * (len(lists) - 1) + marker + " "
        elif kind == "blockquote_open":
            flush()
            quote_depth += 1
        elif kind == "blockquote_close":
            flush()
            quote_depth -= 1
        elif kind == "heading_open":
            flush()
            current.append("<b>")
        elif kind == "heading_close":
            current.append("</b>")
            flush()
        elif kind in ("paragraph_open", "paragraph_close"):
            if not lists:
                flush()
        elif kind == "inline":
            if prefix_next:
                current.append(escape(prefix_next))
                prefix_next = ""
            elif lists and current and not current[-1].endswith("\n"):
                current.append("\n")
            current.append(_render_inline(token.children or []))
        elif kind in ("fence", "code_block"):
            if not lists:
                flush()
            if current:
                current.append("\n")
            current.append(_code_html(token))
            if not lists:
                flush()
        elif kind == "hr":
            flush()
            blocks.append("——————")
    flush()


def _list_counter(token: Token) -> list[int]:
    """A list just opened: [its first number] when it is ordered, [] for bullets."""
    start = int(token.attrGet("start") or 1) if token.type == "ordered_list_open" else None
    return [start] if start is not None else []


def _next_marker(lists: list[list[int]]) -> str:
    """The next item's marker in the innermost open list ("•" or "3."), its number moved on."""
    marker = "•" if not lists[-1] else f"{lists[-1][0]}."
    if lists[-1]:
        lists[-1][0] += 1
    return marker


def _code_html(token: Token) -> str:
    """A fenced or indented code block as Telegram's <pre><code>, its language as the class."""
    language = (token.info or "").strip().split(" ")[0]
    css = f' class="language-{escape(language)}"' if language else ""
    return (f"<pre><code{css}>{escape(token.content.rstrip(chr(10)))}"
            "</code></pre>")


def _render_inline(children: Sequence[Token]) -> str:
    out: list[str] = []
    links: list[bool] = []  # per open link: was it rendered as <a>?
    for child in children:
        kind = child.type
        if kind == "text":
            out.append(escape(child.content))
        elif kind in ("softbreak", "hardbreak"):
            out.append("\n")
        elif kind == "code_inline":
            out.append(f"<code>{escape(child.content)}</code>")
        elif kind.endswith("_open") and kind[:-5] in _INLINE_TAGS:
            out.append(f"<{_INLINE_TAGS[kind[:-5]]}>")
        elif kind.endswith("_close") and kind[:-6] in _INLINE_TAGS:
            out.append(f"</{_INLINE_TAGS[kind[:-6]]}>")
        elif kind == "link_open":
            href = str(child.attrGet("href") or "")
            safe = href.lower().startswith(SAFE_LINK_SCHEMES)
            links.append(safe)
            if safe:
                out.append(f'<a href="{html.escape(href, quote=True)}">')
        elif kind == "link_close":
            if links.pop():
                out.append("</a>")
        elif kind == "image":
            src = str(child.attrGet("src") or "")
            out.append(escape(f"{child.content or 'image'} ({src})"))
        elif kind in ("html_inline",):
            out.append(escape(child.content))
        else:  # anything unexpected is shown as its source text, escaped
            out.append(escape(child.content))
    return "".join(out)


# --- approval prompts --------------------------------------------------------------------


def prompt_html(prompt: ApprovalPrompt, numbered: bool) -> str:
    head = f"{prompt.position}. " if numbered else ""
    lines = [f"🔸 <b>{escape(head + prompt.summary)}</b>"]
    lines += [f"{escape(key)}: {escape(value)}" for key, value in prompt.details]
    return "\n".join(lines)


def message_parts(text: str, prompts: Sequence[ApprovalPrompt]) -> list[str]:
    """The message as Telegram HTML, split into parts that fit (module-level: a long one is
    rendered in an offload worker, bot.plumbing.offload)."""
    return split_html(message_html(text, prompts))


def message_html(text: str, prompts: Sequence[ApprovalPrompt]) -> str:
    parts = [markdown_to_html(text)] if text.strip() else []
    parts += [prompt_html(p, numbered=len(prompts) > 1) for p in prompts]
    return "\n\n".join(parts)


# --- splitting after rendering -----------------------------------------------------------

# Tags, whitespace, and words (runs of text and entities with no space: never cut inside).
_PIECE = re.compile(r"<[^>]*>|\s+|(?:&#?\w+;|[^<&\s]|&)+|<")
_WORD_PART = re.compile(r"&#?\w+;|[^&]+|&")


def visible_length(text: str) -> int:
    """Length as Telegram counts it after parsing, in UTF-16 units (emoji count twice)."""
    return len(text.encode("utf-16-le")) // 2


def split_html(rendered: str, limit: int = MAX_MESSAGE_CHARS) -> list[str]:
    """Parts of at most `limit` visible characters, each valid HTML on its own. Inside a code
    block a part ends at a line end (the rest of the line goes with the next part)."""
    parts: list[str] = []
    open_tags: list[tuple[str, str]] = []  # (name, the opening tag as written)
    current: list[str] = []
    size = 0
    line_end: tuple[int, int] | None = None  # in a code block: (pieces, size) up to a newline

    def close_all() -> str:
        return "".join(f"</{name}>" for name, _ in reversed(open_tags))

    def flush() -> None:
        nonlocal size, line_end
        body = "".join(current).rstrip()
        if _has_text(body):
            parts.append(body + close_all())
        current.clear()
        current.extend(tag for _, tag in open_tags)
        size, line_end = 0, None

    def flush_at_line_end() -> None:
        """End the part at the code block's last line end; the line begun goes on."""
        nonlocal size
        assert line_end is not None
        count, _ = line_end
        carried = current[count:]  # code text and spaces only: no tag opens inside a <pre>
        del current[count:]
        flush()
        current.extend(carried)
        size = sum(_width(p) for p in carried)

    for piece in _pieces(rendered, limit):
        if piece.startswith("<") and len(piece) > 1:
            name = _follow_tag(piece, open_tags)
            if name == "pre":
                line_end = None
            current.append(piece)
            continue
        width = _width(piece)
        if size + width > limit:
            if line_end is not None and line_end[1] > 0:
                flush_at_line_end()
            if size + width > limit:
                if piece.isspace():
                    flush()
                    continue  # a break at whitespace drops the whitespace
                flush()
        current.append(piece)
        size += width
        if "\n" in piece and any(name == "pre" for name, _ in open_tags):
            line_end = (len(current), size)
    body = "".join(current).rstrip()
    if _has_text(body):
        parts.append(body + close_all())
    return parts


def _follow_tag(piece: str, open_tags: list[tuple[str, str]]) -> str:
    """The tag's name, with `open_tags` following it: an opening tag is pushed, a closing one
    pops the tag it closes."""
    name = piece.strip("</>").split()[0].lower()
    if piece.startswith("</"):
        if open_tags and open_tags[-1][0] == name:
            open_tags.pop()
    else:
        open_tags.append((name, piece))
    return name


def _has_text(html_text: str) -> bool:
    return bool(re.sub(r"<[^>]*>", "", html_text).strip())


def _width(piece: str) -> int:
    """Visible length of a piece of rendered HTML text (an entity counts one character)."""
    return visible_length(html.unescape(piece))


def _pieces(rendered: str, limit: int) -> list[str]:
    """Tags, whitespace and words; a word longer than a whole message is cut between its
    characters and entities, never inside an entity."""
    out: list[str] = []
    for piece in _PIECE.findall(rendered):
        if (piece.startswith("<") and len(piece) > 1) or _width(piece) <= limit:
            out.append(piece)
            continue
        chunk, size = "", 0
        for part in _WORD_PART.findall(piece):
            units = [part] if part.startswith("&") else list(part)
            for unit in units:
                if size + _width(unit) > limit:
                    out.append(chunk)
                    chunk, size = "", 0
                chunk += unit
                size += _width(unit)
        out.append(chunk)
    return out


def split_plain(text: str, limit: int = MAX_MESSAGE_CHARS) -> list[str]:
    """The plain-text fallback, split at whitespace where it can be."""
    return split_text(text, limit, _plain_cut, visible_length)


def _plain_cut(text: str, limit: int) -> int:
    window = text[:limit]
    while visible_length(window) > limit:
        window = window[:-1]
    for sep in ("\n\n", "\n", " "):
        at = window.rfind(sep)
        if at > len(window) // 2:
            return at
    return len(window)
