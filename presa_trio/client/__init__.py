"""A command-line client for any 2026-07-28 server, over Streamable HTTP or stdio.

``presa-trio discover``, ``list``, ``describe``, ``call``, ``read``, ``prompt``,
``complete``, ``listen``, ``request``, ``task``, ``login`` and ``logout``
(:mod:`.commands`) speak the wire as the spec writes it, from the client's
side. It knows only the wire, the facts both ends share: the request ``_meta`` keys
(:mod:`presa_trio.wire.meta`), the mirrored headers and which params they
mirror (:mod:`presa_trio.wire.headers`), the multi round-trip answer readers
(:mod:`presa_trio.wire.mrtr`), the schema validator
(:mod:`presa_trio.wire.schemas`), the Tasks extension's id and statuses
(:mod:`presa_trio.wire.tasks`), the SSE parser (:mod:`presa_trio.wire.sse`)
and the transcript records (:mod:`presa_trio.wire.transcript`, appended
with the server's own :mod:`presa_trio.transcript_file`); a child's stdout
is split into lines by the server's own :mod:`presa_trio.line_reader`. No module of the
server, its HTTP edge or the Tasks runtime is imported
(tests/test_import_graph.py).

======================  ==========================================================
module                  holds
======================  ==========================================================
``transport``           one exchange per request: HTTP POST (JSON or SSE), stdio lines
``connection``          ids, ``_meta``, headers, pagination, telling a legacy server
``arguments``           ``key=value`` typed from a schema, checked before sending
``signatures``          a tool's or prompt's call as one typed line
``answers``             input requests answered from flags, a file, or a person
``prompting``           the person at the terminal
``follow``              a task's life: its events, listen or poll, update, cancel
``events``              a task's event stream, resumed after every cut (SEP-2694)
``task_stream``         ``task stream``: the events printed as they come
``tool_headers``        tools whose ``x-mcp-header`` is invalid, left out
``oauth``               sign-in: discovery, registration, code with PKCE, client
                        credentials, refresh
``loopback``            the sign-in's redirect: a listener on 127.0.0.1 (RFC 8252)
``assertion``           ``private_key_jwt``: a JWT signed with the client's key
``signin``              the kept token sent, refreshed, or a sign-in on a 401
``signin_transcript``   the sign-in's exchanges in the transcript, credentials left out
``tokens``              sign-ins kept per server, files of mode 0600
``output``              results on stdout; status, logs and ``-v`` on stderr
``streams``             stdout cut by its reader, or full; a stream closed at the start
``options``             the commands' parser, importable without httpx
``run``                 one command's connection, console and follower; finding a tool
``commands``            the commands, and the table of them all
``describe``            ``describe TOOL``
``complete``            ``complete``: completion/complete
``listen``              ``listen``: subscriptions/listen
``raw``                 ``request METHOD JSON``: anything else, as it is
``errors``              one-line failures, their JSON documents, the exit statuses
======================  ==========================================================
"""
