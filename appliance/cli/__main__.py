"""``python -m appliance.cli``: the ``appliance`` command."""

from appliance.cli import main

main()
