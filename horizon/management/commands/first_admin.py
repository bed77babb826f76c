"""`manage.py first_admin`: on a site with no superuser yet, create one named ``admin``
with a random password and print the password once (``make run`` calls it, so the
first look needs no second terminal for ``createsuperuser``). It prints nothing else
and changes nothing once any superuser exists; the password is stored hashed only, so
it is not shown again: change it with ``manage.py changepassword admin``."""
from __future__ import annotations

import secrets

from django.contrib.auth import get_user_model

from queueing.management.base import ProductCommand


def free_name(users, wanted: str) -> str:
    """`wanted`, or `wanted`2, 3... when an account of that name exists already. An
    existing ``admin`` that is not a superuser is left as it is (promoting it would hand
    its owner, and whoever knows its password, every permission); creating a second
    ``admin`` crashed with an IntegrityError."""
    name, number = wanted, 1
    while users.objects.filter(**{users.USERNAME_FIELD: name}).exists():
        number += 1
        name = f"{wanted}{number}"
    return name


class Command(ProductCommand):
    help = "Create a first superuser (admin) with a random password, printed once."

    def add_arguments(self, parser) -> None:
        parser.add_argument("--username", default="admin")
        parser.add_argument("--url", default="", help="where to log in, for the message")

    def handle(self, *args, username: str, url: str, **options) -> None:
        users = get_user_model()
        if users.objects.filter(is_superuser=True).exists():
            return
        username = free_name(users, username)
        password = secrets.token_urlsafe(12)
        users.objects.create_superuser(username=username, email="", password=password)
        where = f" at {url.rstrip('/')}/login/" if url else ""
        self.stdout.write(
            "\n  First admin created (shown once; change it with "
            f"`manage.py changepassword {username}`):\n"
            f"    username: {username}\n    password: {password}\n"
            f"  Log in{where}.\n\n")
