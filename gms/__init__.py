"""GMS: validates proposals, applies them as versioned aspects, emits change logs, serves reads."""
