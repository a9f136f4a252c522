"""Events: the audit log read as an event log, and what is built on it (issue 25).

* :mod:`taskcore.events.log`: the event view of an audit event, who may see it, and the
  horizon below which the log is final (the stream's and the fan-out's reads);
* :mod:`taskcore.events.stream`: ``GET /v1/events`` (server-sent events) over the log;
* :mod:`taskcore.events.webhooks`, :mod:`taskcore.events.webhook_delivery`: signed webhooks
  (Standard Webhooks) through the outbox (:mod:`taskcore.outbox`);
* :mod:`taskcore.events.netguard`: no outbound request reaches a private address unless the
  operator allowed it;
* :mod:`taskcore.events.operations`: the operations (``observe.events``, the webhook acts).
"""
