"""The standalone site's QUEUE_ENCRYPT=1 switch: every job it dispatches to Redis carries
sealed arguments (issue 37, item 4: "a setting that encrypts every job of a connection"),
and the site still passes its checks."""
import subprocess

from tests.conftest import manage_command, subprocess_env
from tests.redis_scan import everything

ORDER = "order-4f1c9e-plaintext"
DISPATCH = f"from standalone.demo.jobs import send_receipt; send_receipt.delay({ORDER!r})"


def site(tmp_path, *args: str, **env: str) -> subprocess.CompletedProcess:
    environ = subprocess_env(DJANGO_SETTINGS_MODULE="standalone.settings",
                             HORIZON_VAR_DIR=str(tmp_path / "var"),
                             QUEUE_REDIS_URL=subprocess_env()["TEST_REDIS_URL"],
                             DJANGO_SECRET_KEY="standalone-encrypt-switch-test-key")
    environ.pop("QUEUE_ENCRYPT", None)  # only where a test sets it
    environ.update(env)
    return subprocess.run(manage_command(*args), env=environ, capture_output=True, text=True,
                          timeout=120)


def test_without_the_switch_the_arguments_are_plain_in_redis(tmp_path, rclient):
    done = site(tmp_path, "shell", "-c", DISPATCH)
    assert done.returncode == 0, done.stderr
    stored = everything(rclient)
    assert ORDER.encode() in stored and b'"encrypted"' not in stored


def test_queue_encrypt_seals_every_job_of_the_site(tmp_path, rclient):
    checked = site(tmp_path, "check", "--fail-level", "WARNING", QUEUE_ENCRYPT="1")
    assert checked.returncode == 0, checked.stdout + checked.stderr
    done = site(tmp_path, "shell", "-c", DISPATCH, QUEUE_ENCRYPT="1")
    assert done.returncode == 0, done.stderr
    stored = everything(rclient)
    assert b"send_receipt" in stored, "the job was queued"
    assert b'"encrypted"' in stored and ORDER.encode() not in stored
