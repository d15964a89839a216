#!/usr/bin/env python3
# SPDX-License-Identifier: LGPL-2.1-or-later
"""contrib/grafana/nvme-apstd.json: well-formed JSON, a dashboard Grafana can
import (title, uid, panels with unique ids inside the 24-column grid, every
panel on the ${datasource} variable), the variables instance and controller,
every variable a query uses defined, and every query valid PromQL: each is
given to `promtool check rules` as a recording rule, with Grafana's
variables replaced by what Grafana would put there. That the queries name
only exported metrics is test-contrib-metric-names.sh.

Usage: test-grafana-dashboard.py DASHBOARD.json   (exit 77 without promtool)
Covers: contrib/grafana/nvme-apstd.json.
"""

import json
import os
import re
import shutil
import subprocess
import sys
import tempfile

PANEL_TYPES = {"row", "timeseries", "stat", "table", "state-timeline", "gauge", "bargauge", "text"}
# what Grafana substitutes for its built-in variables at query time
BUILTINS = {"__rate_interval": "4m", "__interval": "1m", "__range": "24h"}


def fail(msg):
    print("FAIL: " + msg)
    sys.exit(1)


def panels_of(dash):
    for p in dash.get("panels", []):
        yield p
        yield from p.get("panels", [])


def main():
    path = sys.argv[1]
    try:
        with open(path, encoding="utf-8") as f:
            dash = json.load(f)
    except (OSError, ValueError) as e:
        fail(f"{path}: not JSON: {e}")
    for key in ("title", "uid", "panels", "templating", "schemaVersion"):
        if key not in dash:
            fail(f"no '{key}' in the dashboard")

    variables = {v["name"]: v for v in dash["templating"]["list"]}
    for name in ("datasource", "instance", "controller"):
        if name not in variables:
            fail(f"no variable '{name}'")
    if variables["datasource"].get("type") != "datasource" or variables["datasource"].get("query") != "prometheus":
        fail("the datasource variable must be a Prometheus data source")

    queries = []
    for name in ("instance", "controller"):
        q = variables[name].get("query")
        q = q.get("query") if isinstance(q, dict) else q
        m = re.fullmatch(r"label_values\((.*),\s*(\w+)\)", q or "")
        if not m or m.group(2) != name:
            fail(f"variable {name}: query {q!r} is not label_values(..., {name})")
        queries.append((f"variable {name}", m.group(1)))

    ids = set()
    for p in panels_of(dash):
        where = f"panel {p.get('id')} ({p.get('title')!r})"
        if p.get("type") not in PANEL_TYPES:
            fail(f"{where}: unknown type {p.get('type')!r}")
        if p.get("id") in ids or not isinstance(p.get("id"), int):
            fail(f"{where}: id missing or not unique")
        ids.add(p["id"])
        g = p.get("gridPos", {})
        if not all(isinstance(g.get(k), int) for k in "hwxy") or g["x"] < 0 or g["x"] + g["w"] > 24:
            fail(f"{where}: gridPos {g} outside the 24-column grid")
        if p["type"] == "row":
            continue
        if not p.get("title") or not p.get("description"):
            fail(f"{where}: needs a title and a description")
        if p.get("datasource", {}).get("uid") != "${datasource}":
            fail(f"{where}: not on the ${{datasource}} variable")
        targets = p.get("targets") or []
        if not targets:
            fail(f"{where}: no query")
        for t in targets:
            if t.get("datasource", {}).get("uid") != "${datasource}":
                fail(f"{where}: query {t.get('refId')} not on the ${{datasource}} variable")
            if not t.get("expr"):
                fail(f"{where}: query {t.get('refId')} has no expr")
            queries.append((where, t["expr"]))

    rules = []
    for where, expr in queries:
        def subst(m):
            name = m.group(1) or m.group(2)
            if name in BUILTINS:
                return BUILTINS[name]
            if name not in variables:
                fail(f"{where}: ${name} is no variable of the dashboard")
            return ".*"
        e = re.sub(r"\$\{(\w+)\}|\$(\w+)", subst, expr)
        rules.append({"record": f"dashboard:query:{len(rules)}", "expr": e,
                      "labels": {"panel": where}})
    print(f"ok   {len(ids)} panels, {len(queries)} queries, variables {sorted(variables)}")

    if not shutil.which("promtool"):
        print("SKIP: promtool not installed (Debian package prometheus): queries not parsed")
        sys.exit(77)
    with tempfile.TemporaryDirectory() as tmp:
        rf = os.path.join(tmp, "dashboard-queries.rules.yml")
        with open(rf, "w", encoding="utf-8") as f:
            # JSON is YAML: promtool reads this as a rules file
            json.dump({"groups": [{"name": "dashboard", "rules": rules}]}, f, indent=1)
        r = subprocess.run(["promtool", "check", "rules", rf], capture_output=True, text=True)
        if r.returncode != 0:
            print(r.stdout + r.stderr)
            fail("promtool does not accept the dashboard's queries")
    print(f"grafana dashboard: well-formed, {len(queries)} queries parsed by promtool")


if __name__ == "__main__":
    main()
