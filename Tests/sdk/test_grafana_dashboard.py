"""The shipped Grafana dashboard (ops/grafana/push-server.json) against Grafana's dashboard model and the server's
real /metrics, and `promtool check metrics` on that scrape.

No Grafana runs here (Debian has none): the structure is checked with ops/grafana/dashboard.schema.json (written
for this project) plus what a schema cannot say, every query goes through `promtool check rules` as a recording
rule (Debian's `prometheus` package, installed by `make deps-test`), and every metric a query names must be a family
a real server writes to /metrics after a publish was delivered.
"""
import json
import re
import shutil
import subprocess
import sys
import time
from pathlib import Path

import jsonschema
import pytest
import requests

from beams import Beams, random_token
from conftest import ROOT

DASHBOARD_PATH = ROOT / "ops" / "grafana" / "push-server.json"
DASHBOARD = json.loads(DASHBOARD_PATH.read_text())
SCHEMA = json.loads((ROOT / "ops" / "grafana" / "dashboard.schema.json").read_text())
PROMTOOL = shutil.which("promtool")
# Grafana's own variables a query may use.
BUILTIN_VARIABLES = {"__rate_interval", "__interval", "__interval_ms", "__range", "__range_s", "__range_ms"}
# What each variable stands for when a query is checked outside Grafana (any value that keeps PromQL valid).
SUBSTITUTES = {"__rate_interval": "5m", "__interval": "1m", "__range": "1h"}
# Series Prometheus makes itself for every scrape target, and the labels it attaches.
PROMETHEUS_SERIES = {"up"}
TARGET_LABELS = {"job", "instance"}
PROMQL_KEYWORDS = {"by", "without", "on", "ignoring", "group_left", "group_right", "bool", "and", "or", "unless",
                   "offset", "inf", "nan"}
# Aggregations, which may take `by (…)` before their argument (`sum by (platform) (…)`).
AGGREGATIONS = {"sum", "min", "max", "avg", "group", "stddev", "stdvar", "count", "count_values", "bottomk", "topk",
                "quantile"}


def panels():
    return [panel for panel in DASHBOARD["panels"] if panel["type"] != "row"]


def targets():
    return [(panel, target) for panel in panels() for target in panel["targets"]]


def variables_used(text):
    """The names of `$name` and `${name}` (or `${name:format}`) in a string."""
    return {braced or bare for braced, bare in re.findall(r"\$\{(\w+)(?::\w+)?\}|\$(\w+)", text)}


def selector_of(query):
    """A `label_values(selector, label)` variable query's selector."""
    return re.sub(r"^label_values\((.*), \w+\)$", r"\1", query)


def substituted(expr):
    def value(match):
        name = match.group(1) or match.group(2)
        return SUBSTITUTES.get(name, ".*")
    return re.sub(r"\$\{(\w+)(?::\w+)?\}|\$(\w+)", value, expr)


TOKEN = re.compile(r'\s+|(?P<string>"(?:\\.|[^"\\])*"|\'(?:\\.|[^\'\\])*\')|(?P<range>\[[^\]]*\])'
                   r'|(?P<name>[A-Za-z_:][A-Za-z0-9_:]*)|(?P<number>\d+(?:\.\d+)?(?:e[+-]?\d+)?)'
                   r'|(?P<op>=~|!~|!=|==|>=|<=|[-+*/%^(){},=<>])')


def parse(expr):
    """A PromQL expression's metric names, its matchers (name, label) and its grouping labels (`by`, `without`,
    `on`, `ignoring`): what the checks below need, not a full parser (promtool checks the syntax).
    Returns: (metric names, [(metric or None, label, op, value)], grouping labels)."""
    tokens, position = [], 0
    while position < len(expr):
        match = TOKEN.match(expr, position)
        assert match, f"cannot read {expr[position:]!r} in {expr!r}"
        position = match.end()
        kind = match.lastgroup
        if kind:
            tokens.append((kind, match.group(kind)))
    names, matchers, grouping = set(), [], set()
    i = 0
    while i < len(tokens):
        kind, text = tokens[i]
        following = tokens[i + 1][1] if i + 1 < len(tokens) else None
        if kind == "name" and text in {"by", "without", "on", "ignoring", "group_left", "group_right"} \
                and following == "(":
            i += 2
            while tokens[i][1] != ")":
                if tokens[i][0] == "name":
                    grouping.add(tokens[i][1])
                i += 1
        elif kind == "name" and (following == "(" or text in AGGREGATIONS and following in {"by", "without"}):
            pass  # a function or an aggregation
        elif kind == "name" and text.lower() not in PROMQL_KEYWORDS:
            names.add(text)
            if following == "{":
                i = read_matchers(tokens, i + 2, text, matchers)
        elif text == "{":
            i = read_matchers(tokens, i + 1, None, matchers)
        i += 1
    for metric, label, op, value in matchers:
        if metric is None and label == "__name__":
            assert op in {"=", "=~"}, value
            names.update(value.strip('"').split("|"))
    return names, matchers, grouping


