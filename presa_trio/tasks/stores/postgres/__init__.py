"""``postgresql://…``: the task store many presa processes share, one module per topic.

- :mod:`~presa_trio.tasks.stores.postgres.store`:
  :class:`~presa_trio.tasks.stores.postgres.store.PostgresStore`, each
  protocol method as one unit of work, and how the store contract is kept;
- :mod:`~presa_trio.tasks.stores.postgres.database`: the connections, and
  running a unit of work on one off the Trio thread;
- :mod:`~presa_trio.tasks.stores.postgres.schema`: the tables, their trigger
  and functions, and upgrading an older schema;
- :mod:`~presa_trio.tasks.stores.postgres.event_logs`: the task event logs'
  tables and statements;
- :mod:`~presa_trio.tasks.stores.postgres.listen`: LISTEN/NOTIFY, read on the
  Trio thread, for task changes and event appends alike;
- :mod:`~presa_trio.tasks.stores.postgres.relay`: the server's own change
  notifications (list changed, resource updated), carried between processes;
- :mod:`~presa_trio.tasks.stores.postgres.errors`: what psycopg raises, as the
  store's three error classes.

psycopg is an optional dependency: nothing outside this package imports it.
"""
