"""The Telegram channel's send side (a `bot.channel.ChannelSender`) over python-telegram-bot.

Every request goes through the bot's one `OutboundLimiter`; Telegram's errors become the
port's: RetryAfter -> TransientSendError with the exact wait (and the limiter pauses the bot
for it), network trouble and 5xx -> TransientSendError, a blocked bot, an unknown chat or a
deactivated user -> PermanentSendError(unreachable=True). A message whose HTML Telegram still
rejects goes again as plain text.

Pace (`ChannelSender.ready_in`): the deliverer asks `ready_in(chat)` before it takes a message, so
a chat that must wait holds no delivery slot. A long message goes as many parts as the chat's
pace allows at once; the rest is handed back (`PartlySent`) and goes on later, after any
urgent message to that chat.
"""

from __future__ import annotations

import logging
import warnings
from collections import OrderedDict
from collections.abc import Awaitable, Callable
from datetime import timedelta
from functools import partial
from typing import Any, TypeVar

from telegram import Bot, InlineKeyboardButton, InlineKeyboardMarkup
from telegram.constants import ChatAction, ParseMode
from telegram.error import BadRequest, Forbidden, InvalidToken, RetryAfter, TelegramError

from bot.channel import (
    ChannelDown,
    ChannelSender,
    PartlySent,
    PermanentSendError,
    TransientSendError,
)
from bot.contracts.envelopes import ApprovalPrompt, LoopEvent, MediaRef, OutboundMessage
from bot.contracts.options import Option
from bot.plumbing.offload import WorkFailed, WorkTimeout, run_bounded
from bot.turn.media import MediaUnavailable
from channels.telegram.inbound import (
    MAX_PHOTO_BYTES,
    MAX_VOICE_BYTES,
    callback_data,
    chat_of_address,
)
from channels.telegram.limiter import OutboundLimiter
from channels.telegram.progress import ProgressBoard
from channels.telegram.render import escape, message_parts, split_plain
from channels.telegram.traits import TRAITS
from persona.lines_channels import TelegramLines

log = logging.getLogger(__name__)

T = TypeVar("T")
INLINE_RENDER_CHARS = 8_000  # about 30 ms to render at worst; longer goes to a worker
RENDER_SECONDS = 10.0
RENDERED_KEPT = 64  # long messages whose rest waits, rendered once
UNREACHABLE = ("bot was blocked by the user", "chat not found", "user is deactivated",
               "bot was kicked", "bot can't initiate conversation")


