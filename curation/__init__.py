"""golden's domain layer: sampling, pooling, assignment, agreement, leak check, export, storage.

Everything here works without the web app; the ``golden`` CLI and ``judging_app`` are thin layers
over it.
"""

__version__ = "0.1.0"
