"""The lines each way of reaching a person says in its own words: SMS, Telegram, the terminal,
the owner's web console, and mail. (A channel whose package owns its words keeps them there:
channels/whatsapp/lines.py.)"""

from __future__ import annotations

from persona.line_group import LineGroup
from persona.lines_people import PairingWords


class MailLines(LineGroup):
    """What became of an approved email the person was not told about at once."""

    mail_sent: str = "Sent your email “{subject}” to {recipients}."
    mail_failed: str = "I could not send your email “{subject}” to {recipients}: {error}."
    mail_refused: str = "the mail server refused it"  # {error} when the server said nothing
    # A card to send it again follows it.
    mail_unknown: str = ("I may or may not have sent your email “{subject}” to {recipients}: "
                         "the connection to the mail server broke while it was taking it. "
                         "Check your Sent folder before you approve sending it again.")


class SmsLines(PairingWords):
    """Said by the SMS channel itself (channels/sms)."""

    sms_help: str = ("This is Valet, a personal assistant. Text me what you need. Reply STOP "
                     "to stop messages, START to get them again.")
    sms_picture_only: str = ("I can't open pictures or attachments by text message yet. Could "
                             "you tell me in words?")
    sms_picture_too: str = ("I can't open pictures or attachments by text message yet, so I "
                            "only read your text.")
    # One prompt: "Send the email? Reply 1 to send, 2 to cancel." ({verb} from its summary).
    sms_prompt: str = "{summary}? Reply 1 to {verb}, 2 to cancel."
    sms_prompt_changeable: str = ("{summary}? Reply 1 to {verb}, 2 to cancel, or tell me what to "
                                  "change.")
    sms_prompt_verb: str = "go ahead"  # when the summary starts with no verb of its own
    sms_prompts: str = "Reply with a code and YES or NO for each, e.g. \"{first} YES {second} NO\"."
    # A pairing request is answered with its code, never a bare digit (a stranger must not
    # be able to make the owner's "1" mean something else). The words are read back in any
    # channel (bot.turn.commands): "PAIR 4K7QXZ", "DENY 4K7QXZ".
    sms_pairing_prompt: str = "Reply {approve} {code} to let them in, or {deny} {code} to refuse."
    # After the part of a long message that fits sms.max_segments; the person then sends one
    # of sms_more_words (alone, any case; comma-separated) for the next part.
    sms_more: str = "(reply MORE for the rest)"
    sms_more_words: str = "more, continue, go on"
    # One approval card of several, in a message of its own (the next after MORE), answered
    # by its code.
    sms_card_answer: str = "Reply {code} YES to do it, {code} NO to cancel."
    # In place of a link too long for a text message (channels/sms/cut.py).
    sms_link_elsewhere: str = ("(a link too long for a text message: ask me for it on Telegram "
                               "or read it on the console)")


class TelegramLines(LineGroup):
    """Said by the Telegram channel itself (channels/telegram)."""

    telegram_cannot_hear: str = ("Sorry, I can't listen to voice notes yet: could you type it "
                                 "for me?")
    telegram_cannot_see: str = ("Sorry, I can't look at photos yet: could you tell me in words "
                                "what it shows?")
    telegram_cannot_see_caption: str = "I can't look at photos yet, so I've only read your caption."
    telegram_cannot_hear_audio: str = ("Sorry, I can't listen to audio files yet: could you tell "
                                       "me in words what you need?")
    telegram_cannot_hear_audio_caption: str = ("I can't listen to audio files yet, so I've only "
                                               "read your caption.")
    telegram_cannot_open_caption: str = "I can't open {what} yet, so I've only read your caption."
    telegram_unreadable: str = "I can't read {what} yet: please write to me."
    telegram_invalid_button: str = "This button is no longer valid."
    telegram_button_approve: str = "✅ Approve"
    telegram_button_edit: str = "✏️ Edit"
    telegram_button_cancel: str = "✖️ Cancel"


class TerminalLines(LineGroup):
    """The terminal's way of asking (`valet chat`, channels/console/channel.py)."""

    terminal_prompt: str = "Reply {n} yes or {n} no (yes / no)."
    terminal_prompt_changeable: str = ("Reply {n} yes or {n} no (yes / no / or \"change ...\" "
                                       "to change it).")


class WebConsoleLines(LineGroup):
    """The owner's /console (bot/app/console): {url} the one-time link, {minutes} how long it
    works."""

    console_link: str = ("Here is your console link. It works once, for {minutes} minutes: "
                         "{url}")
    console_off: str = ("The web console is off. Turn it on with console.enabled: true in "
                        "valet.yaml, then send /console again.")
    console_owner_only: str = "Only the owner can open the console."
    console_private_only: str = "Ask me for the console link in our private chat, not here."
    about_console: str = "a sign-in link for the web console"
