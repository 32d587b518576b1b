"""The spec the form builds, as the CLI takes it: its YAML and a `fastlab run` command to paste.

One place for both, so that the page's YAML view and its "copy as command" say the same as the
spec the server validated (its defaults filled in: the command reproduces the run on a machine
whose defaults changed)."""

from __future__ import annotations

from fastlab.define.schema import ExperimentSpec

DELIMITER = "FASTLAB_SPEC"


def spec_yaml(spec: ExperimentSpec) -> str:
    return spec.to_yaml()


def run_command(spec: ExperimentSpec) -> str:
    """A shell command that writes the spec to <name>.yaml and runs it. The name matches the spec's
    name pattern (letters, digits, '_', '.', '-'; no leading '-'): safe as a word in a shell; the here
    document is quoted, so nothing in the YAML is expanded."""
    text = spec_yaml(spec)
    delimiter = DELIMITER
    while delimiter in text.splitlines():
        delimiter += "_"
    return f"cat > {spec.name}.yaml <<'{delimiter}'\n{text}{delimiter}\nsudo fastlab run {spec.name}.yaml\n"
