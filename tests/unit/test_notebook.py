"""The example notebook (examples/notebooks/fast-equilibrium.ipynb, issue 36 item 3) executes as a reader
would run it, with nbclient on a real Python kernel, against lab 02's recorded runs; its own assertions
(FAST's α fitted per flow from its events, equal rates, the queue near Σα) hold. The kernel talks over
Unix sockets (IPC), not TCP: no port is opened."""

from __future__ import annotations

from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[2]
NOTEBOOK = REPO / "examples" / "notebooks" / "fast-equilibrium.ipynb"


@pytest.mark.timeout(180)
def test_the_example_notebook_runs_and_its_assertions_hold(tmp_path: Path, monkeypatch) -> None:
    import nbclient
    import nbformat
    from jupyter_client.manager import KernelManager

    monkeypatch.setenv("PYTHONPATH", str(REPO))  # the kernel imports this checkout's fastlab
    notebook = nbformat.read(NOTEBOOK, as_version=4)
    kernel = KernelManager(kernel_name="python3", transport="ipc", ip=str(tmp_path / "kernel"))
    nbclient.NotebookClient(notebook, km=kernel, timeout=120, resources={"metadata": {"path": str(REPO)}}).execute()
    printed = "".join(out.get("text", "") for cell in notebook.cells for out in cell.get("outputs", [])
                      if out.get("output_type") == "stream")
    assert "f1: α fitted" in printed and "f2: α fitted" in printed, printed
    assert not [out for cell in notebook.cells for out in cell.get("outputs", []) if out.get("output_type") == "error"]