def read_matchers(tokens, i, metric, matchers):
    """Reads `label op "value"` pairs up to the closing brace. Returns: the index of the brace."""
    while tokens[i][1] != "}":
        if tokens[i][1] == ",":
            i += 1
            continue
        label, op, value = tokens[i][1], tokens[i + 1][1], tokens[i + 2][1]
        assert op in {"=", "!=", "=~", "!~"}, (label, op, value)
        matchers.append((metric, label, op, value))
        i += 3
    return i


# --- structure ---------------------------------------------------------------------------------------------------

def test_dashboard_is_the_generators_output():
    result = subprocess.run([sys.executable, str(ROOT / "ops" / "grafana" / "generate.py"), "--check"],
                            capture_output=True, text=True, timeout=30)
    assert result.returncode == 0, result.stderr


def test_dashboard_matches_the_dashboard_schema():
    validator = jsonschema.Draft202012Validator(SCHEMA)
    errors = [f"{'/'.join(map(str, error.absolute_path))}: {error.message}" for error in validator.iter_errors(DASHBOARD)]
    assert errors == []


def test_the_schema_refuses_what_grafana_refuses():
    """The schema is not vacuous: a panel wider than the grid, a target without refId and a panel without gridPos
    each fail it."""
    validator = jsonschema.Draft202012Validator(SCHEMA)
    for breakage in [lambda d: d["panels"][1]["gridPos"].update(w=25),
                     lambda d: d["panels"][1]["targets"][0].pop("refId"),
                     lambda d: d["panels"][2].pop("gridPos"),
                     lambda d: d.pop("schemaVersion"),
                     lambda d: d["templating"]["list"][1].pop("datasource")]:
        broken = json.loads(json.dumps(DASHBOARD))
        breakage(broken)
        assert list(validator.iter_errors(broken)), breakage


def test_ids_are_unique_and_panels_do_not_overlap():
    ids = [panel["id"] for panel in DASHBOARD["panels"]]
    assert len(ids) == len(set(ids))
    taken = {}
    for panel in DASHBOARD["panels"]:
        grid = panel["gridPos"]
        assert grid["x"] + grid["w"] <= 24, panel["title"]
        for x in range(grid["x"], grid["x"] + grid["w"]):
            for y in range(grid["y"], grid["y"] + grid["h"]):
                assert (x, y) not in taken, f"{panel['title']} overlaps {taken[(x, y)]}"
                taken[(x, y)] = panel["title"]
    for panel in panels():
        refs = [target["refId"] for target in panel["targets"]]
        assert len(refs) == len(set(refs)), panel["title"]


def test_every_variable_used_is_defined_and_every_panel_uses_the_datasource_variable():
    defined = [variable["name"] for variable in DASHBOARD["templating"]["list"]]
    assert defined[0] == "datasource" and DASHBOARD["templating"]["list"][0]["query"] == "prometheus"
    assert {"job", "node", "beams_instance"} <= set(defined)
    known = set(defined) | BUILTIN_VARIABLES
    for panel in panels():
        assert panel["datasource"] == {"type": "prometheus", "uid": "${datasource}"}, panel["title"]
        for target in panel["targets"]:
            assert target["datasource"] == panel["datasource"]
            assert variables_used(target["expr"]) <= known, (panel["title"], target["expr"])
            assert {"job", "node"} <= variables_used(target["expr"]), (panel["title"], target["expr"])
    for variable in DASHBOARD["templating"]["list"][1:]:
        # A variable's query may use only variables defined before it (Grafana resolves them in order).
        before = set(defined[:defined.index(variable["name"])]) | BUILTIN_VARIABLES
        assert variables_used(variable["query"]) <= before, variable["name"]
    used = set().union(*(variables_used(target["expr"]) for _, target in targets()))
    assert set(defined) - {"datasource"} <= used, "a variable no query uses"


