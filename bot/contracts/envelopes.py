"""What travels between channels and the core: `IncomingMessage` and `Inbound` in, `Reply` and
`OutboundMessage` out, the typed prompt (an approval, or a pairing request for the owner),
the loop's progress events, and the `TurnStop` that says how a turn ended. Nothing here
imports the core but the prompts' vocabulary (`bot.contracts.options`, which imports
nothing): a channel adapter depends on this module and `bot.channel`, never on the loop or
the orchestrator."""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from dataclasses import asdict, dataclass, field
from datetime import datetime
from enum import Enum
from typing import Any

from bot.contracts.options import OPTIONS, Option


class TurnStop(Enum):
    """How a turn ended: the loop's stop reasons and the ways a turn ends without it."""

    FINAL_ANSWER = "final_answer"
    WAITING_FOR_USER = "waiting_for_user"  # a question or an approval waits for the person
    MAX_TURNS = "max_turns"
    DEADLINE = "deadline"
    REPEAT_GUARD = "repeat_guard"
    CONTEXT_OVERFLOW = "context_overflow"
    CANCELLED = "cancelled"  # the person stopped the turn or cancelled their waiting task
    COMMAND = "command"  # answered without the LLM (a slash command, a listing)
    BLOCKED = "blocked"
    RATE_LIMITED = "rate_limited"
    LLM_ERROR = "llm_error"  # the LLM could not be used; the person was told why
    FAILED = "failed"  # the turn crashed repeatedly; the person was told


class PromptKind(Enum):
    """What a prompt asks, and so who reads the answer to it."""

    APPROVAL = "approval"  # a risky action waits for its owner's OK (bot.approvals)
    PAIRING = "pairing"  # a stranger waits for the owner to let them in (/pair)


@dataclass(frozen=True)
class ButtonPress:
    """A choice made on a prompt (a Telegram button, an SMS "1" or "2")."""

    approval_id: str  # the prompt's id: an approval's id, or a pairing request's code
    option: str  # the word the channel carried ("approve"); `choice` reads it
    # The channel's handle for answering the press (Telegram callback query id), if any.
    answer_ref: str = ""
    kind: PromptKind = PromptKind.APPROVAL

    @property
    def choice(self) -> Option | None:
        """The option pressed; None for a word that names none (never offered)."""
        return Option.parse(self.option)


@dataclass(frozen=True)
class MediaRef:
    """Media that came with a message, as the channel's own durable reference (a Telegram
    file_id), not its bytes: the inbox row stays small, and the bytes are fetched from the
    channel when the turn runs (again, if a crash made the turn run twice)."""

    kind: str  # "photo", "voice" (a voice note), "audio" (an audio file)
    ref: str  # the channel's id for the file
    mime: str = "image/jpeg"
    size: int = 0  # bytes, as the channel announced them (0: unknown)
    name: str = ""  # an audio file's title or file name, as the sender's app gave it
    # An audio file's words once heard (bot.turn.media), kept with the row: a turn redone after a
    # crash does not transcribe it again. (A voice note's words are the row's text.)
    heard: str | None = None

    def to_json(self) -> dict[str, Any]:
        data = asdict(self)
        if not self.name:
            del data["name"]
        if self.heard is None:
            del data["heard"]
        return data

    @classmethod
    def from_json(cls, data: dict[str, Any]) -> MediaRef:
        heard = data.get("heard")
        return cls(kind=str(data["kind"]), ref=str(data["ref"]),
                   mime=str(data.get("mime") or "image/jpeg"), size=int(data.get("size") or 0),
                   name=str(data.get("name") or ""),
                   heard=str(heard) if heard is not None else None)


@dataclass(frozen=True)
class ThirdPartyText:
    """Words that came with a message but are not the sender's own: a forwarded message, a
    quote, the quoted part of a reply, the caption of forwarded media. They reach the model
    only as untrusted data, never answer a card, run a command or say a pairing word, and a
    turn that reads them is tainted (every change asks: docs/security.md)."""

    kind: str  # "forwarded", "quote", "reply", "forwarded_caption"
    text: str
    origin: str = ""  # who wrote it, as the channel names them ("Ana", "a channel"); may be ""

    def to_json(self) -> dict[str, Any]:
        return asdict(self)

    @classmethod
    def from_json(cls, data: dict[str, Any]) -> ThirdPartyText:
        return cls(kind=str(data["kind"]), text=str(data.get("text") or ""),
                   origin=str(data.get("origin") or ""))


