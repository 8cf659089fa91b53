"""The project store: tables, engine, migrations, users, projects, the queries' information needs
(``needs``) and the shared lookups; the judging app's login sessions (``sessions``), login throttling
(``throttle``), the audit trail (``audit``) and the store's own settings such as its cookie-signing
key (``settings``). Three domain rules live here, each in one module that everything else asks:
who may do what (``roles``), a project's grade scale (``scale``) and the pool's provenance, the
runs' rankings of each pair (``provenance``)."""
