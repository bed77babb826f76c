"""Watch a tag (Horizon's Monitoring page) from the command line, stop watching it,
or list the watched tags.

    manage.py horizon_monitor auth.User:42          # start watching
    manage.py horizon_monitor auth.User:42 --stop   # stop (its job list is deleted)
    manage.py horizon_monitor [--json]              # the watched tags with their counts
"""
import json

from django.core.management.base import CommandError

from horizon.management.commands._control import reachable_client
from horizon.monitor_recording import watched_tags
from horizon.repositories import monitored
from queueing.management.base import ProductCommand
from queueing.management.cli_audit import audited


class Command(ProductCommand):
    help = ("Start watching a tag (its jobs are listed on the dashboard's Monitoring page), "
            "stop with --stop; with no tag, list the watched tags.")

    def add_arguments(self, parser):
        parser.add_argument("tag", nargs="?", help="the tag, for example auth.User:42")
        parser.add_argument("--stop", action="store_true",
                            help="stop watching the tag and delete its job list")
        parser.add_argument("--json", action="store_true", help="answer in JSON")

    def handle(self, *args, tag=None, stop=False, json=False, **options):
        client = reachable_client()
        if tag is None:
            if stop:
                raise CommandError("--stop needs the tag to stop watching")
            return self._list(client, json)
        try:
            tag = monitored.checked_tag(tag)
        except monitored.BadTag as exc:
            raise CommandError(str(exc)) from None
        try:
            changed = monitored.stop(client, tag) if stop else monitored.watch(client, tag)
        except monitored.TooManyTags as exc:
            raise CommandError(str(exc)) from None
        watched_tags.forget()
        if changed:
            audited("stop watching tag" if stop else "watch tag", tag)
        if json:
            self.stdout.write(_dumps({"tag": tag, "watched": not stop, "changed": changed}))
        elif stop:
            self.stdout.write(f"Stopped watching {tag}." if changed else f"{tag} was not watched.")
        else:
            self.stdout.write(self.style.SUCCESS(f"Watching {tag}.") if changed
                              else f"{tag} was already watched.")

    def _list(self, client, as_json: bool) -> None:
        rows = monitored.summaries(client)
        if as_json:
            self.stdout.write(_dumps([{"tag": tag, "jobs": jobs, "failed": failed}
                                      for tag, jobs, failed in rows]))
            return
        if not rows:
            self.stdout.write("No tag is watched.")
            return
        width = max(len(tag) for tag, _, _ in rows)
        self.stdout.write(f"{'Tag':<{width}} {'Jobs':>8} {'Failed':>8}")
        for tag, jobs, failed in rows:
            self.stdout.write(f"{tag:<{width}} {jobs:>8} {failed:>8}")


def _dumps(data) -> str:
    return json.dumps(data, sort_keys=True)
