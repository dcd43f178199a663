"""Fake Telegram Bot API server for tests (aiohttp.web).

The real python-telegram-bot talks to it through its base URL (``VALET_TELEGRAM_API_URL``)::

    async with FakeTelegram() as tg:
        tg.user_says(42, "hello")            # an update for getUpdates (or the webhook)
        ...
        assert tg.texts(42) == ["Hi!"]

It keeps Telegram's real rules where a bot can trip over them: 4,096 characters after entity
parsing, HTML that must parse ("can't parse entities"), callback data of at most 64 bytes,
"message is not modified", "chat not found", a bot blocked by the user, a webhook that
forbids getUpdates; and it can answer 429 with a retry_after.
"""

from __future__ import annotations

import asyncio
import itertools
import json
import re
import time
from collections import defaultdict
from dataclasses import dataclass, field
from typing import Any

import aiohttp
from aiohttp import web

from tests.fakes.telegram_rules import MAX_CALLBACK_DATA, MAX_TEXT, ApiError, parse_html
from tests.fakes.telegram_spec import problems_of

TOKEN = "123456:TEST-token"
BOT_USER = {"id": 123456, "is_bot": True, "first_name": "Valet", "username": "valet_test_bot"}


@dataclass
class SentMessage:
    message_id: int
    chat_id: int
    text: str  # as the person sees it (entities parsed)
    raw: str  # as the bot sent it
    parse_mode: str | None
    reply_markup: dict[str, Any] | None
    sent_at: float
    edits: list[str] = field(default_factory=list)

    @property
    def buttons(self) -> list[dict[str, Any]]:
        rows = (self.reply_markup or {}).get("inline_keyboard") or []
        return [b for row in rows for b in row]


@dataclass
class Call:
    method: str
    params: dict[str, Any]
    at: float
    raw: dict[str, Any] = field(default_factory=dict)  # as sent: form strings, or JSON