class TelegramChannel(ChannelSender):
    traits = TRAITS

    def __init__(self, bot: Bot, limiter: OutboundLimiter | None = None, *,
                 lines: TelegramLines, status_delay: float = 1.0) -> None:
        self.bot = bot
        self.lines = lines  # the buttons' labels
        self.limiter = limiter or OutboundLimiter()
        self.progress_board = ProgressBoard(post=self._post_status, edit=self._edit_status,
                                            typing=self.typing, delay=status_delay)
        # Parts of a long message delivered by this call so far, by outbox id (how many, and
        # the last one's id): a retry after a failure in the middle sends only the rest. What
        # an earlier call handed back (PartlySent) is the outbox row's own `parts_sent`.
        self._progress: dict[int, tuple[int, int | None]] = {}
        # A long message's rendered parts while the rest of it waits its turn: rendering costs
        # (an offload worker, seconds for a very long answer), handing parts back does not.
        self._rendered: OrderedDict[int, list[str]] = OrderedDict()

    # --- the port ------------------------------------------------------------------------

    def ready_in(self, address: str) -> float:
        return self.limiter.ready_in(str(chat_of_address(address)))  # a group paces as one

    async def send(self, message: OutboundMessage) -> str | None:
        if message.kind.startswith("edit:"):
            await self.edit(message.address, message.kind[5:], message.text)
            return message.kind[5:]
        if message.kind == "reply" and message.parts_sent == 0:
            await self.progress_board.finish(message.address)  # the answer ends the status
        chat = chat_of_address(message.address)
        markup = keyboard(message.prompts, self.lines)
        try:
            parts = await self._html_parts(message)
            sent = await self._send_parts(message, chat, parts, markup, ParseMode.HTML)
            self._rendered.pop(message.id, None)
            return sent
        except (_EntitiesRejected, WorkFailed, WorkTimeout):
            self._rendered.pop(message.id, None)
            log.warning("outbox %s could not go as HTML (rejected, or too slow to render); "
                        "sending plain text", message.id)
            plain = plain_text(message.text, message.prompts)
            self._progress.pop(message.id, None)
            return await self._send_parts(message, chat, split_plain(plain), markup, None)

    async def _html_parts(self, message: OutboundMessage) -> list[str]:
        parts = self._rendered.get(message.id)
        if parts is None:
            parts = await rendered(message.text, message.prompts)
            self._rendered[message.id] = parts
            while len(self._rendered) > RENDERED_KEPT:  # finished by another process
                self._rendered.popitem(last=False)
        return parts

    async def edit(self, address: str, message_id: str, text: str) -> None:
        """The approval's outcome replaces the message, and its buttons go."""
        try:
            await self._call(str(chat_of_address(address)), lambda: self.bot.edit_message_text(
                chat_id=chat_of_address(address), message_id=int(message_id), text=escape(text),
                parse_mode=ParseMode.HTML, reply_markup=None))
        except PermanentSendError as err:
            if "message is not modified" in str(err).lower():
                return
            raise

    async def answer_button(self, answer_ref: str, text: str) -> None:
        try:
            await self._call(None, lambda: self.bot.answer_callback_query(
                answer_ref, text=text[:200]), counted=False)
        except PermanentSendError as err:  # too old to answer: the person saw a spinner
            log.info("button press %s not answered: %s", answer_ref, err)

    async def typing(self, address: str) -> None:
        try:
            await self._call(None, lambda: self.bot.send_chat_action(
                chat_of_address(address), ChatAction.TYPING), counted=False)
        except (TransientSendError, PermanentSendError, _EntitiesRejected) as err:
            log.debug("typing indicator not shown in chat %s: %s", address, err)  # a courtesy

    async def progress(self, address: str, event: LoopEvent) -> None:
        await self.progress_board.on_event(address, event)

    # --- media (traits.media) -----------------------------------------------------------------

    async def fetch_media(self, ref: MediaRef) -> bytes:
        """A photo's, a voice note's or an audio file's bytes, by its file id (getFile, then
        the file's address)."""
        limit = MAX_PHOTO_BYTES if ref.kind == "photo" else MAX_VOICE_BYTES
        if ref.size > limit:
            raise MediaUnavailable(f"{ref.size} bytes is over {limit}")
        try:
            file = await self.bot.get_file(ref.ref)
            if (file.file_size or 0) > limit:
                raise MediaUnavailable(f"{file.file_size} bytes is over {limit}")
            data = bytes(await file.download_as_bytearray())
        except TelegramError as err:  # an expired or unknown file id, network trouble
            raise MediaUnavailable(f"{type(err).__name__}: {err.message}") from err
        if len(data) > limit:
            raise MediaUnavailable(f"{len(data)} bytes is over {limit}")
        return data

    # --- helpers the inbound side and the progress board use ------------------------------

    async def _post_status(self, address: str, line: str) -> int:
        sent = await self._call(str(chat_of_address(address)), lambda: self.bot.send_message(
            chat_of_address(address), f"<i>{escape(line)}</i>", parse_mode=ParseMode.HTML,
            disable_notification=True))
        return int(sent.message_id)

    async def _edit_status(self, address: str, message_id: int, line: str) -> None:
        await self.edit_html(address, message_id, f"<i>{escape(line)}</i>")

    async def edit_html(self, address: str, message_id: int, rendered: str) -> None:
        try:
            await self._call(str(chat_of_address(address)), lambda: self.bot.edit_message_text(
                chat_id=chat_of_address(address), message_id=message_id, text=rendered,
                parse_mode=ParseMode.HTML))
        except PermanentSendError as err:
            if "message is not modified" not in str(err).lower():
                raise

    # --- sending --------------------------------------------------------------------------

    async def _send_parts(self, message: OutboundMessage, chat: int, parts: list[str],
                          markup: InlineKeyboardMarkup | None,
                          parse_mode: str | None) -> str | None:
        """As many parts as the chat may get now (at least one); the buttons ride on the
        last. Raises PartlySent when parts are left for later."""
        done, last_id = self._progress.get(message.id, (0, None))
        start = max(done, message.parts_sent)
        end = min(len(parts), start + max(1, self.limiter.available(str(chat))))
        for index in range(start, end):
            sent = await self._call(str(chat), partial(
                self.bot.send_message, chat, parts[index], parse_mode=parse_mode,
                reply_markup=markup if index == len(parts) - 1 else None))
            last_id = int(sent.message_id)
            self._progress[message.id] = (index + 1, last_id)
        self._progress.pop(message.id, None)
        if end < len(parts):
            raise PartlySent(end)
        return str(last_id) if last_id is not None else None

    async def _call(self, chat: str | None, request: Callable[[], Awaitable[T]], *,
                    counted: bool = True) -> T:
        await self.limiter.acquire(chat, counted=counted)
        try:
            return await request()
        except RetryAfter as err:
            seconds = retry_after_seconds(err)
            self.limiter.pause(seconds)
            raise TransientSendError(f"Telegram flood control: retry after {seconds:g}s",
                                     retry_after=seconds) from err
        except Forbidden as err:
            raise PermanentSendError(err.message, unreachable=_unreachable(err)) from err
        except BadRequest as err:
            if "can't parse entities" in err.message.lower():
                raise _EntitiesRejected(err.message) from err
            raise PermanentSendError(err.message, unreachable=_unreachable(err)) from err
        except InvalidToken as err:  # 401/404: nothing goes until the token is fixed
            raise ChannelDown(f"Telegram rejected the bot token ({err.message}): check "
                              "VALET_TELEGRAM_TOKEN") from err
        except TelegramError as err:  # NetworkError, TimedOut, Conflict, 5xx
            raise TransientSendError(f"{type(err).__name__}: {err.message}") from err


