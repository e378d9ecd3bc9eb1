"""One module per CLI command (or command group); ``flowforge.cli.COMMANDS`` lists them."""
