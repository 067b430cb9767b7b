"""The tamper-evident audit log (Merkle tree, signed checkpoints, verifier): later work."""
