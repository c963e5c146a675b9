"""``sqlite:///PATH``: the task store in one SQLite file, one module per topic.

- :mod:`~presa_trio.tasks.stores.sqlite.store`:
  :class:`~presa_trio.tasks.stores.sqlite.store.SqliteStore`, its two
  connections, opening the file, and each protocol method;
- :mod:`~presa_trio.tasks.stores.sqlite.lock`: the lock that keeps a second
  server off the file;
- :mod:`~presa_trio.tasks.stores.sqlite.event_logs`: the task event logs'
  tables and statements;
- :mod:`~presa_trio.tasks.stores.sqlite.errors`: what :mod:`sqlite3` raises, as
  the store's three error classes.
"""