@dataclass(frozen=True)
class Image:
    """A picture for this turn's LLM request (fetched from its channel by the gateway)."""

    mime: str
    data: bytes


@dataclass(frozen=True)
class IncomingMessage:
    """What a channel adapter hands the gateway, before anyone knows who sent it."""

    channel: str
    address: str  # chat id, phone number, "local"
    external_id: str  # the channel's own id (update id, MessageSid): duplicates stop on it
    text: str
    received_at: datetime
    display_name: str = ""
    button: ButtonPress | None = None
    media: tuple[MediaRef, ...] = ()  # a photo; `text` is then its caption
    # The whole message picks an option ("approve", "cancel") of the prompt it answers, as a
    # channel without buttons reads a bare "1" or "2": the gateway binds it to the one prompt
    # in the last message this address got, or it stays plain text.
    choice: Option | None = None
    # When `address` is one member of a conversation others share (a Telegram group: its
    # "chat:user"), the sender's own account on the channel: someone Valet knows by it is the
    # same person there (the gateway links the member address to them).
    account: str | None = None
    # Text that came with the message but is someone else's (forwarded, quoted): never the
    # person's answer; `text` holds only the person's own words.
    third_party: tuple[ThirdPartyText, ...] = ()


@dataclass(frozen=True)
class Inbound:
    user_id: str
    channel: str
    text: str
    received_at: datetime
    external_id: str = ""
    address: str = ""  # the sender's address on its channel (chat id, phone number)
    button: ButtonPress | None = None
    from_trigger: str | None = None  # task id when a trigger, not a person, speaks
    # Set by the gateway (from the inbox row) so a turn re-run after a crash is recognised.
    turn_id: str | None = None
    media: tuple[MediaRef, ...] = ()  # what came with the message (a photo)
    images: tuple[Image, ...] = ()  # the media's bytes, fetched for this turn only
    # Someone else's words that came with the message (see ThirdPartyText): data, not an answer.
    third_party: tuple[ThirdPartyText, ...] = ()


class Urgency(Enum):
    """How a message that no one asked for may be delivered: LOW and NORMAL wait out the
    person's quiet hours, URGENT does not."""

    LOW = "low"
    NORMAL = "normal"
    URGENT = "urgent"


@dataclass(frozen=True)
class TriggerMessage:
    """A turn for a user that no channel message started (a schedule, an event, a condition).
    It enters that user's queue through the gateway's entry by user, ordered with their own
    messages; its reply goes out as a notification."""

    user_id: str
    text: str  # "[Scheduled Task] ...": what the turn is asked to do
    key: str  # unique per run, e.g. "task:42:2026-11-24T07:30Z": a second submit is a no-op
    task_id: str
    channel: str | None = None  # where the reply goes; None: the user's preferred channel
    origin_channel: str | None = None  # where the task was set: after the preferred channel
    urgency: Urgency = Urgency.NORMAL


@dataclass(frozen=True)
class ApprovalPrompt:
    """One request as a channel shows it: each adapter renders it its own way (Telegram:
    buttons whose data carries `id` and `kind`; SMS: "reply 1" or the code; console: lines).
    Most are approvals; `kind` PAIRING is the owner asked to let a stranger in (`id` is then
    the pairing code), rendered the same way."""

    id: str
    code: str  # the short code a person can type ("YES 4821")
    position: int  # 1, 2... among the requests shown together (and in /pending)
    summary: str  # what will happen, naming its object: "Delete the note “Dentist”"
    details: tuple[tuple[str, str], ...] = ()  # every argument the action receives
    options: tuple[Option, ...] = OPTIONS
    allow_modification: bool = True
    expires_at: datetime | None = None
    kind: PromptKind = PromptKind.APPROVAL

    def to_json(self) -> dict[str, Any]:
        data = asdict(self)
        data["expires_at"] = self.expires_at.isoformat() if self.expires_at else None
        data["kind"] = self.kind.value
        return data

    @classmethod
    def from_json(cls, data: dict[str, Any]) -> ApprovalPrompt:
        expires = data.get("expires_at")
        return cls(id=data["id"], code=data["code"], position=int(data["position"]),
                   summary=data["summary"],
                   details=tuple((str(k), str(v)) for k, v in data.get("details") or ()),
                   options=tuple(Option(o) for o in data.get("options") or ()),
                   allow_modification=bool(data.get("allow_modification", True)),
                   expires_at=datetime.fromisoformat(expires) if expires else None,
                   kind=PromptKind(data.get("kind") or PromptKind.APPROVAL.value))


