"""The query service (``sharpdp serve``; the ``service`` extra: FastAPI and uvicorn).

:func:`~sharpdp.service.app.create_app` builds the FastAPI app from a validated
:class:`~sharpdp.service.config.ServiceConfig` (:func:`~sharpdp.service.config.load` reads the
TOML file). Modules: :mod:`~sharpdp.service.config` (the TOML config), :mod:`~sharpdp.service.auth`
(bearer tokens as salted scrypt hashes), :mod:`~sharpdp.service.queries` (JSON bodies → data-layer
queries, a registry), :mod:`~sharpdp.service.sessions` (data sets on DuckDB, one session per
data set, analyst and period), :mod:`~sharpdp.service.releases` (stored releases, each with its
spend), :mod:`~sharpdp.service.app` (the routes).
"""
