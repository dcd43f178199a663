"""Every sentence a person can receive from Valet that the LLM does not write, in one place.

This module holds the lines of the conversation, approvals, tasks, schedules and commands and
gathers the rest (persona/lines_people.py, persona/lines_channels.py) into `Lines`. A channel
that owns its words keeps its group in its package (channels/whatsapp/lines.py), outside
`Lines`: a persona rewords it the same way (persona.channel_words).

A persona file overrides any of them under `lines:` (persona/default.yaml, jeeves.yaml); the
key is the field's name. The lines are grouped by concern, one model per group, and `Lines`
is all of them: a part that needs only its group takes that type (`SmsLines`,
`ApprovalLines`...) and the composition root hands it the persona's `Lines`, so a line's
default lives in these modules and nowhere else.

A line may be a template: `{name}` placeholders are filled in where it is said (`fill`). The
placeholders of a line are those of its default, exactly: a persona line that drops one or
adds an unknown one is refused when the persona is loaded (`file:line: lines.key: ...`), not
found out when the line is first said.
"""

from __future__ import annotations

from typing import Any

from persona.line_group import PLACEHOLDER, LineGroup
from persona.lines_agents import AgentLines
from persona.lines_cards import CardLines
from persona.lines_channels import (
    MailLines,
    SmsLines,
    TelegramLines,
    TerminalLines,
    WebConsoleLines,
)
from persona.lines_language import LanguageLines, WhenLines
from persona.lines_people import AccessLines, BudgetLines, MemoryLines
from persona.lines_schedules import ScheduleWordLines


def fill(template: str, **values: Any) -> str:
    """str.format that leaves unknown {placeholders} alone, and never reads braces in the
    values (a person's words go in as they are)."""
    return PLACEHOLDER.sub(lambda m: str(values.get(m.group(1), m.group(0))), template)


class ConversationLines(LineGroup):
    """When the LLM itself cannot answer."""

    llm_unavailable: str = ("Sorry, I can't reach my brain right now. Your message is saved; "
                            "try me again in a minute.")
    # The LLM service answered with something unreadable, several times: say so, and that
    # what was already done stays done (the turn is not re-run, so nothing is done twice).
    llm_malformed: str = ("The AI service I use sent back answers I couldn't read, so I stopped "
                          "there. Anything I'd already done for you is done; ask me again in a "
                          "minute for the rest.")
    # The LLM refused the key or does not know the model: waiting will not fix it.
    misconfigured: str = ("I'm not set up correctly right now, so I can't answer. "
                          "My owner has been told.")
    too_long: str = ("This conversation got too long for me to follow. "
                     "Could you start over with a short summary of what you need?")
    deadline: str = ("That took longer than I can spend on one message, so I stopped. "
                     "Ask me again and I'll pick it up from there.")
    no_answer: str = "I couldn't finish that one. Could you try asking again, more simply?"
    # The model wrote what looks like a tool's result ("Saved note 12") without calling any
    # tool: nothing was done, and the person is told so instead of reading it.
    imitated_result: str = ("I didn't actually do anything there: nothing was saved, sent or "
                            "changed. Could you ask me again?")
    # After an answer the model did not finish: it reached the length one answer may be
    # (llm.max_output_tokens).
    cut_short: str = "(My answer was cut there: it got longer than I allow. Ask for the rest.)"
    rate_limited: str = "You're going faster than I can keep up. Give me a minute and try again."
    cancelled: str = "Okay, I stopped."
    # A voice note that could not be fetched or transcribed (a few tries when its turn ran),
    # and a message a channel could not store or handle at all (a few tries, then given up):
    # said once; the person's next message is answered as usual.
    voice_unreadable: str = "Sorry, I couldn't make out that voice note: could you type it?"
    # To the owner, once an outage starts, on another channel where they have one.
    channel_down: str = ("{channel} stopped working: {reason}. Its messages wait and go out "
                         "as soon as it works again; `valet doctor` says what to check.")
    message_unreadable: str = ("Sorry, something went wrong reading that message: could you "
                               "send it again, in words?")
    # Sub-tasks (the delegate tool) one message may start: said after the answer when some
    # were not started ({done} of {asked}; at most {limit} a message) or stopped by the
    # person's rate limit.
    subtasks_not_all: str = ("(I did {done} of the {asked} parts of that at once, the most I "
                             "take on for one message is {limit}: ask me again for the rest.)")
    subtasks_rate_limited: str = ("(Part of that was not finished: it needed more requests "
                                  "than your limit allows in a minute. Ask me again in a "
                                  "minute for the rest.)")


