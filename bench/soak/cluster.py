#!/usr/bin/env python3
"""A throwaway PostgreSQL cluster for the soak (bench/soak/run.sh with BACKEND=postgresql).

Starts bench/postgresql/benchdb.py's cluster (durable settings: fsync on), creates one database, writes its
connection string to the file given as the only argument, and keeps the cluster up until SIGTERM/SIGINT, when it
stops it and removes its directory.
"""
import signal
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "postgresql"))
import benchdb  # noqa: E402  (registers the SIGTERM/SIGINT handlers that run the cluster's atexit stop)

cluster = benchdb.BenchCluster()
database = cluster.create_database("soak")
Path(sys.argv[1] + ".tmp").write_text(cluster.connection_string(database))
Path(sys.argv[1] + ".tmp").rename(sys.argv[1])
while True:
    signal.pause() if hasattr(signal, "pause") else time.sleep(3600)
