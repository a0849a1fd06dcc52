"""What the exporter says while it works: one updating status line for long steps on
a terminal (stderr), plain lines otherwise; quiet mode, which keeps only errors; and
warnings collected by kind and printed grouped (one line per kind, with a count and
a few examples) instead of a line per kernel or word.

Assumes nothing beyond the standard library; stream defaults to sys.stderr.
"""
import re
import sys
import time

from .errors import step

__all__ = ["Progress", "Quiet"]


class Progress:
    """log(msg): a line of the export's account (plain); status(msg): the current step of a
    long one (rewritten in place on a TTY, rate-limited to a plain line every few seconds
    otherwise, each with the seconds since the start); warn(kind, example): a warning, grouped by kind; flush(): prints the
    grouped warnings; done(): clears the status line."""

    EXAMPLES = 3
    EVERY = 5.0  # seconds between plain status lines

    def __init__(self, quiet=False, stream=None, tty=None, prefix="pgcc", clock=time.monotonic):
        self.quiet, self.stream, self.prefix, self.clock = quiet, stream or sys.stderr, prefix, clock
        self.tty = self.stream.isatty() if tty is None else tty
        self.warnings = {}  # kind -> [count, examples]
        self._line, self._last = False, None
        self.steps = []  # (clock, status message): where the time goes (time_by_step), quiet or not
        self.started = clock()

    def _clear(self):
        if self._line:
            self.stream.write("\r\033[K")
            self._line = False

    def log(self, msg):
        if self.quiet:
            return
        self._clear()
        self.stream.write(msg + "\n")
        self.stream.flush()

    __call__ = log

    def status(self, msg):
        self.steps.append((self.clock(), msg))
        step(msg)  # (an error the export did not foresee names it: errors.entry_point)
        if self.quiet:
            return
        if self.tty:
            width = 120
            self.stream.write("\r\033[K" + (f"{self.prefix}: {msg}")[:width])
            self.stream.flush()
            self._line = True
        else:
            now = self.clock()
            if self._last is None or now - self._last >= self.EVERY:  # plain output: a line now and then
                self._last = now  # (with the seconds since the start: a log says where the time went)
                self.stream.write(f"{self.prefix}: [{now - self.started:.0f} s] {msg}\n")
                self.stream.flush()

    def done(self):
        self._clear()

    def time_by_step(self, now=None, top=12):
        """[(step, seconds)]: the time from each status message to the next (the last's to
        now), summed over messages that differ only in their numbers ("verify: call N/N"),
        the largest first, at most top of them."""
        now = self.clock() if now is None else now
        total = {}
        for (t, msg), (t_next, _) in zip(self.steps, self.steps[1:] + [(now, None)]):
            kind = re.sub(r"\d+", "N", msg)
            total[kind] = total.get(kind, 0.0) + max(0.0, t_next - t)
        return sorted(total.items(), key=lambda kv: -kv[1])[:top]

    def warn(self, kind, example=None):
        entry = self.warnings.setdefault(kind, [0, []])
        entry[0] += 1
        if example is not None and len(entry[1]) < self.EXAMPLES:
            entry[1].append(str(example))

    def lines(self):
        """The grouped warnings, one line per kind."""
        out = []
        for kind, (n, examples) in self.warnings.items():
            line = f"{self.prefix}: warning: {kind}" + (f" ({n} times)" if n > 1 else "")
            if examples:
                more = f"; and {n - len(examples)} more" if n > len(examples) else ""
                line += ": " + "; ".join(examples) + more
            out.append(line)
        return out

    def flush(self):
        if not self.quiet:
            self._clear()
            for line in self.lines():
                self.stream.write(line + "\n")
            self.stream.flush()
        self.warnings = {}


class Quiet(Progress):
    """A Progress that says nothing (for library use)."""

    def __init__(self):
        super().__init__(quiet=True)