@dataclass
class Reply:
    text: str
    prompts: tuple[ApprovalPrompt, ...] = ()
    stop: TurnStop | None = None
    turn_id: str | None = None
    # True when nothing should be sent at all (e.g. a blocked sender).
    silent: bool = False


class Delivery(Enum):
    """What became of a notification."""

    QUEUED = "queued"  # in the outbox, for the channel the person is reached on
    ALREADY_QUEUED = "already_queued"  # the same dedupe key went before: nothing new
    UNREACHABLE = "unreachable"  # no channel reaches the person now: nothing was sent


@dataclass(frozen=True)
class Notification:
    """A message for a user that no inbound message asked for (a reminder, an expiry notice,
    a triggered run's result). Routed to `channel`, else the user's preferred channel, else
    `fallback_channel` (where a task was set), else another linked channel that is reachable
    and not opted out."""

    user_id: str
    text: str
    dedupe_key: str  # a second notification with the same key is a no-op
    channel: str | None = None
    fallback_channel: str | None = None
    urgency: Urgency = Urgency.NORMAL
    not_before: datetime | None = None  # not delivered before this time (UTC)
    prompts: tuple[ApprovalPrompt, ...] = ()


@dataclass(frozen=True)
class OutboundMessage:
    """One row of the outbox, as a channel adapter receives it to send."""

    id: int
    user_id: str | None
    channel: str
    address: str
    text: str
    prompts: tuple[ApprovalPrompt, ...] = ()
    stop: TurnStop | None = None
    attempts: int = 0
    # What the message is: "reply" (to the person's message), "notification" (no message
    # asked for it), "edit:<channel message id>" (a change to a message already sent).
    kind: str = "reply"
    # The outbox row's key: "reply:<inbox row id>" for the reply to that inbound message, so a
    # channel can tell which message a reply answers.
    dedupe_key: str = ""
    # How many parts of a long message the channel delivered before (bot.channel.PartlySent):
    # it goes on from the next one.
    parts_sent: int = 0


def payload_of(prompts: tuple[ApprovalPrompt, ...], stop: TurnStop | None,
               extra: dict[str, Any] | None = None) -> dict[str, Any] | None:
    """The outbox row's JSON payload: the typed parts of a message, no rendering."""
    payload: dict[str, Any] = dict(extra or {})
    if prompts:
        payload["prompts"] = [p.to_json() for p in prompts]
    if stop is not None:
        payload["stop"] = stop.value
    return payload or None


def prompts_of(payload: dict[str, Any]) -> tuple[ApprovalPrompt, ...]:
    return tuple(ApprovalPrompt.from_json(p) for p in payload.get("prompts") or ())


def stop_of(payload: dict[str, Any]) -> TurnStop | None:
    value = payload.get("stop")
    return TurnStop(value) if value else None


# --- the loop's progress, as events ---------------------------------------------------------


class EventType(Enum):
    MESSAGE_START = "message_start"
    MESSAGE_CHUNK = "message_chunk"
    MESSAGE_END = "message_end"
    TOOL_CALL_START = "tool_call_start"
    TOOL_RESULT = "tool_result"
    STATE_CHANGE = "state_change"
    EXECUTION_END = "execution_end"


@dataclass(frozen=True)
class LoopEvent:
    type: EventType
    data: dict[str, Any] = field(default_factory=dict)


EventSink = Callable[[LoopEvent], Awaitable[None]]