class ApprovalLines(LineGroup):
    """Asking for an OK, and what became of the answer (bot/approvals)."""

    approval_intro: str = "Before I go ahead, I need your OK:"
    # The same for a run the person did not just ask for (a schedule, an event, a condition).
    trigger_approval_intro: str = ("Something you scheduled is ready to go and is waiting "
                                   "for your OK:")
    approval_expired: str = ("“{summary}” waited {minutes} minutes for your OK, so I didn't "
                             "do it. Ask again if you still want it.")
    # On the card of a change asked only because the turn is tainted (docs/security.md): text
    # someone else wrote is in the conversation, or the change came in one answer with
    # opening new tools. The card's last detail, under the label.
    approval_untrusted_reason: str = ("this conversation holds text someone else wrote (a web "
                                      "page, a mail, an event or a forwarded message), so I "
                                      "check with you first")
    approval_untrusted_label: str = "why I ask"
    # On the card of an action a sub-task proposed (the delegate tool), after its summary.
    approval_from_subtask: str = "(for a sub-task of your request: {task})"
    # Its process stopped while it ran ({summary}): outcome unknown. A card to try again
    # follows it.
    approval_interrupted: str = ("“{summary}” was interrupted: it may or may not have "
                                 "happened. Check before you approve it again.")
    # A message to someone whose sending was cut off (the outbox could not tell whether it
    # went): {recipient}, {message}. A card to send it again follows.
    approval_message_unknown: str = ("{recipient} may not have received your message "
                                     "“{message}”: sending it was cut off. Ask {recipient} "
                                     "before I send it again.")
    approval_message_failed: str = "Your message to {recipient} did not go: {reason}."
    approval_interrupted_before_start: str = ("“{summary}” was interrupted before it started: "
                                              "nothing was done. Ask again if you still want "
                                              "it.")
    # /pending and "nothing under that code": {approvals} is one numbered line each.
    approval_none_pending: str = "Nothing is waiting for your approval."
    approval_listing: str = "Waiting for your OK:\n{approvals}"
    # /pending: approved requests of the last day that were not done ({approvals}: one
    # "Refused: <summary>" line each).
    approval_lately: str = "Lately, not done:\n{approvals}"
    # The last line of the answer to a message that was not an answer of the table while
    # approvals wait: what waits and how to answer. One ({approvals}: "Delete the note #3
    # “Dentist”"; {code}: its code), or several ({approvals}: "1. Send ...; 2. Delete ...").
    approval_still_waiting: str = "Still waiting for your OK: {approvals}. Reply YES or NO."
    approval_still_waiting_several: str = ("Still waiting for your OK: {approvals}. Reply "
                                           "with the number and yes or no, e.g. \"1 yes 2 "
                                           "no\".")
    approval_unknown_codes: str = "I have nothing waiting under {codes}. {listing}"
    approval_already: str = "“{summary}” was already {state}."
    approval_what_to_change: str = ("What should I change in “{summary}”? (Reply with the "
                                    "change, e.g. \"make the {field} …\".)")
    approval_unknown: str = "I don't know that request."
    approval_not_yours: str = "That request isn't yours to decide."
    approval_nothing_waiting: str = "Nothing was waiting for that."
    approval_edit_not_yours: str = ("Only the person who asked can change their request; "
                                    "approve or cancel it.")
    approval_cancelled_for: str = "Cancelled “{summary}” for {user}."
    approval_requester_gone: str = "Not run: {user} no longer exists."
    approval_approved_for: str = "Approved “{summary}” for {user}: {outcome}"
    approval_cannot_change: str = "“{summary}” can't be changed, only approved or cancelled."
    approval_change_failed: str = "I couldn't make that change to “{summary}”: {error}"
    # Replies Valet could not read for sure ({listing}: "1. Send ...; 2. Delete ...").
    approval_which: str = ("Which one do you mean? {listing}. Reply for example \"1 yes 2 no\", "
                           "or \"yes to all\".")
    approval_cannot_change_yes_no: str = ("“{summary}” can't be changed, only approved or "
                                          "cancelled. Yes or no?")
    approval_yes_and_no: str = "You said both yes and no to {ref}. Which is it?"
    # A bare "yes" (or "1") while prompts of another kind wait too (a question of mine, a
    # pairing request): {listing} names each with how to answer it, joined with "; ".
    approval_which_kind: str = "That could answer more than one thing: {listing}. Which one?"
    approval_which_item: str = "“{summary}” (reply “{code} yes”)"
    approval_which_task: str = "my question “{question}” (answer it in words)"
    approval_which_pairing: str = "letting {who} in (reply “{word} {code}”)"
    # A button's answer, shown at once while the turn decides.
    approval_approving: str = "Approving…"
    approval_cancelling: str = "Cancelling…"
    approval_tell_change: str = "Tell me what to change."
    approval_already_short: str = "Already {state}."
    # {state} above: what became of the request.
    approval_state_waiting: str = "waiting"
    approval_state_approved: str = "approved"
    approval_state_done: str = "done"
    approval_state_failed: str = "tried, and it failed"
    approval_state_refused: str = "refused: it could not be done"
    approval_state_unknown: str = "tried, but I can't tell whether it happened"
    approval_state_interrupted: str = "interrupted before it started"
    # What became of a request, on its card once settled ("Done: <summary>"; an edited
    # message, or on a channel that cannot edit a line with the reply: approval_card).
    approval_card: str = "{outcome}: {summary}"
    approval_card_done: str = "Done"
    approval_card_refused: str = "Refused"
    approval_card_failed: str = "Failed"
    approval_card_unknown: str = "Outcome unknown"
    approval_card_interrupted: str = "Interrupted"
    approval_card_cancelled: str = "Cancelled"
    approval_card_expired: str = "Expired"
    approval_card_replaced: str = "Replaced by an edited request"
    approval_state_cancelled: str = "cancelled"
    approval_state_expired: str = "expired"
    approval_state_replaced: str = "replaced by an edited request"


