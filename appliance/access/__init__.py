"""Access control: the one module that decides (deny by default).

- ``rules``: the subject and chunk attributes and what the policy's words mean;
- ``policy``: the Casbin enforcer over ``policies/`` and the site's policy file, hot-reloaded;
- ``filter_compiler``: permissions as a filter pushed into every engine's search;
- ``guard``: the three checks on a question's path, lookups that deny like "not found";
- ``break_glass``: time-limited emergency access with a reason, every use reported;
- ``events``: how policy changes and emergency access reach the audit trail;
- ``subjects``: the local users of the embedded default.
"""

from appliance.access.guard import AccessDenied, AccessGuard, AccessScope, Decision, NotFound
from appliance.access.rules import Resource, Subject

__all__ = [
    "AccessDenied",
    "AccessGuard",
    "AccessScope",
    "Decision",
    "NotFound",
    "Resource",
    "Subject",
]
