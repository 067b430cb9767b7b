"""Bearer tokens from the hospital's identity provider (OpenID Connect ID or access
tokens, i.e. signed JWTs), checked against the provider's keys in a JWKS file the site
installs: no network fetch. The token's ``sub`` names a user of the subjects directory,
which says what they may read; a token for anyone else is refused."""

from __future__ import annotations

import json
from pathlib import Path

from joserfc import jwt
from joserfc.errors import JoseError
from joserfc.jwk import KeySet

ALGORITHMS = ["RS256", "PS256", "ES256", "EdDSA"]


class InvalidToken(ValueError):
    """The token is malformed, badly signed, expired, or for another audience."""


class TokenValidator:
    def __init__(self, jwks_file: Path, issuer: str | None, audience: str | None) -> None:
        try:
            self._keys = KeySet.import_key_set(json.loads(jwks_file.read_text("utf-8")))
        except (OSError, ValueError, JoseError) as error:
            raise ValueError(
                f"cannot read the identity provider's keys {jwks_file}: {error}"
            ) from error
        required: dict[str, dict[str, object]] = {
            "exp": {"essential": True},
            "sub": {"essential": True},
        }
        if issuer:
            required["iss"] = {"essential": True, "value": issuer}
        if audience:
            required["aud"] = {"essential": True, "value": audience}
        self._claims = jwt.JWTClaimsRegistry(**required)  # type: ignore[arg-type]

    def user_id(self, token: str) -> str:
        """The ``sub`` of a valid token."""
        try:
            decoded = jwt.decode(token, self._keys, algorithms=ALGORITHMS)
            self._claims.validate(decoded.claims)
        except (JoseError, ValueError) as error:
            raise InvalidToken(str(error) or type(error).__name__) from error
        return str(decoded.claims["sub"])