class TaskLines(LineGroup):
    """Tasks waiting for the person's answer (bot/tasks): {task} is "note", "reminder"...,
    {question} what was asked, {limit} how many may wait at once."""

    task_cancelled: str = "Okay, I've cancelled the {task}."
    task_expired: str = ("I stopped waiting for your answer about the {task} (“{question}”): "
                         "it was open too long. Just ask again when you want it.")
    task_dropped: str = ("I had to drop the {task} we were working on (“{question}”) because "
                         "that feature changed in an update. Could you ask me again?")
    task_evicted: str = ("I've dropped the older unfinished {task} (“{question}”): I keep at "
                         "most {limit} open at a time.")


class ScheduleLines(LineGroup):
    """Scheduled tasks and reminders (triggers)."""

    reminder: str = "⏰ Reminder: {text}"
    schedule_approval_expired: str = ("Your task “{name}” did not go ahead: the approval it "
                                      "needed expired.")
    # To the owner, once a day per person and limit, when someone asks for more lasting work
    # (tasks, schedules) than their budget allows ({name}: who, {reason}: which limit).
    budget_exceeded: str = "{name} asked for more than their budget allows: {reason}."
    # Which limit (also what the person hears; numbers in the reader's locale).
    budget_too_many_tasks: str = ("too many tasks: {active} are set up and the limit is "
                                  "{limit}; delete or pause one first")
    budget_too_often: str = ("too often: a task that needs me to think can run at most every "
                             "{minutes} minutes, and this one would run every {every}")
    # A triggered run (a scheduled task, an event) held back by the person's rate limit; said
    # once for a burst.
    trigger_rate_limited: str = ("I held back some of your scheduled work: too much ran in the "
                                 "last minute. It runs again at its next time.")
    schedule_none: str = "You have no scheduled tasks."
    schedule_listing: str = "Your tasks:\n{tasks}"
    about_tasks: str = "your reminders and scheduled tasks"


class CommandLines(LineGroup):
    """Slash commands (bot/turn/commands.py): what each says, and its line in /help and in
    Telegram's command menu (`about_<command>`; /tasks, /memory and /forget have theirs in
    their own groups)."""

    command_unknown: str = "I don't know {command}. /help lists what I understand."
    command_owner_only: str = "Only the owner can do that."
    help_text: str = "Commands:\n{commands}\nAnything else, just say it."
    start_text: str = ("Hi! I'm {name}, your assistant. Ask me anything, or send /help to see "
                       "what else I understand.")
    pending_none: str = "Nothing is waiting for your approval or your answer."
    pending_tasks: str = "Waiting for your answer:\n{tasks}"
    cancel_nothing: str = "Nothing is waiting for your answer, so there's nothing to cancel."
    stop_nothing_running: str = "Nothing is running right now."
    link_already_known: str = ("You're already known here. Send \"/link\" here to get a code, "
                               "then \"/link CODE\" from your other account.")
    link_code: str = ("Your link code is {code}. Within 10 minutes, send \"/link {code}\" to me "
                      "from your other account (Telegram or SMS) and I'll know it's you there "
                      "too.")
    whoami: str = "You are {name}; timezone {timezone}; linked: {linked}."
    about_help: str = "what I understand"
    about_pending: str = "what waits for your OK or your answer"
    about_cancel: str = "drop the task waiting for your answer"
    about_stop: str = "stop what I'm doing right now"
    about_link: str = "join another channel (Telegram, SMS) to you"
    about_whoami: str = "who I think you are, and what is linked"
    about_pair: str = "let a new person in: /pair list | approve CODE | deny CODE"
    about_start: str = "say hello"
    # /debug (the owner's; an unknown command to anyone else), and /debug USER.
    debug_nothing_traced: str = "None of your turns has been traced yet."
    debug_nothing_traced_for: str = "No turn of {who} has been traced yet."
    about_debug: str = "what your last turn did, step by step (or /debug USER)"


class Lines(ConversationLines, ApprovalLines, TaskLines, ScheduleLines, CommandLines,
            AccessLines, BudgetLines, MemoryLines, MailLines, SmsLines, TelegramLines,
            TerminalLines, WebConsoleLines, AgentLines, LanguageLines, WhenLines, CardLines,
            ScheduleWordLines):
    """Every line; a persona's `lines:` overrides any of them by name."""


DEFAULT = Lines()  # the defaults, for parts used without a persona (tests, tools)
