"""``omxfs ui``: the supervisor's web app. It reads the store (and the logs) through the store's own modules and
acts only through the same store calls the CLI makes; nothing here knows a zone rule of its own.

- ``feed``: every event of the store (commits, conflicts, deliveries, realtime writes, checkpoints, audit records,
  omx runs), found by polling directory stamps, and handed to the open pages.
- ``pages``: what each page shows, read from the store.
- ``shown``: untrusted text (names, messages, contents) cut and with its control characters made visible.
- ``guard``: the token, Host and Origin checks every request passes first.
- ``app``: the Starlette routes, templates and actions.
"""
