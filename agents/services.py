"""What tools and agents may use beyond their arguments, typed: built once by the composition
root (bot/app) and handed to every call as `ctx.services`. The core carries it without looking
inside (it knows no agent); a tool reads it with `services_of(ctx)`."""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING

from bot.contracts.channels import ChannelTraits
from bot.contracts.tool_context import ToolExecutionContext

if TYPE_CHECKING:  # the modules that use the services import this one
    from agents.email.delivery import MailDelivery
    from agents.email.message import HeadersLookup
    from agents.stores import AgentStores
    from bot.credentials import CredentialStore
    from bot.gateway.others import OutboxMessenger
    from bot.memory.service import MemoryService
    from bot.people.users import UserStore
    from bot.tasks.pool import AgentPool
    from triggers.service import TaskService


@dataclass(frozen=True)
class Services:
    users: UserStore
    pool: AgentPool  # agents waiting for the person's answer
    credentials: CredentialStore  # connected services' secrets, encrypted at rest
    stores: AgentStores  # notes, reminders, plans, contacts
    messages_to_others: OutboxMessenger  # "text Ana that ...": one outbox row per approval
    tasks: TaskService  # scheduled tasks and reminders (the trigger side)
    mail: MailDelivery  # approved mail, stored and sent once
    memory: MemoryService | None = None  # None: long-term memory is turned off
    # How a reply finds the original's headers (None: over IMAP); a deployment may swap it.
    mail_headers: HeadersLookup | None = None
    # Every channel Valet has (channels.registry), as the core knows them: where a person may
    # be reached, and how a message to someone else goes.
    channels: tuple[ChannelTraits, ...] = ()


class ServicesUnavailable(RuntimeError):
    """A tool that needs Valet's services ran without them (a bare context)."""


def services_of(ctx: ToolExecutionContext) -> Services:
    found = ctx.services
    if isinstance(found, Services):
        return found
    raise ServicesUnavailable("this needs Valet's stores and services, which are not "
                              "available here")
