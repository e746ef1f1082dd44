#!/usr/bin/env python3
"""A Proxima driver for the External transport's tests: one or more readers, each with a scripted card always in
the field, and switches that make it misbehave.

The card answers SELECT (00 A4) with 9000, GET CHALLENGE (00 84 00 00 08) with 8 bytes 01..08 and 9000, and any
other command with its own header bytes and 9000.

Switches (N counts requests from the kernel, 1 for the first):
  --crash-at N        exit with status 3 on request N, without answering
  --hang-at N         stop reading and answering at request N
  --garbage-at N      answer request N with a frame that is not JSON
  --oversized-at N    answer request N with a frame header announcing 2 GiB
  --unknown-id-at N   answer request N with an id the kernel never used
  --flood             after the readers, send card events without pause
  --exit-at-start     exit with status 1 before the handshake
  --protocol V        say protocol V in the hello (default 1.0)
  --once PATH         misbehave only while PATH does not exist, and create it when misbehaving, so the restarted
                      driver behaves
  --readers K         number of readers (default 1)
  --grandchild        start a `sleep` child at start (it must die with the driver)
  --stderr TEXT       write TEXT to standard error at start

Control requests drive hot-plug: code 1 plugs reader r9 in (with a card), code 2 pulls it out, code 3 reports a card
on a reader never reported; every control request is answered with its own data.
"""

import argparse
import json
import os
import select
import struct
import subprocess
import sys
import time


def write(data):
    while data:
        data = data[os.write(1, data) :]


def frame(message):
    payload = json.dumps(message, separators=(",", ":")).encode()
    return struct.pack(">I", len(payload)) + payload


def send(message):
    write(frame(message))


def card(apdu):
    if apdu[:2] == b"\x00\xa4":
        return b"\x90\x00"
    if apdu[:5] == b"\x00\x84\x00\x00\x08":
        return bytes(range(1, 9)) + b"\x90\x00"
    return apdu[:4] + b"\x90\x00"


def main():
    parser = argparse.ArgumentParser()
    for name in ["crash-at", "hang-at", "garbage-at", "oversized-at", "unknown-id-at"]:
        parser.add_argument("--" + name, type=int, default=0)
    parser.add_argument("--flood", action="store_true")
    parser.add_argument("--exit-at-start", action="store_true")
    parser.add_argument("--protocol", default="1.0")
    parser.add_argument("--once", default="")
    parser.add_argument("--readers", type=int, default=1)
    parser.add_argument("--grandchild", action="store_true")
    parser.add_argument("--stderr", default="")
    args = parser.parse_args()

    misbehave = True
    if args.once:
        misbehave = not os.path.exists(args.once)

    def fire():
        if args.once:
            open(args.once, "w").close()

    if args.grandchild:
        subprocess.Popen(["sleep", "1000"], stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL)
    if args.stderr:
        sys.stderr.write(args.stderr + "\n")
        sys.stderr.flush()
    if args.exit_at_start and misbehave:
        fire()
        sys.exit(1)

    protocol = args.protocol if misbehave else "1.0"
    if protocol != "1.0":
        fire()  # before the hello: the kernel kills a driver it refuses at once
    send({"type": "hello", "protocol": protocol, "driver": {"name": "test-driver", "version": "0.1"}})
    buffer = b""
    requests = 0
    started = False
    while True:
        ready, _, _ = select.select([0], [], [])
        chunk = os.read(0, 1 << 16)
        if not chunk:
            return
        buffer += chunk
        while len(buffer) >= 4:
            (length,) = struct.unpack(">I", buffer[:4])
            if len(buffer) < 4 + length:
                break
            message = json.loads(buffer[4 : 4 + length])
            buffer = buffer[4 + length :]
            kind = message.get("type")
            if kind == "hello":
                readers = [{"id": f"r{i}", "name": f"Test Reader {i}"} for i in range(args.readers)]
                send({"type": "readers", "readers": readers})
                for reader in readers:
                    send({"type": "cardPresent", "reader": reader["id"]})
                started = True
                if args.flood and misbehave:
                    fire()
                    event = frame({"type": "cardPresent", "reader": "r0"})
                    for _ in range(100000):
                        write(event)
                continue
            if kind == "bye" or not started:
                continue
            requests += 1
            request_id = message["id"]
            if misbehave:
                if requests == args.crash_at:
                    fire()
                    os._exit(3)
                if requests == args.hang_at:
                    fire()
                    time.sleep(3600)
                if requests == args.garbage_at:
                    fire()
                    write(struct.pack(">I", 9) + b"{not json")
                    continue
                if requests == args.oversized_at:
                    fire()
                    write(struct.pack(">I", 0x7FFFFFFF) + b"{}")
                    continue
                if requests == args.unknown_id_at:
                    fire()
                    request_id += 1000
            if kind == "connect":
                send({"type": "result", "id": request_id, "atr": "3B8080010101", "uid": "04A1B2C3", "technology": "iso14443A"})
            elif kind == "transmit":
                answer = card(bytes.fromhex(message["apdu"]))
                send({"type": "result", "id": request_id, "apdu": answer.hex().upper()})
            elif kind == "disconnect":
                send({"type": "result", "id": request_id})
            elif kind == "control":
                # Control codes drive reader events: 1 plugs reader r9 in, 2 pulls it out, 3 reports a card on a
                # reader it never reported (a lie); any other code echoes its data.
                code = message.get("code")
                if code == 1:
                    send({"type": "readerAppeared", "reader": {"id": "r9", "name": "Test Reader 9"}})
                    send({"type": "cardPresent", "reader": "r9"})
                elif code == 2:
                    send({"type": "readerVanished", "reader": "r9"})
                elif code == 3:
                    send({"type": "cardPresent", "reader": "nope"})
                send({"type": "result", "id": request_id, "data": message.get("data", "")})
            else:
                send({"type": "error", "id": request_id, "code": "invalidRequest", "message": kind})


if __name__ == "__main__":
    main()