@pytest.mark.skipif(PROMTOOL is None, reason="promtool missing: Debian's prometheus package (make deps-test)")
def test_every_query_is_valid_promql(tmp_path):
    rules = [{"record": f"dashboard:panel{panel['id']}:{target['refId']}", "expr": substituted(target["expr"])}
             for panel, target in targets()]
    rules += [{"record": f"dashboard:variable:{variable['name']}",
               "expr": substituted(selector_of(variable["query"]))}
              for variable in DASHBOARD["templating"]["list"] if variable["type"] == "query"]
    path = tmp_path / "dashboard.rules.json"  # YAML is a superset of JSON
    path.write_text(json.dumps({"groups": [{"name": "dashboard", "rules": rules}]}))
    result = subprocess.run([PROMTOOL, "check", "rules", str(path)], capture_output=True, text=True, timeout=30)
    assert result.returncode == 0, result.stdout + result.stderr
    assert f"SUCCESS: {len(rules)} rules found" in result.stdout


@pytest.mark.skipif(PROMTOOL is None, reason="promtool missing: Debian's prometheus package (make deps-test)")
def test_promtool_check_rules_catches_a_broken_query(tmp_path):
    """The PromQL check can fail: an unclosed parenthesis in a query is reported."""
    path = tmp_path / "broken.rules.json"
    path.write_text(json.dumps({"groups": [{"name": "g", "rules": [
        {"record": "broken", "expr": substituted("sum(rate(push_publishes_total{job=~\"$job\"}[$__rate_interval])")}]}]}))
    result = subprocess.run([PROMTOOL, "check", "rules", str(path)], capture_output=True, text=True, timeout=30)
    assert result.returncode != 0


def test_the_parser_finds_names_matchers_and_grouping():
    names, matchers, grouping = parse('sum by (platform, reason) (rate(push_notifications_total{job=~"$job", '
                                      'status!~"2.."}[5m])) / on (job) group_left up{instance="a"}')
    assert names == {"push_notifications_total", "up"}
    assert ("push_notifications_total", "status", "!~", '"2.."') in matchers
    assert grouping == {"platform", "reason", "job"}
    names, _, _ = parse(selector_of('label_values({__name__=~"a_total|b_seconds", job=~"$job"}, exported_instance)'))
    assert names == {"a_total", "b_seconds"}


# --- against a live server ----------------------------------------------------------------------------------------

def scrape_families(text):
    """/metrics as {family: set of label names seen on its samples}, from the `# TYPE` lines and the samples."""
    families, kinds = {}, {}
    for line in text.splitlines():
        if line.startswith("# TYPE "):
            _, _, name, kind = line.split()
            families[name], kinds[name] = set(), kind
        elif line and not line.startswith("#"):
            name = re.match(r"[A-Za-z_:][A-Za-z0-9_:]*", line).group(0)
            family = name
            if name not in families:
                for suffix in ("_bucket", "_sum", "_count"):
                    if name.endswith(suffix) and kinds.get(name.removesuffix(suffix)) == "histogram":
                        family = name.removesuffix(suffix)
            assert family in families, f"sample {name} without a # TYPE line"
            families[family] |= set(re.findall(r'([A-Za-z_][A-Za-z0-9_]*)="', line.partition("{")[2]))
    return families, kinds


def scrape_label_values(text):
    """/metrics as {family or series name: {label: set of values}}, from the samples."""
    values = {}
    for line in text.splitlines():
        if line and not line.startswith("#"):
            name, _, labels = line.partition("{")
            for label, value in re.findall(r'([A-Za-z_][A-Za-z0-9_]*)="((?:\\.|[^"\\])*)"', labels.rpartition("}")[0]):
                values.setdefault(name, {}).setdefault(label, set()).add(value)
    return values


@pytest.fixture(scope="module")
def scrape(env):
    """/metrics of a real server after a device registered and a publish to it was delivered by the mock APNs."""
    server, _ = env
    beams = Beams(server)
    beams.register(random_token(), interests=["dashboard"])
    publish_id = beams.publish("interests", {"interests": ["dashboard"], "apns": {"aps": {"alert": "hi"}}})
    beams.wait_finished(publish_id)
    deadline = time.time() + 20
    while True:
        text = requests.get(server.url("/metrics"), verify=server.cert, timeout=5).text
        if re.search(r'^push_notifications_total\{platform="apns",status="200"', text, re.M) \
                and re.search(r"^push_publish_jobs_total\{", text, re.M):
            return text
        assert time.time() < deadline, "the publish was not delivered and finished within 20 s"
        time.sleep(0.2)


