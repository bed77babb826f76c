"""CPU hogs beside a bench: busy Python processes, four per CPU as issue 53's tests ask
(8 on a 2-CPU machine), so the measured workers get about a fifth of a CPU each time
they run. Each hog spins until its parent (the bench) is gone, and is killed at exit."""
import atexit
import os
import subprocess
import sys

HOG = "import os\nwhile os.getppid() != 1:\n    pass\n"


def per_cpu(count: int = 4) -> int:
    return count * len(os.sched_getaffinity(0))


def start(count: int) -> list[subprocess.Popen]:
    hogs = [subprocess.Popen([sys.executable, "-c", HOG]) for _ in range(count)]

    def stop() -> None:
        for hog in hogs:
            hog.kill()
        for hog in hogs:
            hog.wait()

    atexit.register(stop)
    return hogs
