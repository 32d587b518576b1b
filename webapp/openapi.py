"""The OpenAPI 3.1 document of the web app's JSON API.

The request bodies' schemas are the models that validate them (the engine's ExperimentSpec, the lab
step's RunRequest), emitted by pydantic as JSON Schema 2020-12, which is OpenAPI 3.1's dialect (its
`const`, `anyOf [.., {"type": "null"}]` and `$defs` are not OpenAPI 3.0): the document says 3.1.0
and passes openapi-spec-validator (test). A nullable field is `"type": [T, "null"]`, not 3.0's
`nullable`. Every route under /api/ is documented and every documented operation exists (test).
"""

from __future__ import annotations

from typing import Any

from fastlab.define.schema import ExperimentSpec


def document() -> dict[str, Any]:
    from webapp import sweeps
    from webapp.guided import BundleRequest, RunRequest
    from webapp.services import RUN_ID_RE

    lab_run_request = RunRequest.model_json_schema()  # the models that validate the bodies
    bundle_request = BundleRequest.model_json_schema()
    sweep_request = sweeps.SweepRequest.model_json_schema()
    spec_schema = ExperimentSpec.model_json_schema(ref_template="#/components/schemas/{model}")
    defs = spec_schema.pop("$defs", {})
    run_id = {"name": "run_id", "in": "path", "required": True,
              "schema": {"type": "string", "pattern": RUN_ID_RE.pattern}}
    csrf = {"name": "X-CSRF-Token", "in": "header", "required": True, "schema": {"type": "string"},
            "description": "the per-app token embedded in every page (meta csrf-token)"}
    error = {"description": "rejected; `error` is the engine's one-line message naming the field",
             "content": {"application/json": {"schema": {"$ref": "#/components/schemas/Error"}}}}
    json_spec = {"required": True, "content": {"application/json": {
        "schema": {"$ref": "#/components/schemas/ExperimentSpec"}}}}
    lab = {"name": "lab", "in": "path", "required": True, "schema": {"type": "string", "maxLength": 100},
           "description": "lab number (1, 01), folder name (01-long-fat-pipes) or slug"}
    class_id = {"name": "class_id", "in": "path", "required": True,
                "schema": {"type": "string", "pattern": "^c[0-9a-f]{10}$"}}
    step = {"name": "step", "in": "path", "required": True,
            "schema": {"type": "string", "pattern": "^[A-Za-z0-9][A-Za-z0-9_-]{0,15}$"}}

    figure = [{"name": "name", "in": "query", "required": False, "description": "the figure (default timeseries)",
               "schema": {"type": "string", "enum": ["timeseries", "cdf", "box", "repeats"]}},
              {"name": "format", "in": "query", "required": False, "description": "the file format (default pdf)",
               "schema": {"type": "string", "enum": ["pdf", "png", "svg"]}},
              {"name": "wide", "in": "query", "required": False, "description": "1: a page wide, 0: a column",
               "schema": {"type": "string", "enum": ["0", "1"]}}]
    figure_file = {"description": "the figure (fastlab plot's), as an attachment", "content": {
        media: {"schema": {"type": "string", "format": "binary"}}
        for media in ("application/pdf", "image/png", "image/svg+xml")}}

    def returns(description: str, schema: str, array: bool = False) -> dict[str, Any]:
        item = {"$ref": f"#/components/schemas/{schema}"}
        return {"description": description, "content": {"application/json": {
            "schema": {"type": "array", "items": item} if array else item}}}

    return {
        "openapi": "3.1.0",
        "info": {"title": "fastlab web app API", "version": "1.0",
                 "description": "Run TCP congestion-control experiments, watch live traces, download bundles. "
                                "State-changing requests need the X-CSRF-Token header and a JSON body; off "
                                "loopback every request also needs the access token (X-Fastlab-Token header "
                                "or fastlab_token cookie)."},
        "paths": {
            "/api/runs": {
                "get": {"summary": "list runs (history and queue), a page at a time", "operationId": "listRuns",
                        "parameters": [{"name": "page", "in": "query", "required": False,
                                        "description": "the page, from 1 (newest first)",
                                        "schema": {"type": "integer", "minimum": 1, "maximum": 999999}},
                                       {"name": "per_page", "in": "query", "required": False,
                                        "description": "runs a page (default 100)",
                                        "schema": {"type": "integer", "minimum": 1, "maximum": 1000}}],
                        "responses": {"200": {"description": "a page of runs, newest first; the number of runs in "
                                                             "all in X-Total-Count, the next page (if any) in Link "
                                                             "(rel=next)",
                                              "content": {"application/json": {
                            "schema": {"type": "array", "items": {"$ref": "#/components/schemas/Run"}}}}},
                            "400": error}},
                "post": {"summary": "submit an experiment (queued)", "operationId": "submitRun",
                         "parameters": [csrf], "requestBody": json_spec,
                         "responses": {"201": {"description": "queued", "content": {"application/json": {
                             "schema": {"$ref": "#/components/schemas/Run"}}}},
                             "400": error, "403": error, "413": error, "415": error, "422": error}}},
            "/api/traces": {
                "post": {"summary": "upload a mahimahi packet-delivery trace (the file's bytes as the body, at "
                                    "most 8 MiB); a spec's links.X.trace then names it by the answer's reference",
                         "operationId": "uploadTrace",
                         "parameters": [csrf,
                                        {"name": "field", "in": "query", "required": True,
                                         "description": "the spec field it is for: links.<link>.trace or "
                                                        "links.<link>.reverse.trace (its errors name it)",
                                         "schema": {"type": "string"}},
                                        {"name": "name", "in": "query", "required": False,
                                         "description": "the file's name, for messages only (never a path)",
                                         "schema": {"type": "string"}}],
                         "requestBody": {"required": True, "content": {"application/octet-stream": {
                             "schema": {"type": "string", "format": "binary"}}}},
                         "responses": {"201": {"description": "checked and stored", "content": {
                             "application/json": {"schema": {"type": "object", "properties": {
                                 "trace": {"type": "string", "description": "upload:<sha256>"},
                                 "name": {"type": "string"}, "lines": {"type": "integer"},
                                 "period_ms": {"type": "integer"}, "size_bytes": {"type": "integer"},
                                 "mean_rate_mbps": {"type": "number"}}}}}},
                             "400": error, "403": error, "413": error, "415": error, "422": error,
                             "507": error}}},
            "/api/runs/{run_id}": {
                "get": {"summary": "one run", "operationId": "getRun", "parameters": [run_id],
                        "responses": {"200": {"description": "the run", "content": {"application/json": {
                            "schema": {"$ref": "#/components/schemas/Run"}}}}, "404": error}},
                "delete": {"summary": "delete a run that is not queued or running: its folder and history row",
                           "operationId": "deleteRun", "parameters": [run_id, csrf],
                           "responses": {"200": {"description": "deleted", "content": {"application/json": {
                               "schema": {"type": "object", "properties": {"deleted": {"type": "string"}}}}}},
                               "403": error, "404": error, "409": error}}},
            "/api/queue": {
                "get": {"summary": "the queue's admission: the runs going with their predicted cores and the "
                                   "decisions that started them, and the last decision about the queue's head",
                        "operationId": "getQueue",
                        "responses": {"200": {"description": "running (id, cost, admission), max_running, head "
                                                             "(start, why, running_cores, candidate_cores, "
                                                             "budget_cores, cost, figures) or null",
                                              "content": {"application/json": {"schema": {"type": "object"}}}}}}},
            "/api/sweeps": {
                "get": {"summary": "the latest sweeps", "operationId": "listSweeps",
                        "responses": {"200": {"description": "sweeps, newest first (id, name, param, values, "
                                                             "repeat, created, url)",
                                              "content": {"application/json": {"schema": {
                                                  "type": "array", "items": {"type": "object"}}}}}}},
                "post": {"summary": "sweep one field of a spec over values: every point checked, then each queued "
                                    "as a run", "operationId": "submitSweep", "parameters": [csrf],
                         "requestBody": {"required": True, "content": {"application/json": {
                             "schema": {"$ref": "#/components/schemas/SweepRequest"}}}},
                         "responses": {"201": returns("queued; `url` is its page", "Sweep"), "400": error,
                                       "403": error, "413": error, "415": error, "422": error, "429": error}}},
            "/api/sweeps/{sweep_id}": {
                "get": {"summary": "a sweep: its runs' statuses and the aggregate per value (mean, min, max, theory)",
                        "operationId": "getSweep",
                        "parameters": [{"name": "sweep_id", "in": "path", "required": True,
                                        "schema": {"type": "string", "pattern": sweeps.SWEEP_ID_RE.pattern}}],
                        "responses": {"200": returns("the sweep", "Sweep"), "404": error}}},
            "/api/sweeps/parameters": {
                "post": {"summary": "the parameters a sweep of the posted spec can vary, in words with units "
                                    "(the form's list): path, label, unit, symbol",
                         "operationId": "sweepParameters", "parameters": [csrf],
                         "requestBody": {"required": True, "content": {"application/json": {"schema": {
                             "type": "object", "required": ["spec"], "properties": {"spec": {"type": "object"}}}}}},
                         "responses": {"200": {"description": "the parameters",
                                               "content": {"application/json": {"schema": {
                                                   "type": "array", "items": {"type": "object"}}}}},
                                       "400": error, "403": error, "415": error, "422": error}}},
            "/api/sweeps/{sweep_id}/bundle": {
                "get": {"summary": "the sweep's finished runs as a sweep folder in a zip with its SHA-256 "
                                   "manifest (fastlab bundle verify / replay --point)",
                        "operationId": "getSweepBundle",
                        "parameters": [{"name": "sweep_id", "in": "path", "required": True,
                                        "schema": {"type": "string", "pattern": sweeps.SWEEP_ID_RE.pattern}}],
                        "responses": {"200": {"description": "the bundle",
                                              "content": {"application/zip": {"schema": {
                                                  "type": "string", "format": "binary"}}}},
                                      "404": error}}},
            "/api/compare": {
                "get": {"summary": "finished runs side by side: traces to overlay, the spec fields that differ, "
                                   "results per run (the page /compare?runs=... draws it)",
                        "operationId": "compareRuns",
                        "parameters": [{"name": "runs", "in": "query", "required": True,
                                        "schema": {"type": "string", "maxLength": 2000},
                                        "description": "2 to 8 run ids separated by commas"}],
                        "responses": {"200": returns("the comparison", "Comparison"), "404": error, "409": error,
                                      "422": error}}},
            "/api/compare/figure": {
                "get": {"summary": "a publication figure of the runs compared (as fastlab plot draws it)",
                        "operationId": "compareFigure",
                        "parameters": [{"name": "runs", "in": "query", "required": True,
                                        "schema": {"type": "string", "maxLength": 2000},
                                        "description": "2 to 8 run ids separated by commas"}, *figure],
                        "responses": {"200": figure_file, "400": error, "404": error, "409": error,
                                      "422": error}}},
            "/api/runs/{run_id}/figure": {
                "get": {"summary": "a publication figure of a finished run (as fastlab plot draws it)",
                        "operationId": "runFigure", "parameters": [run_id, *figure],
                        "responses": {"200": figure_file, "400": error, "404": error, "409": error,
                                      "422": error}}},
            "/api/sweeps/{sweep_id}/figure": {
                "get": {"summary": "a publication figure of a sweep's finished, faithful runs (as fastlab plot "
                                   "draws it)", "operationId": "sweepFigure",
                        "parameters": [{"name": "sweep_id", "in": "path", "required": True,
                                        "schema": {"type": "string", "pattern": sweeps.SWEEP_ID_RE.pattern}},
                                       *figure],
                        "responses": {"200": figure_file, "400": error, "404": error, "409": error,
                                      "422": error}}},
            "/api/runs/{run_id}/cancel": {
                "post": {"summary": "cancel a queued run, or stop a running one (partial traces kept)",
                         "operationId": "cancelRun", "parameters": [run_id, csrf],
                         "responses": {"200": {"description": "cancelled"}, "403": error, "404": error,
                                       "409": error}}},
            "/api/runs/{run_id}/cc": {
                "post": {"summary": "change a running run's algorithm parameters now, for one host (e.g. FAST's "
                                    "alpha); recorded as a cc_set event and in environment.json",
                         "operationId": "setRunCC", "parameters": [run_id, csrf],
                         "requestBody": {"required": True, "content": {"application/json": {
                             "schema": {"$ref": "#/components/schemas/LiveChange"}}}},
                         "responses": {"200": returns("applied: host, cc, the checked args and the run time",
                                                      "LiveChange"),
                                       "403": error, "404": error, "409": error, "422": error}}},
            "/api/runs/{run_id}/references": {
                "get": {"summary": "the theory's lines of the run's charts, one span per part between parameter "
                                   "changes, and a marker per change (at_s, text, live)",
                        "operationId": "getRunReferences", "parameters": [run_id],
                        "responses": {"200": {"description": "refs (fastlab.theory.fast per flow, with from_s and "
                                                             "to_s), lines (chart -> its lines: results.chart_lines) "
                                                             "and changes",
                                              "content": {"application/json": {"schema": {"type": "object"}}}},
                                      "404": error}}},
            "/api/runs/{run_id}/events": {
                "get": {"summary": "live samples as Server-Sent Events (history first, then live)",
                        "operationId": "streamRun", "parameters": [run_id],
                        "responses": {"200": {"description": "events `samples` (data: JSON array of samples), "
                                                             "`status` (queue position/state), `end`",
                                              "content": {"text/event-stream": {"schema": {"type": "string"}}}},
                                      "404": error}}},
            "/api/runs/{run_id}/checkpoints": {
                "get": {"summary": "a lab step run's checkpoints, evaluated on its finished run directory",
                        "operationId": "runCheckpoints", "parameters": [run_id],
                        "responses": {"200": returns("each checkpoint: pass/fail, measured value, expected "
                                                     "range and why that tolerance", "Checkpoints"),
                                      "404": error, "409": error, "500": error}}},
            "/api/labs": {
                "get": {"summary": "the guided labs (a lab that cannot be loaded carries `error`)",
                        "operationId": "listLabs", "responses": {"200": returns("labs by number", "Lab", True)}}},
            "/api/labs/{lab}": {
                "get": {"summary": "one lab: handout (Markdown), steps with their resolved specs and checkpoints",
                        "operationId": "getLab", "parameters": [lab],
                        "responses": {"200": returns("the lab", "Lab"), "404": error, "500": error}}},
            "/api/labs/{lab}/steps/{step}/run": {
                "post": {"summary": "queue a lab step as an ordinary run (the step's spec, default or short form)",
                         "operationId": "runLabStep", "parameters": [lab, step, csrf],
                         "requestBody": {"required": False, "content": {"application/json": {
                             "schema": {"$ref": "#/components/schemas/LabRunRequest"}}}},
                         "responses": {"201": returns("queued", "Run"), "400": error, "403": error, "404": error,
                                       "415": error, "422": error}}},
            "/api/runs/{run_id}/bundle": {
                "get": {"summary": "the run as a zip with MANIFEST.sha256", "operationId": "downloadBundle",
                        "parameters": [run_id],
                        "responses": {"200": {"description": "zip", "content": {"application/zip": {
                            "schema": {"type": "string", "format": "binary"}}}}, "404": error, "409": error}},
                "post": {"summary": "the run's bundle with the student's answers to its lab added as answers.md "
                                    "(listed in MANIFEST.sha256 like every other file)",
                         "operationId": "downloadBundleWithAnswers", "parameters": [run_id, csrf],
                         "requestBody": {"required": True, "content": {"application/json": {
                             "schema": {"$ref": "#/components/schemas/BundleRequest"}}}},
                         "responses": {"200": {"description": "zip", "content": {"application/zip": {
                             "schema": {"type": "string", "format": "binary"}}}},
                                       "400": error, "403": error, "404": error, "409": error, "413": error,
                                       "415": error}}},
            "/api/validate": {
                "post": {"summary": "validate a spec exactly as a submit would (nothing is queued)",
                         "operationId": "validateSpec", "parameters": [csrf], "requestBody": json_spec,
                         "responses": {"200": {"description": "valid; the resolved spec and backends, the spec as YAML "
                                                              "and as a `fastlab run` command"},
                                       "400": error, "403": error, "413": error, "415": error, "422": error}}},
            "/api/schema": {
                "get": {"summary": "everything the experiment form is generated from", "operationId": "formSchema",
                        "responses": {"200": {"description": "spec schema, topologies, CCs, presets, limits"}}}},
            "/api/topologies": {
                "get": {"summary": "topology catalogue", "operationId": "listTopologies",
                        "responses": {"200": {"description": "topologies with their argument schemas"}}}},
            "/api/topologies/{name}": {
                "get": {"summary": "hosts and shaped links of a topology for given arguments",
                        "operationId": "topologyPlan",
                        "parameters": [{"name": "name", "in": "path", "required": True,
                                        "schema": {"type": "string", "pattern": "^[a-z0-9_-]{1,32}$"}},
                                       {"name": "args", "in": "query", "required": False,
                                        "schema": {"type": "string"}, "description": "topology_args as JSON"}],
                        "responses": {"200": {"description": "hosts, shaped links"}, "404": error, "422": error}}},
            "/api/openapi.json": {
                "get": {"summary": "this document (OpenAPI 3.1)", "operationId": "openapiDocument",
                        "responses": {"200": {"description": "the OpenAPI document", "content": {
                            "application/json": {"schema": {"type": "object"}}}}}}},
            "/api/ccs": {
                "get": {"summary": "usable congestion controls with their parameters", "operationId": "listCCs",
                        "responses": {"200": {"description": "algorithms"}}}},
            "/api/theory/red": {
                "post": {"summary": "lab 10's model (fastlab.theory.red) at N flows: the handout's calculator",
                         "operationId": "redModel", "parameters": [csrf],
                         "requestBody": {"required": True, "content": {"application/json": {"schema": {
                             "type": "object", "required": ["flows"], "properties": {
                                 "flows": {"type": "array", "items": {"type": "number"}, "maxItems": 10},
                                 **{k: {"type": "number"} for k in ("capacity_mbps", "mtu", "rtt_ms", "min_th",
                                                                    "max_th", "max_p", "wq")}}}}}},
                         "responses": {"200": {"description": "capacity_pps and one row of figures per point: "
                                                              "window, drop rate, q*, RTT, loop gain, HMTG's "
                                                              "condition, exact gain margin, stable"},
                                       "400": error, "403": error, "415": error, "422": error}}},
            # --- a class (webapp.classes): students join with a code and a name; the instructor's token
            "/api/class/join": {
                "post": {"summary": "join a class with its code and a display name (sets the fastlab_student cookie)",
                         "operationId": "joinClass", "parameters": [csrf],
                         "requestBody": {"required": True, "content": {"application/json": {"schema": {
                             "type": "object", "required": ["code", "name"],
                             "properties": {"code": {"type": "string"},
                                            "name": {"type": "string", "maxLength": 40}}}}}},
                         "responses": {"201": returns("the student", "Student"), "400": error, "403": error,
                                       "404": error, "409": error}}},
            "/api/class/leave": {
                "post": {"summary": "this browser forgets the student (runs and answers stay with the class)",
                         "operationId": "leaveClass", "parameters": [csrf],
                         "responses": {"200": {"description": "left"}, "403": error}}},
            "/api/class/me": {
                "get": {"summary": "the student of this browser, or null", "operationId": "whoAmI",
                        "responses": {"200": {"description": "{student: Student | null}"}}}},
            "/api/class/answers/{lab}": {
                "get": {"summary": "the student's saved answer boxes of a lab", "operationId": "getAnswers",
                        "parameters": [lab], "responses": {"200": returns("the boxes", "Answers"), "401": error,
                                                           "404": error}},
                "post": {"summary": "save answer boxes, box by box (the later `edited` wins); answers every stored box",
                         "operationId": "saveAnswers", "parameters": [lab, csrf],
                         "requestBody": {"required": True, "content": {"application/json": {"schema": {
                             "$ref": "#/components/schemas/Answers"}}}},
                         "responses": {"200": returns("every stored box of the lab", "Answers"), "400": error,
                                       "401": error, "403": error, "415": error, "422": error}}},
            "/api/instructor/session": {
                "post": {"summary": "the instructor's token typed once becomes the fastlab_instructor cookie",
                         "operationId": "instructorSignIn", "parameters": [csrf],
                         "requestBody": {"required": True, "content": {"application/json": {"schema": {
                             "type": "object", "properties": {"token": {"type": "string"}}}}}},
                         "responses": {"200": {"description": "signed in"}, "403": error, "404": error}}},
            "/api/classes": {
                "get": {"summary": "the classes (instructor)", "operationId": "listClasses",
                        "responses": {"200": returns("classes", "Class", True), "403": error, "404": error}},
                "post": {"summary": "create a class: a name and a join code (six letters if none) (instructor)",
                         "operationId": "createClass", "parameters": [csrf],
                         "requestBody": {"required": True, "content": {"application/json": {"schema": {
                             "type": "object", "required": ["name"], "properties": {
                                 "name": {"type": "string", "maxLength": 80}, "code": {"type": "string"}}}}}},
                         "responses": {"201": returns("the class", "Class"), "403": error, "409": error,
                                       "422": error}}},
            "/api/classes/{class_id}": {
                "get": {"summary": "the class as a whole: students, per lab and step their runs and checkpoints, "
                                   "answers, the plot's points, who is stuck (instructor)",
                        "operationId": "classView", "parameters": [class_id],
                        "responses": {"200": {"description": "the view"}, "403": error, "404": error}}},
            "/api/classes/{class_id}/export.csv": {
                "get": {"summary": "one row per run, checkpoint and answer (instructor)", "operationId": "classCsv",
                        "parameters": [class_id],
                        "responses": {"200": {"description": "CSV", "content": {"text/csv": {
                            "schema": {"type": "string"}}}}, "403": error, "404": error}}},
            "/api/classes/{class_id}/bundle": {
                "get": {"summary": "the class as a zip with MANIFEST.sha256: the CSV, the view, each student's "
                                   "answers, each run's spec, summary and checkpoints (instructor)",
                        "operationId": "classBundle", "parameters": [class_id],
                        "responses": {"200": {"description": "zip", "content": {"application/zip": {
                            "schema": {"type": "string", "format": "binary"}}}}, "403": error, "404": error}}},
        },
        "components": {"schemas": {
            **defs,
            "ExperimentSpec": spec_schema,
            "Error": {"type": "object", "properties": {
                "error": {"type": "string"},
                "field": {"type": "string", "description": "422: the spec path the refusal names (may be empty)"},
                "message": {"type": "string", "description": "422: the refusal in words for students"}},
                "required": ["error"]},
            "Run": {"type": "object", "properties": {
                "id": {"type": "string"}, "name": {"type": "string"}, "status": {"type": "string",
                                                                                "enum": ["queued", "running", "done",
                                                                                         "failed", "interrupted",
                                                                                         "cancelled"]},
                "position": {"type": ["integer", "null"]}, "error": {"type": ["string", "null"]},
                "topology": {"type": "string"}, "created": {"type": ["string", "null"]},
                "started": {"type": ["string", "null"]}, "summary": {"type": ["object", "null"]},
                "spec": {"type": ["object", "null"]},
                "lab": {"type": ["string", "null"], "description": "lab folder of a lab step run"},
                "lab_step": {"type": ["string", "null"]},
                "lab_short": {"type": ["boolean", "null"]}}},
            "SweepRequest": sweep_request,
            "Sweep": {"type": "object", "properties": {
                "id": {"type": "string"}, "name": {"type": "string"}, "param": {"type": "string"},
                "values": {"type": "array"}, "repeat": {"type": "integer"}, "total": {"type": "integer"},
                "finished": {"type": "integer"}, "done": {"type": "integer"},
                "points": {"type": "array", "items": {"type": "object"}},
                "aggregate": {"type": "array", "items": {"type": "object"},
                              "description": "per value: runs, done, metrics -> {mean, min, max, theory}"}}},
            "Comparison": {"type": "object", "required": ["runs", "differences", "metrics", "series"], "properties": {
                "runs": {"type": "array", "items": {"type": "object"},
                         "description": "id, name, topology, started, url"},
                "differences": {"type": "array", "items": {"type": "object", "properties": {
                    "field": {"type": "string", "description": "spec field path, e.g. flows[0].cc_args.alpha"},
                    "values": {"type": "array", "description": "one per run, null where absent"}}}},
                "metrics": {"type": "array", "items": {"type": "object", "properties": {
                    "quantity": {"type": "string"}, "unit": {"type": "string"}, "values": {"type": "array"}}}},
                "series": {"type": "array", "description": "per run: flows (t, goodput_mbps, cwnd_pkts, srtt_ms) "
                                                            "and links (t, backlog_pkts), thinned",
                           "items": {"type": "object"}}}},
            "LiveChange": {"type": "object", "additionalProperties": False, "required": ["host", "args"],
                           "properties": {"host": {"type": "string", "description": "a sending host of the run"},
                                          "cc": {"type": "string", "default": "fast"},
                                          "args": {"type": "object", "description": "parameters, e.g. alpha"},
                                          "at_s": {"type": "number", "readOnly": True}}},
            "LabRunRequest": lab_run_request,
            "BundleRequest": bundle_request,
            "LabStep": {"type": "object", "properties": {
                "id": {"type": "string"}, "title": {"type": "string"},
                "spec": {"type": "string", "description": "spec file, relative to the lab folder"},
                "set": {"type": "array", "items": {"type": "string"}},
                "short": {"type": "array", "items": {"type": "string"}},
                "checkpoints": {"type": "array", "items": {"type": "object"}},
                "experiment": {"type": ["object", "null"], "description": "resolved spec (one lab)"},
                "experiment_short": {"type": ["object", "null"]},
                "error": {"type": ["string", "null"]}}},
            "Lab": {"type": "object", "required": ["number", "name", "url"], "properties": {
                "number": {"type": "integer"}, "name": {"type": "string"}, "slug": {"type": "string"},
                "title": {"type": "string"}, "summary": {"type": "string"}, "minutes": {"type": "number"},
                "url": {"type": "string"}, "error": {"type": "string", "description": "why the lab cannot be loaded"},
                "handout": {"type": "string", "description": "README.md (GET /api/labs/{lab})"},
                "steps": {"type": "array", "items": {"$ref": "#/components/schemas/LabStep"}}}},
            "CheckResult": {"type": "object", "properties": {
                "name": {"type": "string"}, "passed": {"type": "boolean"},
                "measured": {"type": ["number", "string", "null"]},
                "expected": {"type": "string", "description": "the accepted range"},
                "tolerance": {"type": "string", "description": "why the range is what it is"},
                "note": {"type": "string"},
                "quantity": {"type": "string", "description": "the measured quantity in the checkpoint's words"},
                "checks": {"type": "string", "description": "what the checkpoint is about (its docstring's first "
                                                             "sentence)"},
                "measured_text": {"type": "string", "description": "the measured figure as shown (3 digits)"},
                "one_draw": {"type": "boolean", "description": "a claim judged over repeated runs (draws), not "
                                                               "on this one: it does not enter the step's status"},
                "recorded_draws": {"type": "string", "description": "one_draw: what the step's recorded draws "
                                                                    "say of it, in words"},
                "result": {"type": "string", "description": "the figure against its range in words, e.g. "
                                                            "'measured 19.6 packets; expected between 17.5 and 20.5 "
                                                            "packets: in range'"}}},
            "Checkpoints": {"type": "object", "properties": {
                "run": {"type": "string"}, "lab": {"type": "integer"}, "lab_name": {"type": "string"},
                "step": {"type": "string"}, "short": {"type": "boolean"}, "passed": {"type": "boolean"},
                "checks": {"type": "array", "items": {"$ref": "#/components/schemas/CheckResult"}},
                "skipped": {"type": "array", "description": "a short run: the checkpoints it leaves out, with why",
                            "items": {"type": "object", "properties": {"name": {"type": "string"},
                                                                       "why": {"type": "string"}}}}}},
            "Student": {"type": "object", "properties": {
                "id": {"type": "string"}, "name": {"type": "string"}, "class_id": {"type": "string"},
                "class_name": {"type": "string"}}},
            "Class": {"type": "object", "properties": {
                "id": {"type": "string"}, "name": {"type": "string"}, "code": {"type": "string"},
                "created": {"type": "string"}, "students": {"type": "integer"}}},
            "Answers": {"type": "object", "required": ["items"], "properties": {
                "lab": {"type": "string"},
                "items": {"type": "array", "maxItems": 100, "items": {"type": "object", "properties": {
                    "key": {"type": "string", "pattern": "^[a-z0-9][a-z0-9-]{0,39}$"}, "label": {"type": "string"},
                    "prompt": {"type": "string"}, "text": {"type": "string", "maxLength": 20000},
                    "edited": {"type": "number", "description": "when the student typed it, ms since 1970"},
                    "updated": {"type": "string", "readOnly": True}}}}}},
        }},
    }
