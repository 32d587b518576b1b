"""What pyproject.toml cannot state: the packages (found, not listed), and the project's top-level data
folders shipped inside the package. labs/ and examples/ stay at the top of the checkout, where docs/design.md §2
puts them; a wheel carries them as fastlab/_data/labs and fastlab/_data/examples, where
fastlab.base.paths.data_dir finds them when the package is not a checkout's. topologies/, webapp/ and
controllers/ install as the top-level packages they are in the checkout, under the same names."""

from setuptools import find_packages, setup

DATA = {"fastlab._data.labs": "labs", "fastlab._data.examples": "examples"}

setup(
    packages=find_packages(include=["fastlab", "fastlab.*", "topologies", "webapp", "controllers"]) + list(DATA),
    package_dir=DATA,
    package_data={**{name: ["**/*"] for name in DATA}, "fastlab": ["templates/*"],
                  "webapp": ["templates/**/*", "static/**/*"], "controllers": ["*.md"]},
    exclude_package_data={"": ["__pycache__/*", "*.pyc", "**/__pycache__/*"]},
)
