"""Serve the web app on 127.0.0.1:8080 (override with --host/--port): uvicorn with webapp.asgi in
front (live streams as coroutines, so a class can watch a run; other requests through Flask).

The topologies offered are those installed (entry points of group fastlab.topologies) and the files
listed in FASTLAB_TOPOLOGIES (os.pathsep-separated .py files or folders); a spec naming a topology file is
refused.

Binding beyond loopback needs an access token of at least 16 characters (FASTLAB_TOKEN,
--token-file, or --token, which `ps` shows to every user); open
http://HOST:PORT/?token=TOKEN once in the browser to set the cookie.

A client is the address its connection comes from: X-Forwarded-For is believed only from the reverse
proxy that `--trusted-proxy ADDR` names (which then names its clients), never by default.
"""

import argparse
import ipaddress
import os
import signal
import sys

import uvicorn

from fastlab.define.topology import only_catalogued
from webapp import create_app
from webapp.asgi import make_asgi, server_config

SHUTDOWN_WAIT_S = 60  # a run's teardown takes seconds; the next start cleans up whatever is left
STREAMS_CLOSE_S = 3  # on a signal, open event streams get this long before the server stops serving

parser = argparse.ArgumentParser(prog="python -m webapp")
parser.add_argument("--host", default="127.0.0.1")
parser.add_argument("--port", type=int, default=8080)
parser.add_argument("--token", default=os.environ.get("FASTLAB_TOKEN"),
                    help="access token, required off loopback (default: $FASTLAB_TOKEN; visible in ps: "
                         "prefer --token-file or the environment)")
parser.add_argument("--token-file", help="read the access token from this file (first line)")
parser.add_argument("--instructor-token-file",
                    help="read the instructor's token from this file (first line; default $FASTLAB_INSTRUCTOR_TOKEN): "
                         "it may cancel, delete and change every run, where a student acts only on their own")
parser.add_argument("--max-running", type=int, default=None,
                    help="runs going at once at most (default 4; each also within the machine's CPU budget, "
                         "fastlab.experiment.cost); 1 runs them one at a time")
parser.add_argument("--cluster", metavar="ADDRESS",
                    help="run queued experiments on this Dask scheduler's workers (`fastlab cluster worker`, "
                         "one per lab machine), e.g. tcp://10.0.0.5:8786; default: in this process")
parser.add_argument("--trusted-proxy", metavar="ADDR",
                    help="the address of a reverse proxy in front of this server: its X-Forwarded-For names the "
                         "client (no one else's is believed); default: the client is the connection's address")
args = parser.parse_args()
if args.max_running is not None and not 1 <= args.max_running <= 64:
    parser.error(f"--max-running: from 1 to 64, not {args.max_running}")
if args.trusted_proxy is not None:
    try:
        args.trusted_proxy = str(ipaddress.ip_address(args.trusted_proxy))
    except ValueError:
        parser.error(f"--trusted-proxy: {args.trusted_proxy[:60]!r} is not an IP address")


def first_line(path: str, option: str) -> str:
    try:
        with open(path, encoding="utf-8") as fh:
            return fh.readline(4096).strip()
    except (OSError, UnicodeDecodeError) as exc:
        parser.error(f"{option} {path}: {exc}")


if args.token_file:
    args.token = first_line(args.token_file, "--token-file")
instructor = (first_line(args.instructor_token_file, "--instructor-token-file") if args.instructor_token_file
              else os.environ.get("FASTLAB_INSTRUCTOR_TOKEN"))
cluster = None
if args.cluster:
    from fastlab.service.cluster import Cluster, ClusterError
    try:
        cluster = Cluster.connect(args.cluster)
    except ClusterError as exc:
        parser.error(str(exc))
# A server imports only the topologies installed (entry points) or configured by its instructor
# (FASTLAB_TOPOLOGIES, offered by name in the form): never a file a request names.
only_catalogued("the web app imports no topology file a spec names: pick a topology by name (the instructor "
                "installs one, or lists its file in FASTLAB_TOPOLOGIES before starting the server)")
try:  # refuses an off-loopback host without a token, and weak tokens
    app = create_app(host=args.host, token=args.token, instructor_token=instructor, cluster=cluster,
                     **({"max_running": args.max_running} if args.max_running is not None else {}))
except ValueError as exc:
    parser.error(str(exc))


def stop(signum: int, _frame: object) -> None:
    """Ctrl-C / SIGTERM: the running experiment is stopped and cleaned up before the process exits.
    uvicorn takes the signal first (it stops serving), then hands it on to this handler."""
    print(f"fastlab web app: signal {signum}: stopping the running experiment, then exiting", flush=True)
    clean = app.extensions["fastlab_runs"].shutdown(SHUTDOWN_WAIT_S)
    if cluster is not None:
        cluster.close()
    sys.exit(0 if clean else 1)


signal.signal(signal.SIGTERM, stop)
signal.signal(signal.SIGINT, stop)
print(f"fastlab web app on http://{args.host}:{args.port}", flush=True)
uvicorn.Server(server_config(make_asgi(app, trusted_proxy=args.trusted_proxy), args.host, args.port,
                             timeout_graceful_shutdown=STREAMS_CLOSE_S)).run()
stop(signal.SIGTERM, None)  # served until a signal uvicorn did not hand on: still stop cleanly
