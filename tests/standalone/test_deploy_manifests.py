"""Issue 40, item 2: the reference image (deploy/Dockerfile) and Kubernetes manifests
(deploy/kubernetes/) are parsed and linted, so the guide (docs/deployment.md) and the
code cannot drift apart: every command a container or probe runs exists and accepts its
arguments, probes ask the question they are for, the grace period covers the shutdown
wait the code really has (issue 47: the stop timeout + the master's KILL_GRACE, or the
worker's --stop-timeout + its kill grace; a job's own timeout no longer stretches it),
and the KEDA trigger reads the key a worker really fills."""
import dataclasses
import json
import re
import shlex
from pathlib import Path

import pytest
import yaml
from django.core.management import get_commands, load_command_class
from django.test import override_settings

from horizon.configuration.settings import HorizonSettings
from horizon.supervisor.master import KILL_GRACE
from queueing.drivers.redis.keys import QueueKeys
from queueing.settings.namespace import namespace_error
from queueing.worker.options import WorkerOptions

ROOT = Path(__file__).resolve().parents[2]
DEPLOY = ROOT / "deploy"
MARGIN = 5  # seconds of slack the guide asks for past the shutdown wait


def documents(name: str) -> list[dict]:
    return [d for d in yaml.safe_load_all((DEPLOY / "kubernetes" / name).read_text()) if d]


def deployment(name: str) -> dict:
    [found] = [d for d in documents(name) if d["kind"] == "Deployment"]
    return found


def container(name: str) -> dict:
    [only] = deployment(name)["spec"]["template"]["spec"]["containers"]
    return only


def manage_args(command: list[str]) -> list[str]:
    """The manage.py arguments of a probe's exec command (plain, or through sh -c)."""
    if command[:2] == ["sh", "-c"]:
        command = shlex.split(command[2].replace('"$HORIZON_NAME"', "pod-1"))
        assert command[0] == "exec", "sh -c should exec, so the probe's exit code is python's"
        command = command[1:]
    assert command[:2] == ["python", "manage.py"], command
    return command[2:]


def parses(args: list[str]) -> dict:
    """The arguments as the named management command's own parser reads them."""
    name, rest = args[0], args[1:]
    assert name in get_commands(), f"no management command {name!r}"
    parser = load_command_class(get_commands()[name], name).create_parser("manage.py", name)
    return vars(parser.parse_args(rest))


def default(cls: type, name: str):
    """A dataclass field's default (slots dataclasses keep none on the class)."""
    return {f.name: f.default for f in dataclasses.fields(cls)}[name]


def option(args: list[str], flag: str) -> str | None:
    for arg in args:
        if arg.startswith(flag + "="):
            return arg.split("=", 1)[1]
    return None


@pytest.mark.parametrize("name", ["master.yaml", "worker.yaml"])
def test_each_deployment_is_wired_and_its_commands_exist(name):
    found = deployment(name)
    assert found["apiVersion"] == "apps/v1"
    labels = found["spec"]["template"]["metadata"]["labels"]
    assert found["spec"]["selector"]["matchLabels"].items() <= labels.items()
    box = container(name)
    parses(box["args"])
    env = {e["name"]: e for e in box["env"]}
    assert namespace_error(env["QUEUE_NAMESPACE"]["value"], "QUEUE_NAMESPACE") is None
    assert all("value" not in env[k] for k in ("QUEUE_REDIS_URL", "DJANGO_SECRET_KEY")), \
        "secrets come from Secrets, never inline"


@pytest.mark.parametrize("name", ["master.yaml", "worker.yaml"])
def test_probes_ask_the_question_they_are_for(name):
    box = container(name)
    for kind, question in (("startupProbe", "liveness"), ("livenessProbe", "liveness"),
                           ("readinessProbe", "readiness")):
        probe = box[kind]
        parsed = parses(manage_args(probe["exec"]["command"]))
        assert parsed["probe"] == question, (kind, parsed)
        assert probe["timeoutSeconds"] >= 5, "a probe starts Django: give it time"
    if name == "master.yaml":  # the pod's master, named after the pod
        assert box["env"][0] == {"name": "HORIZON_NAME",
                                 "valueFrom": {"fieldRef": {"fieldPath": "metadata.name"}}}


