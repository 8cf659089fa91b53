"""The project store: tables, engine, migrations, users, projects, the queries' information needs
(needs.py), and the shared lookups."""
