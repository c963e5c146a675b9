"""The command line, ``presa-trio``: the server's edge for an operator, and the client's.

==================  ==========================================================
module              holds
==================  ==========================================================
``entry``           ``presa-trio`` itself: ``main`` loaded, a Ctrl-C while it loads exit 130
``main``            the parser of every command, and ``serve``/``stdio``/``transcript``
``option_values``   argparse value types, the check of options that need another, the usage error
``task_options``    the Tasks options: the task limits and task event streams
``target``          ``MODULE:ATTR``, loaded as the ``Server`` to serve
``reload``          ``serve --reload``: the server as a child, restarted on a change
``collector``       the garbage collector, set once the server is built
==================  ==========================================================

The client's own commands are :mod:`presa_trio.client.commands`; the parser
here only hands them over. No library module imports this package (an option
that needs another is declared with :class:`presa_trio.needed_options.NeedsOption`).
"""