class FakeTelegram:
    def __init__(self, host: str = "127.0.0.1", port: int = 0, token: str = TOKEN) -> None:
        self.host, self.port, self.token = host, port, token
        self.calls: list[Call] = []
        self.messages: dict[int, SentMessage] = {}  # message id -> message
        self.blocked: set[int] = set()  # chats whose person blocked the bot
        self.files: dict[str, bytes] = {}
        self.commands: list[dict[str, Any]] = []  # the default menu (setMyCommands)
        self.chat_commands: dict[int, list[dict[str, Any]]] = {}  # a chat's own menu
        # The menus for users of one language (language_code): (language, chat or None).
        self.language_commands: dict[tuple[str, int | None], list[dict[str, Any]]] = {}
        self.webhook: dict[str, Any] = {}
        # What getWebhookInfo reports as the last failed delivery to the webhook.
        self.webhook_error: str | None = None
        self._failures: dict[str, list[ApiError]] = defaultdict(list)
        self._garbled: set[str] = set()  # methods whose next answer is ok but malformed
        self._updates: list[dict[str, Any]] = []
        self._update_ids = itertools.count(1)
        self._message_ids = itertools.count(1000)
        self._new_update = asyncio.Condition()
        self._runner: web.AppRunner | None = None
        self._known_chats: set[int] = set()
        # Chats whose sendMessage is held open, never answered (a send in flight when its
        # sender is killed); `held` counts the requests caught so.
        self.holding: set[int] = set()
        self.held = 0
        # Requests that are not what the Bot API takes (tests/fakes/telegram_spec.py): a
        # missing or unknown parameter, a value of the wrong type or past its limits.
        self.spec_problems: list[str] = []

    # -- lifecycle -------------------------------------------------------------------------
    @property
    def api_url(self) -> str:
        return f"http://{self.host}:{self.port}"

    async def start(self) -> None:
        app = web.Application(client_max_size=20 * 1024 * 1024)
        app.router.add_route("*", "/bot{token}/{method}", self._api)
        app.router.add_get("/file/bot{token}/{path:.+}", self._file)
        self._runner = web.AppRunner(app, access_log=None, shutdown_timeout=0.5)
        await self._runner.setup()
        await web.TCPSite(self._runner, self.host, self.port).start()
        self.port = self._runner.addresses[0][1]

    async def stop(self) -> None:
        async with self._new_update:
            self._new_update.notify_all()
        if self._runner is not None:
            await self._runner.cleanup()
            self._runner = None

    async def __aenter__(self) -> FakeTelegram:
        await self.start()
        return self

    async def __aexit__(self, *exc: object) -> None:
        await self.stop()
        if exc[0] is None and self.spec_problems:  # (a failing test's own error goes first)
            raise AssertionError("requests the Bot API would not take:\n"
                                 + "\n".join(dict.fromkeys(self.spec_problems)))

    # -- what tests do ---------------------------------------------------------------------
    def unconfirmed(self) -> int:
        """Updates the bot has not confirmed yet (getUpdates with a later offset)."""
        return len(self._updates)

    def started(self, *chat_ids: int) -> None:
        """These people started the bot before the test: Telegram lets it write to them."""
        self._known_chats.update(chat_ids)

    def fail_next(self, method: str, code: int = 429, *, retry_after: int | None = 1,
                  description: str | None = None, times: int = 1) -> None:
        """The next `times` calls of `method` fail this way (429: Too Many Requests)."""
        if description is None:
            description = (f"Too Many Requests: retry after {retry_after}" if code == 429
                           else "Internal Server Error")
        self._failures[method].extend(
            ApiError(code, description, retry_after if code == 429 else None)
            for _ in range(times))

    def garble_next(self, method: str) -> None:
        """The next call of `method` answers `ok` with a result of the wrong shape (a proxy
        or a Bot API server answering something else): the client cannot read it."""
        self._garbled.add(method)

    def user(self, chat_id: int, name: str = "Alice") -> dict[str, Any]:
        return {"id": chat_id, "is_bot": False, "first_name": name}

    def _chat(self, chat_id: int, chat_type: str) -> dict[str, Any]:
        if chat_type == "private":
            return {"id": chat_id, "type": "private", "first_name": "Alice"}
        return {"id": chat_id, "type": chat_type, "title": "A group"}

    def _message(self, chat_id: int, *, sender: int | None = None, chat_type: str = "private",
                 **content: Any) -> dict[str, Any]:
        self._known_chats.add(chat_id)
        return {"message_id": next(self._message_ids), "date": int(time.time()),
                "chat": self._chat(chat_id, chat_type),
                "from": self.user(sender or chat_id), **content}

    def push(self, kind: str, payload: dict[str, Any]) -> dict[str, Any]:
        update = {"update_id": next(self._update_ids), kind: payload}
        self._updates.append(update)
        asyncio.get_running_loop().create_task(self._notify())
        return update

    def user_says(self, chat_id: int, text: str, *, sender: int | None = None,
                  chat_type: str = "private", reply_to: int | None = None) -> dict[str, Any]:
        content: dict[str, Any] = {"text": text}
        commands = [m for m in re.finditer(r"(?<!\S)/\w+(@\w+)?", text) if m.start() == 0]
        mentions = list(re.finditer(r"@\w+", text))
        entities = [{"type": "bot_command", "offset": 0, "length": len(m.group(0))}
                    for m in commands]
        entities += [{"type": "mention", "offset": m.start(), "length": len(m.group(0))}
                     for m in mentions if not commands or m.start() > commands[0].end()]
        if entities:
            content["entities"] = entities
        if reply_to is not None:
            original = self.messages[reply_to]
            content["reply_to_message"] = {
                "message_id": reply_to, "date": int(original.sent_at),
                "chat": self._chat(chat_id, chat_type), "from": BOT_USER, "text": original.text}
        return self.push("message", self._message(chat_id, sender=sender, chat_type=chat_type,
                                                  **content))

    def user_presses(self, chat_id: int, message_id: int, data: str,
                     *, sender: int | None = None, chat_type: str = "private"
                     ) -> dict[str, Any]:
        message = self.messages[message_id]
        return self.push("callback_query", {
            "id": f"cb-{next(self._update_ids)}", "from": self.user(sender or chat_id),
            "chat_instance": "ci", "data": data,
            "message": {"message_id": message_id, "date": int(message.sent_at),
                        "chat": self._chat(chat_id, chat_type), "from": BOT_USER,
                        "text": message.text}})

    def user_sends_voice(self, chat_id: int, audio: bytes, duration: int = 3) -> dict[str, Any]:
        file_id = f"voice-{len(self.files) + 1}"
        self.files[file_id] = audio
        return self.push("message", self._message(chat_id, voice={
            "file_id": file_id, "file_unique_id": f"u{file_id}", "duration": duration,
            "mime_type": "audio/ogg", "file_size": len(audio)}))

    def user_sends_photo(self, chat_id: int, caption: str | None = None, *,
                         sizes: list[bytes] | None = None) -> dict[str, Any]:
        """A photo as Telegram sends it: its renditions smallest first, each its own file
        (getFile and the file address serve their bytes)."""
        renditions = []
        for i, data in enumerate(sizes or [b"\xff\xd8\xff fake jpeg"]):
            file_id = f"photo-{len(self.files) + 1}"
            self.files[file_id] = data
            side = 90 * 4 ** i
            renditions.append({"file_id": file_id, "file_unique_id": f"u{file_id}",
                               "width": side, "height": side, "file_size": len(data)})
        content: dict[str, Any] = {"photo": renditions}
        if caption:
            content["caption"] = caption
        return self.push("message", self._message(chat_id, **content))

    def user_sends_sticker(self, chat_id: int) -> dict[str, Any]:
        return self.push("message", self._message(chat_id, sticker={
            "file_id": "st1", "file_unique_id": "ust1", "type": "regular", "width": 512,
            "height": 512, "is_animated": False, "is_video": False}))

    async def deliver_webhook(self, update: dict[str, Any], *, secret: str | None = "same"
                              ) -> int:
        """POST an update to the registered webhook as Telegram does; the HTTP status."""
        headers = {}
        token = self.webhook.get("secret_token") if secret == "same" else secret
        if token is not None:
            headers["X-Telegram-Bot-Api-Secret-Token"] = token
        async with aiohttp.ClientSession() as http, http.post(
                self.webhook["url"], json=update, headers=headers) as resp:
            return resp.status

    def sent(self, chat_id: int | None = None) -> list[SentMessage]:
        return [m for m in self.messages.values() if chat_id is None or m.chat_id == chat_id]

    def texts(self, chat_id: int | None = None) -> list[str]:
        return [m.text for m in self.sent(chat_id)]

    def called(self, method: str) -> list[Call]:
        return [c for c in self.calls if c.method == method]

    async def wait_for(self, predicate: Any, timeout: float = 10.0) -> None:
        """Until predicate() is true (the bot works in the background)."""
        deadline = time.monotonic() + timeout
        while not predicate():
            if time.monotonic() > deadline:
                raise AssertionError(f"timed out; sent so far: {self.texts()}")
            await asyncio.sleep(0.02)

    # -- the API ---------------------------------------------------------------------------
    async def _notify(self) -> None:
        async with self._new_update:
            self._new_update.notify_all()

    async def _params(self, request: web.Request) -> tuple[dict[str, Any], dict[str, Any]]:
        """(the parameters read, the parameters as sent)."""
        if request.content_type == "application/json":
            body = dict(await request.json())
            return body, body
        form = await request.post()
        params: dict[str, Any] = {}
        raw: dict[str, Any] = {}
        for key, value in form.items():
            if isinstance(value, str):
                raw[key] = value
                try:
                    params[key] = json.loads(value)
                except ValueError:
                    params[key] = value
        return params, raw

    async def _api(self, request: web.Request) -> web.Response:
        if request.match_info["token"] != self.token:
            return web.json_response({"ok": False, "error_code": 401,
                                      "description": "Unauthorized"}, status=401)
        method = request.match_info["method"]
        try:
            params, raw = await self._params(request)
        except ConnectionResetError:  # the client went away mid-request (a bot shutting down)
            return web.Response(status=499)
        self.calls.append(Call(method, params, time.monotonic(), raw))
        parsed = {"text", "caption"} if raw.get("parse_mode") else set()
        self.spec_problems += problems_of(method, raw, parsed)
        try:
            if self._failures.get(method):
                raise self._failures[method].pop(0)
            if method in self._garbled:
                self._garbled.discard(method)
                return web.json_response({"ok": True, "result": ["garbled"]})
            handler = getattr(self, f"_m_{method}", None)
            if handler is None:
                raise ApiError(404, "Not Found: method not found")
            result = await handler(params)
        except ApiError as err:
            body: dict[str, Any] = {"ok": False, "error_code": err.code,
                                    "description": err.description}
            if err.retry_after is not None:
                body["parameters"] = {"retry_after": err.retry_after}
            return web.json_response(body, status=err.code)
        return web.json_response({"ok": True, "result": result})

    async def _file(self, request: web.Request) -> web.Response:
        file_id = request.match_info["path"].rsplit("/", 1)[-1]
        if request.match_info["token"] != self.token or file_id not in self.files:
            return web.Response(status=404)
        return web.Response(body=self.files[file_id])

    def _chat_id(self, params: dict[str, Any]) -> int:
        chat_id = int(params["chat_id"])
        if chat_id in self.blocked:
            raise ApiError(403, "Forbidden: bot was blocked by the user")
        if chat_id not in self._known_chats:
            raise ApiError(400, "Bad Request: chat not found")
        return chat_id

    def _checked(self, params: dict[str, Any]) -> tuple[str, dict[str, Any] | None]:
        raw = str(params.get("text", ""))
        text = parse_html(raw) if str(params.get("parse_mode", "")).upper() == "HTML" else raw
        if not text.strip():
            raise ApiError(400, "Bad Request: message text is empty")
        if len(text) > MAX_TEXT:
            raise ApiError(400, "Bad Request: message is too long")
        markup = params.get("reply_markup") or None
        for row in (markup or {}).get("inline_keyboard") or []:
            for button in row:
                if len(str(button.get("callback_data", "")).encode()) > MAX_CALLBACK_DATA:
                    raise ApiError(400, "Bad Request: BUTTON_DATA_INVALID")
        return text, markup

    def _as_api(self, m: SentMessage) -> dict[str, Any]:
        data: dict[str, Any] = {"message_id": m.message_id, "date": int(m.sent_at),
                                "chat": self._chat(m.chat_id, "private"), "from": BOT_USER,
                                "text": m.text}
        if m.reply_markup:
            data["reply_markup"] = m.reply_markup
        return data

    async def _m_getMe(self, params: dict[str, Any]) -> Any:
        return BOT_USER

    async def _m_getUpdates(self, params: dict[str, Any]) -> Any:
        if self.webhook.get("url"):
            raise ApiError(409, "Conflict: can't use getUpdates method while webhook is active;"
                                " use deleteWebhook to delete the webhook first")
        offset = int(params.get("offset") or 0)
        if offset:
            self._updates = [u for u in self._updates if u["update_id"] >= offset]
        timeout = float(params.get("timeout") or 0)
        deadline = time.monotonic() + timeout
        async with self._new_update:
            while not self._updates and self._runner is not None:
                left = deadline - time.monotonic()
                if left <= 0:
                    break
                try:
                    await asyncio.wait_for(self._new_update.wait(), left)
                except TimeoutError:
                    break
        return list(self._updates[: int(params.get("limit") or 100)])

    async def _m_sendMessage(self, params: dict[str, Any]) -> Any:
        chat_id = self._chat_id(params)
        if chat_id in self.holding:  # in flight until the sender gives up or dies
            self.held += 1
            await asyncio.Event().wait()
        text, markup = self._checked(params)
        message = SentMessage(next(self._message_ids), chat_id, text, str(params["text"]),
                              params.get("parse_mode"), markup, time.time())
        self.messages[message.message_id] = message
        return self._as_api(message)

    def _target(self, params: dict[str, Any]) -> SentMessage:
        chat_id = self._chat_id(params)
        message = self.messages.get(int(params.get("message_id") or 0))
        if message is None or message.chat_id != chat_id:
            raise ApiError(400, "Bad Request: message to edit not found")
        return message

    async def _m_editMessageText(self, params: dict[str, Any]) -> Any:
        message = self._target(params)
        text, markup = self._checked(params)
        if text == message.text and markup == message.reply_markup:
            raise ApiError(400, "Bad Request: message is not modified: specified new message "
                                "content and reply markup are exactly the same as a current "
                                "content and reply markup of the message")
        message.edits.append(message.text)
        message.text, message.raw, message.reply_markup = text, str(params["text"]), markup
        return self._as_api(message)

    async def _m_editMessageReplyMarkup(self, params: dict[str, Any]) -> Any:
        message = self._target(params)
        markup = params.get("reply_markup") or None
        if markup == message.reply_markup:
            raise ApiError(400, "Bad Request: message is not modified")
        message.reply_markup = markup
        return self._as_api(message)

    async def _m_answerCallbackQuery(self, params: dict[str, Any]) -> Any:
        return True

    async def _m_sendChatAction(self, params: dict[str, Any]) -> Any:
        self._chat_id(params)
        return True

    async def _m_setMyCommands(self, params: dict[str, Any]) -> Any:
        commands = list(params.get("commands") or [])
        for command in commands:
            if not re.fullmatch(r"[a-z0-9_]{1,32}", str(command.get("command"))) or \
                    not 1 <= len(str(command.get("description") or "")) <= 256:
                raise ApiError(400, "Bad Request: BOT_COMMAND_INVALID")
        scope = params.get("scope") or {"type": "default"}
        if scope.get("type") not in ("chat", "default"):
            raise ApiError(400, f"Bad Request: the fake knows no scope {scope.get('type')!r}")
        chat = int(scope["chat_id"]) if scope.get("type") == "chat" else None
        # TDLib's validate_bot_language_code: empty, or two lowercase Latin letters.
        language = str(params.get("language_code") or "")
        if language and not re.fullmatch(r"[a-z]{2}", language):
            raise ApiError(400, "Bad Request: invalid language code specified")
        if language:
            self.language_commands[(language, chat)] = commands
        elif chat is not None:
            self.chat_commands[chat] = commands
        else:
            self.commands = commands
        return True

    async def _m_setWebhook(self, params: dict[str, Any]) -> Any:
        secret = params.get("secret_token")
        if secret is not None and not re.fullmatch(r"[A-Za-z0-9_-]{1,256}", str(secret)):
            raise ApiError(400, "Bad Request: secret token contains unallowed characters")
        self.webhook = {"url": params["url"], "secret_token": secret}
        return True

    async def _m_deleteWebhook(self, params: dict[str, Any]) -> Any:
        self.webhook = {}
        return True

    async def _m_getWebhookInfo(self, params: dict[str, Any]) -> Any:
        info: dict[str, Any] = {"url": self.webhook.get("url", ""),
                                "has_custom_certificate": False,
                                "pending_update_count": len(self._updates)}
        if self.webhook_error:
            info.update(last_error_date=int(time.time()) - 60,
                        last_error_message=self.webhook_error)
        return info

    async def _m_getMyCommands(self, params: dict[str, Any]) -> Any:
        """The list of exactly this scope and language (Telegram falls back only when it
        shows a person their menu, not here)."""
        scope = params.get("scope") or {"type": "default"}
        chat = int(scope["chat_id"]) if scope.get("type") == "chat" else None
        language = str(params.get("language_code") or "")
        if language:
            return self.language_commands.get((language, chat), [])
        return self.chat_commands.get(chat, []) if chat is not None else self.commands

    async def _m_getFile(self, params: dict[str, Any]) -> Any:
        file_id = str(params["file_id"])
        if file_id not in self.files:
            raise ApiError(400, "Bad Request: invalid file_id")
        return {"file_id": file_id, "file_unique_id": f"u{file_id}",
                "file_size": len(self.files[file_id]), "file_path": f"files/{file_id}"}
