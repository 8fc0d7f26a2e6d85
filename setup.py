"""Maps tasks/, plugins/ and model_backends/ to avhb.tasks, avhb.plugins and
avhb.model_backends (see pyproject.toml); everything else is in pyproject."""
from setuptools import find_packages, setup

MAPPED = {"avhb": "avhb", "avhb.tasks": "tasks", "avhb.plugins": "plugins", "avhb.model_backends": "model_backends"}

packages = []
for package, folder in MAPPED.items():
    packages.append(package)
    packages += [f"{package}.{sub}" for sub in find_packages(folder)]
packages = sorted(set(packages))
package_dir = dict(MAPPED)
for package in packages:
    for prefix, folder in MAPPED.items():
        if package.startswith(prefix + ".") and prefix != "avhb":
            package_dir[package] = folder + "/" + package[len(prefix) + 1:].replace(".", "/")

setup(packages=packages, package_dir=package_dir)
