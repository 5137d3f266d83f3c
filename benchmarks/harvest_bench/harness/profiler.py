"""Profiling a step: py-spy attached from outside, or pyinstrument in the process."""

from __future__ import annotations

import os
import subprocess
import sys
import threading
import time
from pathlib import Path
from typing import Any


class StepProfiler:
    """py-spy attached from outside (default when installed), or pyinstrument in-process.

    py-spy samples wall-clock time (`--idle`: waiting on sockets counts) of the main thread at
    100 Hz without stopping the process; pyinstrument costs far more and inflates RSS.
    """

    def __init__(self, path: str, kind: str | None) -> None:
        import shutil

        self.path = path
        py_spy = shutil.which("py-spy", path=os.path.dirname(sys.executable)) or shutil.which(
            "py-spy"
        )
        self.kind = kind or ("py-spy" if py_spy else "pyinstrument")
        self.py_spy = py_spy
        Path(path).parent.mkdir(parents=True, exist_ok=True)

    def start(self) -> None:
        """Attach py-spy (two samplers) or start pyinstrument."""
        if self.kind == "py-spy":
            if not self.py_spy:
                raise RuntimeError("py-spy is not installed (pip install py-spy)")
            # Two samplers: wall clock (--idle: waiting counts) and on-CPU only.
            self.outputs = {"wall": self.path + ".pyspy.txt", "cpu": self.path + ".cpu.pyspy.txt"}
            self.processes = []
            for kind, output in self.outputs.items():
                command = [
                    self.py_spy, "record", "--pid", str(os.getpid()), "--threads",
                    "--nonblocking", "--rate", "100", "--format", "raw", "--output", output,
                ]  # fmt: skip
                if kind == "wall":
                    command.append("--idle")
                self.processes.append(
                    subprocess.Popen(
                        command, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True
                    )
                )
            time.sleep(1.0)  # let them attach
        else:
            from pyinstrument import Profiler

            self.profiler = Profiler(interval=0.005)
            self.profiler.start()

    def stop(self) -> dict[str, Any]:
        """Stop profiling; where the profiles were written (a step's `profile` key)."""
        main_thread = f"{threading.main_thread().ident:#x}"
        if self.kind == "py-spy":
            import signal

            logs = []
            for process in self.processes:
                process.send_signal(signal.SIGINT)
                logs.append(process.communicate(timeout=120)[1][-300:])
            return {"kind": "py-spy", **self.outputs, "thread": main_thread, "log": logs}
        self.profiler.stop()
        session = self.profiler.last_session
        output = self.path + ".pyisession"
        session.save(output)
        Path(self.path + ".txt").write_text(
            self.profiler.output_text(unicode=True, color=False, show_all=False)
        )
        return {"kind": "pyinstrument", "file": output}
