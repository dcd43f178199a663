"""HTML to readable text, in linear time on any input, for web_fetch.

lxml (libxml2's HTML parser) builds the tree: it is linear on the inputs that make
`html.parser` quadratic (`"<a" * N`) and the ones that make HTML5 tree builders such as lexbor
quadratic (`"<div>" * N`: every start tag scans the open-element stack), because libxml2 stops
nesting at 256 levels. Text nested deeper than that is not shown, and the result says so.

This module is what the offload worker imports: it needs lxml and the standard library only.
Call `page_text` through `bot.plumbing.offload.run_bounded`, never on the event loop.
"""

from __future__ import annotations

import re
from typing import NamedTuple

from lxml import etree

_SKIP = {"script", "style", "nav", "noscript", "svg", "template", "iframe", "canvas"}
_HEADINGS = {"h1", "h2", "h3", "h4", "h5", "h6"}
_BREAKS = {**dict.fromkeys(["div", "br", "li", "tr", "dt", "dd", "figcaption", "summary",
                            "details", "form", "address", "option"], 1),
           **dict.fromkeys(["p", "ul", "ol", "table", "blockquote", "pre", "section", "article",
                            "header", "footer", "main", "aside", "figure", "dl", "hr",
                            *_HEADINGS], 2)}
_SPACES = re.compile(r"\s+")
_META_CHARSET = re.compile(rb"<meta[^>]+charset=[\"']?([\w.:-]+)", re.IGNORECASE)


class PageText(NamedTuple):
    title: str
    text: str
    too_deep: bool  # nesting passed libxml2's limit: text below that depth is missing


def decode_html(body: bytes, charset: str | None) -> str:
    """The document as text: the HTTP charset, else a <meta charset>, else UTF-8; undecodable
    bytes become U+FFFD."""
    if not charset and (found := _META_CHARSET.search(body[:4096])):
        charset = found.group(1).decode("ascii")
    try:
        return body.decode(charset or "utf-8", errors="replace")
    except LookupError:
        return body.decode("utf-8", errors="replace")


def page_text(body: bytes, charset: str | None = None) -> PageText:
    """Title and readable text of an HTML document given as bytes."""
    return _extract(decode_html(body, charset))


def html_to_text(html: str) -> tuple[str, str]:
    """(title, readable text) of an HTML document."""
    title, text, _ = _extract(html)
    return title, text


class _Collector:
    """Walks the tree in document order, keeping text and the breaks between blocks."""

    def __init__(self) -> None:
        self.parts: list[str | int] = []  # text, or a break of 1 or 2 newlines
        self.title: list[str] = []
        self.skip = 0
        self.in_title = False

    def data(self, text: str | None) -> None:
        if not text:
            return
        if self.in_title:
            self.title.append(text)
        elif not self.skip:
            self.parts.append(_SPACES.sub(" ", text))

    def start(self, tag: str) -> None:
        if tag in _SKIP:
            self.skip += 1
        elif tag == "title":
            self.in_title = True
        elif tag in _BREAKS:
            self.parts.append(_BREAKS[tag])
            if tag in _HEADINGS:
                self.parts.append("#" * int(tag[1]) + " ")
            elif tag == "li":
                self.parts.append("- ")
        elif tag in ("td", "th"):
            self.parts.append(" ")

    def end(self, tag: str) -> None:
        if tag in _SKIP:
            self.skip = max(0, self.skip - 1)
        elif tag == "title":
            self.in_title = False
        elif tag in _BREAKS:
            self.parts.append(_BREAKS[tag])


def _parse(html: str) -> tuple[etree._Element | None, bool]:
    # Bytes with an explicit encoding: a str with an XML declaration is refused by lxml, and a
    # <meta charset> inside the page must not override the decoding already done.
    parser = etree.HTMLParser(encoding="utf-8", remove_comments=True, remove_pis=True,
                              no_network=True, recover=True)
    try:
        root = etree.fromstring(html.encode("utf-8", errors="replace"), parser)
    except etree.XMLSyntaxError:  # nothing but whitespace, or nothing at all
        return None, False
    too_deep = any("depth" in entry.message.lower() for entry in parser.error_log)
    return root, too_deep


def _extract(html: str) -> PageText:
    root, too_deep = _parse(html)
    collector = _Collector()
    if root is not None:
        # iterwalk is iterative: no recursion, whatever the depth.
        for event, element in etree.iterwalk(root, events=("start", "end")):
            tag = element.tag if isinstance(element.tag, str) else ""
            if event == "start":
                collector.start(tag.lower())
                collector.data(element.text)
            else:
                collector.end(tag.lower())
                if element is not root:
                    collector.data(element.tail)
    return PageText(" ".join("".join(collector.title).split()),
                    _join(collector.parts), too_deep)


def _join(parts: list[str | int]) -> str:
    out: list[str] = []
    pending = 0  # adjacent breaks merge into the largest, whitespace between them is dropped
    for part in parts:
        if isinstance(part, int):
            pending = max(pending, part)
        elif not pending or part.strip():
            out.extend(("\n" * pending, part))
            pending = 0
    lines = (" ".join(line.split()) for line in "".join(out).split("\n"))
    text = "\n".join(line if line.strip("#- ") else "" for line in lines)
    return re.sub(r"\n{3,}", "\n\n", text).strip()
