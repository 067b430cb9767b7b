"""Commands on a data directory whose embedded stores the web service holds.

The embedded stores admit one process. While ``appliance-web serve`` runs on them, the
operator's ``ingest``, ``docs remove``, ``search``, ``ask`` and ``eval`` send their work
to the service
(``appliance.owner`` says where it answers and which token it accepts), which does it
one document at a time between the questions it answers, instead of waiting for stores
that will not open. On the store servers the commands open the stores themselves.
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from typing import Any

import httpx

from appliance.cli.common import errors, fail
from appliance.index.stores import single_process_reason
from appliance.owner import StoreOwner, current
from appliance.settings import Settings


class RunningService:
    def __init__(self, owner: StoreOwner) -> None:
        self.owner = owner
        self._client = httpx.Client(
            base_url=owner.url,
            headers={"authorization": f"Bearer {owner.token}"},
            timeout=httpx.Timeout(10.0, read=None),  # an ingestion takes what it takes
        )

    def post(self, path: str, body: dict[str, Any]) -> Any:
        """The service's answer; its refusal or silence as the command's error."""
        try:
            response = self._client.post(f"/api/operator/{path}", json=body)
        except httpx.HTTPError as error:
            raise self._silent(error) from None
        self._raise_refusal(response)
        return response.json()

    def lines(self, path: str, body: dict[str, Any]) -> Iterator[dict[str, Any]]:
        """The service's answer as it comes, a JSON object per line (long work that
        reports its progress)."""
        try:
            with self._client.stream("POST", f"/api/operator/{path}", json=body) as response:
                if response.status_code >= 400:
                    response.read()
                self._raise_refusal(response)
                for line in response.iter_lines():
                    if line.strip():
                        yield json.loads(line)
        except httpx.HTTPError as error:
            raise self._silent(error) from None

    def _silent(self, error: httpx.HTTPError) -> Exception:
        return fail(
            f"the web service (pid {self.owner.pid}) holds the stores but did not answer "
            f"at {self.owner.url} ({error}); wait for it or stop it, then run again",
            code=3,
        )

    @staticmethod
    def _raise_refusal(response: httpx.Response) -> None:
        if response.status_code >= 400:
            detail = response.json().get("detail", response.text) if response.content else ""
            raise fail(str(detail), code=2 if response.status_code < 500 else 3)

    def close(self) -> None:
        self._client.close()


def running_service(settings: Settings | None = None) -> RunningService | None:
    """The service to send the work to, when it holds this data directory's stores."""
    settings = settings or Settings()
    if single_process_reason(settings) is None:
        return None
    owner = current(settings.data_dir)
    if owner is None:
        return None
    errors.print(
        f"[dim]the web service (pid {owner.pid}) holds the stores: the work is sent to it[/dim]"
    )
    return RunningService(owner)
