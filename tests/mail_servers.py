"""A throwaway mail server for the email tests: a real Dovecot (IMAP) on a free 127.0.0.1
port, torn down after the test (the SMTP side is tests/fakes/smtp_server.py).

Dovecot runs in the foreground (`dovecot -F -c CONF`) from a temp dir holding its config,
base_dir, state_dir, log, a passwd-file with one user and the user's Maildir. Plain logins
without TLS are allowed (loopback only). Dovecot refuses uid 0 for mail, so as root the mail
belongs to `nobody`; otherwise to the current user, and no service is chrooted (only root
may). Test mail is delivered with IMAP APPEND (stdlib imaplib: a second, independent client),
which also sets flags and arrival dates.
"""

from __future__ import annotations

import contextlib
import grp
import imaplib
import os
import pwd
import shutil
import socket
import subprocess
import tempfile
import time
from collections.abc import Iterator
from datetime import datetime
from pathlib import Path

from tests.ports import free_port

DOVECOT = shutil.which("dovecot") or "/usr/sbin/dovecot"
USER, PASSWORD = "alice@example.org", "correct horse battery"


def dovecot_missing() -> str | None:
    """Why Dovecot cannot run here, or None."""
    if not os.path.exists(DOVECOT):
        return (f"dovecot not installed ({DOVECOT}); install dovecot-imapd "
                "(tests/ci_services.sh does)")
    return None


def _config(root: Path, port: int, mail_user: str, mail_group: str, login_user: str,
            internal_user: str, internal_group: str, *, chroot: bool) -> str:
    # Only root may chroot: as anyone else the login and anvil services run without one
    # (Dovecot's rootless installation).
    jail = "" if chroot else "\n  chroot ="
    return f"""
protocols = imap
listen = 127.0.0.1
base_dir = {root}/run
state_dir = {root}/state
instance_name = valet-test-{port}
log_path = {root}/dovecot.log
ssl = no
disable_plaintext_auth = no
auth_mechanisms = plain login
auth_failure_delay = 0
default_login_user = {login_user}
default_internal_user = {internal_user}
default_internal_group = {internal_group}
first_valid_uid = 1
mail_uid = {mail_user}
mail_gid = {mail_group}
mail_location = maildir:{root}/mail/%u
passdb {{
  driver = passwd-file
  args = scheme=PLAIN username_format=%u {root}/users
}}
userdb {{
  driver = static
  args = uid={mail_user} gid={mail_group} home={root}/mail/%u
}}
service anvil {{{jail}
}}
service imap-login {{{jail}
  inet_listener imap {{
    address = 127.0.0.1
    port = {port}
  }}
  inet_listener imaps {{
    port = 0
  }}
}}
"""


class ThrowawayDovecot:
    """A Dovecot IMAP server with one user (USER / PASSWORD)."""

    def __init__(self) -> None:
        self.root = Path(tempfile.mkdtemp(prefix="valet-dovecot-"))
        self.root.chmod(0o755)  # the mail user (nobody) must reach its Maildir
        self.port = 0
        self.proc: subprocess.Popen[bytes] | None = None

    def start(self) -> ThrowawayDovecot:
        if os.getuid() == 0:  # the users the dovecot package creates; mail must not be root's
            mail_user, mail_group = "nobody", "nogroup"
            login_user, internal_user, internal_group = "dovenull", "dovecot", "dovecot"
        else:
            mail_user = login_user = internal_user = pwd.getpwuid(os.getuid()).pw_name
            # Dovecot looks groups up by name (a number is taken for a name: "Group doesn't
            # exist: 1001").
            mail_group = internal_group = grp.getgrgid(os.getgid()).gr_name
        (self.root / "mail").mkdir()
        (self.root / "users").write_text(f"{USER}:{{PLAIN}}{PASSWORD}::::::\n")
        if os.getuid() == 0:
            shutil.chown(self.root / "mail", mail_user, mail_group)
        self.port = free_port()
        conf = self.root / "dovecot.conf"
        conf.write_text(_config(self.root, self.port, mail_user, mail_group, login_user,
                                internal_user, internal_group, chroot=os.getuid() == 0))
        self.proc = subprocess.Popen([DOVECOT, "-F", "-c", str(conf)],
                                     stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
        deadline = time.monotonic() + 15
        while time.monotonic() < deadline:
            if self.proc.poll() is not None:
                err = self.proc.stderr.read().decode() if self.proc.stderr else ""
                raise RuntimeError(f"dovecot exited: {err[-800:]}\n{self.log()[-800:]}")
            with contextlib.suppress(OSError), socket.create_connection(
                    ("127.0.0.1", self.port), timeout=0.5) as s:
                if s.recv(64).startswith(b"* OK"):
                    return self
            time.sleep(0.05)
        self.stop()
        raise RuntimeError("dovecot did not start within 15 s")

    def log(self) -> str:
        with contextlib.suppress(OSError):
            return (self.root / "dovecot.log").read_text(errors="replace")
        return ""

    def stop(self) -> None:
        if self.proc is not None and self.proc.poll() is None:
            self.proc.terminate()
            try:
                self.proc.wait(timeout=10)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait(timeout=5)
        self.proc = None
        shutil.rmtree(self.root, ignore_errors=True)

    @contextlib.contextmanager
    def client(self) -> Iterator[imaplib.IMAP4]:
        """An independent (stdlib) client, logged in, INBOX selected."""
        imap = imaplib.IMAP4("127.0.0.1", self.port, timeout=10)
        try:
            imap.login(USER, PASSWORD)
            imap.select("INBOX")
            yield imap
        finally:
            with contextlib.suppress(Exception):
                imap.logout()

    def deliver(self, raw: bytes, *, seen: bool = False,
                arrived: datetime | None = None) -> str:
        """Put a message in the INBOX; its UID."""
        with self.client() as imap:
            when = imaplib.Time2Internaldate(arrived) if arrived else None
            status, data = imap.append("INBOX", "(\\Seen)" if seen else None, when, raw)
            assert status == "OK", data
            return data[0].decode().split("APPENDUID ")[1].split()[1].rstrip("]")

    def flags(self, uid: str) -> str:
        with self.client() as imap:
            status, data = imap.uid("FETCH", uid, "(FLAGS)")
            assert status == "OK", data
            return str(data[0])


@contextlib.contextmanager
def dovecot_server() -> Iterator[ThrowawayDovecot]:
    server = ThrowawayDovecot().start()
    try:
        yield server
    finally:
        server.stop()
