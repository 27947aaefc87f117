# The python_execute driver: runs code cells, one after the other, in one persistent namespace.
#
# Started by crates/agent-tools/src/python/session.rs as `python3 -u -c <this file>`. Its protocol
# is private to the two files:
#
# * requests arrive on a private copy of the original stdin: a 4-byte big-endian length, then JSON
#   {"code": str, "cap": int};
# * frames leave on a private copy of the original stdout: 1 kind byte, a 4-byte big-endian length,
#   then the payload. Kinds: R ready (JSON), S cell started, O stdout bytes, E stderr bytes,
#   D cell done (JSON), X driver failure (text).
#
# File descriptors 1 and 2 are pipes that a pump thread reads and forwards as O and E frames while
# a cell runs, so prints, os.system, subprocesses and C extensions are all captured and none of
# them can reach the frame channel. Descriptor 0 is /dev/null. The private descriptors are not
# inherited by subprocesses and are closed in forked children. When the Rust side goes away (the
# request channel hangs up), the driver kills its process group.

import builtins
import io
import json
import linecache
import os
import select
import signal
import struct
import sys
import threading
import traceback
import types

CHUNK = 65536


def _read_exact(fd, size):
    parts = []
    while size:
        data = os.read(fd, size)
        if not data:
            return None
        parts.append(data)
        size -= len(data)
    return b"".join(parts)


def _text_stream(fd):
    return io.TextIOWrapper(
        io.FileIO(fd, "w", closefd=False),
        encoding="utf-8",
        errors="backslashreplace",
        line_buffering=True,
        write_through=True,
    )


def _clean(text):
    # Lone surrogates (from undecodable file names, say) cannot travel as JSON to Rust.
    return text.encode("utf-8", "backslashreplace").decode("utf-8")


