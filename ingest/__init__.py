"""Getting metadata in: proposals, their JSON forms, emitters and the event-log port."""