def test_the_grace_period_covers_the_masters_shutdown_wait():
    spec = deployment("master.yaml")["spec"]["template"]["spec"]
    wait = default(HorizonSettings, "stop_timeout") + KILL_GRACE  # Master.kill_after()
    assert spec["terminationGracePeriodSeconds"] >= wait + MARGIN
    assert spec["terminationGracePeriodSeconds"] > 30, "Kubernetes' default is too short"


def test_the_grace_period_covers_the_workers_shutdown_wait():
    spec = deployment("worker.yaml")["spec"]["template"]["spec"]
    args = container("worker.yaml")["args"]
    stop = float(option(args, "--stop-timeout") or default(WorkerOptions, "stop_timeout"))
    grace = default(WorkerOptions, "kill_grace")
    assert spec["terminationGracePeriodSeconds"] >= stop + grace + MARGIN


def test_keda_scales_the_worker_on_the_key_it_fills_and_a_metric_we_export():
    [scaled] = documents("keda.yaml")
    assert scaled["apiVersion"] == "keda.sh/v1alpha1" and scaled["kind"] == "ScaledObject"
    assert scaled["spec"]["scaleTargetRef"]["name"] == deployment("worker.yaml")["metadata"]["name"]
    triggers = {t["type"]: t["metadata"] for t in scaled["spec"]["triggers"]}
    box = container("worker.yaml")
    env = {e["name"]: e for e in box["env"]}
    with override_settings(QUEUE={"connections": {"redis": {"driver": "redis",
                                                            "url": "redis://x"}},
                                  "namespace": env["QUEUE_NAMESPACE"]["value"]}):
        assert triggers["redis"]["listName"] == QueueKeys.for_queue("default").ready
    assert triggers["redis"]["addressFromEnv"] in env
    metric = re.match(r"\w+\((\w+)", triggers["prometheus"]["query"]).group(1)
    assert f'"{metric}"' in (ROOT / "horizon" / "prometheus.py").read_text()


def dockerfile() -> list[tuple[str, str]]:
    """(instruction, arguments) of deploy/Dockerfile, continuations joined."""
    text = re.sub(r"\\\n", " ", (DEPLOY / "Dockerfile").read_text())
    lines = [line.strip() for line in text.splitlines()]
    return [tuple(line.split(None, 1)) for line in lines if line and not line.startswith("#")]


def test_the_dockerfile_runs_manage_py_as_a_user_and_stops_with_sigterm():
    steps = dockerfile()
    known = {"FROM", "ENV", "WORKDIR", "COPY", "RUN", "USER", "STOPSIGNAL", "ENTRYPOINT", "CMD"}
    assert {kind for kind, _ in steps} <= known
    assert steps[0][0] == "FROM" and steps[0][1].startswith("python:3.11")
    values = dict(steps)
    assert values["USER"] not in ("0", "root")
    assert values["STOPSIGNAL"] == "SIGTERM"
    assert json.loads(values["ENTRYPOINT"]) == ["python", "manage.py"]
    parses(json.loads(values["CMD"]))
    for name in ("master.yaml", "worker.yaml"):  # the manifests run this image's commands
        parses(container(name)["args"])


def test_the_image_runs_its_packages_compiled():
    """The image runs manage.py from /app, whose packages pip did not compile, under
    PYTHONDONTWRITEBYTECODE: without a compileall step every worker pod compiled some 200
    modules from source before its first job (issue 52)."""
    steps = dockerfile()
    values = dict(steps)
    assert "PYTHONDONTWRITEBYTECODE=1" in values["ENV"] and values["WORKDIR"] == "/app"
    compiling = [i for i, (kind, args) in enumerate(steps)
                 if kind == "RUN" and "compileall" in args]
    assert len(compiling) == 1
    words = shlex.split(steps[compiling[0]][1])
    start = words.index("compileall")
    assert words[start - 2:start] == ["python", "-m"]
    assert {"manage.py", "queueing", "horizon", "standalone"} <= set(words[start + 1:])
    user_at = [kind for kind, _ in steps].index("USER")
    assert compiling[0] < user_at  # as root, before the image drops to its user


def test_the_guide_names_every_manifest_and_exit_code():
    guide = (ROOT / "docs" / "deployment.md").read_text()
    for path in ("deploy/Dockerfile", "deploy/kubernetes/master.yaml",
                 "deploy/kubernetes/worker.yaml", "deploy/kubernetes/keda.yaml"):
        assert path in guide
    for code in range(4):
        assert f"| {code} " in guide
    assert "terminationGracePeriodSeconds" in guide


