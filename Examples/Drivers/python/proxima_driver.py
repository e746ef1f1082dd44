"""The Proxima driver protocol (Docs/driver-protocol.md) for Python drivers: framing, the handshake, events.

A driver is a program the kernel starts as a child process. It reads requests from its standard input and writes
events and answers to its standard output, each message one frame: a 4-byte big-endian length and that many bytes of
UTF-8 JSON holding one object. Standard error is the driver's log (the kernel logs it, rate-limited, masking long hex
runs); never write anything else to standard output.

Subclass `Driver`, implement the request handlers, and call `run()`. Handlers return the result members (a dict) or
raise `DriverError(code, message)`.
"""

import json
import os
import select
import struct
import sys

PROTOCOL = "1.0"
MAX_FRAME = 1 << 20


class DriverError(Exception):
    """An error answer: code is one of noCard, cardRemoved, cardTimeout, readerVanished, transmitFailed,
    unsupported, invalidRequest."""

    def __init__(self, code, message=""):
        super().__init__(message)
        self.code = code
        self.message = message


class ProtocolError(Exception):
    pass


class FrameReader:
    """Splits bytes from a file descriptor into frame payloads."""

    def __init__(self, fd):
        self.fd = fd
        self.buffer = b""

    def feed(self):
        """Reads what is available; returns False at end of file."""
        chunk = os.read(self.fd, 1 << 16)
        if not chunk:
            return False
        self.buffer += chunk
        return True

    def frames(self):
        while len(self.buffer) >= 4:
            (length,) = struct.unpack(">I", self.buffer[:4])
            if length == 0 or length > MAX_FRAME:
                raise ProtocolError(f"frame of {length} bytes")
            if len(self.buffer) < 4 + length:
                return
            payload, self.buffer = self.buffer[4 : 4 + length], self.buffer[4 + length :]
            yield json.loads(payload.decode("utf-8"))


def write_frame(message):
    payload = json.dumps(message, separators=(",", ":")).encode("utf-8")
    data = struct.pack(">I", len(payload)) + payload
    while data:
        written = os.write(1, data)
        data = data[written:]


def log(text):
    sys.stderr.write(text + "\n")
    sys.stderr.flush()


class Driver:
    """Base class: handshake, request dispatch, and a select() loop that also serves `extra_fds()`."""

    name = "python-driver"
    version = "1.0"

    def __init__(self):
        self.stdin = FrameReader(0)
        self.running = True

    # Events
    def send_readers(self, readers):
        write_frame({"type": "readers", "readers": readers})

    def reader_appeared(self, reader):
        write_frame({"type": "readerAppeared", "reader": reader})

    def reader_vanished(self, reader_id):
        write_frame({"type": "readerVanished", "reader": reader_id})

    def card_present(self, reader_id):
        write_frame({"type": "cardPresent", "reader": reader_id})

    def card_removed(self, reader_id):
        write_frame({"type": "cardRemoved", "reader": reader_id})

    # Hooks for subclasses
    def started(self):
        """Called after the handshake: report readers here."""

    def extra_fds(self):
        return []

    def fd_ready(self, fd):
        pass

    def connect(self, reader, exclusive):
        raise DriverError("unsupported", "connect")

    def transmit(self, reader, apdu, timeout):
        raise DriverError("unsupported", "transmit")

    def disconnect(self, reader):
        return {}

    def control(self, reader, code, data):
        raise DriverError("unsupported", f"control code {code}")

    # The loop
    def handshake(self):
        write_frame({"type": "hello", "protocol": PROTOCOL, "driver": {"name": self.name, "version": self.version}})
        hello = self.next_message()
        if hello.get("type") != "hello":
            raise ProtocolError("expected the kernel's hello")
        if str(hello.get("protocol", "")).split(".")[0] != PROTOCOL.split(".")[0]:
            raise ProtocolError(f"the kernel speaks protocol {hello.get('protocol')}")

    def next_message(self):
        while True:
            for message in self.stdin.frames():
                return message
            if not self.stdin.feed():
                raise EOFError

    def handle(self, message):
        kind = message.get("type")
        if kind == "bye":
            log(f"the kernel said bye: {message.get('reason', '')}")
            self.running = False
            return
        request_id = message.get("id")
        try:
            reader = message.get("reader")
            if kind == "connect":
                result = self.connect(reader, bool(message.get("exclusive", False)))
            elif kind == "transmit":
                apdu = bytes.fromhex(message["apdu"])
                result = {"apdu": self.transmit(reader, apdu, message.get("timeoutMs", 5000) / 1000).hex().upper()}
            elif kind == "disconnect":
                result = self.disconnect(reader)
            elif kind == "control":
                result = {"data": self.control(reader, message["code"], bytes.fromhex(message.get("data", ""))).hex()}
            else:
                raise DriverError("invalidRequest", f"unknown request {kind}")
            write_frame(dict({"type": "result", "id": request_id}, **result))
        except DriverError as error:
            write_frame({"type": "error", "id": request_id, "code": error.code, "message": error.message})

    def run(self):
        try:
            self.handshake()
            self.started()
            while self.running:
                pending = list(self.stdin.frames())
                for message in pending:
                    self.handle(message)
                if pending:
                    continue
                fds = [0] + self.extra_fds()
                ready, _, _ = select.select(fds, [], [])
                for fd in ready:
                    if fd == 0:
                        if not self.stdin.feed():
                            return
                    else:
                        self.fd_ready(fd)
        except (EOFError, BrokenPipeError):
            return
