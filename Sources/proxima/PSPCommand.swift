import Foundation
import Proxima
import ProximaCore
import ProximaCrypto
import ProximaKernel
import ProximaProcessorSandbox
import ProximaSystem

/// `proxima psp`: the payment processor's side, as a sandbox for integrators.
enum PSPCommand {
    static let defaultMerchant = "merchant-test-001"

    static let command = Command(
        name: "psp",
        summary: "The processor's side, as a sandbox: keygen, token, decrypt, reader-key, batch-open, deletion-token.",
        details: "A sandbox of the payment processor's side, for integrators.",
        subcommands: [
            Command(
                name: "keygen",
                summary: "Make a P-256 processor key pair: psp-private.pem and psp-public.pem in DIR.",
                details: """
                    Makes a P-256 processor key pair: psp-private.pem (mode 0600 from the moment it exists) and
                    psp-public.pem in DIR. Put the public key's path in the manifest's
                    capabilities.payment.processorPublicKey. Never overwrites a key unless --force is given.
                    """,
                options: [
                    .value("out", "DIR", help: "The folder to write the key pair to.", default: "."),
                    .flag("force", help: "Replace an existing key pair in DIR."),
                ],
                readsManifest: false,
                action: { try await keygen($0) }
            ),
            Command(
                name: "token",
                summary: "Issue a reader token (JWT, ES256) for this kernel.",
                details: """
                    Issues a reader token (JWT, ES256) for this kernel: iss and the merchant claim from the
                    manifest's payment settings, aud = its readerIdentifier (or --audience), signed with the
                    private key.
                    """,
                options: [
                    keyOption,
                    .value("merchant", "ID", help: "The merchant id claim.", default: defaultMerchant),
                    .value(
                        "audience",
                        "A",
                        help: "An audience of the token.",
                        defaultDescription: "the manifest's readerIdentifier",
                        repeatable: true
                    ),
                    .value("lifetime", "S", help: "How long the token is valid, in seconds.", default: "3600"),
                ],
                action: { try await token($0) }
            ),
            Command(
                name: "decrypt",
                summary: "Open a paymentCardData envelope and print the transaction and the EMV tags.",
                details: """
                    Opens a paymentCardData envelope with the private key and prints the transaction and the EMV
                    tags. The PAN shows as its last four digits and track data as a length unless --reveal is given.
                    """,
                options: [
                    keyOption, .flag("reveal", help: "Print the PAN and track data in clear."),
                    .value(
                        "reader-key",
                        "FILE",
                        help: "A registered reader's public key (PEM) that version 2 envelopes may be sealed with "
                            + "(repeatable).",
                        defaultDescription: "this kernel's reader key (see 'proxima psp reader-key')",
                        repeatable: true
                    ),
                ],
                positionals: [
                    Positional(
                        placeholder: "ENVELOPE | -",
                        help: "The envelope (base64), or - to read it from stdin (default)."
                    )
                ],
                action: { try await decrypt($0) }
            ),
            Command(
                name: "reader-key",
                summary: "Print this kernel's reader public key (PEM) and its key id, to register with the processor.",
                details: """
                    Prints the public half of the reader key that seals card data envelopes (version 2, HPKE auth
                    mode; Docs/card-data-envelope.md): capabilities.payment.readerKey, else
                    <dataDirectory>/reader-key.pem, created on first use. The processor registers it when the account
                    is linked and opens only envelopes sealed with a registered reader key. The key id is SHA-256 of
                    the uncompressed point, as envelopes carry it.
                    """,
                options: [keyOption],
                action: { try await readerKey($0) }
            ),
            Command(
                name: "batch-open",
                summary: "Verify a store-and-forward batch and open every envelope in it.",
                details: """
                    Verifies a batch container (Docs/store-and-forward-batch.md): the batch and record signatures
                    under the store certificate it carries, each envelope's digest; then opens every envelope with
                    the private key and prints each read (masked) and the batch digest.
                    """,
                options: [keyOption],
                positionals: [Positional(placeholder: "FILE", help: "The batch container.", optional: false)],
                action: { try await batchOpen($0) }
            ),
            Command(
                name: "deletion-token",
                summary: "Issue the processor's deletion token for a batch it received.",
                details: """
                    Verifies and opens the batch container FILE as batch-open does, then prints the deletion token
                    (ES256 JWT over the batch id and digest) for 'proxima store resolve --token'.
                    """,
                options: [
                    keyOption,
                    .value("lifetime", "S", help: "How long the token is valid, in seconds.", default: "3600"),
                ],
                positionals: [Positional(placeholder: "FILE", help: "The batch container.", optional: false)],
                action: { try await deletionToken($0) }
            ),
        ]
    )

    /// `proxima psp reader-key`: the reader's public key, PEM, then its key id.
    static func readerKey(_ args: Arguments) async throws -> ExitCode {
        let manifest = try CLI.loadManifest(args.configPath)
        try checkKey(args, manifest)
        let sandbox = try PaymentProcessorSandbox(manifest: manifest, privateKeyFile: args.value("key"))
        guard let key = sandbox.readerKeys.first else { throw UsageError("the kernel has no reader key") }
        print(key.pemRepresentation, terminator: key.pemRepresentation.hasSuffix("\n") ? "" : "\n")
        print("key id: \(PaymentProcessorSandbox.readerKeyID(of: key).hexString)")
        return .success
    }

