"""The web services on Litestar: the JSON API, the clinician's and the compliance officer's
pages, sessions and CSRF, and the operations endpoints (``appliance-web serve``)."""
