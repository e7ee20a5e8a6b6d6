"""Packaging beyond pyproject.toml: the top-level `migrations/` folder ships inside the wheel.

pyproject's `packages.find` cannot add a package that lives under another directory name, so the
package list is built here: host*, modules*, and `migrations/` installed as `feedeater_migrations`
(host.migrate reads it from there when it does not run from a source checkout). Folders that hold only
data (templates, static files, each scope's migrations) are listed as namespace packages: setuptools
warns about a data folder that Python could import but the package list leaves out.
"""

from setuptools import find_namespace_packages, setup

MIGRATIONS = [
    "feedeater_migrations",
    *(f"feedeater_migrations.{p}" for p in find_namespace_packages("migrations")),
]

setup(
    packages=[*find_namespace_packages(include=["host", "host.*", "modules", "modules.*"]), *MIGRATIONS],
    package_dir={"feedeater_migrations": "migrations"},
    # Migrations, and the web console's templates and static files (host/console, each module's console).
    package_data={"": ["*.sql", "*.html", "*.css", "*.js", "py.typed"]},
)
