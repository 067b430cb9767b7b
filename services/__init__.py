"""Litestar services (JSON API, clinician UI, compliance UI): later work."""