def _clip(text, cap):
    if len(text) <= cap:
        return text
    half = max(cap // 2, 1)
    cut = len(text) - 2 * half
    return "%s\n[... %d characters of the traceback were cut ...]\n%s" % (
        text[:half],
        cut,
        text[-half:],
    )


class Driver:
    def __init__(self):
        self.requests = os.dup(0)
        self.frames = os.dup(1)
        null = os.open(os.devnull, os.O_RDONLY)
        os.dup2(null, 0)
        os.close(null)
        self.pipes = {}
        self.writers = {}
        for kind, fd in ((b"O", 1), (b"E", 2)):
            read_end, write_end = os.pipe()
            os.set_blocking(read_end, False)
            self.pipes[read_end] = kind
            self.writers[fd] = write_end
            os.dup2(write_end, fd)
        self.lock = threading.Lock()
        self.active = False
        self.cap = 0
        self.sent = {b"O": 0, b"E": 0}
        self.dropped = {b"O": 0, b"E": 0}
        self.pid = os.getpid()
        self.cell = 0
        os.register_at_fork(after_in_child=self._forget_channel)

        main = types.ModuleType("__main__")
        main.__dict__["__builtins__"] = builtins
        sys.modules["__main__"] = main
        self.namespace = main.__dict__
        sys.argv = [""]
        self.streams = {"stdin": sys.stdin}
        for name, fd in (("stdout", 1), ("stderr", 2)):
            self.streams[name] = _text_stream(fd)
        self._reset_streams()

    def _forget_channel(self):
        for fd in (self.requests, self.frames):
            try:
                os.close(fd)
            except OSError:
                pass

    def _reset_streams(self):
        for fd, write_end in self.writers.items():
            os.dup2(write_end, fd)
        if self.streams["stdin"] is None or self.streams["stdin"].closed:
            self.streams["stdin"] = open(0, "r", closefd=False)
        for name, fd in (("stdout", 1), ("stderr", 2)):
            if self.streams[name].closed:
                self.streams[name] = _text_stream(fd)
        for name, stream in self.streams.items():
            setattr(sys, name, stream)
            setattr(sys, "__%s__" % name, stream)

    # Frames. The caller holds self.lock.

    def _send(self, kind, payload):
        view = memoryview(struct.pack(">cI", kind, len(payload)) + payload)
        while view:
            view = view[os.write(self.frames, view):]

    def _deliver(self, kind, data):
        if not self.active:
            return
        room = max(self.cap - self.sent[kind], 0)
        keep = data[:room]
        if keep:
            self.sent[kind] += len(keep)
            self._send(kind, keep)
        self.dropped[kind] += len(data) - len(keep)

    def _drain(self):
        for fd, kind in self.pipes.items():
            while True:
                try:
                    data = os.read(fd, CHUNK)
                except BlockingIOError:
                    break
                if not data:
                    break
                self._deliver(kind, data)

    def _pump(self):
        try:
            poller = select.poll()
            for fd in self.pipes:
                poller.register(fd, select.POLLIN)
            # No events asked: only a hang-up is reported, when the Rust side is gone. The code
            # must not outlive it, so the whole process group goes.
            poller.register(self.requests, 0)
            while True:
                for fd, _ in poller.poll():
                    if fd == self.requests:
                        os.killpg(os.getpgid(0), signal.SIGKILL)
                        os._exit(72)
                    with self.lock:
                        try:
                            data = os.read(fd, CHUNK)
                        except BlockingIOError:
                            continue
                        self._deliver(self.pipes[fd], data)
        except BaseException:
            os._exit(71)

    def _flush(self):
        # C stdio needs nothing: `-u` makes the interpreter set it unbuffered.
        for stream in (sys.stdout, sys.stderr):
            try:
                stream.flush()
            except BaseException:
                pass

    def _execute(self, code, name):
        try:
            compiled = compile(code, name, "exec", dont_inherit=True)
        except BaseException as exc:
            text = "".join(traceback.format_exception_only(type(exc), exc))
            return {"outcome": "error", "traceback": text}
        try:
            exec(compiled, self.namespace)
        except SystemExit as exc:
            argument = None if exc.code is None else repr(exc.code)
            return {"outcome": "exit", "argument": argument}
        except BaseException as exc:
            # The first frame is this method; the model only needs the frames of its own code.
            tb = exc.__traceback__.tb_next if exc.__traceback__ is not None else None
            text = "".join(traceback.format_exception(type(exc), exc, tb))
            return {"outcome": "error", "traceback": text}
        return {"outcome": "ok"}

    def run_cell(self, request):
        code = request["code"]
        self.cell += 1
        name = "<cell %d>" % self.cell
        linecache.cache[name] = (len(code), None, code.splitlines(True), name)
        self._reset_streams()
        with self.lock:
            self.active = True
            self.cap = request["cap"]
            self.sent = {b"O": 0, b"E": 0}
            self.dropped = {b"O": 0, b"E": 0}
            self._send(b"S", b"")
        try:
            result = self._execute(code, name)
        finally:
            if os.getpid() != self.pid:
                # A fork made by the code came back here: it must not act as the driver.
                os._exit(0)
        self._flush()
        if "traceback" in result:
            result["traceback"] = _clean(_clip(result["traceback"], max(self.cap, 64)))
        if result.get("argument") is not None:
            result["argument"] = _clean(_clip(result["argument"], max(self.cap, 64)))
        with self.lock:
            self._drain()
            self.active = False
            result["dropped_stdout"] = self.dropped[b"O"]
            result["dropped_stderr"] = self.dropped[b"E"]
            self._send(b"D", json.dumps(result).encode("utf-8"))

    def serve(self):
        threading.Thread(target=self._pump, name="python_execute-pump", daemon=True).start()
        ready = {"pid": self.pid, "version": sys.version.split()[0]}
        with self.lock:
            self._send(b"R", json.dumps(ready).encode("utf-8"))
        while True:
            header = _read_exact(self.requests, 4)
            if header is None:
                os._exit(0)
            body = _read_exact(self.requests, struct.unpack(">I", header)[0])
            if body is None:
                os._exit(0)
            self.run_cell(json.loads(body.decode("utf-8")))


def _main():
    driver = None
    try:
        driver = Driver()
        driver.serve()
    except BaseException:
        failure = traceback.format_exc().encode("utf-8", "backslashreplace")
        try:
            if driver is None:
                os.write(2, failure)
            else:
                with driver.lock:
                    driver._send(b"X", failure)
        finally:
            os._exit(70)


_main()
