"""What tools and agents may use (agents.services.Services), and mail: approved mail is stored
(keyed by its approval id) and sent once, the deliverer retrying what the server did not take
and telling the person the outcome."""

from __future__ import annotations

from agents.email.delivery import DeliveryPolicy, MailDelivery, stored_accounts
from agents.email.outbox import MailOutbox
from agents.services import Services
from bot.app.base import Base
from bot.app.memory import Memory
from bot.app.stores import Stores
from bot.gateway.others import OutboxMessenger
from bot.gateway.outbound import Outbound
from triggers.service import TaskService


def build_mail(base: Base, stores: Stores, outbound: Outbound) -> MailDelivery:
    policy = DeliveryPolicy()
    return MailDelivery(MailOutbox(base.db, lease=policy.lease), base.clock,
                        stored_accounts(stores.credentials), lines=base.persona.lines,
                        policy=policy, notify=outbound.notify,
                        language_of=stores.users.language_of)


def build_services(base: Base, stores: Stores, outbound: Outbound, tasks: TaskService,
                   mail: MailDelivery, memory: Memory | None) -> Services:
    return Services(
        users=stores.users, pool=stores.pool, credentials=stores.credentials,
        stores=stores.agents, tasks=tasks, mail=mail,
        messages_to_others=OutboxMessenger(  # "text Ana that ..."
            base.db, outbound.outbox, stores.identities, base.clock, outbound.senders,
            outbound.wake, max_per_day=base.settings.contacts.max_messages_per_day,
            assistant_name=base.persona.name),
        memory=memory.service if memory else None, channels=base.channels)
