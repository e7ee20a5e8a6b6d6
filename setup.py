"""Packaging beyond pyproject.toml: the top-level `migrations/` folder ships inside the wheel.

pyproject's `packages.find` cannot add a package that lives under another directory name, so the
package list is built here: host*, modules*, and `migrations/` installed as `feedeater_migrations`
(host.migrate reads it from there when it does not run from a source checkout).
"""

from setuptools import find_packages, setup

setup(
    packages=[*find_packages(include=["host", "host.*", "modules", "modules.*"]), "feedeater_migrations"],
    package_dir={"feedeater_migrations": "migrations"},
    package_data={
        "host": ["py.typed"],  # type information for modules written elsewhere (mypy reads the host's hints)
        "feedeater_migrations": ["*/*.sql"],
        # The web console's templates and static files (host/console, each module's console package).
        "host.console": ["templates/*.html", "static/*"],
        "modules.rss.console": ["templates/rss/*.html"],
        "modules.digest.console": ["templates/digest/*.html"],
    },
)
