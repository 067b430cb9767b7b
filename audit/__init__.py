"""The tamper-evident audit log: standard library and ``cryptography`` only, so that an
auditor can verify a copy of the log with this package alone.

- ``merkle``: the RFC 6962 / 9162 tree, inclusion and consistency proofs;
- ``store``: the record format of the append-only entries file;
- ``entries``: canonical JSON entries with a schema version;
- ``checkpoints``: Ed25519-signed, chained tree heads; the signing key;
- ``log``: appending (durable, group commit, many processes), proofs;
- ``reader``: reading a log without writing to it;
- ``verify``: checking everything, naming the first bad entry or checkpoint;
- ``index``: the secondary index for queries, rebuilt from the log, never trusted;
- ``cli``: the ``audit`` command.
"""
