"""Delete all failed jobs, or those older than --hours (asks first, unless --force)."""
from queueing.management.base import ProductCommand
from queueing.management.cli_audit import audited
from queueing.management.confirm import confirmed
from queueing.state import failed


class Command(ProductCommand):
    help = ("Delete every failed job (or only those that failed more than --hours ago); "
            "asks first unless --force.")

    def add_arguments(self, parser):
        parser.add_argument("--hours", type=float, default=None)
        parser.add_argument("--force", action="store_true", help="Do not ask for confirmation.")

    def handle(self, *args, hours, force, **options):
        scope = f" older than {hours:g} hours" if hours is not None else ""
        waiting = failed.matching().count() if hours is None else None
        what = (f"every failed job ({waiting})" if waiting is not None
                else f"the failed jobs{scope}")
        if not confirmed(f"Delete {what}?", force=force):
            self.stdout.write("Nothing deleted.")
            return
        count = failed.flush(hours)
        audited("flush failed", f"{count} failed jobs",
                f"older than {hours:g} hours" if hours is not None else "every failed job")
        self.stdout.write(self.style.SUCCESS(f"Deleted {count} failed job(s){scope}."))