def test_every_metric_a_query_names_is_one_the_server_exports(scrape):
    families, kinds = scrape_families(scrape)
    queries = [target["expr"] for _, target in targets()]
    queries += [selector_of(variable["query"]) for variable in DASHBOARD["templating"]["list"] if variable["type"] == "query"]
    named = set()
    for expr in queries:
        names, _, _ = parse(expr)
        named |= names
    histogram_series = {f"{family}{suffix}" for family, kind in kinds.items()
                        if kind == "histogram" for suffix in ("_bucket", "_sum", "_count")}
    unknown = named - set(families) - histogram_series - PROMETHEUS_SERIES
    assert unknown == set(), f"queries name metrics /metrics does not have: {sorted(unknown)}"
    # The core families of a delivered publish are there with samples, not only declared.
    for family in ["push_publishes_total", "push_notifications_total", "push_publish_jobs_total",
                   "push_device_registrations_total", "push_http_requests_total", "push_server_build_info"]:
        assert family in named and families[family], family


def test_every_label_a_query_names_is_on_its_metric(scrape):
    """Matchers and groupings name labels the scraped families carry (or Prometheus's target labels); the server's
    `instance` label arrives as `exported_instance` (Prometheus owns `instance`)."""
    families, kinds = scrape_families(scrape)
    def labels_of(name):
        family = name
        for suffix in ("_bucket", "_sum", "_count"):
            if name.endswith(suffix) and kinds.get(name.removesuffix(suffix)) == "histogram":
                family = name.removesuffix(suffix)
        seen = families.get(family, set())
        return seen | TARGET_LABELS | ({"exported_instance"} if "instance" in seen else set())
    for _, target in targets():
        names, matchers, grouping = parse(target["expr"])
        names -= PROMETHEUS_SERIES
        for metric, label, _, _ in matchers:
            if metric in PROMETHEUS_SERIES or label == "__name__":
                continue
            # Declared families without samples yet (a certificate expiry, an FCM token) show no labels: the
            # catalogue's labels are checked by the unit tests; here only what the scrape shows.
            if metric and families.get(metric):
                assert label in labels_of(metric), (target["expr"], metric, label)
        union = set().union(*(labels_of(name) for name in names)) if names else TARGET_LABELS
        if all(families.get(name) for name in names):
            assert grouping - {"le"} <= union, (target["expr"], grouping - union)


@pytest.mark.skipif(PROMTOOL is None, reason="promtool missing: Debian's prometheus package (make deps-test)")
def test_promtool_check_metrics_finds_nothing_on_the_live_scrape(scrape):
    result = subprocess.run([PROMTOOL, "check", "metrics"], input=scrape, capture_output=True, text=True, timeout=30)
    assert result.returncode == 0, result.stdout + result.stderr
    assert result.stdout + result.stderr == ""


@pytest.mark.skipif(PROMTOOL is None, reason="promtool missing: Debian's prometheus package (make deps-test)")
def test_promtool_check_metrics_reports_a_family_without_help():
    """The lint can fail: a counter without `# HELP` is reported."""
    result = subprocess.run([PROMTOOL, "check", "metrics"], input="# TYPE push_x_total counter\npush_x_total 1\n",
                            capture_output=True, text=True, timeout=30)
    assert result.returncode != 0 and "no help text" in result.stdout + result.stderr


def test_every_fixed_label_value_a_query_selects_is_one_the_server_writes(scrape):
    """`status=~"2.."`, `method="POST"`, the publish routes, `state="in_use"`: each positive matcher without a
    variable selects at least one series of the scrape (a misspelt value would select nothing, silently)."""
    values = scrape_label_values(scrape)
    checked = 0
    for _, target in targets():
        _, matchers, _ = parse(target["expr"])
        for metric, label, op, quoted in matchers:
            if op not in {"=", "=~"} or "$" in quoted or label not in values.get(metric, {}):
                continue
            pattern = quoted[1:-1].replace("\\\\", "\\")
            seen = values[metric][label]
            matches = [v for v in seen if (v == pattern if op == "=" else re.fullmatch(pattern, v))]
            assert matches, (target["expr"], label, pattern, sorted(seen))
            checked += 1
    assert checked >= 4
