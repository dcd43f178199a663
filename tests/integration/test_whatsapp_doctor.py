"""`valet doctor` on WhatsApp, through the real twilio client against the fake Twilio: the
account (shared with SMS), the sender, each template of whatsapp.templates (there, approved),
the webhook address; WhatsApp alone leaves SMS off."""

from __future__ import annotations

from tests.integration import test_doctor_setup as setup
from tests.integration.test_doctor_setup import PUBLIC, failures, twilio_env

doctor, twilio = setup.doctor, setup.twilio  # its fixtures

SANDBOX = "+14155238886"


async def test_a_healthy_whatsapp_set_up_is_all_good(doctor, twilio):
    template = twilio.whatsapp.add_template("Valet reminds you: {{1}}")
    code, lines = await doctor(
        f"whatsapp:\n  sandbox_join: join shiny-cat\n  templates:\n    reminder: {template}\n",
        **twilio_env(twilio, VALET_PUBLIC_URL=PUBLIC, VALET_WHATSAPP_FROM_NUMBER=SANDBOX))
    assert code == 0, lines
    assert "  ok    Twilio account 'Test account'" in lines
    assert "  ok    WhatsApp template for reminder: 'template_0', approved" in lines
    said = "\n".join(lines)
    assert "join shiny-cat" in said and f"{PUBLIC}/whatsapp/inbound" in said
    assert "SMS: set VALET" in said or "SMS" not in [line.split()[1] for line in lines
                                                     if line.startswith("  ok")]
    assert twilio.auth_token not in said


async def test_a_template_whatsapp_has_not_approved_is_a_problem(doctor, twilio):
    template = twilio.whatsapp.add_template("Hi {{1}}", approved=False)
    code, lines = await doctor(
        f"whatsapp:\n  templates:\n    notice: {template}\n",
        **twilio_env(twilio, VALET_PUBLIC_URL=PUBLIC, VALET_WHATSAPP_FROM_NUMBER=SANDBOX))
    assert code == 1
    assert failures(lines) == [
        "whatsapp.templates.notice: 'template_0' is not submitted for WhatsApp, not approved: "
        "until it is, such messages outside the 24-hour window fail (Twilio console, Content "
        "Template Builder)"]


async def test_a_template_twilio_does_not_know_is_named(doctor, twilio):
    code, lines = await doctor(
        "whatsapp:\n  templates:\n    card: HX" + "0" * 32 + "\n",
        **twilio_env(twilio, VALET_PUBLIC_URL=PUBLIC, VALET_WHATSAPP_FROM_NUMBER=SANDBOX))
    assert code == 1
    assert failures(lines) == [
        f"whatsapp.templates.card: Twilio does not know the content template HX{'0' * 32} on "
        "this account (error 20404)"]
