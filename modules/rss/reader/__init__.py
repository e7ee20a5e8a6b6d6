"""Front doors for the reader apps people already use, over the rss module's reading functions.

miniflux.py serves the Miniflux API v1 (`/v1/...`), greader.py the Google Reader API in the
FreshRSS/BazQux dialect (`/accounts/ClientLogin`, `/reader/api/0/...`, `/reader/atom/...`). Both are
thin: requests are parsed and answers shaped by pure functions (minifluxwire.py, greaderwire.py), and
every read or write goes through modules.rss.store (reading.py for entries and their read/starred
state, folders.py for categories/labels), the same functions the CLI, the REST API and the console
call, so a change made in one is what all the others see. Credentials: host.web.clientauth.
"""
