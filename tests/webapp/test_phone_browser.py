"""Every page on a phone (issue 50 item 7): at 390 x 844 (an iPhone's viewport) no page scrolls sideways --
the document is no wider than the viewport; charts take the full width, tables and display maths scroll in
boxes of their own. The pages: home, the form, the labs list and every lab, a run (finished, queued, a
lab 02 and a lab 10 step run), its report, compare, the sweeps, the doctor, a class's pages for a student
and for the instructor, and a page that does not exist (a styled 404 with the navigation). Screenshots of
each go to test-artifacts/phone-*.png (looked at: issue 50's acceptance)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from fastlab.labs.kit import LABS_DIR, lab_folders
from tests.webapp.conftest import ARTIFACTS, good_spec
from tests.webapp.test_compare import A, B, write_run
from tests.webapp.test_labs_web import LAB02, register_lab_run
from tests.webapp.test_pages import write_report
from webapp import create_app

PHONE = {"width": 390, "height": 844}
INSTRUCTOR = "instructor-token-for-the-phone-test"
LAB02_RUN = "20261123-124630-lab02-fast-two-rtts"
LAB10_RUN = "20261127-120000-lab10-red-2g5"
WIDTH = "Math.max(document.documentElement.scrollWidth, document.body.scrollWidth)"
# what sticks out, for the message when a page is too wide
WIDE = """() => [...document.querySelectorAll('body *')].filter(e => e.getBoundingClientRect().right > 391)
  .filter(e => !e.closest('.scroll, pre, .charts .chart, math[display=block]')).slice(0, 5)
  .map(e => `${e.tagName.toLowerCase()}#${e.id}.${e.className} ${Math.round(e.getBoundingClientRect().right)}`)"""


@pytest.mark.timeout(600)
@pytest.mark.lengthy
def test_no_page_scrolls_sideways_on_a_phone(tmp_path: Path, live_server_factory, browser) -> None:
    ARTIFACTS.mkdir(exist_ok=True)
    root = tmp_path / "results"
    write_run(root, A, "fast-a10", "fast", 10, 18.0)
    write_run(root, B, "fast-a40", "fast", 40, 19.5)
    write_report(root, A)
    app = create_app(results_root=root, start_worker=False, cleanup_on_start=False, instructor_token=INSTRUCTOR)
    register_lab_run(app, LAB02_RUN, LAB02, "equilibrium")
    register_lab_run(app, LAB10_RUN, LABS_DIR / "10-red-scaling", "red-2g5")
    csrf = {"X-CSRF-Token": app.config["CSRF_TOKEN"]}
    client = app.test_client()
    queued = client.post("/api/runs", json=good_spec(), headers=csrf).get_json()["id"]
    sweep = client.post("/api/sweeps", headers=csrf, json={
        "spec": good_spec(links={}), "param": "flows.0.cc_args.alpha", "values": [10, 20]}).get_json()["url"]
    client.post("/api/instructor/session", json={"token": INSTRUCTOR}, headers=csrf)
    klass = client.post("/api/classes", json={"name": "Networks, lab group A", "code": "PHONE1"},
                        headers=csrf).get_json()
    server = live_server_factory(app)

    labs = [f"/labs/{n}" for n in range(1, len(lab_folders(LABS_DIR)) + 1)]
    pages = {"/": "home", "/new": "form", "/labs": "labs", **{u: f"lab{u.rsplit('/', 1)[1].zfill(2)}" for u in labs},
             "/doctor": "doctor", f"/runs/{A}": "results", f"/runs/{A}/report": "report", f"/runs/{queued}": "live",
             f"/runs/{LAB02_RUN}": "lab02-run", f"/runs/{LAB10_RUN}": "lab10-run", f"/compare?runs={A},{B}": "compare",
             "/sweeps": "sweeps", sweep: "sweep", "/class": "class-join", "/no/such/page": "404"}
    student = browser.new_context(viewport=PHONE)
    instructor = browser.new_context(viewport=PHONE)
    instructor.add_cookies([{"name": "fastlab_instructor", "value": INSTRUCTOR, "url": server.url}])
    wide: dict[str, Any] = {}

    def look(context: Any, url: str, name: str) -> None:
        page = context.new_page()
        page.goto(server.url + url, wait_until="load")
        page.wait_for_timeout(900)  # modules, fetches, charts
        page.screenshot(path=str(ARTIFACTS / f"phone-{name}.png"), full_page=True)
        width = page.evaluate(WIDTH)
        if width > PHONE["width"]:
            wide[url] = (width, page.evaluate(WIDE))
        page.close()

    for url, name in pages.items():
        look(student, url, name)
    # the class: a student who joined, the instructor's classes and the class's view
    join = student.new_page()
    join.goto(server.url + "/class")
    join.fill("#join-code", "phone1")
    join.fill("#join-name", "Ada Lovelace-Byron")
    join.click("#join")
    join.wait_for_selector("#class-who", timeout=15_000)  # the page reloads once joined
    join.close()
    look(student, "/class", "class-student")
    look(instructor, "/classes", "classes")
    look(instructor, klass["url"], "class-view")
    assert wide == {}, wide
    # the class plot's title stays within the plot (on one line it ran past both edges of a 390-px screen)
    view = instructor.new_page()
    view.goto(server.url + klass["url"])
    view.wait_for_selector("#class-plot .gtitle", timeout=15_000)
    edges = view.evaluate("""(() => { const t = document.querySelector('#class-plot .gtitle').getBoundingClientRect();
      const p = document.getElementById('class-plot').getBoundingClientRect();
      return [t.left - p.left, p.right - t.right]; })()""")
    assert min(edges) >= 0, edges
    view.close()
    # the 404 is a page of the app: its navigation, a way back, the status
    page = student.new_page()
    response = page.goto(server.url + "/no/such/page")
    assert response.status == 404
    assert page.locator("nav a[href='/labs']").count() == 1 and "not here" in page.inner_text("h1").lower()
