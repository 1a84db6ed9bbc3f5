"""The ``clonebench`` command: one module per subcommand, registered in ``main``."""
