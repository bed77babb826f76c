"""manage.py demo: a minute of realistic traffic for the dashboard (`make demo`)."""
from queueing import batch, chain
from queueing.dispatching.dispatch import dispatch_many
from queueing.management.base import ProductCommand
from standalone.demo import jobs
from standalone.demo.traffic import plan


class Command(ProductCommand):
    help = ("Dispatch a minute of demo traffic (receipts, images, payments, flaky syncs, "
            "reports, a batch and a chain) for the site's workers to run.")

    def add_arguments(self, parser):
        parser.add_argument("--seconds", type=float, default=60.0,
                            help="How long the traffic lasts (default 60).")
        parser.add_argument("--rate", type=float, default=5.0,
                            help="Jobs per second, on average (default 5).")
        parser.add_argument("--seed", type=int, default=7)

    def handle(self, *args, seconds, rate, seed, **options):
        planned = plan(seconds, rate, seed)
        signatures = [getattr(jobs, p.job).using(**p.options()).s(*p.args, **p.kwargs)
                      for p in planned]
        dispatch_many(signatures)
        album = batch([jobs.resize_image.s(9000 + i, ms=300) for i in range(12)]) \
            .then(jobs.notify_album_ready.s(42)).name("album 42").dispatch()
        chain(jobs.charge_card.s(7001), jobs.send_receipt.s(7001),
              jobs.notify_album_ready.s(7001))
        self.stdout.write(self.style.SUCCESS(
            f"Dispatched {len(signatures) + 15} demo jobs over the next {seconds:g} s "
            f"(a batch {album.id} of 12, a chain of 3). Run workers to see them move: "
            "`make demo` and `manage.py serve` do; so does `manage.py horizon`."))
