"""One child process per model, one after another, for the zoo's probes (bench/pdl.py,
bench/launch.py).

A child is `SCRIPT --child KEY ARGS...` and prints its record as one line
`TAG {json}`; a child that dies without one, or runs out of time, becomes a record
with "failed" (its last lines, or the time limit).  Each record is printed as it
comes, and with `out` the records so far (NAME.json) and the child's log
(KEY.NAME.log) are written after every model, so that a run cut short keeps what it
measured.
"""
import json
import os
import subprocess
import sys


def run(script, keys, args, tag, timeout, out=None, name="records"):
    """The records of script's children for keys, in order."""
    recs = []
    for key in keys:
        try:
            p = subprocess.run([sys.executable, script, "--child", key] + list(args), capture_output=True, text=True,
                               timeout=timeout)
            log = p.stdout + p.stderr
            got = [json.loads(line[len(tag) + 1:]) for line in p.stdout.splitlines() if line.startswith(tag + " ")]
            rec = got[-1] if got else {"model": key, "failed": " | ".join(log.strip().splitlines()[-3:])[:400]}
        except subprocess.TimeoutExpired as e:
            log = (e.stdout or b"").decode(errors="replace") + (e.stderr or b"").decode(errors="replace")
            rec = {"model": key, "failed": f"over {timeout} s"}
        recs.append(rec)
        print(json.dumps(rec), flush=True)
        if out:
            os.makedirs(out, exist_ok=True)
            with open(os.path.join(out, name + ".json"), "w") as f:
                json.dump(recs, f, indent=1)
            with open(os.path.join(out, key.replace(":", "_") + f".{name}.log"), "w") as f:
                f.write(log)
    return recs
