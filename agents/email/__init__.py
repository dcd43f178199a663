"""Email: read the person's mailbox over IMAP, send over SMTP with approval."""
