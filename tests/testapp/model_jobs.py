"""Jobs of the model-argument tests (tests/queueing/worker/test_model_arguments.py);
imported by jobs.py. Each records the rows it was given as it saw them."""
from queueing import Job, job
from queueing.middleware import Skip
from tests.testapp.jobs import RAN, note


def seen(user) -> dict:
    return {"pk": user.pk, "username": user.username, "type": type(user).__name__}


@job(tries=3)
def greet_user(user, note_text=""):
    note(RAN, label="greet", user=seen(user), note_text=note_text)


@job(delete_when_missing_models=True)
def greet_user_or_drop(user):
    note(RAN, label="greet-or-drop", user=seen(user))


@job(model_tags=False, tags=["plain"])
def greet_untagged(user):
    note(RAN, label="untagged", user=seen(user))


@job(encrypted=True)
def greet_user_sealed(user):
    note(RAN, label="sealed", user=seen(user))


@job
def greet_many(users, by_role, pair=()):
    """Rows inside a list, dict values and a tuple (which arrives as a list)."""
    note(RAN, label="many", users=[seen(u) for u in users],
         roles={role: seen(u) for role, u in by_role.items()},
         pair=[seen(u) for u in pair], same=len(users) > 1 and users[0] is users[-1])


@job
async def agreet_user(user):
    note(RAN, label="async", user=seen(user))


class GreetOrDrop(Job):
    delete_when_missing_models = True

    def handle(self, user):
        note(RAN, label="class-greet", user=seen(user))


@job(middleware=[Skip(when=True, reason="always")])
def skipped_greeting(user):
    note(RAN, label="never", user=seen(user))


@job(unique_for=60, unique_id=lambda user: f"user-{user.pk}")
def greet_once(user):
    note(RAN, label="once", user=seen(user))
