"""fastlab.results.client against the real server (uvicorn in front of the app, as `python -m webapp` serves
it; issue 36 item 3): the history, a refused spec in the server's one line, the access token, and a
real 4-s run submitted, followed and fetched as a verified bundle into fastlab.results.api."""

from __future__ import annotations

from pathlib import Path

import pytest

from fastlab.results import api as results
from fastlab.results.client import Client, ClientError
from tests.webapp.conftest import good_spec
from tests.webapp.test_charts import RUN, write_lossy_fast_run
from webapp import create_app

TOKEN = "a-token-of-at-least-sixteen-chars"


def test_history_refusals_and_a_recorded_runs_results(tmp_path: Path, live_server_factory) -> None:
    write_lossy_fast_run(tmp_path / "results")
    app = create_app(results_root=tmp_path / "results", start_worker=False, cleanup_on_start=False)
    lab = Client(live_server_factory(app).url, timeout_s=20)
    assert [r["id"] for r in lab.runs()] == [RUN]
    with pytest.raises(ClientError) as err:
        lab.validate(good_spec(duration_s=0))
    assert err.value.status == 422 and "duration" in str(err.value) and "\n" not in str(err.value)
    with pytest.raises(ClientError) as err:
        lab.run("nope")
    assert err.value.status == 404
    run = lab.results(RUN, tmp_path / "fetched")
    assert isinstance(run, results.Run) and run.summary.flows[0].id == "f1"
    assert (tmp_path / "fetched" / f"{RUN}.zip").is_file()


def test_a_server_with_a_token_wants_it(tmp_path: Path, live_server_factory) -> None:
    app = create_app(results_root=tmp_path / "results", start_worker=False, cleanup_on_start=False, token=TOKEN)
    url = live_server_factory(app).url
    with pytest.raises(ClientError) as err:
        Client(url).runs()
    assert err.value.status == 401
    assert Client(url, token=TOKEN).runs() == []
    with pytest.raises(ClientError, match="cannot reach"):
        Client("http://127.0.0.1:9", timeout_s=2).runs()  # nothing listens on the discard port


@pytest.mark.alone  # a real experiment
@pytest.mark.timeout(180)
def test_submit_follow_and_fetch_a_real_run(tmp_path: Path, live_server_factory) -> None:
    app = create_app(results_root=tmp_path / "results", cleanup_on_start=False)
    lab = Client(live_server_factory(app).url, timeout_s=20)
    queued = lab.submit(good_spec(name="client-run", duration_s=4, links={}))
    assert lab.wait(queued["id"], timeout_s=150, poll_s=0.5) == "done"
    run = lab.results(queued["id"])
    assert run.name == "client-run" and len(run.flows) > 0 and run.flows["t"].max() > 3
    assert run.table("flows")["throughput_mbps"].iloc[0] > 0
