"""The project store: tables, engine, migrations, users, projects, and the shared lookups."""
