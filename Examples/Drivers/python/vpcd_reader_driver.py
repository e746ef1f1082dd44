#!/usr/bin/env python3
"""A vpcd-style virtual reader as a Proxima driver.

Each reader slot listens on a TCP port, as vsmartcard's vpcd does inside pcscd; a virtual card connects to it
(`proxima cardsim --vpcd 127.0.0.1:PORT --card Config/cards/pay-visa-qvsdc.json`, or the card emulator's
VPCDCardHost). A connection is a card entering the field; closing it, the card leaving.

vpcd wire protocol (both ways): a 2-byte big-endian length and a payload. From the reader, a 1-byte payload is a
control message (00 power off, 01 power on, 02 reset, 04 get ATR, answered with the ATR); a longer one is a command
APDU, answered with the response APDU.

Usage: vpcd_reader_driver.py [--host 127.0.0.1] [--port 35990] [--slots 1]
Port 0 picks a free port; the reader's name says which (`Proxima vpcd reader 127.0.0.1:40123`).
"""

import argparse
import os
import select
import socket
import struct
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from proxima_driver import Driver, DriverError, log  # noqa: E402


class Slot:
    def __init__(self, index, host, port):
        self.id = str(index)
        self.listener = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
        self.listener.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        self.listener.bind((host, port))
        self.listener.listen(1)
        self.address = "%s:%d" % self.listener.getsockname()
        self.card = None
        self.atr = b""

    def describe(self):
        return {"id": self.id, "name": f"Proxima vpcd reader {self.address}", "extendedLength": True}


class VPCDReaderDriver(Driver):
    name = "vpcd-reader"
    version = "1.0"

    def __init__(self, host, port, slots):
        super().__init__()
        self.slots = [Slot(i, host, port + i if port else 0) for i in range(slots)]

    def started(self):
        self.send_readers([slot.describe() for slot in self.slots])
        for slot in self.slots:
            log(f"reader {slot.id} listens on {slot.address}")

    def extra_fds(self):
        fds = []
        for slot in self.slots:
            fds.append(slot.listener.fileno())
            if slot.card:
                fds.append(slot.card.fileno())
        return fds

    def fd_ready(self, fd):
        for slot in self.slots:
            if fd == slot.listener.fileno():
                connection, _ = slot.listener.accept()
                if slot.card and self.card_left(slot):
                    self.drop_card(slot)  # its end of file had not been read yet
                if slot.card:
                    connection.close()  # one card per reader
                    return
                connection.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
                slot.card = connection
                try:
                    self.send_to_card(slot, b"\x01")
                    self.send_to_card(slot, b"\x04")
                    slot.atr = self.receive_from_card(slot, 2.0)
                except (OSError, DriverError):
                    self.drop_card(slot, notify=False)
                    return
                self.card_present(slot.id)
            elif slot.card and fd == slot.card.fileno():
                # Between exchanges the card only ever closes its connection.
                if self.card_left(slot):
                    self.drop_card(slot)

    def card_left(self, slot):
        """Whether the card closed its connection (without blocking)."""
        try:
            return slot.card.recv(1, socket.MSG_PEEK | socket.MSG_DONTWAIT) == b""
        except BlockingIOError:
            return False
        except OSError:
            return True

    def drop_card(self, slot, notify=True):
        if slot.card:
            slot.card.close()
            slot.card = None
            if notify:
                self.card_removed(slot.id)

    def slot(self, reader):
        for slot in self.slots:
            if slot.id == reader:
                return slot
        raise DriverError("readerVanished", f"no reader {reader}")

    def send_to_card(self, slot, payload):
        slot.card.sendall(struct.pack(">H", len(payload)) + payload)

    def receive_from_card(self, slot, timeout):
        def exactly(count):
            data = b""
            while len(data) < count:
                ready, _, _ = select.select([slot.card], [], [], timeout)
                if not ready:
                    raise DriverError("cardTimeout", "the card did not answer")
                chunk = slot.card.recv(count - len(data))
                if not chunk:
                    self.drop_card(slot)
                    raise DriverError("cardRemoved", "the card left the field")
                data += chunk
            return data

        (length,) = struct.unpack(">H", exactly(2))
        return exactly(length)

    def connect(self, reader, exclusive):
        slot = self.slot(reader)
        if not slot.card:
            raise DriverError("noCard", "no card in the field")
        uid = b""
        answer = self.transmit(reader, bytes.fromhex("FFCA000000"), 2.0)
        if len(answer) >= 2 and answer[-2:] == b"\x90\x00":
            uid = answer[:-2]
        return {"atr": slot.atr.hex().upper(), "uid": uid.hex().upper(), "technology": "iso14443A"}

    def transmit(self, reader, apdu, timeout):
        slot = self.slot(reader)
        if not slot.card:
            raise DriverError("cardRemoved", "no card in the field")
        try:
            self.send_to_card(slot, apdu)
        except OSError:
            self.drop_card(slot)
            raise DriverError("cardRemoved", "the card left the field")
        return self.receive_from_card(slot, timeout)


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--host", default="127.0.0.1")
    parser.add_argument("--port", type=int, default=35990)
    parser.add_argument("--slots", type=int, default=1)
    args = parser.parse_args()
    VPCDReaderDriver(args.host, args.port, args.slots).run()


if __name__ == "__main__":
    main()