class _EntitiesRejected(Exception):
    """Telegram could not parse our HTML: the same text goes again as plain text."""


def _unreachable(err: TelegramError) -> bool:
    return any(marker in err.message.lower() for marker in UNREACHABLE)


def retry_after_seconds(err: RetryAfter) -> float:
    with warnings.catch_warnings():  # PTB 22 warns while moving from int to timedelta
        warnings.simplefilter("ignore")
        value: Any = err.retry_after
    return value.total_seconds() if isinstance(value, timedelta) else float(value)


def keyboard(prompts: tuple[ApprovalPrompt, ...], lines: TelegramLines
             ) -> InlineKeyboardMarkup | None:
    """One row per prompt; each button carries the prompt's kind and id and the option."""
    if not prompts:
        return None
    labels = {Option.APPROVE: lines.telegram_button_approve,
              Option.EDIT: lines.telegram_button_edit,
              Option.CANCEL: lines.telegram_button_cancel}
    rows = []
    for prompt in prompts:
        options = [o for o in prompt.options if o is not Option.EDIT or prompt.allow_modification]
        numbered = f"{prompt.position} " if len(prompts) > 1 else ""
        rows.append([InlineKeyboardButton(numbered + labels.get(o, o.capitalize()),
                                          callback_data=callback_data(prompt.id, o,
                                                                      prompt.kind))
                     for o in options])
    return InlineKeyboardMarkup(rows)


async def rendered(text: str, prompts: tuple[ApprovalPrompt, ...]) -> list[str]:
    """A short message is rendered here; a long one in an offload worker: markdown with many
    `*` and `_` costs the parser about 4 ms a KB, and the event loop serves every person."""
    if len(text) <= INLINE_RENDER_CHARS:
        return message_parts(text, prompts)
    return await run_bounded(message_parts, text, prompts, timeout=RENDER_SECONDS)


def plain_text(text: str, prompts: tuple[ApprovalPrompt, ...]) -> str:
    lines = [text] if text.strip() else []
    for prompt in prompts:
        head = f"{prompt.position}. " if len(prompts) > 1 else ""
        lines.append(f"\n{head}{prompt.summary}")
        lines += [f"{key}: {value}" for key, value in prompt.details]
    return "\n".join(lines)
