#!/usr/bin/env python3
"""The public API of every library product, as a golden inventory, and the card-data rule checked on it.

    scripts/api-inventory.py            compare each library module's public symbols with Docs/API/<Module>.txt
    scripts/api-inventory.py --update   rewrite the inventories (review the diff before committing)

Needs a debug build (`swift build --build-tests`): it reads the compiled modules with the toolchain's
swift-symbolgraph-extract. Fails (exit 1) when a public symbol was added, removed or changed without its inventory
being updated, or when any public declaration can hand out clear card data: a PAN, track data, the EMV data
objects of a read, or an opened envelope's TLVs. Prints a closing line "N passed, N failed".
"""
import json, os, re, subprocess, sys, tempfile
from concurrent.futures import ThreadPoolExecutor

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


def library_modules():
    """Every regular target of the package but test and fuzz support: products and plugin modules alike."""
    package = json.loads(subprocess.run(["swift", "package", "dump-package"], cwd=ROOT, capture_output=True,
                                        text=True, check=True).stdout)
    return [t["name"] for t in package["targets"] if t["type"] == "regular"
            and not (t.get("path") or "").startswith(("Tests/", "Fuzz/"))]

# Declarations that would hand clear card data to an app: names of the card data types and of PAN/track fields.
CARD_DATA = re.compile(r"\b(EMVCardData|EMVOutcome|CardDataEnvelope|CardDataStore|OpenedCardData\.contents|"
                       r"pan|PAN|primaryAccountNumber|track2|trackTwo|track2Equivalent|field55|revealingPAN)\b")
# The rule must be able to fail: these declarations (as the payment module had them public before the service
# moved below the API) are caught.
assert CARD_DATA.search("EMVCardData.tags | public var tags: [TLVTag : [UInt8]]")
assert CARD_DATA.search("Kernel.tap(lane:options:_:) | public func tap(...) -> EMVOutcome")
assert not CARD_DATA.search("PaymentCardReadResult.paymentCardData | public let paymentCardData: String?")


def c_flags():
    out = subprocess.run(["pkg-config", "--cflags", "libpcsclite", "libnfc", "libusb-1.0", "openssl", "sqlite3"],
                         capture_output=True, text=True, check=True).stdout.split()
    flags = []
    for flag in out:
        flags += ["-Xcc", flag]
    return flags


def extract(module, out_dir):
    modules = os.path.join(ROOT, ".build", "debug", "Modules")
    includes = []
    for entry in sorted(os.listdir(os.path.join(ROOT, "Sources"))):
        if entry.startswith("C") and os.path.exists(os.path.join(ROOT, "Sources", entry, "module.modulemap")):
            includes += ["-I", os.path.join(ROOT, "Sources", entry)]
    for entry in sorted(os.listdir(os.path.join(ROOT, "Tests"))):
        path = os.path.join(ROOT, "Tests", entry)
        if os.path.exists(os.path.join(path, "module.modulemap")):
            includes += ["-I", path]
    cmd = ["swift-symbolgraph-extract", "-module-name", module, "-target", "x86_64-unknown-linux-gnu",
           "-I", modules] + includes + c_flags() + ["-minimum-access-level", "public", "-output-dir", out_dir]
    result = subprocess.run(cmd, capture_output=True, text=True)
    if result.returncode != 0:
        raise SystemExit(f"api-inventory: cannot read module {module}: {result.stderr.strip()[-2000:]}")
    with open(os.path.join(out_dir, f"{module}.symbols.json")) as f:
        graph = json.load(f)
    lines = set()
    for symbol in graph["symbols"]:
        if symbol.get("accessLevel") != "public":
            continue
        declaration = " ".join("".join(f["spelling"] for f in symbol.get("declarationFragments", [])).split())
        lines.add(f"{'.'.join(symbol['pathComponents'])} | {declaration}")
    return sorted(lines)


def main():
    update = "--update" in sys.argv[1:]
    MODULES = library_modules()
    passed = failed = 0
    with tempfile.TemporaryDirectory() as tmp:
        with ThreadPoolExecutor(max_workers=4) as pool:
            inventories = dict(zip(MODULES, pool.map(lambda m: extract(m, os.path.join(tmp, m)) or [],
                                                     [os.makedirs(os.path.join(tmp, m)) or m for m in MODULES])))
    for module, lines in inventories.items():
        golden_path = os.path.join(ROOT, "Docs", "API", f"{module}.txt")
        text = "".join(line + "\n" for line in lines)
        leaks = [line for line in lines if CARD_DATA.search(line)]
        if leaks:
            failed += 1
            print(f"FAIL {module}: public declarations that can hand out clear card data:")
            for line in leaks:
                print(f"    {line}")
        else:
            passed += 1
        if update:
            with open(golden_path, "w") as f:
                f.write(text)
            print(f"wrote {os.path.relpath(golden_path, ROOT)} ({len(lines)} public symbols)")
            continue
        golden = open(golden_path).read() if os.path.exists(golden_path) else ""
        if golden == text:
            passed += 1
            continue
        failed += 1
        old, new = set(golden.splitlines()), set(lines)
        print(f"FAIL {module}: the public API differs from {os.path.relpath(golden_path, ROOT)} "
              "(run scripts/api-inventory.py --update and review the diff):")
        for line in sorted(old - new):
            print(f"  - {line}")
        for line in sorted(new - old):
            print(f"  + {line}")
    print(f"api-inventory: {passed} passed, {failed} failed")
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
