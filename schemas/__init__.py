"""Entity registry, Avro schemas and codecs: the vocabulary every other package speaks."""