# -- the image's build context (issue 48): .dockerignore -----------------------------------
def dockerignore_patterns() -> list[tuple[bool, re.Pattern]]:
    """(re-included?, regex) per line of .dockerignore, in order, with Docker's rules:
    paths relative to the context's root, ``*`` and ``?`` within one path element, ``**``
    any number of elements, a pattern that matches a directory matching what is in it,
    and the last matching line deciding."""
    rules = []
    for line in (ROOT / ".dockerignore").read_text().splitlines():
        line = line.strip()
        if not line or line.startswith("#"):
            continue
        negated = line.startswith("!")
        pattern = line[1:] if negated else line
        out, i = "", 0
        while i < len(pattern):
            if pattern.startswith("**/", i):
                out, i = out + "(?:.*/)?", i + 3
            elif pattern.startswith("**", i):
                out, i = out + ".*", i + 2
            elif pattern[i] == "*":
                out, i = out + "[^/]*", i + 1
            elif pattern[i] == "?":
                out, i = out + "[^/]", i + 1
            elif pattern[i] == "[":
                end = pattern.index("]", i)
                out, i = out + pattern[i:end + 1], end + 1
            else:
                out, i = out + re.escape(pattern[i]), i + 1
        rules.append((negated, re.compile(out + "(?:/.*)?")))
    return rules


def sent_to_docker(path: str, rules=None) -> bool:
    """Would `docker build .` put `path` (relative to the root) in the build context?"""
    sent = True
    for negated, rule in rules or dockerignore_patterns():
        if rule.fullmatch(path):
            sent = negated
    return sent


def test_the_build_context_keeps_out_secrets_databases_and_checkout_clutter():
    """An image built from a used checkout carried var/secret_key and the site's
    database (the Dockerfile copies the whole context and there was no .dockerignore)."""
    rules = dockerignore_patterns()
    for path in ("var/secret_key", "var/db.sqlite3", "var/db.sqlite3-wal", "db.sqlite3",
                 "standalone/db.sqlite3", "horizon/site.sqlite3", ".venv/bin/python",
                 ".venv-django6/lib/x.py", ".git/config", ".git/objects/ab/cdef", ".env",
                 "standalone/.env", "tests/settings.py", "bench/results/run.json",
                 "queueing/__pycache__/jobs.cpython-311.pyc", "horizon_django.egg-info/PKG-INFO",
                 "build/lib/queueing/x.py", "dist/horizon.whl", ".pytest_cache/v/x",
                 "worker.log", "queueing/secret_key", "deploy/tls/site.key"):
        assert not sent_to_docker(path, rules), path
    for path in ("pyproject.toml", "setup.py", "README.md", "LICENSE", "manage.py",
                 "queueing/__init__.py", "queueing/drivers/redis/lua/pop.lua",
                 "horizon/lua/watch_tag.lua", "horizon/migrations/0001_initial.py",
                 "standalone/settings.py", "standalone/secret_key.py",
                 "templates/horizon/base.html", "static/horizon/htmx.min.js"):
        assert sent_to_docker(path, rules), path


def test_what_the_build_context_keeps_builds_the_wheel(tmp_path):
    """The files .dockerignore lets through are enough for the image's `pip install .`."""
    import shutil
    import subprocess
    import sys

    rules = dockerignore_patterns()
    tree = subprocess.run(["git", "ls-files", "--cached", "--others", "--exclude-standard"],
                          cwd=ROOT, capture_output=True, text=True, check=True).stdout
    context = tmp_path / "context"
    for path in tree.splitlines():
        if (ROOT / path).is_file() and sent_to_docker(path, rules):
            (context / path).parent.mkdir(parents=True, exist_ok=True)
            shutil.copy2(ROOT / path, context / path)
    assert not (context / "tests").exists() and not (context / "var").exists()
    built = subprocess.run([sys.executable, "-m", "pip", "wheel", "--no-deps", "--quiet",
                            "-w", str(tmp_path / "dist"), "."],  # as build_wheel does
                           cwd=context, capture_output=True, text=True, timeout=300)
    assert built.returncode == 0, built.stdout[-2000:] + built.stderr[-2000:]
    [wheel] = (tmp_path / "dist").glob("*.whl")
    import zipfile
    names = zipfile.ZipFile(wheel).namelist()
    assert "horizon/lua/watch_tag.lua" in names and "horizon/templates/horizon/base.html" in names
