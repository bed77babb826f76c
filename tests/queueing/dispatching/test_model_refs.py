"""The parts of model arguments that need no worker: references as dispatch writes them,
the fetch a worker makes (one query per model and database), and how pages show them."""
import json

import pytest
from django.contrib.auth.models import Group, User
from django.db import connection
from django.test.utils import CaptureQueriesContext

from horizon.dashboard.shared.masking import display_tag
from queueing.entries import model_refs
from queueing.entries import payload as payload_lib
from queueing.entries.options import JobOptions
from queueing.errors import MissingModel, ModelReferenceError, NotSerializable
from queueing.models import ControlValue
from queueing.worker import model_args

pytestmark = pytest.mark.django_db


def decoded(args, kwargs=None):
    data = payload_lib.build(job_name="app.jobs.work", display_name="work", args=args,
                             kwargs=kwargs or {}, options=JobOptions(), connection="redis",
                             queue="default")
    return payload_lib.decode(payload_lib.encode(data))


def test_plain_arguments_come_back_as_the_same_objects():
    args, kwargs = (1, "x", None), {"a": 2.5}
    assert model_refs.to_references("j", args, kwargs) == (args, kwargs)
    assert model_refs.to_references("j", args, kwargs)[0] is args
    assert model_refs.references_in([1, [2, {"a": 3}]], {}) == []
    assert "models" not in decoded([1, "x"]).data


def test_a_reference_reads_like_the_row_it_names():
    user = User.objects.create(username="u")
    [ref], _ = model_refs.to_references("j", (user,), {})
    assert ref == {"__model__": "auth.User", "pk": user.pk, "db": "default"}
    assert (ref.label, ref.pk, ref.db) == ("auth.User", user.pk, "default")
    assert repr(ref) == f"<auth.User {user.pk}>"
    control = ControlValue.objects.create(key="k-1", value="v")
    [ref], _ = model_refs.to_references("j", (control,), {})
    assert ref["pk"] == "k-1" and model_refs.tag_of(ref) == "queueing.ControlValue:k-1"


def test_references_in_refuses_a_broken_one():
    with pytest.raises(NotSerializable, match="is not a model reference"):
        model_refs.references_in([{"__model__": "auth.User", "pk": 1}], {})
    with pytest.raises(NotSerializable, match="is not a model reference"):
        model_refs.references_in([], {"u": {"__model__": "User", "pk": 1, "db": "default"}})


def test_one_query_per_model_and_rows_in_place():
    users = [User.objects.create(username=f"u{i}") for i in range(5)]
    group = Group.objects.create(name="staff")
    control = ControlValue.objects.create(key="k-1", value="v")
    args, kwargs = model_refs.to_references(
        "j", (users, {"group": group, "first": users[0]}), {"control": control})
    job = decoded(list(args), kwargs)
    assert job.data["models"] == 8
    with CaptureQueriesContext(connection) as queries:
        fetched_args, fetched_kwargs = model_args.fetch(job)
    assert len(queries) == 3  # users, groups, control values: not one query per row
    assert [u.username for u in fetched_args[0]] == [f"u{i}" for i in range(5)]
    assert fetched_args[1]["group"].name == "staff"
    assert fetched_args[1]["first"] is fetched_args[0][0]
    assert fetched_kwargs["control"].value == "v"


def test_what_a_worker_cannot_fetch_is_named():
    user = User.objects.create(username="u")
    job = decoded([{"__model__": "auth.User", "pk": user.pk + 100, "db": "default"}])
    with pytest.raises(MissingModel, match=rf"^auth.User {user.pk + 100} no longer exists$"):
        model_args.fetch(job)
    for ref, problem in (
            ({"__model__": "nope.Thing", "pk": 1, "db": "default"}, "not a model"),
            ({"__model__": "auth.User", "pk": 1, "db": "elsewhere"}, "not in this process"),
            ({"__model__": "auth.User", "pk": "abc", "db": "default"}, "not a primary key")):
        with pytest.raises(ModelReferenceError, match=problem):
            model_args.fetch(decoded([ref]))


def test_pages_write_a_reference_as_its_label_and_key():
    ref = {"__model__": "auth.User", "pk": 42, "db": "default"}
    other = {"__model__": "shop.Sku", "pk": "A-1", "db": "replica"}
    text = model_refs.dumps_readable({"args": [ref, [other]], "kwargs": {"n": 1}})
    assert text == '{"args": [<auth.User 42>, [<shop.Sku \'A-1\' on replica>]], "kwargs": {"n": 1}}'
    assert model_refs.dumps_readable([1, "x"]) == json.dumps([1, "x"])


def test_model_tags_are_shown_unmasked_unless_the_model_name_reads_as_a_secret():
    assert display_tag("auth.User:42") == "auth.User:42"
    assert display_tag("auth:s3cret") != "auth:s3cret"  # still masked: not a model tag
    assert display_tag("auth.Thing:1") == "auth.Thing:********"  # not an installed model
    assert display_tag("sessions.Session:abc") == "sessions.Session:********"  # a session key is a secret
    assert display_tag("queueing.ControlValue:k-1") == "queueing.ControlValue:k-1"


def test_automatic_tags_are_bounded_and_distinct():
    refs = [{"__model__": "auth.User", "pk": i % 30, "db": "default"} for i in range(60)]
    tags = model_refs.tags_for(refs)
    assert len(tags) == model_refs.MAX_MODEL_TAGS == 25
    assert tags[:2] == ["auth.User:0", "auth.User:1"] and len(set(tags)) == 25
    job = decoded([refs])
    assert job.data["models"] == 60 and len(job.tags) == 25
