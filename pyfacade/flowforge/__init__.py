"""FlowForge's Python facade.

FlowForge is a workflow orchestrator that lives inside PostgreSQL: every rule
of execution is a PL/pgSQL function, constraint or trigger in schema
``flowforge``.  This package is only I/O around that SQL API — a CLI, a worker
SDK and a small daemon — so nothing here decides what a run or a task may do.
``Client`` is that API in Python, one method per function; everything else
here calls the database through it.
"""

__version__ = "0.1.0"

from .client import Client  # noqa: E402  (the SQL API in Python)
from .worker import Context, PermanentError, Worker  # noqa: E402  (the SDK's public names)

__all__ = ["Client", "Context", "PermanentError", "Worker", "__version__"]
