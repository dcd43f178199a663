"""Approval cards as WhatsApp quick-reply buttons, through Twilio's Content API.

One `twilio/quick-reply` content per language (its buttons' titles are the persona's words
in it), found by its friendly name at start or created (`POST content.twilio.com/v1/
Content`), its SID cached for the process. Its body and its buttons' ids are variables: the
body says what the card asks, and each button's id names the card it belongs to and the
option it picks ("a:<approval id>:approve"), so a press is bound to its card by the payload
WhatsApp sends back (ButtonPayload): a button of an old card never decides another one. A
quick-reply sent in a session needs no approval by WhatsApp (at most 3 buttons: Valet sends
2); an approved template (whatsapp.templates.card) takes the same variables.
"""

from __future__ import annotations

import asyncio
import logging
import zlib
from dataclasses import dataclass

from twilio.base.exceptions import TwilioException
from twilio.rest import Client
from twilio.rest.content.v1.content import ContentList

from bot.channel import TransientSendError
from bot.contracts.envelopes import ApprovalPrompt, ButtonPress, PromptKind
from bot.contracts.options import Option
from channels.whatsapp.lines import WhatsAppLines
from channels.whatsapp.wire import MAX_BUTTON_ID, MAX_BUTTON_TITLE, MAX_CARD_BODY
from persona.speaking import listener_language

log = logging.getLogger(__name__)

QUICK_REPLY = "twilio/quick-reply"
# The variables of a card (and of a card template): its words, then each button's id.
BODY, APPROVE_ID, CANCEL_ID = "1", "2", "3"
_KINDS = {PromptKind.APPROVAL: "a", PromptKind.PAIRING: "p"}
_BY_LETTER = {letter: kind for kind, letter in _KINDS.items()}


def button_id(prompt: ApprovalPrompt, option: Option) -> str:
    """What a button carries: the card's kind and id, and the option it picks."""
    return f"{_KINDS[prompt.kind]}:{prompt.id}:{option.value}"[:MAX_BUTTON_ID]


def press_of(payload: str) -> ButtonPress | None:
    """The press a ButtonPayload is; None for a payload Valet never made."""
    parts = payload.split(":")
    if len(parts) != 3 or parts[0] not in _BY_LETTER or not parts[1] \
            or Option.parse(parts[2]) is None or parts[2] != Option.parse(parts[2]):
        return None
    return ButtonPress(parts[1], parts[2], kind=_BY_LETTER[parts[0]])


def card_variables(prompt: ApprovalPrompt, body: str) -> dict[str, str]:
    return {BODY: body[:MAX_CARD_BODY], APPROVE_ID: button_id(prompt, Option.APPROVE),
            CANCEL_ID: button_id(prompt, Option.CANCEL)}


@dataclass(frozen=True)
class CardContent:
    language: str
    friendly_name: str
    approve: str
    cancel: str


def content_for(words: WhatsAppLines) -> CardContent:
    """The quick-reply content for the listener's language; its name changes with its
    titles, so reworded buttons make a new content rather than use a stale one."""
    language = listener_language() or "en"
    approve = words.whatsapp_button_approve[:MAX_BUTTON_TITLE]
    cancel = words.whatsapp_button_cancel[:MAX_BUTTON_TITLE]
    digest = zlib.crc32(f"{approve}\n{cancel}".encode()) & 0xFFFFFFFF
    return CardContent(language, f"valet_card_{language}_{digest:08x}", approve, cancel)


class QuickReplies:
    """The card contents of this account, found or created once each, their SIDs cached."""

    def __init__(self, client: Client, words: WhatsAppLines) -> None:
        self.client = client
        self.words = words
        self.sids: dict[str, str] = {}  # friendly name -> HX...
        self._listed = False
        # Two deliveries asking at once list and create once (else two contents of one name).
        self._finding = asyncio.Lock()

    async def sid(self) -> str | None:
        """The SID of the card content in the listener's language, found or created now;
        None when Twilio would not (said in the log: cards then go in words)."""
        wanted = content_for(self.words)
        if wanted.friendly_name in self.sids:
            return self.sids[wanted.friendly_name]
        async with self._finding:
            return await self._find_or_create(wanted)

    async def _find_or_create(self, wanted: CardContent) -> str | None:
        try:
            if not self._listed:
                for content in await self.client.content.v1.contents.list_async():
                    if content.friendly_name and content.sid:
                        self.sids.setdefault(str(content.friendly_name), str(content.sid))
                self._listed = True
            if wanted.friendly_name not in self.sids:
                self.sids[wanted.friendly_name] = await self._create(wanted)
        except (TwilioException, TransientSendError) as err:
            log.warning("whatsapp: no quick-reply content %s (%s): cards go in words",
                        wanted.friendly_name, err)
            return None
        return self.sids[wanted.friendly_name]

    async def _create(self, wanted: CardContent) -> str:
        request = ContentList.ContentCreateRequest({
            "friendly_name": wanted.friendly_name, "language": wanted.language,
            "variables": {BODY: "Send the email to Ana?", APPROVE_ID: "a:sample:approve",
                          CANCEL_ID: "a:sample:cancel"},
            "types": {QUICK_REPLY: {"body": _slot(BODY), "actions": [
                {"type": "QUICK_REPLY", "title": wanted.approve, "id": _slot(APPROVE_ID)},
                {"type": "QUICK_REPLY", "title": wanted.cancel, "id": _slot(CANCEL_ID)}]}}})
        created = await self.client.content.v1.contents.create_async(request)
        log.info("whatsapp: created quick-reply content %s (%s)", wanted.friendly_name,
                 created.sid)
        return str(created.sid)


def _slot(variable: str) -> str:
    """A variable as a content template writes it: {{1}}."""
    return "{{" + variable + "}}"
