"""The operator's webhook commands on the service host: :class:`WebhookAdmin`.

Each method is one ``operator.webhook_*`` act through :class:`~taskcore.operator_ops.OperatorDesk`
(checked, one transaction, audited once). What the commands do beyond the act is here too:
``add`` takes the secret from the secret file (making one there if the file does not exist),
``test`` queues the test message and sends it at once, reporting how it went.

>>> import tempfile, pathlib
>>> data = pathlib.Path(tempfile.mkdtemp())
>>> with WebhookAdmin(data, create=True) as admin:
...     added = admin.add(workspace="w", url="http://127.0.0.1:9/hook", events=("agenttask.*",),
...                       secret_file=data / "hook.secret", allow_private_targets=True)
...     listed = admin.answer("operator.webhook_list", b"{}")
>>> added["endpoint"]["url"], (data / "hook.secret").stat().st_mode & 0o777
('http://127.0.0.1:9/hook', 384)
>>> "whsec_" in repr(listed)
False
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from taskcore.events.webhook_delivery import WebhookDelivery
from taskcore.events.webhooks import secret_for_file
from taskcore.operator_ops import OperatorDesk

__all__ = ["WebhookAdmin"]


class WebhookAdmin(OperatorDesk):
    """``agent-task admin webhook ...`` over the journal in ``data_dir``."""

    def add(
        self,
        *,
        workspace: str,
        url: str,
        events: tuple[str, ...],
        secret_file: Path | str,
        allow_private_targets: bool = False,
        description: str = "",
    ) -> Any:
        """``operator.webhook_add`` with the secret of ``secret_file`` (made if missing).

        The answer says whether the file was made (``secretFileCreated``); it never holds
        the secret.
        """
        secret, created = secret_for_file(secret_file)
        body = {
            "workspace": workspace,
            "url": url,
            "events": list(events),
            "secret": secret,
            "allow_private_targets": allow_private_targets,
            "description": description,
        }
        answer = self.answer("operator.webhook_add", json.dumps(body).encode("utf-8"))
        return {**answer, "secretFileCreated": created}

    def test(self, endpoint_id: str) -> Any:
        """``operator.webhook_test``, then one delivery attempt now; the delivery as it stands.

        A failed attempt stays queued: the service's worker retries it like any delivery.
        """
        queued = self.answer(
            "operator.webhook_test", json.dumps({"endpoint_id": endpoint_id}).encode("utf-8")
        )
        seq = int(queued["delivery"]["seq"])
        attempt = WebhookDelivery(self.service.storage, clock=self.service.clock).deliver_one(seq)
        rows = self.answer(
            "operator.webhook_deliveries",
            json.dumps({"endpoint_id": endpoint_id, "limit": 200}).encode("utf-8"),
        )["deliveries"]
        delivery = next((d for d in rows if d["seq"] == seq), queued["delivery"])
        return {
            "workspace": queued["workspace"],
            "delivery": delivery,
            "httpStatus": None if attempt is None else attempt.http_status,
        }
