"""The person's calendar: events read from ICS subscription URLs and CalDAV servers; events
created, moved and cancelled on CalDAV with the person's approval."""
