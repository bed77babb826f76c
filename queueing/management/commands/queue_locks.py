"""List the locks job controls hold (unique jobs, WithoutOverlapping), or release one."""

from django.core.management.base import CommandError

from queueing.management.base import ProductCommand
from queueing.management.cli_audit import cli_actor
from queueing.observability.redaction import display
from queueing.signals import lock_released
from queueing.state import locks


class Command(ProductCommand):
    help = ("List held locks with their owners: queue_locks | release a stuck one: "
            "queue_locks --release KEY [--owner OWNER]")

    def add_arguments(self, parser):
        parser.add_argument("--release", metavar="KEY",
                            help="The lock's id as listed (keys are listed masked), or its "
                                 "Redis key.")
        parser.add_argument("--owner", help="Release only if this owner still holds it "
                                            "(default: whoever holds it now).")

    def handle(self, *args, release=None, owner=None, **options):
        if release is None:
            held = locks.all_held()
            for lock in held:
                expiry = f"{lock.expires_in:.1f}s" if lock.expires_in is not None else "never"
                self.stdout.write(f"{lock.kind:<7} {lock.ref}  {lock.shown_key}  owner "
                                  f"{lock.owner}  expires in {expiry}")
            if not held:
                self.stdout.write("No locks held.")
            return
        found = locks.find(release)
        if found is None:
            raise CommandError(f"no lock held at {display(release, 300)!r}")
        _name, client, lock = found
        if owner is not None and owner != lock.owner:
            raise CommandError(f"{lock.shown_key} is held by {lock.owner}, not {owner}")
        if not locks.release(client, lock.key, lock.owner):
            raise CommandError(f"{lock.shown_key} changed hands or expired meanwhile; not "
                               "released")
        lock_released.send(sender=None, lock=lock, by=cli_actor())
        self.stdout.write(self.style.SUCCESS(f"Released {lock.shown_key} (held by "
                                             f"{lock.owner})."))