    static let keyOption = Option.value(
        "key",
        "FILE",
        help: "The processor's private key (PEM); a relative path resolves against the manifest's folder.",
        default: PaymentProcessorSandbox.defaultPrivateKeyFile
    )

    /// `proxima psp keygen`: the private key is created with mode 0600 and moved into place atomically
    /// (`SystemFile.writeAtomically`), never written first and restricted after.
    static func keygen(_ args: Arguments) async throws -> ExitCode {
        let directory = args.string("out") ?? "."
        let replacing = args.flag("force")
        try FileChecks.outputFolder(directory)
        let pair = try ProcessorKeyPair.generate()
        let privatePath = PathResolution.resolve("psp-private.pem", against: directory)
        let publicPath = PathResolution.resolve("psp-public.pem", against: directory)
        if !replacing, let existing = [privatePath, publicPath].first(where: { (try? FileStatus.of($0)) != nil }) {
            throw keyExists(existing)
        }
        let privatePEM = Array(try pair.privateKeyPEM().utf8)
        do {
            try SystemFile.writeAtomically(privatePEM, to: privatePath, permissions: 0o600, replacing: replacing)
        } catch {
            throw keygenProblem(error, privatePath)
        }
        do {
            try SystemFile.writeAtomically(
                Array(pair.publicKeyPEM.utf8),
                to: publicPath,
                permissions: 0o644,
                replacing: replacing
            )
        } catch {
            // A private key without its public half is of no use, and would block the next keygen.
            try? SystemFile.remove(privatePath)
            throw keygenProblem(error, publicPath)
        }
        print("wrote \(privatePath) (keep it secret) and \(publicPath)")
        return .success
    }

    static func keyExists(_ path: String) -> UsageError {
        UsageError("\(path) exists; keygen never overwrites a key unless --force is given")
    }

    static func keygenProblem(_ failure: SystemFile.Failure, _ path: String) -> any Error {
        if failure.errno == .fileExists { return keyExists(path) }
        return FileProblem(path: path, failure, remedy: "give a folder you can write to with --out DIR")
    }

    static func token(_ args: Arguments) async throws -> ExitCode {
        let manifest = try CLI.loadManifest(args.configPath)
        try checkKey(args, manifest)
        let sandbox = try PaymentProcessorSandbox(manifest: manifest, privateKeyFile: args.value("key"))
        let lifetime = try args.integer("lifetime", in: 1...31_536_000)
        let audience = args.values("audience")
        let token = try sandbox.issueToken(
            merchantID: args.value("merchant") ?? defaultMerchant,
            audience: audience.isEmpty ? nil : audience,
            lifetime: .seconds(lifetime)
        )
        print(token.rawValue)
        return .success
    }

    static func decrypt(_ args: Arguments) async throws -> ExitCode {
        let manifest = try CLI.loadManifest(args.configPath)
        try checkKey(args, manifest)
        var sandbox = try PaymentProcessorSandbox(manifest: manifest, privateKeyFile: args.value("key"))
        for file in args.values("reader-key") {
            let path = PathResolution.resolve(file, against: manifest.baseDirectory)
            let text = try String(contentsOfFile: path, encoding: .utf8)
            let key: P256.PublicKey
            do {
                key = try P256.PublicKey(pemRepresentation: text)
            } catch {
                throw UsageError("--reader-key \(file): not a P-256 public key in PEM (\(error))")
            }
            sandbox = sandbox.registering(readerKey: key)
        }
        let argument = args.positionals.first ?? "-"
        let input =
            argument == "-"
            ? String(decoding: FileHandle.standardInput.readDataToEndOfFile(), as: UTF8.self) : argument
        let contents = try sandbox.open(input.trimmingCharacters(in: .whitespacesAndNewlines))
        print(contents.contents.formatted(revealingPAN: args.flag("reveal")))
        return .success
    }

    /// The batch file of `batch-open` and `deletion-token`, verified and opened.
    static func openedBatch(_ args: Arguments) throws -> (PaymentProcessorSandbox, [UInt8], OpenedBatch) {
        let manifest = try CLI.loadManifest(args.configPath)
        try checkKey(args, manifest)
        let sandbox = try PaymentProcessorSandbox(manifest: manifest, privateKeyFile: args.value("key"))
        guard let file = args.positionals.first else { throw UsageError("give the batch container FILE") }
        let bytes: [UInt8]
        do {
            bytes = try SystemFile.read(file, limit: 256 << 20)
        } catch {
            throw FileProblem(path: file, error, remedy: "give the file 'proxima store batch --out' wrote")
        }
        return (sandbox, bytes, try sandbox.openBatch(bytes))
    }

    static func batchOpen(_ args: Arguments) async throws -> ExitCode {
        let (_, _, opened) = try openedBatch(args)
        print(opened.description)
        print("every signature verifies and every envelope opens")
        return .success
    }

    static func deletionToken(_ args: Arguments) async throws -> ExitCode {
        let (sandbox, bytes, _) = try openedBatch(args)
        let lifetime = try args.integer("lifetime", in: 1...31_536_000)
        print(try sandbox.issueDeletionToken(for: bytes, lifetime: .seconds(lifetime)).rawValue)
        return .success
    }

    /// The private key file the sandbox will read (resolved as it resolves it) is there and is PEM.
    static func checkKey(_ args: Arguments, _ manifest: Manifest) throws {
        guard let key = args.string("key") else { return }
        try FileChecks.privateKey(PathResolution.resolve(key, against: manifest.baseDirectory))
    }
}
